"""``ISG-v0``: a multi-turn tool-use environment over InfiniteScienceGym repositories."""

from __future__ import annotations

import contextlib
import json
import logging
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym

from isg_gym.dataset import ANSWER_INSTRUCTIONS
from isg_gym.envs import materialize
from isg_gym.envs.actions import (
    FORMAT_HELP,
    ParsedCall,
    describe_action,
    parse_action,
    safe_text,
)
from isg_gym.envs.spaces import ToolCallText, UnicodeText
from isg_gym.qa import QUESTION_TYPES, Question, format_answer, question_at, question_from_id
from isg_gym.qa.conventions import CONVENTIONS
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO, parse_question_id
from isg_gym.repository import Repository
from isg_gym.rewards import RewardConfig, extract, grade, reward
from isg_gym.tools.filesystem import (
    ToolError,
    existing_files,
    list_directory,
    read_text_file,
    resolve,
)
from isg_gym.tools.sandbox.replay import replay_program
from isg_gym.tools.schemas import (
    FINAL_ANSWER,
    LIST_DIRECTORY,
    READ_TEXT_FILE,
    RUN_PYTHON_CODE,
    describe_tools,
    tool_schemas,
)

_log = logging.getLogger(__name__)

SEED_LIMIT = 2**31 - 1
MAX_CODE_CHARS = 100_000
MAX_ARG_CHARS = 10_000
OBSERVATION_LIMIT = 1 << 20
MAX_SESSION_CHARS = 1_000_000
PYTHON_SESSIONS = ("fresh", "persistent")
_SLOT_TRIES = 64
_REPO_TRIES = 50

SYSTEM_PROMPT = """\
You are a data analyst. A scientific data repository is mounted read-only at /data. Answer the \
question below by exploring the repository with the tools, then submit the answer with \
final_answer.

Tools:
{tools}

To call a tool, write one or more blocks like
<tool_call>{{"name": "list_directory", "arguments": {{"path": "/", "depth": 2}}}}</tool_call>
Tool results come back in the next message. You have at most {max_steps} messages.

{conventions}"""


