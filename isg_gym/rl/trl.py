"""ISG-v0 as a TRL ``environment_factory``::

    GRPOTrainer(environment_factory=ISGToolEnv, reward_funcs=[isg_reward],
                train_dataset=Dataset.from_list(make_dataset_rows(...)), ...)

TRL's contract (``environment_factory``, experimental in TRL): the trainer builds one instance
per rollout slot with no arguments, calls ``reset(**row)`` with the dataset row's columns at the
start of every rollout and appends the returned text to the last prompt message, exposes every
public method other than ``reset`` and ``get_reward`` (functions of the class whose name does
not start with ``_``) as a tool built from its signature and Google-style docstring, and passes
the instances to the reward functions as ``environments``. A class with a ``get_reward`` method
gets it added as a reward source of its own.

:class:`ISGToolEnv` wraps one :class:`~isg_gym.envs.env.ISGEnv`: its tools are the env's
tools. It has no ``get_reward``: :func:`isg_reward` is its one reward source, because only a
reward function sees the completions, and a rollout that ends with a plain assistant message
(no tool call) is graded on that message, as the final answer (TRL ends the rollout there and
the env never sees the text otherwise). Configure the wrapped env with
``ISGToolEnv.configure(max_steps=20, sandbox="auto")`` (a subclass) or by subclassing and
setting ``env_kwargs``. ``configure`` lives on the metaclass, so instances do not expose it to
TRL as a tool.

The dataset rows' system prompt (:func:`make_dataset_rows`) states the task and the answering
conventions without the tool list: TRL's chat template adds the tool schemas itself. Models
whose chat template has no tool calls (SmolLM2) need
:func:`isg_gym.rl.chat_template.use_hermes_chat_template`.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Sequence
from typing import Any, ClassVar

from isg_gym.envs.actions import parse_action
from isg_gym.envs.env import ISGEnv
from isg_gym.eval.splits import generate_split, resolve_split, train_env_kwargs
from isg_gym.rl.schemas import system_prompt

TOOL_METHODS: tuple[str, ...] = (
    "list_directory",
    "read_text_file",
    "run_python_code",
    "final_answer",
)
MAX_GENERATED_ROWS = 100_000  # a range of repositories is turned into one question each

_ENV_PARAMS = frozenset(inspect.signature(ISGEnv.__init__).parameters) - {"self"}


def check_env_kwargs(env_kwargs: dict[str, Any]) -> None:
    """A ``TypeError`` naming the keys that are not :class:`~isg_gym.envs.env.ISGEnv`
    arguments."""
    unknown = sorted(set(env_kwargs) - _ENV_PARAMS)
    if unknown:
        raise TypeError(f"unknown ISGEnv arguments {unknown}; known: {sorted(_ENV_PARAMS)}")


class _Configurable(type):
    """Metaclass giving ``ISGToolEnv.configure`` without an instance method (TRL would turn an
    instance method into a tool)."""

    env_kwargs: dict[str, Any]

    def configure(cls, **env_kwargs: Any) -> type[ISGToolEnv]:
        """A subclass whose wrapped env gets ``env_kwargs`` (merged over the class's own)."""
        check_env_kwargs(env_kwargs)
        namespace = {
            "env_kwargs": {**cls.env_kwargs, **env_kwargs},
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        return type(cls)(cls.__name__, (cls,), namespace)


class ISGToolEnv(metaclass=_Configurable):
    """One ISG-v0 episode per rollout, for TRL's ``environment_factory``.

    ``env_kwargs`` (class level) go to :class:`~isg_gym.envs.env.ISGEnv`; by default the env
    draws only training repositories (:func:`isg_gym.eval.splits.train_env_kwargs`), so a row
    without ``question_id`` never samples an evaluation question. Attributes after an episode:
    ``question_id``, ``reward`` (0 until a final answer, then the env's reward for it),
    ``outcome`` (the env's, e.g. ``correct``; ``no_answer`` when the rollout ended without
    one), ``steps`` and ``info`` (the reset info).
    """

    env_kwargs: ClassVar[dict[str, Any]] = train_env_kwargs()

    def __init__(self) -> None:
        check_env_kwargs(self.env_kwargs)
        self._env = ISGEnv(**self.env_kwargs)
        self._reward = 0.0
        self._done = False
        self._started = False
        self.question_id: str | None = None
        self.outcome: str | None = None
        self.steps = 0
        self.info: dict[str, Any] = {}

    def reset(self, **kwargs: Any) -> str:
        """Start an episode; returns the question and the answer instructions.

        ``kwargs`` are the dataset row's columns: ``question_id`` pins the question, else
        ``seed`` (optional) seeds the env's draw. Other columns (``prompt``, ...) are ignored.
        """
        question_id = kwargs.get("question_id")
        seed = kwargs.get("seed")
        options = {"question": str(question_id)} if question_id else None
        _, info = self._env.reset(seed=None if seed is None else int(seed), options=options)
        self._reward = 0.0
        self._done = False
        self._started = True
        self.question_id = info["question_id"]
        self.outcome = None
        self.steps = 0
        self.info = info
        return info["prompt"]["user"]

    # --- tools (public methods: TRL turns each into a function-calling tool) ----------------

    def list_directory(self, path: str = "/", depth: int = 1, pattern: str | None = None) -> str:
        """List a directory of the data repository. Directories end with '/'.

        Args:
            path: Directory to list, relative to the repository root ('/' is the root).
            depth: How many levels to descend (1 = direct children).
            pattern: Optional glob such as '*.csv' matched against each entry's name and its
                path relative to `path`.

        Returns:
            The listing, one entry per line, or an error message.
        """
        arguments: dict[str, Any] = {"path": path, "depth": depth}
        if pattern is not None:
            arguments["pattern"] = pattern
        return self._call("list_directory", arguments)

    def read_text_file(self, path: str, head: int | None = None, tail: int | None = None) -> str:
        """Read a file of the repository as text (an xlsx workbook as tab-separated text).

        Args:
            path: File path relative to the repository root, e.g. 'a/b.csv'.
            head: Only the first N lines.
            tail: Only the last N lines.

        Returns:
            The file's text (long files are cut with a note), or an error message.
        """
        arguments: dict[str, Any] = {"path": path}
        if head is not None:
            arguments["head"] = head
        if tail is not None:
            arguments["tail"] = tail
        return self._call("read_text_file", arguments)

    def run_python_code(self, code: str) -> str:
        """Run Python 3 code in a sandbox (numpy, pandas, scipy; no network). The repository's
        files are at /data, read-only, which is also the working directory.

        Args:
            code: The Python source to run.

        Returns:
            The code's stdout, stderr and the value of a trailing expression.
        """
        return self._call("run_python_code", {"code": code})

    def final_answer(self, answer: str) -> str:
        """Submit the final answer; this ends the episode.

        Args:
            answer: The answer value only, or 'not possible' when the question cannot be
                answered from the data.

        Returns:
            A confirmation that the answer was received.
        """
        return self._call("final_answer", {"answer": answer})

    # --- not tools: a property, and methods whose name starts with "_" ----------------------

    @property
    def reward(self) -> float:
        """The episode's reward: 0 until a final answer, then the env's reward for it."""
        return self._reward

    def _end_with_message(self, text: str) -> None:
        """The rollout ended on ``text``, an assistant message TRL ran no tool call from: grade
        it as the final answer (its ``<think>`` part removed). A ``final_answer`` call written
        in it that TRL could not parse counts as the answer; other tool calls in it are not run
        (the rollout is over) and leave the episode without an answer."""
        if not self._started or self._done:
            return
        parsed = parse_action(text)
        if parsed.calls:
            final = next((c for c in parsed.calls if c.error is None and c.name == "final_answer"),
                         None)  # fmt: skip
            if final is not None:
                self._call("final_answer", final.arguments)
        else:  # prose, an {"answer": ...} or a \boxed{} answer, or nothing
            self._call("final_answer", {"answer": parsed.text or parsed.answer_text or ""})
        if not self._done:
            self._done = True
            self.outcome = "no_answer"

    # --- internals --------------------------------------------------------------------------

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if not self._started:
            return "[error] no episode: reset() was not called"
        if self._done:
            return "[error] the episode is over; no more tool calls are accepted"
        observation, reward, terminated, truncated, info = self._env.step(
            {"name": name, "arguments": arguments}
        )
        self.steps += 1
        if terminated or truncated:
            self._done = True
            self._reward = float(reward)
            self.outcome = info.get("outcome")
        return observation

    def __del__(self) -> None:
        env = self.__dict__.get("_env")
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()


def isg_reward(
    environments: Sequence[Any], completions: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """The reward function for ``GRPOTrainer(reward_funcs=[isg_reward])``: each rollout's env
    reward (1 for a right final answer by default, plus the ``reward_config``'s format part).

    A rollout whose last assistant message made no tool call is first graded on that message,
    as its final answer (:meth:`ISGToolEnv._end_with_message`); TRL passes the completions (lists
    of chat messages) to reward functions, never to the environments. Environments of another
    class get None (TRL ignores it).
    """
    rewards: list[float | None] = []
    for i, env in enumerate(environments):
        if not isinstance(env, ISGToolEnv):
            rewards.append(None)
            continue
        text = final_message_text(completions[i]) if completions is not None else None
        if text is not None:
            env._end_with_message(text)
        rewards.append(env.reward)
    return rewards


def final_message_text(completion: Any) -> str | None:
    """The text of a completion's last message when it is an assistant message without tool
    calls (None otherwise: the rollout stopped on a tool call or a tool result)."""
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, Sequence) or not completion:
        return None
    last = completion[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content") or ""
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def make_dataset_rows(
    split_or_range: str | Sequence[str] | range,
    n: int | None = None,
    *,
    max_steps: int = 30,
    tool_list: bool = False,
) -> list[dict[str, Any]]:
    """Rows for a TRL ``Dataset.from_list``: ``prompt`` (the system prompt and an empty user
    message, to which TRL appends what :meth:`ISGToolEnv.reset` returns: the question) and
    ``question_id``. The system prompt states the task, the step budget and the answering
    conventions; the tools are left to TRL's chat template (``tool_list=True`` adds the env's
    own tool list and call format, for a trainer that does not render tools).

    ``split_or_range``: a split name (``"isg-500"``), ``"repos:A-B"``, a list of question ids
    (see :func:`isg_gym.eval.splits.resolve_split`), or a ``range`` of repository seeds (one
    question each, same recipe as the splits; for training use seeds in
    :data:`isg_gym.eval.splits.TRAIN_REPOSITORIES`). ``n`` keeps the first ``n`` rows.
    ``max_steps`` is the step budget the prompt announces: match the env's.
    """
    ids = dataset_question_ids(split_or_range, n)
    system = system_prompt(max_steps, tools=tool_list)
    return [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": ""},
            ],
            "question_id": qid,
        }
        for qid in ids
    ]


def dataset_question_ids(
    split_or_range: str | Sequence[str] | range, n: int | None = None
) -> list[str]:
    """Question ids of a split name, ``"repos:A-B"``, a list of ids, or a ``range`` of
    repository seeds (one question each, the split recipe), the first ``n`` of them."""
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if isinstance(split_or_range, range):
        seeds = split_or_range if n is None else split_or_range[:n]
        if len(seeds) > MAX_GENERATED_ROWS:
            raise ValueError(
                f"{len(seeds)} repositories is too many rows; pass n (at most {MAX_GENERATED_ROWS})"
            )
        return generate_split(seeds)
    ids = resolve_split(split_or_range)
    return ids if n is None else ids[:n]
