"""``ISG-v0``: a multi-turn tool-use environment over InfiniteScienceGym repositories."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from isg_gym.dataset import ANSWER_INSTRUCTIONS
from isg_gym.envs import materialize
from isg_gym.envs.tool_env import SEED_LIMIT, ToolEnv, ToolHandler, score_info
from isg_gym.qa import QUESTION_TYPES, Question, format_answer, question_at, question_from_id
from isg_gym.qa.base import known_types
from isg_gym.qa.conventions import CONVENTIONS
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO, parse_question_id
from isg_gym.repository import Repository
from isg_gym.rewards import RewardConfig, extract, grade, reward
from isg_gym.tools.arguments import ToolError
from isg_gym.tools.filesystem import existing_files
from isg_gym.tools.python_tool import MAX_SESSION_CHARS as MAX_SESSION_CHARS
from isg_gym.tools.repository_tools import RepositoryTools
from isg_gym.tools.schemas import (
    LIST_DIRECTORY,
    READ_TEXT_FILE,
    RUN_PYTHON_CODE,
    describe_tools,
    tool_schemas,
)

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


class ISGEnv(ToolEnv):
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
    - ``question_types``: names from :data:`isg_gym.qa.QUESTION_TYPES` (default all of them),
      or of the opt-in types (:data:`isg_gym.qa.base.OPT_IN_QUESTION_TYPES`, such as
      ``effect_direction``), which are asked only when named.
    - ``unanswerable_ratio``: share of unanswerable question slots (default 0.4; below 0.375 a
      policy that never calls a tool beats always-abstain by guessing yes/no questions, see
      :mod:`isg_gym.rewards.blind_guess`).
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
    - ``specs``: a spec cache directory (``isg build --cache DIR``) or a
      :class:`~isg_gym.simulator.cache.SpecSource`: repositories come from its built Specs
      (e.g. LLM-built) instead of the procedural builder, and seeds are drawn only from the
      cached seeds within ``[start, start + num)``; pinning a seed the cache does not hold
      is a ``ValueError`` naming the seeds it does hold.

    ``reset(options=...)`` pins an episode: ``{"repository": 118}``, ``{"question":
    "118.univariate_statistic.3"}``, or ``{"repository": 118, "type": "count_rows"}``.

    ## Version History

    - v0: initial version. Question generator v2 (:data:`isg_gym.qa.QUESTION_VERSION`):
      shortcut-free questions and the answering conventions in the system prompt.
    - v0, question generator v3: 40% of the questions unanswerable (was 25%), so that a policy
      that never calls a tool cannot beat always-abstain by guessing yes/no questions.
    """

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
        specs: Any = None,
    ) -> None:
        if not 0 <= start_repository <= SEED_LIMIT:
            raise ValueError(f"start_repository must be in [0, {SEED_LIMIT}]")
        if num_repositories < 0:
            raise ValueError("num_repositories must be >= 0 (0 = unlimited)")
        types = sorted(QUESTION_TYPES) if question_types is None else list(question_types)
        unknown = [t for t in types if t not in known_types()]
        if unknown or not types:
            raise ValueError(f"unknown question types {unknown}; known {known_types()}")
        if not 0.0 <= unanswerable_ratio <= 1.0:
            raise ValueError("unanswerable_ratio must be within [0, 1]")
        if questions_per_repository < 1:
            raise ValueError("questions_per_repository must be >= 1")
        if max_list_entries < 1:
            raise ValueError("max_list_entries must be >= 1")
        self.start_repository = int(start_repository)
        self.num_repositories = int(num_repositories)
        self.question_types = types
        self.unanswerable_ratio = float(unanswerable_ratio)
        self.questions_per_repository = int(questions_per_repository)
        self.max_list_entries = int(max_list_entries)
        self.reward_config = reward_config or RewardConfig()
        self.answer_instructions = answer_instructions
        self.question_configs = dict(question_configs) if question_configs else None
        self.question_texts = dict(question_texts or {})
        self.specs, self.specs_build = _specs_location(specs)
        super().__init__(
            max_steps=max_steps,
            max_output_chars=max_output_chars,
            sandbox=sandbox,
            sandbox_limits=sandbox_limits,
            python_session=python_session,
            privileged_info=privileged_info,
            render_mode=render_mode,
        )
        if self._spec_source is not None and not self._seed_pool:
            end = start_repository + num_repositories if num_repositories else "end"
            raise ValueError(f"the spec cache {self.specs} holds no built seed in "
                             f"[{start_repository}, {end})")  # fmt: skip

    # --- state -----------------------------------------------------------------------------

    def _init_runtime(self) -> None:
        super()._init_runtime()
        from isg_gym.simulator.cache import SpecSource

        self._spec_source = (None if self.specs is None
                             else SpecSource(self.specs, **self.specs_build))  # fmt: skip
        self._seed_pool = [] if self._spec_source is None else self._cached_seeds()
        self._repos: OrderedDict[int, Repository] = OrderedDict()
        self._leases = materialize.Leases(keep=2)
        self._leases_finalizer = weakref.finalize(self, self._leases.release_all)
        self._files = RepositoryTools(self.max_list_entries, self.max_output_chars)
        self._repo: Repository | None = None
        self._question: Question | None = None

    def _restore(self, question_id: str) -> tuple[dict[str, str], dict[str, Any]]:
        self._repo = self._repository(parse_question_id(question_id)[0])
        self._question = question_from_id(
            question_id, self._repo, self.unanswerable_ratio, self.question_configs
        )
        return self._prompt_text(), self._public_info()

    def _repository(self, seed: int) -> Repository:
        repo = self._repos.get(seed)
        if repo is None:
            if self._spec_source is None:
                repo = Repository.from_seed(seed)
            else:
                repo = Repository(self._spec_source.spec(seed))
            self._repos[seed] = repo
            while len(self._repos) > 4:
                self._repos.popitem(last=False)
        else:
            self._repos.move_to_end(seed)
        return repo

    def _cached_seeds(self) -> list[int]:
        """The spec cache's built seeds within [start, start + num) (num 0: no end)."""
        assert self._spec_source is not None
        end = self.start_repository + self.num_repositories if self.num_repositories else None
        return [s for s in self._spec_source.seeds
                if s >= self.start_repository and (end is None or s < end)]  # fmt: skip

    # --- reset -----------------------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
        unknown = sorted(set(options) - {"repository", "question", "type"})
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; use repository, question, type")
        self._question = self._pick(options)
        self._repo = self._repository(self._question.repository)
        return self._prompt_text(), self._public_info()

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
            if options["type"] not in known_types():
                raise ValueError(f"unknown question type {options['type']!r}")
            types = [options["type"]]
        pinned = options.get("repository")
        if pinned is not None and (isinstance(pinned, bool) or not isinstance(pinned, int)):
            raise ValueError(f"repository must be an integer seed, got {pinned!r}")
        for _ in range(1 if pinned is not None else _REPO_TRIES):
            if pinned is not None:
                seed = int(pinned)
            elif self._spec_source is not None:
                seed = self._seed_pool[int(rng.integers(len(self._seed_pool)))]
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

    def _prompt_text(self) -> dict[str, str]:
        assert self._question is not None
        question = self.question_texts.get(self._question.id, self._question.text)
        return {
            "system": SYSTEM_PROMPT.format(
                tools=describe_tools(), max_steps=self.max_steps, conventions=CONVENTIONS
            ),
            "user": f"Question: {question}\n\n{self.answer_instructions}",
        }

    def _public_info(self) -> dict[str, Any]:
        q = self._question
        assert q is not None
        return {"question_id": q.id, "repository": q.repository, "type": q.type,
                "family": q.family}  # fmt: skip

    def _privileged(self) -> dict[str, Any]:
        q = self._question
        assert q is not None
        return {
            "answer": format_answer(q),
            "answerable": q.answerable,
            "reason": q.reason,
            "params": q.params,
            "sig_figs": q.sig_figs or 0,  # 0: not a float answer (ints stack in vectors)
            "evidence": list(q.evidence),
        }

    # --- tools -----------------------------------------------------------------------------

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return tool_schemas()

    def _tools(self) -> dict[str, ToolHandler]:
        assert self._repo is not None
        repo, files = self._repo, self._files
        return {
            LIST_DIRECTORY: lambda args: files.list_directory(repo, args),
            READ_TEXT_FILE: lambda args: self._read_text_file(repo, args),
            RUN_PYTHON_CODE: lambda args: self._run_python(args, self._sandbox_files),
        }

    def _read_text_file(self, repo: Repository, arguments: dict[str, Any]) -> str:
        text, path = self._files.read_text_file(repo, arguments)
        self._step_files.append(path)
        return text

    def _files_read(self, paths: list[str]) -> list[str]:
        assert self._repo is not None  # a failed open of a missing path is not a read
        return existing_files(self._repo, paths)

    def _sandbox_files(self) -> Any:
        """What run_python_code shows at /data: the Repository itself (a FileSource, served
        lazily) for the built-in sandboxes, a materialised directory for other objects."""
        if getattr(self._python.sandbox(), "accepts_file_sources", False):
            return self._repo
        return self._materialised()

    def _materialised(self) -> str:
        """The current repository on disk: read-only, randomly named, shared by the envs of this
        process (:mod:`isg_gym.envs.materialize`), removed when the last one using it closes."""
        assert self._repo is not None
        try:
            return self._leases.get(self._repo)
        except OSError as exc:
            raise ToolError(f"could not prepare the repository files: {exc}") from None

    # --- grading ---------------------------------------------------------------------------

    def _finish(self, answer: Any) -> tuple[float, dict[str, Any]]:
        assert self._question is not None
        text = str(answer)
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
        info = {"outcome": outcome, "score": score_info(score, components), "answer_text": text}
        return float(total), info

    def _close(self) -> None:
        self._leases.release_all()


def _specs_location(specs: Any) -> tuple[str | None, dict[str, Any]]:
    """(directory, which build) of the ``specs`` argument: a path, or a SpecSource."""
    if specs is None:
        return None, {}
    directory = getattr(getattr(specs, "cache", None), "dir", None)
    if directory is not None:
        build = {"builder": specs.builder, "model": specs.model,
                 "prompt_version": specs.prompt_version}  # fmt: skip
        return str(directory), build
    return str(specs), {}
