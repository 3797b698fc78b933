"""ISG-v0 as a SkyRL-Gym text environment (``pip install "isg-gym[skyrl]"``).

SkyRL's generator makes one env per trajectory with ``skyrl_gym.make(env_class,
env_config=..., extras=row)``, calls ``init(prompt)`` for the first chat messages, then
``step(model_text)`` after every model turn until ``done``, and ``close()``. :func:`register_skyrl`
registers :class:`ISGSkyRLEnv` under ``"isg"``; :func:`make_skyrl_rows` gives dataset rows.

- ``env_config`` (SkyRL's per-env config; a dict or an OmegaConf node) holds
  :class:`~isg_gym.envs.env.ISGEnv` arguments, over the defaults given to :func:`register_skyrl`
  (training repositories only, unless given).
- ``extras`` (the dataset row): ``question_id`` pins the question, else ``seed`` seeds the
  env's draw (either may sit in ``extra_info``); ``max_turns`` (set by SkyRL's generator) is the
  step budget unless ``env_config`` sets ``max_steps``.
- ``init(prompt)`` starts the episode: the env's system prompt (tools, call format,
  conventions) unless the prompt has a system message, and the question, written into the last
  user message when that is empty, else added as a user message.
- ``step(text)``: the model's text is the env action (Hermes ``<tool_call>`` blocks, or an
  answer-only message); the observation comes back as one user message. ``reward`` is the env's
  (1 for a right final answer by default, on the last step); ``done`` when the env ends the
  episode or ``max_turns`` is used up. A malformed action is an error observation. ``metadata``
  has the outcome, the score and the tool calls; ``infra_error`` when the sandbox failed (an
  infrastructure failure, not the model's: the episode ends with reward 0 and
  :meth:`ISGSkyRLEnv.get_metrics` counts it apart).

The wrapped envs, and their sandbox workers, are kept in a pool between trajectories, so a
trajectory does not pay for starting a sandbox.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # an optional adapter
    raise ImportError(
        f'isg_gym.rl.skyrl needs SkyRL-Gym: pip install "isg-gym[skyrl]" (or skyrl-gym) ({exc})'
    ) from exc

from isg_gym.envs.env import ISGEnv
from isg_gym.eval.splits import train_env_kwargs
from isg_gym.rl.trl import check_env_kwargs, dataset_question_ids

ENV_ID = "isg"
DEFAULT_MAX_TURNS = 30
PUBLIC_KEYS = ("question_id", "repository", "type", "family")


class _EnvPool:
    """Idle :class:`ISGEnv` instances by configuration (their sandbox workers stay up)."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._idle: dict[str, list[ISGEnv]] = {}
        self._lock = threading.Lock()

    def take(self, kwargs: dict[str, Any]) -> ISGEnv:
        with self._lock:
            idle = self._idle.get(repr(sorted(kwargs.items())))
            if idle:
                return idle.pop()
        return ISGEnv(**kwargs)

    def give(self, kwargs: dict[str, Any], env: ISGEnv) -> None:
        with self._lock:
            idle = self._idle.setdefault(repr(sorted(kwargs.items())), [])
            if len(idle) < self.limit:
                idle.append(env)
                return
        env.close()

    def close(self) -> None:
        with self._lock:
            envs = [env for idle in self._idle.values() for env in idle]
            self._idle.clear()
        for env in envs:
            env.close()


POOL = _EnvPool()