def _as_int(value: Any, name: str, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ToolError(f"`{name}` must be an integer, got {type(value).__name__}")
    return value


def _as_str(value: Any, name: str, limit: int = MAX_ARG_CHARS) -> str:
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ToolError(f"`{name}` is too long ({len(value)} characters; at most {limit})")
    return value


def _check_args(arguments: dict[str, Any], allowed: tuple[str, ...], required: tuple[str, ...]):
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise ToolError(f"unknown arguments {unknown}; allowed: {list(allowed)}")
    missing = [name for name in required if name not in arguments]
    if missing:
        raise ToolError(f"missing required arguments {missing}")


def _cap(text: str, limit: int, what: str = "output") -> str:
    """A safety net: the tools cap their own output (with an exact note) below ``limit``."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[{what} cut by the environment: {len(text) - limit} more characters]"


class ISGEnv(gym.Env[str, Any]):
    """Answer a question about a procedurally generated scientific data repository.

    ## Description

    Each episode draws a repository seed and one question about it (:mod:`isg_gym.qa`). The
    agent explores the repository with tools (list directories, read files, run Python in a
    sandbox over the files) and submits an answer, graded by :func:`isg_gym.rewards.grade`.
    About ``unanswerable_ratio`` of the questions cannot be answered; the right answer to them
    is "not possible".

    ## Observation

    A string (:class:`~isg_gym.envs.spaces.UnicodeText`). After ``reset``: the system prompt
    with the tool descriptions, then the question and the answer instructions. After ``step``:
    the tool results (each headed ``[tool_name]``), or an error message explaining what was
    wrong with the action. Text cannot travel through Gymnasium's shared memory:
    ``gym.vector.AsyncVectorEnv`` needs ``shared_memory=False`` (its default raises an error
    saying so); ``SyncVectorEnv`` needs nothing.

    ## Action

    A string (:class:`~isg_gym.envs.spaces.ToolCallText`): the raw assistant message, with
    Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (several allowed)
    or one bare JSON tool call; ``<think>...</think>`` text is ignored. A message without tool
    calls that contains ``{"answer": ...}`` or ``\\boxed{...}`` is the final answer. ``step``
    also takes structured calls: a dict ``{"name", "arguments"}`` (or the OpenAI
    ``{"type": "function", "function": {...}}`` shape, arguments as a JSON string) or a list
    of them. Tools: ``list_directory(path="/", depth=1, pattern=None)``,
    ``read_text_file(path, head=None, tail=None)``, ``run_python_code(code)``,
    ``final_answer(answer)``; their OpenAI schemas are in ``info["tools"]``.

    ## Rewards

    0 on every step but the last. On a final answer: :func:`isg_gym.rewards.reward` with
    ``reward_config`` (by default 1 when correct, else 0). Truncation gives 0.

    ## Episode End

    Terminated on a final answer (``final_answer`` tool or an answer-only message).
    Truncated after ``max_steps`` steps without one. The last step's ``info`` has
    ``outcome``: ``correct``, ``wrong``, ``abstained`` (answered "not possible" to an
    answerable question), ``format_error`` (no answer could be extracted) or ``truncated``;
    and ``score``: value, parsed answer (as text, so that vector envs can stack it), correct,
    abstained, explanation, components.

    ## Info

    ``reset``: ``question_id``, ``repository``, ``type``, ``family``, ``tools`` (OpenAI schemas)
    and ``prompt`` (the first observation split into ``system`` and ``user`` text, for chat
    APIs). ``step`` adds ``tool_calls`` (names), ``tool_results`` (one dict per parsed call:
    name, arguments, output text, error flag; answer one tool message per call with them),
    ``parse_error`` (why the action, or one of its calls, could not be used; else None) and
    ``files_read`` (repository files the step's tools read: ``read_text_file`` paths and the
    files ``run_python_code`` opened), and ``infra_error`` when the environment itself failed
    during the step (the sandbox could not start or broke): an infrastructure failure, not
    the agent's; evaluation runs end such an episode and count it apart.

    ## Arguments

    - ``start_repository``, ``num_repositories``: seeds are drawn from
      ``[start, start + num)`` (``num=0``: every seed from ``start`` up to 2**31 - 1), like
      procgen's ``start_level`` / ``num_levels``; use disjoint ranges for train and test.
    - ``question_types``: names from :data:`isg_gym.qa.QUESTION_TYPES` (default all).
    - ``unanswerable_ratio``: share of unanswerable question slots (default 0.25).
    - ``questions_per_repository``: question slots drawn per repository (default 8).
    - ``max_steps``: step budget (default 30).
    - ``max_output_chars``: cap on each tool's output; ``max_list_entries``: cap on listings.
    - ``sandbox``: backend name for :func:`isg_gym.tools.sandbox.get_sandbox` (``"auto"``,
      the default: bubblewrap, else Landlock; ``"bwrap"``, ``"landlock"``, ``"none"``) or an
      object with ``run(code, files_dir)`` and ``close()``. A backend that cannot run here
      raises ``SandboxUnavailable`` at construction (probed once per process), unless it is
      ``"none"``, which runs model code without isolation;
      ``sandbox_limits``: a ``SandboxLimits`` or a dict of its fields.
    - ``python_session``: ``"fresh"`` (default): every ``run_python_code`` call starts from an
      empty namespace. ``"persistent"``: variables, imports and functions of earlier calls in
      the episode are visible, like notebook cells. The sandbox forks a fresh process per call,
      so this is done by replay: the env keeps the code of the episode's earlier calls that
      finished without error and re-executes them (output discarded) before the new code.
      Caveats: the earlier cells' cost is paid again on every call and counts against the
      call's time and memory limits; their side effects happen again (random draws differ
      unless seeded, files written under /tmp are rewritten); a replayed cell that now fails
      is reported on stderr and skipped; line numbers of the new cell in tracebacks are one
      higher; the history is cleared by ``reset()`` and limited to
      :data:`MAX_SESSION_CHARS` characters.
    - ``reward_config``: :class:`~isg_gym.rewards.RewardConfig`.
    - ``answer_instructions``: text after the question (default
      :data:`isg_gym.dataset.ANSWER_INSTRUCTIONS`).
    - ``question_configs``: per-type ``Config`` instances.
    - ``privileged_info``: put the gold answer, answerability, reason, the question's structured
      ``params``, ``sig_figs`` (0 when the answer is not a float) and ``evidence`` files in
      ``info`` (debugging, analysis, oracles).
    - ``render_mode``: ``"ansi"`` for a text transcript.
    - ``question_texts``: question id -> text shown instead of the templated question (e.g.
      accepted paraphrases from ``isg paraphrase``); the answer and grading are unchanged.

    ``reset(options=...)`` pins an episode: ``{"repository": 118}``, ``{"question":
    "118.univariate_statistic.3"}``, or ``{"repository": 118, "type": "count_rows"}``.

    ## Version History

    - v0: initial version. Question generator v2 (:data:`isg_gym.qa.QUESTION_VERSION`):
      shortcut-free questions and the answering conventions in the system prompt.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        start_repository: int = 0,
        num_repositories: int = 0,
        question_types: Sequence[str] | None = None,
        unanswerable_ratio: float = DEFAULT_UNANSWERABLE_RATIO,
        questions_per_repository: int = 8,
        max_steps: int = 30,
        max_output_chars: int = 8000,
        max_list_entries: int = 200,
        sandbox: Any = "auto",
        sandbox_limits: Any = None,
        python_session: str = "fresh",
        reward_config: RewardConfig | None = None,
        answer_instructions: str = ANSWER_INSTRUCTIONS,
        question_configs: Mapping[str, Any] | None = None,
        privileged_info: bool = False,
        render_mode: str | None = None,
        question_texts: Mapping[str, str] | None = None,
    ) -> None:
        if not 0 <= start_repository <= SEED_LIMIT:
            raise ValueError(f"start_repository must be in [0, {SEED_LIMIT}]")
        if num_repositories < 0:
            raise ValueError("num_repositories must be >= 0 (0 = unlimited)")
        types = sorted(QUESTION_TYPES) if question_types is None else list(question_types)
        unknown = [t for t in types if t not in QUESTION_TYPES]
        if unknown or not types:
            raise ValueError(f"unknown question types {unknown}; known {sorted(QUESTION_TYPES)}")
        if not 0.0 <= unanswerable_ratio <= 1.0:
            raise ValueError("unanswerable_ratio must be within [0, 1]")
        if max_steps < 1 or questions_per_repository < 1:
            raise ValueError("max_steps and questions_per_repository must be >= 1")
        if max_output_chars < 100 or max_list_entries < 1:
            raise ValueError("max_output_chars must be >= 100 and max_list_entries >= 1")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if python_session not in PYTHON_SESSIONS:
            raise ValueError(
                f"python_session must be one of {PYTHON_SESSIONS}, got {python_session!r}"
            )
        if sandbox is None or isinstance(sandbox, str):
            from isg_gym.tools.sandbox import resolve_backend

            sandbox = "auto" if sandbox is None else sandbox
            resolve_backend(sandbox)  # unknown: ValueError; cannot run here: SandboxUnavailable
        elif not callable(getattr(sandbox, "run", None)):
            raise ValueError(
                "sandbox must be a backend name ('auto', 'bwrap', 'landlock', 'none') or an "
                f"object with run(code, files_dir) and close(), got {sandbox!r}"
            )
        self.start_repository = int(start_repository)
        self.num_repositories = int(num_repositories)
        self.question_types = types
        self.unanswerable_ratio = float(unanswerable_ratio)
        self.questions_per_repository = int(questions_per_repository)
        self.max_steps = int(max_steps)
        self.max_output_chars = int(max_output_chars)
        self.max_list_entries = int(max_list_entries)
        self.sandbox_spec = sandbox
        self.sandbox_limits = sandbox_limits
        self.python_session = python_session
        self.reward_config = reward_config or RewardConfig()
        self.answer_instructions = answer_instructions
        self.question_configs = dict(question_configs) if question_configs else None
        self.privileged_info = bool(privileged_info)
        self.render_mode = render_mode
        self.question_texts = dict(question_texts or {})

        self.observation_space = UnicodeText(OBSERVATION_LIMIT)
        self.action_space = ToolCallText(OBSERVATION_LIMIT)
        self._init_runtime()

    # --- state -----------------------------------------------------------------------------

    def _init_runtime(self) -> None:
        self._sandbox: Any = None
        self._repos: OrderedDict[int, Repository] = OrderedDict()
        self._leases = materialize.Leases(keep=2)
        self._finalizer = weakref.finalize(self, self._leases.release_all)
        self._cells: list[str] = []  # successful run_python_code cells (persistent session)
        self._repo: Repository | None = None
        self._question: Question | None = None
        self._steps = 0
        self._done = False
        self._transcript: list[tuple[str, str]] = []
        self._files_read: list[str] = []  # repository files the current step's tools read
        self._infra_error: str | None = None  # the sandbox failed during the current step
        self._closed = False

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the configuration, the random state and the episode, not the runtime."""
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        state["_np_random"] = self._np_random
        state["_np_random_seed"] = getattr(self, "_np_random_seed", None)
        state["_episode"] = (
            None if self._question is None else self._question.id,
            self._steps,
            self._done,
            list(self._transcript),
            list(self._cells),
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        episode = state.pop("_episode")
        self.__dict__.update(state)
        self._init_runtime()
        question_id, self._steps, self._done, self._transcript, *rest = episode
        self._cells = list(rest[0]) if rest else []
        if question_id is not None:
            seed = parse_question_id(question_id)[0]
            self._repo = self._repository(seed)
            self._question = question_from_id(
                question_id, self._repo, self.unanswerable_ratio, self.question_configs
            )

    def _repository(self, seed: int) -> Repository:
        repo = self._repos.get(seed)
        if repo is None:
            repo = Repository.from_seed(seed)
            self._repos[seed] = repo
            while len(self._repos) > 4:
                self._repos.popitem(last=False)
        else:
            self._repos.move_to_end(seed)
        return repo

    # --- reset -----------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - {"repository", "question", "type"})
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; use repository, question, type")
        self._question = self._pick(options)
        self._repo = self._repository(self._question.repository)
        self._steps = 0
        self._done = False
        self._cells = []
        observation = self._first_observation()
        self._transcript = [("system", observation)]
        return observation, self._info(first=True)

    def _pick(self, options: dict[str, Any]) -> Question:
        rng = self.np_random
        if options.get("question") is not None:
            qid = options["question"]
            seed = parse_question_id(qid)[0]
            if options.get("repository") not in (None, seed):
                raise ValueError(f"question {qid!r} is not in repository {options['repository']}")
            return question_from_id(
                qid, self._repository(seed), self.unanswerable_ratio, self.question_configs
            )
        types = self.question_types
        if options.get("type") is not None:
            if options["type"] not in QUESTION_TYPES:
                raise ValueError(f"unknown question type {options['type']!r}")
            types = [options["type"]]
        pinned = options.get("repository")
        if pinned is not None and (isinstance(pinned, bool) or not isinstance(pinned, int)):
            raise ValueError(f"repository must be an integer seed, got {pinned!r}")
        for _ in range(1 if pinned is not None else _REPO_TRIES):
            if pinned is not None:
                seed = int(pinned)
            else:
                span = self.num_repositories or (SEED_LIMIT + 1 - self.start_repository)
                seed = self.start_repository + int(rng.integers(span))
            repo = self._repository(seed)
            first = int(rng.integers(self.questions_per_repository))
            tries = _SLOT_TRIES if pinned is not None else self.questions_per_repository
            for offset in range(tries):
                question = question_at(
                    repo,
                    first + offset,
                    types,
                    self.unanswerable_ratio,
                    configs=self.question_configs,
                )
                if question is not None:
                    return question
        raise ValueError(f"no question of types {types} found (options {options})")

    def _prompt(self) -> dict[str, str]:
        assert self._question is not None
        return {
            "system": SYSTEM_PROMPT.format(
                tools=describe_tools(), max_steps=self.max_steps, conventions=CONVENTIONS
            ),
            "user": f"Question: {self._question_text()}\n\n{self.answer_instructions}",
        }

    def _question_text(self) -> str:
        assert self._question is not None
        return self.question_texts.get(self._question.id, self._question.text)

    def _first_observation(self) -> str:
        prompt = self._prompt()
        return f"{prompt['system']}\n\n{prompt['user']}"

    def _info(self, first: bool = False) -> dict[str, Any]:
        q = self._question
        assert q is not None
        info: dict[str, Any] = {
            "question_id": q.id,
            "repository": q.repository,
            "type": q.type,
            "family": q.family,
            "step": self._steps,
        }
        if first:
            info["tools"] = tool_schemas()
            info["prompt"] = self._prompt()
        if self.privileged_info:
            info["answer"] = format_answer(q)
            info["answerable"] = q.answerable
            info["reason"] = q.reason
            info["params"] = q.params
            info["sig_figs"] = q.sig_figs or 0  # 0: not a float answer (ints stack in vectors)
            info["evidence"] = list(q.evidence)
        return info

    # --- step ------------------------------------------------------------------------------

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._question is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            text = "[error] the episode is over; call reset()"
            return text, 0.0, True, False, {**self._info(), "outcome": "episode_over"}
        self._steps += 1
        self._transcript.append(("assistant", _describe_action(action)))  # capped
        parsed = parse_action(action)
        parts: list[str] = []
        results: list[dict[str, Any]] = []
        self._files_read = []
        self._infra_error = None
        final: tuple[str, bool] | None = None  # (answer text, via an answer-only message)
        if parsed.error is not None:
            parts.append(f"[error] {parsed.error}")
        elif parsed.answer_text is not None:
            final = (parsed.answer_text, True)
        else:
            for call in parsed.calls:
                if call.error is None and call.name == FINAL_ANSWER:
                    answer = self._final_answer_text(call)
                    if isinstance(answer, str):
                        final = (answer, False)
                        results.append(_call_result(call, "", error=False))
                        break
                    parts.append(answer[0])
                    results.append(_call_result(call, answer[0], error=True))
                    continue
                output, failed = self._run_call(call)
                parts.append(output)
                results.append(_call_result(call, output, error=failed))
        info = self._info()
        info["tool_calls"] = [c.name for c in parsed.calls if c.name]
        info["tool_results"] = results
        info["parse_error"] = parsed.error or next(
            (c.error for c in parsed.calls if c.error is not None), None
        )
        assert self._repo is not None  # a failed open of a missing path is not a read
        info["files_read"] = existing_files(self._repo, self._files_read)
        if self._infra_error is not None:  # the environment failed, not the agent
            info["infra_error"] = self._infra_error
        if final is not None:
            observation, value, score = self._finish(final[0])
            if parts:
                observation = "\n\n".join([*parts, observation])
            info.update(score)
            self._done = True
            self._transcript.append(("tool", observation))
            return self._obs(observation), value, True, False, info
        observation = "\n\n".join(parts) if parts else "[error] " + FORMAT_HELP
        truncated = self._steps >= self.max_steps
        if truncated:
            observation += f"\n\n[step limit of {self.max_steps} reached; episode truncated]"
            info["outcome"] = "truncated"
            self._done = True
        self._transcript.append(("tool", observation))
        return self._obs(observation), 0.0, False, truncated, info

    @staticmethod
    def _obs(text: str) -> str:
        """The observation: valid UTF-8 text (lone surrogates escaped), at most the space's
        limit."""
        text = safe_text(text)
        if len(text) > OBSERVATION_LIMIT:
            return text[: OBSERVATION_LIMIT - 40] + "\n[observation truncated]"
        return text

    def _final_answer_text(self, call: ParsedCall) -> str | tuple[str]:
        """The answer text, or a 1-tuple with an error observation."""
        try:
            _check_args(call.arguments, ("answer",), ("answer",))
        except ToolError as exc:
            return (f"[{FINAL_ANSWER}] error: {exc}",)
        value = call.arguments["answer"]
        if value is None:
            return ""
        if isinstance(value, str):
            return value[:MAX_CODE_CHARS]
        if isinstance(value, bool | int | float):
            return json.dumps(value)
        return (f"[{FINAL_ANSWER}] error: `answer` must be a string, number or boolean",)

    def _finish(self, text: str) -> tuple[str, float, dict[str, Any]]:
        assert self._question is not None
        score = grade(self._question, text)
        total, components = reward(self._question, text, self.reward_config)
        if score.correct:
            outcome = "correct"
        elif score.abstained:
            outcome = "abstained"
        elif extract(text).value is None:
            outcome = "format_error"
        else:
            outcome = "wrong"
        info = {
            "outcome": outcome,
            "score": {
                "value": score.value,
                "parsed": None if score.parsed is None else str(score.parsed),
                "correct": score.correct,
                "abstained": score.abstained,
                "explanation": score.explanation,
                "components": components,
            },
            "answer_text": text,
        }
        observation = f"[{FINAL_ANSWER}] answer received; the episode is over."
        return observation, float(total), info

    def _run_call(self, call: ParsedCall) -> tuple[str, bool]:
        """The call's observation text (valid UTF-8), and whether it failed. Never raises."""
        name = call.name or "tool_call"
        label = name if len(name) <= 64 else name[:64] + "..."
        errors = min(2000, self.max_output_chars)
        if call.error is not None:
            return safe_text(f"[{label}] error: {_cap(call.error, errors)}"), True
        try:
            match call.name:
                case "list_directory":
                    out = self._list_directory(call.arguments)
                case "read_text_file":
                    out = self._read_text_file(call.arguments)
                case "run_python_code":
                    out = self._run_python_code(call.arguments)
                case _:
                    raise ToolError(
                        f"unknown tool {label!r}; tools: {LIST_DIRECTORY}, {READ_TEXT_FILE}, "
                        f"{RUN_PYTHON_CODE}, {FINAL_ANSWER}"
                    )
        except ToolError as exc:
            return safe_text(f"[{label}] error: {_cap(str(exc), errors)}"), True
        except Exception as exc:  # a bug in a tool must not end the episode or the run
            _log.exception("tool %s failed on %s", label, describe_action(call.arguments, 500))
            return f"[{label}] error: internal error in the tool ({type(exc).__name__})", True
        # The tools cap their own output with an exact note; _cap here is only a safety net.
        return safe_text(f"[{label}]\n{_cap(out, self.max_output_chars)}"), False

    def _list_directory(self, args: dict[str, Any]) -> str:
        _check_args(args, ("path", "depth", "pattern"), ())
        path = _as_str(args.get("path", "/") if args.get("path") is not None else "/", "path")
        depth = _as_int(args.get("depth", 1), "depth")
        pattern = args.get("pattern")
        if pattern is not None:
            pattern = _as_str(pattern, "pattern", 1000)
        assert self._repo is not None
        return list_directory(
            self._repo,
            path,
            1 if depth is None else depth,
            pattern,
            self.max_list_entries,
            self.max_output_chars,
        )

    def _read_text_file(self, args: dict[str, Any]) -> str:
        _check_args(args, ("path", "head", "tail"), ("path",))
        path = _as_str(args["path"], "path")
        head = _as_int(args.get("head"), "head")
        tail = _as_int(args.get("tail"), "tail")
        assert self._repo is not None
        text = read_text_file(self._repo, path, head, tail, self.max_output_chars)
        self._files_read.append(resolve(self._repo, path))
        return text

    def _run_python_code(self, args: dict[str, Any]) -> str:
        _check_args(args, ("code",), ("code",))
        code = _as_str(args["code"], "code", MAX_CODE_CHARS)
        try:
            sandbox = self._get_sandbox()
        except Exception as exc:  # the backend may be missing or fail to start
            self._infra_error = f"the Python sandbox is unavailable: {exc}"
            raise ToolError(self._infra_error) from None
        persistent = self.python_session == "persistent"
        program = code
        if persistent and self._cells:
            size = sum(map(len, self._cells)) + len(code)
            if size > MAX_SESSION_CHARS:
                raise ToolError(
                    f"the persistent Python session is too long ({size} characters of code with "
                    f"the earlier cells; at most {MAX_SESSION_CHARS})"
                )
            program = replay_program(self._cells, code)
        files_dir = self._materialised()
        try:
            result = sandbox.run(program, files_dir)
        except Exception as exc:
            self._infra_error = f"the sandbox failed: {type(exc).__name__}: {exc}"
            raise ToolError(self._infra_error) from None
        if persistent and _succeeded(result):
            self._cells.append(code)
        self._files_read.extend(getattr(result, "files_read", ()) or ())
        return self._format_exec(result)

    def _format_exec(self, result: Any) -> str:
        """The sections of a sandbox result, all of them within ``max_output_chars``.

        Sections that fit are shown whole; the rest share what is left (short ones first), each
        cut with its own note: stdout, the value and the error keep their start, stderr keeps its
        end (where a traceback says what went wrong).
        """
        sections: list[tuple[str, str, bool]] = []  # (label, text, keep the end)
        for label, attr, keep_end in (
            ("stdout", "stdout", False),
            ("stderr", "stderr", True),
            ("value", "value", False),
            ("error", "error", False),
        ):
            raw = getattr(result, attr, None)
            if raw is None or raw == "":
                continue
            text = raw if isinstance(raw, str) else repr(raw) if attr == "value" else str(raw)
            sections.append((label, safe_text(text), keep_end))
        flags = []
        if getattr(result, "timed_out", False):
            flags.append("[timed out: the code ran past the time limit]")
        if getattr(result, "killed", False):
            flags.append("[killed: the code exceeded a resource limit]")
        if not sections and not flags:
            return "[no output]"
        overhead = sum(len(label) + 3 for label, _, _ in sections) + sum(map(len, flags))
        overhead += len(sections) + len(flags) - 1  # the newlines between the parts
        shares = _shares([len(text) for _, text, _ in sections], self.max_output_chars - overhead)
        parts = [
            f"[{label}]\n" + _clip(text, share, label, keep_end)
            for (label, text, keep_end), share in zip(sections, shares, strict=True)
        ]
        return "\n".join([*parts, *flags])

    def _get_sandbox(self) -> Any:
        if self._sandbox is not None:
            return self._sandbox
        spec = self.sandbox_spec
        if spec is None or isinstance(spec, str):
            from isg_gym.tools.sandbox import SandboxLimits, get_sandbox

            limits = self.sandbox_limits
            if limits is None:
                limits = SandboxLimits()
            elif isinstance(limits, Mapping):
                limits = SandboxLimits(**limits)
            self._sandbox = get_sandbox(spec or "bwrap", limits)
        elif hasattr(spec, "run"):
            self._sandbox = spec
        else:
            raise ToolError(f"sandbox must be a backend name or have run()/close(), got {spec!r}")
        return self._sandbox

    def _materialised(self) -> str:
        """The current repository on disk: read-only, randomly named, shared by the envs of this
        process (:mod:`isg_gym.envs.materialize`), removed when the last one using it closes."""
        assert self._repo is not None
        try:
            return self._leases.get(self._repo)
        except OSError as exc:
            raise ToolError(f"could not prepare the repository files: {exc}") from None

    # --- render / close --------------------------------------------------------------------

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        blocks = [f"=== {role} ===\n{text}" for role, text in self._transcript]
        return "\n\n".join(blocks) + "\n"

    def close(self) -> None:
        """Release the sandbox worker and remove materialised files (idempotent)."""
        sandbox, self._sandbox = getattr(self, "_sandbox", None), None
        if sandbox is not None and hasattr(sandbox, "close"):
            with contextlib.suppress(Exception):
                sandbox.close()
        if hasattr(self, "_leases"):
            self._leases.release_all()
        self._closed = True


