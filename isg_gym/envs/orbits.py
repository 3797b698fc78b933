"""``ISG-Orbits-v0``: infer a binary star system's physics under an observation budget."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from isg_gym.envs.tool_env import SEED_LIMIT, ToolEnv, score_info
from isg_gym.orbits.grading import grade
from isg_gym.orbits.observe import columns, full_table, observe, to_csv, window_end
from isg_gym.orbits.prompt import (
    MODES,
    OBSERVATIONS_FILE,
    OBSERVE,
    TRAJECTORY_FILE,
    build_prompt,
    tool_schemas,
)
from isg_gym.orbits.sampling import (
    make_question,
    parse_question_id,
    question_at,
    question_from_id,
    target_shares,
)
from isg_gym.orbits.simulate import trajectory
from isg_gym.orbits.system import ObservationOptions, System, build_system
from isg_gym.orbits.tasks import TASKS, OrbitQuestion, format_answer
from isg_gym.orbits.units import unit_system
from isg_gym.tools.arguments import ToolError, as_float_list, check_args
from isg_gym.tools.files import DictFiles
from isg_gym.tools.snapshots import Snapshots

QUESTION_SLOTS = 8  # question indices drawn per system (they vary the star and template)
_SEED_TRIES = 2000
_SHOWN_ROWS = 10  # rows of an observe reply (at most per_call, which may be larger)


class OrbitsEnv(ToolEnv):
    """Answer a question about a binary star system by observing it and fitting the data.

    ## Description

    Each episode draws a system (:func:`isg_gym.orbits.system.build_system`: two stars,
    Newtonian gravity bound or unbound, or with linear drag, or with a force law
    ``F ~ r^-(2 + alpha)``), simulates it with REBOUND and asks one question about it
    (:mod:`isg_gym.orbits.tasks`: masses, period, orbit geometry, extremes, angular momentum,
    energy, boundness, drag timescale, force exponent, apsidal precession). About 40% of
    the questions have no answer for the system's physics; the right answer to them is
    "not possible". Modelled on Gravity-Bench (Koblischke et al., ICML 2025), procedurally.

    ## Observation

    Text: the system prompt (tools, units, observation window, conventions) and the question
    after ``reset``; tool results after ``step``.

    ## Action

    As ``ISG-v0``: assistant text with Hermes ``<tool_call>`` blocks, a bare JSON call, an
    answer-only message, or structured calls. Tools: ``observe(times)`` (budget mode),
    ``run_python_code(code)`` (the sandbox, with ``observations.csv`` or ``trajectory.csv`` in
    its working directory), ``final_answer(answer)``.

    ## Rewards

    1 for a correct final answer (numbers within the task's relative-error threshold), else 0.

    ## Episode End

    Terminated on a final answer; truncated after ``max_steps`` steps. The last step's info has
    ``outcome``, ``score`` and ``episode_metrics`` (observations used, budget utilisation,
    observe calls, refused times: out of window, non-finite, duplicates, over budget; refused
    calls).

    ## Arguments

    - ``observation``: ``"budget"`` (the ``observe`` tool, ``budget`` observations in all, at
      most ``per_call`` per call) or ``"full"`` (the whole trajectory as a file, no observe).
    - ``budget`` (100), ``per_call`` (10).
    - ``start_system``, ``num_systems``: systems are drawn from ``[start, start + num)``
      (``num=0``: up to 2**31 - 1); training should use ``orbits_train_kwargs()``.
    - ``tasks``: task names (default all); the episode's task is drawn uniformly, then its
      stratum (40% unanswerable; yes/no balanced), then a system offering it.
    - ``observation_options``: :class:`~isg_gym.orbits.system.ObservationOptions` or a dict
      of its fields (sky-plane projection and noise shares; off by default).
    - ``max_steps`` (30), ``max_output_chars``, ``sandbox``, ``sandbox_limits``,
      ``python_session``, ``privileged_info``, ``render_mode``: as for ``ISG-v0``.

    ``reset(options=...)``: ``{"question": "118.period.3"}``, ``{"system": 118}`` (a sampled
    question of that system), ``{"task": "period"}`` or both.

    ## Version History

    - v0: initial version (systems v1, questions v1).
    - v0, questions v2: 40% of the questions unanswerable (was 25%), so that a blind yes/no
      guess cannot beat always-abstain; the question templates are drawn afresh.
    """

    def __init__(
        self,
        observation: str = "budget",
        budget: int = 100,
        per_call: int = 10,
        start_system: int = 0,
        num_systems: int = 0,
        tasks: Sequence[str] | None = None,
        observation_options: ObservationOptions | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if observation not in MODES:
            raise ValueError(f"observation must be one of {MODES}, got {observation!r}")
        for name, value in (("budget", budget), ("per_call", per_call)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not 0 <= start_system <= SEED_LIMIT or num_systems < 0:
            raise ValueError(f"start_system must be in [0, {SEED_LIMIT}] and num_systems >= 0")
        names = sorted(TASKS) if tasks is None else list(tasks)
        unknown = [t for t in names if t not in TASKS]
        if unknown or not names:
            raise ValueError(f"unknown orbit tasks {unknown}; known: {', '.join(sorted(TASKS))}")
        if isinstance(observation_options, Mapping):
            observation_options = ObservationOptions(**observation_options)
        self.observation = observation
        self.budget = budget
        self.per_call = per_call
        self.start_system = int(start_system)
        self.num_systems = int(num_systems)
        self.tasks = names
        self.observation_options = observation_options or ObservationOptions()
        super().__init__(**kwargs)

    def _init_runtime(self) -> None:
        super()._init_runtime()
        self._snapshots = Snapshots()
        self._system: System | None = None
        self._question: OrbitQuestion | None = None
        self._rows: list[np.ndarray] = []
        self._observed: set[float] = set()
        self._files_version = -1
        self._file_bytes: dict[str, bytes] = {}
        self._written = False  # the current files are in the newest snapshot directory
        self._times: list[float] = []  # accepted observation times, in order
        self._metrics: dict[str, float] = {}

    def __getstate__(self) -> dict[str, Any]:
        """The base class's state plus the episode's observations (replayed on unpickling)."""
        episode = (list(self._times), dict(self._metrics))
        return {**super().__getstate__(), "_orbit_episode": episode}

    def __setstate__(self, state: dict[str, Any]) -> None:
        times, metrics = state.pop("_orbit_episode")
        super().__setstate__(state)
        if self._system is not None and times:
            self._times, self._observed = list(times), set(times)
            self._rows = list(observe(self._system, times))
            self._metrics = metrics

    # --- episodes ----------------------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
        unknown = sorted(set(options) - {"question", "system", "task"})
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; use question, system, task")
        self._question = self._pick(options)
        self._system = build_system(self._question.system, self.observation_options)
        trajectory(self._system)  # simulate now (cached), not during the first observe call
        self._rows, self._observed, self._times, self._files_version = [], set(), [], -1
        self._metrics = {key: 0.0 for key in (
            "observations", "observe_calls", "out_of_window", "non_finite", "duplicates",
            "over_budget", "refused_calls")}  # fmt: skip
        if self.observation == "full":
            table = to_csv(self._system, full_table(self._system))
            self._file_bytes, self._written = {TRAJECTORY_FILE: table}, False
        prompt = build_prompt(self._system, self._question.text, self.observation, self.budget,
                              self.per_call, self.max_steps)  # fmt: skip
        q = self._question
        public = {"question_id": q.id, "repository": q.system, "type": q.type,
                  "family": q.family}  # fmt: skip
        return prompt, public

    def _pick(self, options: dict[str, Any]) -> OrbitQuestion:
        if options.get("question") is not None:
            qid = options["question"]
            seed, task, _ = parse_question_id(qid)
            if options.get("system") not in (None, seed) or options.get("task") not in (None, task):
                raise ValueError(f"question {qid!r} does not match the system / task options")
            return question_from_id(qid, options=self.observation_options)
        task = options.get("task")
        if task is not None and task not in TASKS:
            raise ValueError(f"unknown orbit task {task!r}; known: {', '.join(sorted(TASKS))}")
        rng = self.np_random
        pinned = options.get("system")
        if pinned is not None:
            if isinstance(pinned, bool) or not isinstance(pinned, int) or pinned < 0:
                raise ValueError(f"system must be a non-negative integer seed, got {pinned!r}")
            system = build_system(pinned, self.observation_options)
            if task is not None:
                return make_question(system, task, int(rng.integers(QUESTION_SLOTS)))
            first = int(rng.integers(QUESTION_SLOTS))
            for index in range(first, first + 64):
                question = question_at(system, index, self.tasks)
                if question is not None:
                    return question
            raise ValueError(f"system {pinned} kept no question of tasks {self.tasks}")
        task = task or self.tasks[int(rng.integers(len(self.tasks)))]
        shares = target_shares(task)
        strata = list(shares)
        stratum = strata[int(rng.choice(len(strata), p=[shares[s] for s in strata]))]
        span = self.num_systems or (SEED_LIMIT + 1 - self.start_system)
        for _ in range(_SEED_TRIES):
            seed = self.start_system + int(rng.integers(span))
            question = make_question(build_system(seed, self.observation_options), task,
                                     int(rng.integers(QUESTION_SLOTS)))  # fmt: skip
            if question.stratum == stratum:
                return question
        raise ValueError(f"no system in range offers {task} ({stratum}) in {_SEED_TRIES} tries")

    def _privileged(self) -> dict[str, Any]:
        q = self._question
        assert q is not None
        return {
            "answer": format_answer(q),
            "answerable": q.answerable,
            "reason": q.reason,
            "params": dict(q.params),
            "orbit": q.orbit,
            "threshold": q.threshold,
        }

    # --- tools ---------------------------------------------------------------------------------

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return tool_schemas(self.observation, self.per_call)

    def _tools(self) -> dict[str, Any]:
        tools: dict[str, Any] = {"run_python_code": lambda a: self._run_python(a, self._files)}
        if self.observation == "budget":
            tools = {OBSERVE: self._observe, **tools}
        return tools

    def _files(self) -> Any:
        """The episode's files: in memory (:class:`DictFiles`, served lazily) for the built-in
        sandboxes, else a snapshot directory (a new one when the table grew). A table that grew
        is a new source, never a file changed in place."""
        if self.observation == "budget" and self._files_version != len(self._rows):
            assert self._system is not None
            rows = np.array(self._rows) if self._rows else np.zeros((0, len(columns(self._system))))
            self._file_bytes = {OBSERVATIONS_FILE: to_csv(self._system, rows)}
            self._files_version, self._written = len(self._rows), False
        if getattr(self._python.sandbox(), "accepts_file_sources", False):
            digest = hashlib.sha256()
            for name, data in sorted(self._file_bytes.items()):
                digest.update(name.encode() + b"\0" + data)
            return DictFiles(f"isg-orbits:{digest.hexdigest()[:32]}", self._file_bytes)
        if not self._written:
            self._snapshots.write(self._file_bytes)
            self._written = True
        assert self._snapshots.current is not None
        return self._snapshots.current

    def _observe(self, arguments: dict[str, Any]) -> str:
        system = self._system
        assert system is not None
        try:
            check_args(arguments, ("times",), ("times",))
            times = as_float_list(arguments["times"], "times", self.per_call)
            if not times:
                raise ToolError("`times` is empty; give 1 to "
                                f"{self.per_call} times")  # fmt: skip
        except ToolError as exc:
            self._metrics["refused_calls"] += 1
            raise ToolError(f"{exc}. Nothing was observed or charged; "
                            f"{self._budget_text()}") from None  # fmt: skip
        self._metrics["observe_calls"] += 1
        end, unit = window_end(system), unit_system(system.units).time
        accepted: list[float] = []
        refused: list[str] = []
        for t in times:
            if not math.isfinite(t):
                self._metrics["non_finite"] += 1
                refused.append(f"{t}: not a finite number")
            elif not 0.0 <= t <= end:
                self._metrics["out_of_window"] += 1
                refused.append(f"{t:.10g}: outside the window [0, {end:.10g}] {unit}")
            elif t in self._observed or t in accepted:
                self._metrics["duplicates"] += 1
                refused.append(f"{t:.10g}: already observed")
            elif len(self._observed) + len(accepted) >= self.budget:
                self._metrics["over_budget"] += 1
                refused.append(f"{t:.10g}: the observation budget is spent")
            else:
                accepted.append(t)
        lines = []
        if accepted:
            rows = observe(system, accepted)
            self._rows.extend(rows)
            self._observed.update(accepted)
            self._times.extend(accepted)
            self._metrics["observations"] += len(accepted)
            lines.append(f"{len(accepted)} observation(s) added to {OBSERVATIONS_FILE}:")
            lines.append(",".join(columns(system)))
            lines += [",".join(f"{x:.10g}" for x in row) for row in rows[:_SHOWN_ROWS]]
            if len(rows) > _SHOWN_ROWS:
                lines.append(f"[{len(rows) - _SHOWN_ROWS} more rows in {OBSERVATIONS_FILE}]")
        if refused:
            lines.append(f"Refused without charge ({len(refused)}): " + "; ".join(refused))
        lines.append(self._budget_text())
        return "\n".join(lines)

    def _budget_text(self) -> str:
        system = self._system
        assert system is not None
        used = len(self._observed)
        return (f"Budget: {used} of {self.budget} observations used, {self.budget - used} "
                f"remaining; window [0, {window_end(system):.10g}] "
                f"{unit_system(system.units).time}.")  # fmt: skip

    # --- grading -------------------------------------------------------------------------------

    def _episode_metrics(self) -> dict[str, float]:
        metrics = dict(self._metrics)
        if self.observation == "budget":
            metrics["budget_utilisation"] = metrics["observations"] / self.budget
        return metrics

    def _finish(self, answer: Any) -> tuple[float, dict[str, Any]]:
        assert self._question is not None
        text = str(answer)
        score = grade(self._question, text)
        if score.correct:
            outcome = "correct"
        elif score.abstained:
            outcome = "abstained"
        elif score.parsed is None:  # no number (or yes/no) could be read from the answer
            outcome = "format_error"
        else:
            outcome = "wrong"
        info = {
            "outcome": outcome,
            "score": score_info(score, {"correctness": score.value}),
            "answer_text": text,
            "episode_metrics": self._episode_metrics(),
        }
        return score.value, info

    def _truncated_info(self) -> dict[str, Any]:
        return {"episode_metrics": self._episode_metrics()}

    def _close(self) -> None:
        self._snapshots.close()


def orbits_train_kwargs() -> dict[str, int]:
    """``OrbitsEnv`` arguments that draw only training systems."""
    from isg_gym.orbits.splits import TRAIN_SYSTEMS

    return {"start_system": TRAIN_SYSTEMS.start, "num_systems": len(TRAIN_SYSTEMS)}