def _as_dict(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if isinstance(config, Mapping) or hasattr(config, "items"):
        return {str(k): v for k, v in config.items()}
    raise TypeError(
        f"env_config must be a mapping of ISGEnv arguments, got {type(config).__name__}"
    )


class ISGSkyRLEnv(BaseTextEnv):
    """One ISG-v0 episode as a SkyRL-Gym ``BaseTextEnv`` (see the module docstring)."""

    def __init__(
        self,
        env_config: Any = None,
        extras: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        extras = dict(extras or {})
        info = extras.get("extra_info") if isinstance(extras.get("extra_info"), Mapping) else {}
        self.question_id = extras.get("question_id", info.get("question_id"))
        self.seed = extras.get("seed", info.get("seed"))
        kwargs = {**(train_env_kwargs() if defaults is None else dict(defaults))}
        kwargs.update(_as_dict(env_config))
        if "max_steps" not in kwargs and extras.get("max_turns") is not None:
            kwargs["max_steps"] = int(extras["max_turns"])
        check_env_kwargs(kwargs)
        self.max_turns = int(extras.get("max_turns") or kwargs.get("max_steps", DEFAULT_MAX_TURNS))
        self._kwargs = kwargs
        self._env: ISGEnv | None = POOL.take(kwargs)
        self._started = False
        self._done = False
        self.reward = 0.0
        self.outcome: str | None = None
        self.infra_error: str | None = None

    def init(self, prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Reset the env (the row's question) and return the first chat messages."""
        assert self._env is not None, "init() after close()"
        options = {"question": str(self.question_id)} if self.question_id else None
        seed = None if self.seed is None else int(self.seed)
        _, info = self._env.reset(seed=seed, options=options)
        self.question_id = info["question_id"]
        self.turns, self._started, self._done = 0, True, False
        self.reward, self.outcome, self.infra_error = 0.0, None, None
        chat = [dict(m) for m in prompt or []]
        if not any(m.get("role") == "system" for m in chat):
            chat.insert(0, {"role": "system", "content": info["prompt"]["system"]})
        if chat[-1].get("role") == "user" and not chat[-1].get("content"):
            chat[-1]["content"] = info["prompt"]["user"]
        else:
            chat.append({"role": "user", "content": info["prompt"]["user"]})
        return chat, {k: info[k] for k in PUBLIC_KEYS}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One model turn: the env's observation as a user message, the reward, done."""
        if not self._started or self._done or self._env is None:
            return BaseTextEnvStepOutput(
                observations=[{"role": "user", "content": "[error] the episode is over"}],
                reward=0.0, done=True, metadata={"error": "step after the end"},
            )  # fmt: skip
        self.turns += 1
        observation, reward, terminated, truncated, info = self._env.step(action)
        metadata: dict[str, Any] = {
            "question_id": self.question_id,
            "tool_calls": info.get("tool_calls", []),
            "parse_error": info.get("parse_error"),
        }
        if info.get("infra_error"):
            self.infra_error = metadata["infra_error"] = str(info["infra_error"])
        out_of_turns = self.turns >= self.max_turns
        done = bool(terminated or truncated or out_of_turns or self.infra_error)
        if done:
            self._done = True
            self.reward = float(reward) if not self.infra_error else 0.0
            self.outcome = "infra_error" if self.infra_error else info.get("outcome", "truncated")
            metadata["outcome"] = self.outcome
            metadata["score"] = info.get("score")
        observations = [] if done else [{"role": "user", "content": observation}]
        return BaseTextEnvStepOutput(
            observations=observations, reward=self.reward if done else 0.0, done=done,
            metadata=metadata,
        )  # fmt: skip

    def get_metrics(self) -> dict[str, Any]:
        """Per trajectory: correct (0/1), answered (0/1), steps, infra_error (0/1)."""
        return {
            "correct": float(self.outcome == "correct"),
            "answered": float(self.outcome not in (None, "truncated", "infra_error")),
            "steps": self.turns,
            "infra_error": float(self.infra_error is not None),
        }

    def close(self) -> None:
        """Give the wrapped env (and its sandbox worker) back to the pool."""
        env, self._env = self._env, None
        if env is not None:
            POOL.give(self._kwargs, env)


def register_skyrl(env_id: str = ENV_ID, **env_kwargs: Any) -> str:
    """Register :class:`ISGSkyRLEnv` with SkyRL-Gym under ``env_id`` (again: replaced), with
    ``env_kwargs`` as the default ISGEnv arguments (default: training repositories only); the
    id, for a dataset's ``env_class``."""
    import skyrl_gym
    from skyrl_gym.envs.registration import deregister

    defaults = {**train_env_kwargs(), **env_kwargs}
    check_env_kwargs(defaults)

    def make(env_config: Any = None, extras: Mapping[str, Any] | None = None) -> ISGSkyRLEnv:
        return ISGSkyRLEnv(env_config, extras, defaults)

    make.aggregate_metrics = ISGSkyRLEnv.aggregate_metrics  # type: ignore[attr-defined]
    if env_id in skyrl_gym.registry:
        deregister(env_id)
    skyrl_gym.register(id=env_id, entry_point=make)
    return env_id


def make_skyrl_rows(
    split_or_range: Any, n: int | None = None, *, env_class: str = ENV_ID
) -> list[dict[str, Any]]:
    """Dataset rows for SkyRL: ``prompt`` (an empty user message: :meth:`ISGSkyRLEnv.init`
    writes the system prompt and the question), ``env_class``, ``question_id`` and
    ``data_source``. ``split_or_range`` as :func:`isg_gym.rl.make_dataset_rows`: for training,
    a range of training repositories."""
    return [
        {
            "data_source": "isg-gym",
            "prompt": [{"role": "user", "content": ""}],
            "env_class": env_class,
            "question_id": qid,
        }
        for qid in dataset_question_ids(split_or_range, n)
    ]


__all__ = ["ENV_ID", "ISGSkyRLEnv", "make_skyrl_rows", "register_skyrl"]