def _call_result(call: ParsedCall, output: str, *, error: bool) -> dict[str, Any]:
    """One entry of ``info["tool_results"]``: the call, its observation text, whether it failed."""
    return {"name": call.name, "arguments": call.arguments, "output": output, "error": error}


def _succeeded(result: Any) -> bool:
    return not (
        getattr(result, "error", None)
        or getattr(result, "timed_out", False)
        or getattr(result, "killed", False)
    )


def _describe_action(action: Any) -> str:
    """The action as the transcript keeps it: capped, bounded in depth, never raising."""
    return describe_action(action, MAX_CODE_CHARS)


def _shares(sizes: list[int], available: int) -> list[int]:
    """Characters for each section: whole where it fits, an equal share of the rest else."""
    shares = [0] * len(sizes)
    remaining = max(0, available)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for done, i in enumerate(order):
        shares[i] = min(sizes[i], remaining // (len(sizes) - done))
        remaining -= shares[i]
    return shares


def _clip(text: str, limit: int, label: str, keep_end: bool) -> str:
    """``text`` in at most ``limit`` characters, a cut one with a note saying what is shown."""
    if len(text) <= limit:
        return text
    note = f"[{label} cut: the last {'9' * len(str(len(text)))} of {len(text)} characters]"
    room = max(0, limit - len(note) - 1)
    if keep_end:
        note = f"[{label} cut: the last {room} of {len(text)} characters]"
        return note + "\n" + text[len(text) - room :]
    return text[:room] + f"\n[{label} cut: the first {room} of {len(text)} characters]"
