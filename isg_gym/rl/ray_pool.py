"""Remote envs on Ray actors for RL rollouts: :class:`RemoteEnvPool` and :class:`RemoteEnv`.

A rollout worker that drives many episodes at once wants the envs (each with its sandbox worker,
about 300 MB) somewhere else: on other cores or other machines of a Ray cluster. The pool
starts ``num_actors`` Ray actors that own ``num_envs`` envs of any registered env
(:mod:`isg_gym.envs.registry`) between them, and offers them two ways:

- as a Gymnasium vector env (:class:`RemoteEnvPool` is a :class:`gymnasium.vector.VectorEnv`):
  ``reset(seed=..., options=...)`` and ``step(actions)`` on all envs at once, one Ray call per
  actor (its envs step in parallel threads there), infos stacked the Gymnasium way, autoreset
  ``NEXT_STEP`` (Gymnasium's default) or ``DISABLED`` (then ``options={"reset_mask": mask}``);
  ``options`` may also be a list with one dict per env (e.g. ``{"question": id}`` each);
- as one Gymnasium env handle per env (``pool.envs[i]``, a :class:`RemoteEnv`): ``reset`` and
  ``step`` of that env alone, safe to call from one thread per env; this is what an agent
  loop that plays each trajectory in its own coroutine or thread uses.

When an actor dies (killed, out of memory, its node lost), its envs come back from ``step``
truncated (reward 0) with ``info["infra_error"]`` saying so (an infrastructure failure, not
the agent's doing: leave the trajectory out of the update), and the actor is replaced by a new
one that makes its envs afresh; the next ``reset`` of those envs runs there. At most
``max_replacements`` actors are replaced in all; past that, ``reset`` raises
:class:`~isg_gym.eval.errors.InfrastructureError`.

Plugging it into a rollout loop (plain Ray, the shape of SkyRL's and veRL's agent loops:
generate, step, repeat until every trajectory is done)::

    import ray
    from isg_gym.rl.ray_pool import RemoteEnvPool

    ray.init(address="auto")                      # or a local instance
    pool = RemoteEnvPool("ISG-v0", num_envs=64, num_actors=8,
                         env_kwargs={"max_steps": 20}, autoreset_mode="disabled")
    observations, infos = pool.reset(options=[{"question": q} for q in batch_ids])
    done = np.zeros(pool.num_envs, dtype=bool)
    while not done.all():
        actions = generate(observations)          # the trainer's policy (vLLM, SGLang, ...)
        observations, rewards, terminated, truncated, infos = pool.step(actions)
        done |= terminated | truncated            # keep stepping the others; a done env's
                                                  # action is ignored by the env
    pool.close()

Ray is an optional extra (``pip install 'isg-gym[ray]'``), imported when a pool is made.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from isg_gym.envs.registry import EnvEntry, get_env
from isg_gym.eval.errors import InfrastructureError

__all__ = [
    "RAY_INSTALL",
    "ActorGroup",
    "EnvWorker",
    "RemoteEnv",
    "RemoteEnvPool",
    "connect",
    "failure_text",
    "is_actor_loss",
    "require_ray",
]

RAY_INSTALL = "pip install 'isg-gym[ray]'"
StepResult = tuple[Any, float, bool, bool, dict[str, Any]]


def require_ray() -> ModuleType:
    """The ``ray`` module; ImportError naming the pip command when it is missing."""
    try:
        import ray
    except ImportError:
        raise ImportError(f"Ray is not installed; run: {RAY_INSTALL}") from None
    return ray


def connect(address: str | None = None) -> bool:
    """Connect this process to Ray unless it already is; whether this call did (the caller
    then owns the session and shuts it down).

    ``address``: ``"local"`` starts a new local instance (no dashboard); None follows Ray's own
    rules (``RAY_ADDRESS``, else the cluster last started on this machine with ``ray start``,
    else a new local instance); ``"auto"``, ``"HOST:PORT"`` or ``"ray://HOST:10001"`` (Ray
    Client, needs ``ray[client]``) join a running cluster.
    """
    ray = require_ray()
    if ray.is_initialized():
        return False
    if address == "local":
        ray.init(address="local", include_dashboard=False)
    else:
        ray.init(address=address)
    return True


def failure_text(exc: BaseException, limit: int = 300) -> str:
    """One line about a Ray failure (its first line, without the remote traceback)."""
    text = " ".join(str(exc).split("\n", 1)[0].split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _infra_step(reason: str) -> StepResult:
    """What ``step`` returns for an env whose actor failed: truncated, reward 0."""
    message = f"[error] the environment failed ({reason}); reset this env"
    return message, 0.0, False, True, {"infra_error": reason}


class EnvWorker:
    """The body of one Ray actor: up to ``slots`` envs of ``entry``, each made on first use
    with ``env_kwargs``. Plain Python (no Ray import): the pool wraps it with ``ray.remote``.

    ``reset`` and ``step`` take several slots at once and run them in parallel threads (tool
    calls wait on the sandbox, not on the GIL). An exception inside one env's ``step`` (a bug)
    becomes that env's infrastructure failure; ``reset`` errors (bad options) propagate.
    """

    def __init__(self, entry: EnvEntry, env_kwargs: dict[str, Any], slots: int) -> None:
        self.entry = entry
        self.env_kwargs = dict(env_kwargs)
        self.slots = slots
        self._envs: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._threads = ThreadPoolExecutor(max(1, slots))

    def where(self) -> dict[str, Any]:
        """Which process and machine this actor runs in, and its CPU niceness (Ray starts
        workers at 15 unless ``RAY_worker_niceness`` says otherwise)."""
        return {"pid": os.getpid(), "host": socket.gethostname(), "nice": os.nice(0)}

    def env(self, slot: int) -> Any:
        """The env of ``slot`` (made on first use)."""
        if not 0 <= slot < self.slots:
            raise IndexError(f"slot {slot} out of range 0..{self.slots - 1}")
        with self._lock:
            if slot not in self._envs:
                self._envs[slot] = self.entry.make(**self.env_kwargs)
            return self._envs[slot]

    def spaces(self) -> tuple[Any, Any, dict[str, Any], int | None]:
        """The env's observation space, action space, metadata and step budget (``max_steps``,
        None when the env has none)."""
        env = self.env(0)
        limit = getattr(env.unwrapped, "max_steps", None)
        return env.observation_space, env.action_space, dict(env.metadata), limit

    def reset(
        self, slots: list[int], seeds: list[int | None], options: list[dict[str, Any] | None]
    ) -> list[tuple[Any, dict[str, Any]]]:
        def one(i: int) -> tuple[Any, dict[str, Any]]:
            return self.env(slots[i]).reset(seed=seeds[i], options=options[i])

        return self._each(one, len(slots))

    def step(self, slots: list[int], actions: list[Any]) -> list[StepResult]:
        def one(i: int) -> StepResult:
            try:
                return self.env(slots[i]).step(actions[i])
            except Exception as exc:  # a bug in the env: this env's episode is lost
                return _infra_step(f"the env raised {failure_text(exc)}")

        return self._each(one, len(slots))

    def _each(self, fn: Callable[[int], Any], n: int) -> list[Any]:
        if n == 1:
            return [fn(0)]
        return list(self._threads.map(fn, range(n)))

    def close(self) -> None:
        """Close every env (stops their sandbox workers)."""
        with self._lock:
            envs, self._envs = list(self._envs.values()), {}
        for env in envs:
            env.close()
        self._threads.shutdown(wait=False)


@functools.cache
def _remote_class(cls: type) -> Any:
    return require_ray().remote(cls)


class ActorGroup:
    """``count`` Ray actors of ``cls`` (made with ``args``), each replaced by a new one when it
    dies, at most ``max_replacements`` times in all. Thread-safe.

    A caller takes ``(handle, generation)`` from :meth:`current` and, when a call on that
    handle failed because the actor is gone, calls :meth:`replace` with the same generation
    (several callers seeing the same death replace the actor once). A position whose actor died
    after the replacements ran out holds None; :attr:`lost` says why.
    """

    def __init__(
        self,
        cls: type,
        args: tuple[Any, ...],
        count: int,
        *,
        slots: int,
        max_replacements: int,
        actor_cpus: float = 1.0,
    ) -> None:
        self._ray = require_ray()
        self._options = {"num_cpus": actor_cpus, "max_concurrency": slots + 2,
                         "max_restarts": 0, "max_task_retries": 0}  # fmt: skip
        self._cls, self._args = cls, args
        self.max_replacements = max_replacements
        self.replaced = 0
        self.lost: dict[int, str] = {}
        self._lock = threading.Lock()
        self._actors: list[Any] = [self._start() for _ in range(count)]
        self._generation = [0] * count

    def _start(self) -> Any:
        return _remote_class(self._cls).options(**self._options).remote(*self._args)

    def __len__(self) -> int:
        return len(self._actors)

    def current(self, i: int) -> tuple[Any, int]:
        """The live actor at position ``i`` (None when it is lost) and its generation."""
        with self._lock:
            return self._actors[i], self._generation[i]

    def replace(self, i: int, generation: int, reason: str) -> None:
        """The actor ``(i, generation)`` died of ``reason``: kill what is left of it and start
        a new one (unless that was done already, or the replacements ran out)."""
        with self._lock:
            if self._generation[i] != generation or self._actors[i] is None:
                return
            self._kill(self._actors[i])
            self._generation[i] += 1
            if self.replaced >= self.max_replacements:
                self._actors[i] = None
                self.lost[i] = reason
                return
            self.replaced += 1
            self._actors[i] = self._start()

    def _kill(self, actor: Any) -> None:
        with contextlib.suppress(Exception):  # already gone
            self._ray.kill(actor, no_restart=True)

    def close(self, timeout: float = 60.0) -> None:
        """Ask every live actor to close its envs (up to ``timeout`` seconds), then kill it."""
        with self._lock:
            actors, self._actors = [a for a in self._actors if a is not None], []
        if timeout > 0:
            refs = [a.close.remote() for a in actors]
            with contextlib.suppress(Exception):  # a dead actor: nothing to close
                self._ray.wait(refs, num_returns=len(refs), timeout=timeout)
        for actor in actors:
            self._kill(actor)


def is_actor_loss(exc: BaseException) -> bool:
    """Whether a failed Ray call means the actor is gone (replace it), rather than an
    exception raised by the called method (the actor lives on)."""
    ray = require_ray()
    return isinstance(exc, ray.exceptions.RayError) and not isinstance(
        exc, ray.exceptions.RayTaskError
    )


class RemoteEnvPool(VectorEnv):
    """``num_envs`` envs of the registered env ``env`` (an id or an
    :class:`~isg_gym.envs.registry.EnvEntry`) on ``num_actors`` Ray actors (see the module
    docstring). Env ``i`` lives in actor ``i % num_actors``.

    ``env_kwargs`` go to every env's constructor; ``autoreset_mode`` is ``"next_step"``
    (Gymnasium's default: the step after an episode ended resets that env, reward 0) or
    ``"disabled"``; ``actor_cpus`` is the CPUs each actor reserves from Ray (so the cluster
    spreads them); ``max_replacements`` (default ``2 * num_actors``) bounds the actors replaced
    after a death. Ray must be installed; a Ray session is started with Ray's defaults when the
    process has none (call ``ray.init`` or :func:`connect` first to choose).
    """

    def __init__(
        self,
        env: str | EnvEntry = "ISG-v0",
        num_envs: int = 4,
        num_actors: int = 2,
        env_kwargs: dict[str, Any] | None = None,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        actor_cpus: float = 1.0,
        max_replacements: int | None = None,
        worker: type = EnvWorker,
        worker_args: tuple[Any, ...] = (),
    ) -> None:
        if num_envs < 1 or num_actors < 1:
            raise ValueError(f"num_envs and num_actors must be >= 1, got {num_envs}, "
                             f"{num_actors}")  # fmt: skip
        mode = AutoresetMode(autoreset_mode) if isinstance(autoreset_mode, AutoresetMode) else {
            "next_step": AutoresetMode.NEXT_STEP, "disabled": AutoresetMode.DISABLED,
        }.get(str(autoreset_mode).lower())  # fmt: skip
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED):
            raise ValueError(f"autoreset_mode must be 'next_step' or 'disabled', got "
                             f"{autoreset_mode!r}")  # fmt: skip
        self.entry = env if isinstance(env, EnvEntry) else get_env(env)
        self._ray = require_ray()
        self.num_envs = num_envs
        num_actors = min(num_actors, num_envs)
        per_actor = -(-num_envs // num_actors)
        self._where = [(i % num_actors, i // num_actors) for i in range(num_envs)]
        self.actors = ActorGroup(
            worker, (self.entry, dict(env_kwargs or {}), per_actor, *worker_args), num_actors,
            slots=per_actor, actor_cpus=actor_cpus,
            max_replacements=2 * num_actors if max_replacements is None else max_replacements,
        )  # fmt: skip
        self._generation: list[int | None] = [None] * num_envs  # actor generation at reset
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)
        self._observations: list[Any] = [None] * num_envs
        try:
            first, _ = self.actors.current(0)
            obs_space, action_space, metadata, max_steps = self._ray.get(first.spaces.remote())
        except BaseException:
            self.actors.close(timeout=0)
            raise
        self.single_observation_space = obs_space
        self.single_action_space = action_space
        self.observation_space = batch_space(obs_space, num_envs)
        self.action_space = batch_space(action_space, num_envs)
        self.metadata = {**metadata, "autoreset_mode": mode}
        self.max_steps = max_steps  # each env's step budget (``answer_on_last_step`` reads it)
        self.autoreset_mode = mode
        self.envs = [RemoteEnv(self, i) for i in range(num_envs)]
        self.closed = False

    # --- the vector-env interface ------------------------------------------------------------

    def reset(
        self,
        *,
        seed: int | Sequence[int | None] | None = None,
        options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Reset the envs (those of ``options["reset_mask"]`` only, when given): ``seed`` an
        int (``seed + i`` for env ``i``) or one per env; ``options`` one dict for all or one
        per env. Returns the observations of all envs and the stacked infos of those reset."""
        seeds = self._seeds(seed)
        if isinstance(options, dict) and "reset_mask" in options:
            options = dict(options)
            mask = np.asarray(options.pop("reset_mask"), dtype=np.bool_)
            if mask.shape != (self.num_envs,) or not mask.any():
                raise ValueError(f"options['reset_mask'] must be {self.num_envs} booleans, at "
                                 "least one True")  # fmt: skip
        else:
            mask = np.ones(self.num_envs, dtype=np.bool_)
        per_env = self._per_env(options)
        indices = [i for i in range(self.num_envs) if mask[i]]
        results = self._reset(indices, [seeds[i] for i in indices], [per_env[i] for i in indices])
        self._autoreset[mask] = False
        infos: dict[str, Any] = {}
        for i, (observation, info) in zip(indices, results, strict=True):
            self._observations[i] = observation
            infos = self._add_info(infos, info, i)
        return tuple(self._observations), infos

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[tuple[Any, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env with its action (an env due for autoreset is reset instead). The
        observations, rewards, terminations, truncations and stacked infos."""
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        again = [i for i in range(self.num_envs) if self._autoreset[i]]
        stepped = [i for i in range(self.num_envs) if not self._autoreset[i]]
        with ThreadPoolExecutor(1) as thread:  # the autoresets run while the others step
            resets = thread.submit(self._reset, again, [None] * len(again), [None] * len(again))
            results = self._step(stepped, [actions[i] for i in stepped])
            for i, (observation, info) in zip(again, resets.result(), strict=True):
                self._observations[i] = observation
                infos = self._add_info(infos, info, i)
        for i, (observation, reward, term, trunc, info) in zip(stepped, results, strict=True):
            self._observations[i] = observation
            rewards[i], terminated[i], truncated[i] = reward, term, trunc
            infos = self._add_info(infos, info, i)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._autoreset = terminated | truncated
        return tuple(self._observations), rewards, terminated, truncated, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close every env and stop the actors."""
        self.actors.close()

    # --- shared by the vector interface and the handles --------------------------------------

    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        return seeds

    def _per_env(self, options: Any) -> list[dict[str, Any] | None]:
        if options is None or isinstance(options, dict):
            return [options] * self.num_envs
        options = list(options)
        if len(options) != self.num_envs:
            raise ValueError(f"expected one options dict per env ({self.num_envs}), got "
                             f"{len(options)}")  # fmt: skip
        return options

    def _by_actor(self, indices: list[int]) -> dict[int, list[int]]:
        groups: dict[int, list[int]] = {}
        for i in indices:
            groups.setdefault(self._where[i][0], []).append(i)
        return groups

    def _reset(
        self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any] | None]
    ) -> list[tuple[Any, dict[str, Any]]]:
        """Reset envs ``indices``; an actor found dead is replaced and the reset retried there
        (InfrastructureError once the replacements ran out)."""
        arguments = dict(zip(indices, zip(seeds, options, strict=True), strict=True))
        out: dict[int, tuple[Any, dict[str, Any]]] = {}
        pending = self._by_actor(indices)
        while pending:
            calls = {}
            for a, members in pending.items():
                handle, generation = self.actors.current(a)
                if handle is None:
                    raise InfrastructureError(
                        f"Ray actor {a} of the env pool died ({self.actors.lost[a]}) and the "
                        f"{self.actors.max_replacements} replacements are used up"
                    )
                slots = [self._where[i][1] for i in members]
                ref = handle.reset.remote(slots, [arguments[i][0] for i in members],
                                          [arguments[i][1] for i in members])  # fmt: skip
                calls[a] = (ref, generation, members)
            pending = {}
            for a, (ref, generation, members) in calls.items():
                try:
                    results = self._ray.get(ref)
                except Exception as exc:
                    if not is_actor_loss(exc):
                        raise
                    self.actors.replace(a, generation, failure_text(exc))
                    pending[a] = members
                    continue
                for i, result in zip(members, results, strict=True):
                    out[i] = result
                    self._generation[i] = generation
        return [out[i] for i in indices]

    def _step(self, indices: list[int], actions: list[Any]) -> list[StepResult]:
        """Step envs ``indices``; an env whose actor died (now or since its reset) comes back
        truncated with ``info["infra_error"]``."""
        out: dict[int, StepResult] = {}
        calls = []
        action_of = dict(zip(indices, actions, strict=True))
        for a, members in self._by_actor(indices).items():
            handle, generation = self.actors.current(a)
            live = []
            for i in members:
                if self._generation[i] is None:
                    raise RuntimeError(f"env {i}: call reset() before step()")
                if self._generation[i] != generation:
                    out[i] = _infra_step("its Ray actor died since the env was reset")
                else:
                    live.append(i)
            if live and handle is not None:
                slots = [self._where[i][1] for i in live]
                calls.append((a, generation, live,
                              handle.step.remote(slots, [action_of[i] for i in live])))  # fmt: skip
        for a, generation, live, ref in calls:
            try:
                results = self._ray.get(ref)
            except Exception as exc:
                reason = f"its Ray actor failed: {failure_text(exc)}"
                if is_actor_loss(exc):
                    self.actors.replace(a, generation, failure_text(exc))
                results = [_infra_step(reason) for _ in live]
            for i, result in zip(live, results, strict=True):
                out[i] = result
        return [out[i] for i in indices]


class RemoteEnv(gym.Env[Any, Any]):
    """One env of a :class:`RemoteEnvPool` as a Gymnasium env: ``reset`` and ``step`` run in
    the env's actor (one Ray call each). The pool owns the actors: ``close`` is a no-op, close
    the pool. Use one thread (or task) per handle at a time."""

    def __init__(self, pool: RemoteEnvPool, index: int) -> None:
        self.pool, self.index = pool, index
        self.observation_space = pool.single_observation_space
        self.action_space = pool.single_action_space
        self.metadata = {k: v for k, v in pool.metadata.items() if k != "autoreset_mode"}
        self.max_steps = pool.max_steps

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        return self.pool._reset([self.index], [seed], [options])[0]

    def step(self, action: Any) -> StepResult:
        return self.pool._step([self.index], [action])[0]

    def close(self) -> None:
        """The pool owns the env (``pool.close()``)."""
