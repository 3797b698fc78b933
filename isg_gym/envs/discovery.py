"""``ISG-Discovery-v0``: open-ended discovery on a repository, graded exactly against the program
that generated it."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import asdict
from typing import Any

from isg_gym.discovery.claims import ClaimError, Resolved, Resolver, findings_in_text
from isg_gym.discovery.claims import parse_findings as parse_findings
from isg_gym.discovery.evidence import CallRecord
from isg_gym.discovery.prompt import (
    CALL_ID,
    SUBMIT_FINDINGS,
    findings_schema,
    system_prompt,
    user_prompt,
)
from isg_gym.discovery.scoring import DiscoveryScore, score
from isg_gym.discovery.splits import question_id, question_seed
from isg_gym.discovery.world import (
    DEFAULT_COUNTERFACTUAL_SHARE,
    DiscoveryWorld,
    NotADiscoveryRepository,
    discovery_world,
)
from isg_gym.envs import materialize
from isg_gym.envs.actions import FORMAT_HELP, Parsed, ParsedCall, parse_action
from isg_gym.envs.tool_env import SEED_LIMIT, ToolEnv, ToolHandler
from isg_gym.tools.arguments import ToolError, check_args
from isg_gym.tools.filesystem import existing_files
from isg_gym.tools.repository_tools import RepositoryTools
from isg_gym.tools.schemas import (
    LIST_DIRECTORY,
    READ_TEXT_FILE,
    RUN_PYTHON_CODE,
    describe_tools,
    tool_schema,
)

DISCOVERY_VERSION = 1  # the task generator's version (question ids mean what they mean under it)
TASK_TYPE = "discovery"
# An analysis loads every data file: the largest repositories (800 xlsx workbooks, 130,000
# rows) take about 40 s of CPU to read with pandas, and minutes of wall time on a busy machine.
DEFAULT_SANDBOX_LIMITS = {"cpu_seconds": 120, "wall_seconds": 600, "memory_mb": 2048}
_REPO_TRIES = 50
HELP = (
    'Call a tool with <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> (one or '
    f"several per message), and end the episode with {SUBMIT_FINDINGS}(findings=[...]) or a "
    "message holding the JSON list of findings."
)
NO_FINDINGS = "no tool call or findings found in the message. " + HELP


class DiscoveryEnv(ToolEnv):
    """Find which recorded variables affect a repository's outcomes; graded against its program.

    ## Description

    Each episode is one Discovery repository (:mod:`isg_gym.discovery.world`: the procedural
    repository of a seed, its README stating a directional hypothesis; in a share
    ``counterfactual_share`` of them the program contradicts it). The goal is neutral: find
    which recorded conditions and variables affect the measured outcomes, in which direction.
    The tools are ISG-v0's (list_directory, read_text_file, run_python_code in the sandbox);
    every run_python_code output starts with ``call id: N``.

    ## Observation

    A string: the system prompt (tools, claim schema, examples) and the goal with the list of
    measured outcomes; after ``step``, the tool results or an error message.

    ## Action

    As ISG-v0 (Hermes ``<tool_call>`` text, bare JSON, structured dicts, lists of calls). The
    final tool is ``submit_findings(findings)``; a message without tool calls that holds a
    JSON list of findings (or ``{"findings": [...]}``) also submits them. Malformed findings
    (schema, unknown variables or values) are an error observation; the episode goes on.

    ## Rewards

    0 on every step but the last; on submission :func:`isg_gym.discovery.scoring.score`'s
    reward in [0, 1] (weights in :data:`isg_gym.discovery.scoring.WEIGHTS`). Truncation
    gives 0.

    ## Episode End

    Terminated by a well-formed submission; truncated after ``max_steps`` steps. The last
    step's ``info`` has ``outcome`` (``correct`` for a perfect report, ``partial`` for a
    reward in (0, 1), ``wrong`` for 0, or ``truncated``), ``score`` (value, explanation,
    components, the TruthInsightBench breakdown, one verdict per claim) and
    ``episode_metrics`` (precision, recall, F1, evidence, robustness, unrecorded handling,
    counterfactual, followed_data / followed_story on counterfactual repositories).

    ## Arguments

    ``start_repository``, ``num_repositories`` (as ISG-v0; seeds without a hypothesis pair,
    about 3%, are skipped), ``counterfactual_share`` (default 0.25), ``max_steps`` (default
    30), ``max_output_chars``, ``max_list_entries``, ``sandbox``, ``sandbox_limits`` (default
    :data:`DEFAULT_SANDBOX_LIMITS`), ``python_session``, ``privileged_info`` (the answer key:
    every effect with its relation and detectability, the unrecorded variables, the
    hypothesis), ``render_mode``.

    ``reset(options=...)``: ``{"repository": 118}`` or ``{"question": "118.discovery"}``.

    ## Version History

    - v0: initial version (task generator :data:`DISCOVERY_VERSION`).
    """

    final_tool = SUBMIT_FINDINGS

    def __init__(
        self,
        start_repository: int = 0,
        num_repositories: int = 0,
        counterfactual_share: float = DEFAULT_COUNTERFACTUAL_SHARE,
        max_list_entries: int = 200,
        **kwargs: Any,
    ) -> None:
        if not 0 <= start_repository <= SEED_LIMIT:
            raise ValueError(f"start_repository must be in [0, {SEED_LIMIT}]")
        if num_repositories < 0:
            raise ValueError("num_repositories must be >= 0 (0 = unlimited)")
        if not 0.0 <= counterfactual_share <= 1.0:
            raise ValueError(f"counterfactual_share must be within [0, 1], got "
                             f"{counterfactual_share!r}")  # fmt: skip
        if max_list_entries < 1:
            raise ValueError("max_list_entries must be >= 1")
        self.start_repository = int(start_repository)
        self.num_repositories = int(num_repositories)
        self.counterfactual_share = float(counterfactual_share)
        self.max_list_entries = int(max_list_entries)
        if kwargs.get("sandbox_limits") is None:
            kwargs["sandbox_limits"] = dict(DEFAULT_SANDBOX_LIMITS)
        super().__init__(**kwargs)

    # --- state -----------------------------------------------------------------------------

    def _init_runtime(self) -> None:
        super()._init_runtime()
        self._leases = materialize.Leases(keep=2)
        self._leases_finalizer = weakref.finalize(self, self._leases.release_all)
        self._files = RepositoryTools(self.max_list_entries, self.max_output_chars)
        self._world: DiscoveryWorld | None = None
        self._resolver: Resolver | None = None
        self._calls: OrderedDict[int, CallRecord] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_discovery_calls"] = [asdict(c) for c in self._calls.values()]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        calls = state.pop("_discovery_calls", [])
        super().__setstate__(state)
        for c in calls:
            self._calls[c["id"]] = CallRecord(c["id"], c["code"], c["ok"], tuple(c["files_read"]))

    def _load(self, seed: int) -> None:
        self._world = discovery_world(seed, self.counterfactual_share)
        self._resolver = Resolver(self._world.spec)
        self._calls = OrderedDict()

    def _restore(self, question: str) -> tuple[dict[str, str], dict[str, Any]]:
        self._load(question_seed(question))
        return self._prompt_text(), self._public_info()

    # --- reset -----------------------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
        unknown = sorted(set(options) - {"repository", "question"})
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; use repository or question")
        if options.get("question") is not None:
            seed = question_seed(options["question"])
            if options.get("repository") not in (None, seed):
                raise ValueError(f"question {options['question']!r} is not in repository "
                                 f"{options['repository']}")  # fmt: skip
            self._load(seed)
        elif options.get("repository") is not None:
            pinned = options["repository"]
            if isinstance(pinned, bool) or not isinstance(pinned, int):
                raise ValueError(f"repository must be an integer seed, got {pinned!r}")
            self._load(pinned)
        else:
            self._draw()
        return self._prompt_text(), self._public_info()

    def _draw(self) -> None:
        span = self.num_repositories or (SEED_LIMIT + 1 - self.start_repository)
        for _ in range(_REPO_TRIES):
            seed = self.start_repository + int(self.np_random.integers(span))
            try:
                self._load(seed)
                return
            except NotADiscoveryRepository:
                continue
        raise ValueError(f"no Discovery repository found in {_REPO_TRIES} draws from seeds "
                         f"[{self.start_repository}, {self.start_repository + span})")  # fmt: skip

    def _prompt_text(self) -> dict[str, str]:
        assert self._world is not None
        tools = describe_tools(self._tool_schemas())
        return {"system": system_prompt(tools, self.max_steps),
                "user": user_prompt(self._world.outcomes)}  # fmt: skip

    def _public_info(self) -> dict[str, Any]:
        assert self._world is not None
        seed = self._world.seed
        return {"question_id": question_id(seed), "repository": seed, "type": TASK_TYPE,
                "family": TASK_TYPE}  # fmt: skip

    def _privileged(self) -> dict[str, Any]:
        assert self._world is not None
        world, truth = self._world, self._world.truth
        hyp = world.hypothesis
        effects = [{"outcome": p.outcome, "factor": p.factor, "relation": p.relation,
                    "directional": p.directional, "detectable": p.detectable}
                   for p in truth.effects()]  # fmt: skip
        return {
            "answer": {"effects": effects, "unrecorded": sorted(truth.unrecorded),
                       "hypothesis": {"outcome": hyp.outcome, "factor": hyp.factor,
                                      "stated": hyp.stated, "program": hyp.program,
                                      "counterfactual": hyp.counterfactual}},
            "answerable": True,
            "reason": None,
        }  # fmt: skip

    # --- tools -----------------------------------------------------------------------------

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return [tool_schema(LIST_DIRECTORY), tool_schema(READ_TEXT_FILE),
                tool_schema(RUN_PYTHON_CODE), findings_schema()]  # fmt: skip

    def _tools(self) -> dict[str, ToolHandler]:
        assert self._world is not None
        repo, files = self._world.repo, self._files
        return {
            LIST_DIRECTORY: lambda args: files.list_directory(repo, args),
            READ_TEXT_FILE: self._read_text_file,
            RUN_PYTHON_CODE: self._run_code,
        }

    def _read_text_file(self, arguments: dict[str, Any]) -> str:
        assert self._world is not None
        text, path = self._files.read_text_file(self._world.repo, arguments)
        self._step_files.append(path)
        return text

    def _run_code(self, arguments: dict[str, Any]) -> str:
        """``run_python_code``, numbered: the call is recorded (code, success, files read) as
        evidence that findings can cite by its id."""
        assert self._world is not None
        number = len(self._calls) + 1
        try:
            output = self._run_python(arguments, self._sandbox_files)
        except ToolError as exc:
            self._record(number, False)
            raise ToolError(f"{CALL_ID}{number}\n{exc}") from None
        self._record(number, self._python.succeeded)
        return f"{CALL_ID}{number}\n{output}"

    def _record(self, number: int, ok: bool) -> None:
        assert self._world is not None
        files = tuple(existing_files(self._world.repo, self._python.files_read))
        ok = ok and self._python.infra_error is None
        self._calls[number] = CallRecord(number, self._python.program, ok, files)

    def _files_read(self, paths: list[str]) -> list[str]:
        assert self._world is not None
        return existing_files(self._world.repo, paths)

    def _sandbox_files(self) -> Any:
        """What run_python_code shows at /data: as ISG-v0, the Repository itself (a FileSource,
        served lazily) for the built-in sandboxes, a materialised directory for others."""
        if getattr(self._python.sandbox(), "accepts_file_sources", False):
            assert self._world is not None
            return self._world.repo
        return self._materialised()

    def _materialised(self) -> str:
        assert self._world is not None
        try:
            return self._leases.get(self._world.repo)
        except OSError as exc:
            raise ToolError(f"could not prepare the repository files: {exc}") from None

    # --- findings --------------------------------------------------------------------------

    def _parse(self, action: Any) -> Parsed:
        """As ISG-v0, but a message without tool calls that holds findings submits them."""
        parsed = parse_action(action)
        if parsed.error is not None:  # ISG-v0's help names final_answer
            parsed.error = parsed.error.replace(FORMAT_HELP, HELP)
        for call in parsed.calls:
            if call.error is not None:
                call.error = call.error.replace(FORMAT_HELP, HELP)
        if parsed.calls or (parsed.error is None and parsed.answer_text is None):
            return parsed
        if parsed.answer_text is None and not parsed.text:
            return parsed  # an unusable structured action, an empty or over-long message
        try:
            findings = findings_in_text(parsed.answer_text or parsed.text)
        except ClaimError:
            return Parsed(error=NO_FINDINGS, text=parsed.text)
        return Parsed(calls=[ParsedCall(SUBMIT_FINDINGS, {"findings": findings})],
                      text=parsed.text)  # fmt: skip

    def _final_argument(self, arguments: dict[str, Any]) -> list[Resolved]:
        check_args(arguments, ("findings",), ("findings",))
        assert self._resolver is not None
        try:
            return self._resolver.resolve_all(parse_findings(arguments["findings"]))
        except ClaimError as exc:
            raise ToolError(str(exc)) from None

    def _score(self, claims: list[Resolved]) -> DiscoveryScore:
        assert self._world is not None
        world = self._world
        return score(claims, world.truth, self._calls, world.files_in, world.hypothesis)

    def _finish(self, answer: Any) -> tuple[float, dict[str, Any]]:
        result = self._score(answer)
        outcome = ("correct" if result.reward >= 1.0 else "partial" if result.reward > 0
                   else "wrong")  # fmt: skip
        verdicts = [{"outcome": v.claim.outcome, "factor": v.claim.factor,
                     "relation": v.claim.relation, "scope": v.claim.scope, "kind": v.kind,
                     "correct": v.correct, "truth": v.truth, "credited": v.credited,
                     "note": v.note} for v in result.verdicts]  # fmt: skip
        info = {
            "outcome": outcome,
            "score": {
                "value": result.reward,
                "parsed": f"{len(answer)} findings",
                "correct": outcome == "correct",
                "abstained": False,
                "explanation": result.explanation(),
                "components": result.components,
                "truthinsight": result.truthinsight(),
                "verdicts": verdicts,
            },
            "answer_text": f"{len(answer)} findings",
            "episode_metrics": result.metrics(),
        }
        return result.reward, info

    def _truncated_info(self) -> dict[str, Any]:
        return {"episode_metrics": self._score([]).metrics()}

    def _close(self) -> None:
        self._leases.release_all()
