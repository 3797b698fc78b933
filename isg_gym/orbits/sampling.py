"""Questions for a system: ids, regeneration, and sampling with balanced strata.

The question ``"{seed}.{task}.{index}"`` is task ``task`` on system ``seed``, its parameters
(which star) and template drawn from ``derive(seed, "orbits-question", VERSION, task, index)``.
Whether it is answerable is a property of the system's physics, so every id regenerates a
question (:func:`question_from_id`).

Sampling (:func:`question_at`, used by the environment for a pinned system) keeps every
task's questions balanced whatever the shares of the physics: slot ``index`` draws one task
uniformly and keeps its question with a probability that depends on its stratum
(``unanswerable``, ``value``, ``yes``, ``no``), computed from the shares of the orbit classes
(:data:`CLASS_SHARES`) so that each task's kept questions are 40% unanswerable
(:data:`~isg_gym.rewards.blind_guess.UNANSWERABLE_SHARE`) and, for yes/no tasks, half yes among
the answerable ones; a slot whose question is not kept is empty. (Until questions v2 a slot
tried the next task instead, which biased the shares: the tasks of one system are answerable
together, so how often a task was reached depended on the system's class.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources

from isg_gym.orbits.system import (
    PHYSICS_SHARES,
    UNBOUND_SHARE,
    ObservationOptions,
    System,
    build_system,
)
from isg_gym.orbits.tasks import TASKS, OrbitQuestion
from isg_gym.orbits.tasks.base import build_context
from isg_gym.orbits.truth import ORBIT_CLASSES
from isg_gym.rewards.blind_guess import UNANSWERABLE_SHARE
from isg_gym.seeding import check_seed, derive

# v2: 40% of the sampled questions unanswerable (25% in v1; isg_gym.rewards.blind_guess).
QUESTION_VERSION = 2
CLASS_SHARES: dict[str, float] = {
    "bound": PHYSICS_SHARES["newtonian"] * (1 - UNBOUND_SHARE),
    "unbound": PHYSICS_SHARES["newtonian"] * UNBOUND_SHARE,
    "drag": PHYSICS_SHARES["drag"],
    "modified": PHYSICS_SHARES["modified"],
}


@cache
def thresholds() -> dict[str, float]:
    """Per-task relative-error thresholds (``isg_gym/data/orbits/thresholds.json``, written by
    ``benchmarks/orbits_calibrate.py``)."""
    path = resources.files("isg_gym.data.orbits").joinpath("thresholds.json")
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: float(row["threshold"]) for name, row in data["tasks"].items()}


def target_shares(task: str) -> dict[str, float]:
    """The stratum shares a task's sampled questions should have."""
    if TASKS[task].kind == "yes_no":
        half = (1 - UNANSWERABLE_SHARE) / 2
        return {"unanswerable": UNANSWERABLE_SHARE, "yes": half, "no": half}
    return {"unanswerable": UNANSWERABLE_SHARE, "value": 1 - UNANSWERABLE_SHARE}


@cache
def keep_probabilities(task: str) -> dict[str, float]:
    """Per stratum, the probability that :func:`question_at` keeps a question of ``task``."""
    cls = TASKS[task]()
    natural: dict[str, float] = {}
    for orbit in ORBIT_CLASSES:
        stratum = cls.stratum(orbit)
        natural[stratum] = natural.get(stratum, 0.0) + CLASS_SHARES[orbit]
    target = target_shares(task)
    if set(natural) != set(target):
        raise RuntimeError(f"task {task}: strata {sorted(natural)}, expected {sorted(target)}")
    ratio = {s: target[s] / natural[s] for s in target}
    top = max(ratio.values())
    return {s: r / top for s, r in ratio.items()}


def _check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"unknown orbit task {task!r}; known: {', '.join(sorted(TASKS))}")
    return task


def make_question(system: System, task: str, index: int) -> OrbitQuestion:
    """Question ``index`` of ``task`` about ``system`` (always exists)."""
    cls = TASKS[_check_task(task)]
    rng = derive(system.seed, "orbits-question", QUESTION_VERSION, task, index)
    ctx = build_context(system, task, index, rng)
    return cls().generate(ctx, thresholds())


def question_at(
    system: System, index: int, tasks: list[str] | None = None
) -> OrbitQuestion | None:
    """The question sampled in slot ``index`` of ``system`` (None when the slot's task was not
    kept)."""
    names = sorted(TASKS) if tasks is None else [_check_task(t) for t in tasks]
    rng = derive(system.seed, "orbits-slot", QUESTION_VERSION, index)
    task = names[int(rng.integers(len(names)))]
    question = make_question(system, task, index)
    return question if rng.random() < keep_probabilities(task)[question.stratum] else None


def parse_question_id(question_id: str) -> tuple[int, str, int]:
    """``"118.period.3"`` -> ``(118, "period", 3)``."""
    parts = question_id.split(".") if isinstance(question_id, str) else []
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
        raise ValueError(
            f"orbit question id {question_id!r} is not of the form 'SYSTEM.TASK.INDEX', "
            "e.g. '118.period.3'"
        )
    return check_seed(int(parts[0])), _check_task(parts[1]), int(parts[2])


def question_from_id(
    question_id: str, system: System | None = None, options: ObservationOptions | None = None
) -> OrbitQuestion:
    """Regenerate a question from its id."""
    seed, task, index = parse_question_id(question_id)
    system = system if system is not None else build_system(seed, options)
    if system.seed != seed:
        raise ValueError(f"question {question_id!r} is about system {seed}, not {system.seed}")
    return make_question(system, task, index)


def iter_questions(system: System, slots: int, tasks: list[str] | None = None
                   ) -> Iterator[OrbitQuestion]:  # fmt: skip
    """The sampled questions of the first ``slots`` slots (empty slots skipped)."""
    for index in range(slots):
        question = question_at(system, index, tasks)
        if question is not None:
            yield question
