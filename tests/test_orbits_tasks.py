"""Orbit tasks: the registry, balanced strata, question texts that tell nothing, ids, the
stored splits and the grader."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from isg_gym.orbits.grading import grade
from isg_gym.orbits.sampling import (
    CLASS_SHARES,
    UNANSWERABLE_SHARE,
    iter_questions,
    keep_probabilities,
    make_question,
    parse_question_id,
    question_from_id,
    target_shares,
    thresholds,
)
from isg_gym.orbits.splits import SPLITS, build_split, resolve_split
from isg_gym.orbits.system import build_system
from isg_gym.orbits.tasks import TASKS, OrbitQuestion, format_answer
from isg_gym.orbits.truth import ORBIT_CLASSES, Reason, orbit_class


def test_27_tasks_each_defined_everywhere_and_unanswerable_somewhere() -> None:
    assert len(TASKS) == 27
    for name, cls in TASKS.items():
        task = cls()
        strata = {task.stratum(c) for c in ORBIT_CLASSES}
        assert "unanswerable" in strata, name  # answerability is never decided by the type
        assert strata - {"unanswerable"}, name
        assert all(isinstance(r, Reason) for r in cls.undefined.values())
        if cls.kind == "yes_no":
            assert {"yes", "no"} <= strata, name


@pytest.mark.parametrize("task", sorted(TASKS))
def test_keep_probabilities_give_the_target_shares(task: str) -> None:
    cls = TASKS[task]()
    keep = keep_probabilities(task)
    mass: dict[str, float] = defaultdict(float)
    for orbit in ORBIT_CLASSES:
        stratum = cls.stratum(orbit)
        mass[stratum] += CLASS_SHARES[orbit] * keep[stratum]
    total = sum(mass.values())
    for stratum, share in target_shares(task).items():
        assert mass[stratum] / total == pytest.approx(share)
    assert max(keep.values()) == pytest.approx(1.0)


def test_sampled_questions_are_balanced() -> None:
    counts: Counter = Counter()
    for seed in range(1000, 1400):
        for q in iter_questions(build_system(seed), 8):
            counts[(q.type, q.stratum)] += 1
    total = sum(counts.values())
    unanswerable = sum(v for (_, s), v in counts.items() if s == "unanswerable")
    assert unanswerable / total == pytest.approx(UNANSWERABLE_SHARE, abs=0.04)  # sd 0.011
    for name in TASKS:  # per task: loose (the exact shares are checked above)
        n = sum(v for (t, _), v in counts.items() if t == name)
        if n < 40:
            continue
        share = counts[(name, "unanswerable")] / n
        assert share == pytest.approx(UNANSWERABLE_SHARE, abs=0.15), name
        if TASKS[name].kind == "yes_no":
            assert counts[(name, "yes")] == pytest.approx(counts[(name, "no")], rel=0.5)


def test_texts_tell_nothing_about_the_answer() -> None:
    """Every text is one of its task's templates filled with only the star and the unit (no
    value of the system), and answerable and unanswerable questions use the same ones."""
    texts: dict[tuple[str, bool], set[str]] = defaultdict(set)
    for seed in range(120):
        system = build_system(seed)
        for name, cls in TASKS.items():
            q = make_question(system, name, seed % 4)
            allowed = {t.format(star=star, unit=cls.unit) for t in cls.templates for star in (1, 2)}
            assert q.text in allowed, q.text
            texts[(name, q.answerable)].add(q.text)
    for name in TASKS:
        assert texts[(name, True)] == texts[(name, False)], name


def test_ids_regenerate_and_bad_ids_are_clear_errors() -> None:
    for seed in (0, 1, 8, 11):
        system = build_system(seed)
        for name in TASKS:
            q = make_question(system, name, 2)
            assert q.id == f"{seed}.{name}.2" and question_from_id(q.id) == q
            assert q.orbit == orbit_class(system)
    for bad in ("1.period", "x.period.0", "1.nope.0", "1.period.x", 5):
        with pytest.raises(ValueError):
            parse_question_id(bad)
    with pytest.raises(ValueError, match="is about system 3"):
        question_from_id("3.period.0", build_system(4))
    assert parse_question_id("118.period.3") == (118, "period", 3)


def test_thresholds_are_calibrated_rungs() -> None:
    stored = thresholds()
    assert set(stored) == set(TASKS)
    for name, value in stored.items():
        if TASKS[name].kind == "number":
            assert value in (0.05, 0.15, 0.20, 0.40, 0.70)


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_stored_splits_follow_the_recipe(name: str) -> None:
    systems, size = SPLITS[name]
    ids = resolve_split(name)
    assert ids == build_split(systems, size)
    assert len(ids) == size == len(set(ids))
    per_task: dict[str, list[OrbitQuestion]] = defaultdict(list)
    for qid in ids:
        seed, task, index = parse_question_id(qid)
        assert seed in systems
        per_task[task].append(make_question(build_system(seed), task, index))
    assert set(per_task) == set(TASKS)
    for task, qs in per_task.items():
        assert len(qs) in (size // len(TASKS), size // len(TASKS) + 1)
        assert sum(not q.answerable for q in qs) == round(len(qs) * UNANSWERABLE_SHARE)
        if TASKS[task].kind == "yes_no":
            yes = sum(q.answer is True for q in qs)
            no = sum(q.answer is False for q in qs)
            assert abs(yes - no) <= 1


def test_split_ids_are_checked() -> None:
    assert resolve_split(["4.period.0"]) == ["4.period.0"]
    with pytest.raises(ValueError):
        resolve_split(["4.period"])
    with pytest.raises(ValueError, match="unknown orbits split"):
        resolve_split("isg-500")


def _question(kind: str = "number", answer=2.0, reason=None, threshold=0.05) -> OrbitQuestion:
    return OrbitQuestion(id="0.t.0", system=0, type="t", family="f", text="?", answer_kind=kind,
                         answer=answer, reason=reason, unit="m", threshold=threshold,
                         orbit="bound")  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "correct"),
    [("2", True), ("2.099", True), ("2.11", False), ("1.9", True), ("1.89", False),
     ("2e0 m", True), ("The answer is \\boxed{2.05}", True), ('{"answer": 1.97}', True),
     ("-2", False), ("not possible", False), ("nan", False), ("", False), (2.0, True),
     ("two", False)],
)  # fmt: skip
def test_numbers_are_right_within_the_relative_threshold(answer, correct: bool) -> None:
    assert grade(_question(), answer).correct is correct


def test_yes_no_and_abstention() -> None:
    yes = _question("yes_no", True, threshold=0.0)
    assert grade(yes, "yes").correct and grade(yes, True).correct
    assert not grade(yes, "no").correct and not grade(yes, "maybe").correct
    none = _question(answer=None, reason="unbound_orbit")
    assert grade(none, "not possible").correct and grade(none, "cannot be determined").correct
    assert not grade(none, "2").correct
    assert grade(_question(), "not possible").abstained
    assert format_answer(none) == "not possible" and format_answer(yes) == "yes"
    assert format_answer(_question(answer=1.23456789e30)) == "1.23457e+30"
