"""Grading an answer to an orbit question.

Numbers are right within the task's relative-error threshold, ``|x - gold| <= threshold *
|gold|`` (inclusive; thresholds calibrated on the expert solver, as Gravity-Bench did); yes/no
answers exactly; "not possible" (and its documented equivalents) exactly on unanswerable questions.
Answers are extracted as for ISG-v0 (plain text, ``{"answer": ...}`` JSON, ``\\boxed{}``).
"""

from __future__ import annotations

import math

from isg_gym.orbits.tasks import OrbitQuestion
from isg_gym.rewards import Score
from isg_gym.rewards.normalise import parse_number, parse_yes_no
from isg_gym.rewards.rubric import grade_presence

BOUNDARY_SLACK = 1e-9  # an answer exactly at the threshold is right despite float rounding


def _score(correct: bool, parsed, abstained: bool, explanation: str) -> Score:
    return Score(1.0 if correct else 0.0, parsed, correct, abstained, explanation)


def relative_error(value: float, gold: float) -> float:
    return abs(value - gold) / abs(gold)


def grade(question: OrbitQuestion, answer: object) -> Score:
    """Grade ``answer`` (raw reply, extracted string, bool or number) for ``question``."""
    text, verdict = grade_presence(question, answer)
    if verdict is not None:
        return verdict
    if question.answer_kind == "yes_no":
        parsed = answer if isinstance(answer, bool) else parse_yes_no(text)
        if parsed is None:
            return _score(False, None, False, f"{text!r} is not yes or no")
        ok = parsed == bool(question.answer)
        return _score(ok, parsed, False, f"{_yes_no(parsed)} {'==' if ok else '!='} "
                      f"{_yes_no(bool(question.answer))}")  # fmt: skip
    number = parse_number(text)
    if number is None or not math.isfinite(float(number)):
        return _score(False, None, False, f"{text!r} is not a finite number")
    value, gold = float(number), float(question.answer)
    error = relative_error(value, gold)
    ok = error <= question.threshold * (1 + BOUNDARY_SLACK)
    why = (f"{value:.6g} vs {gold:.6g} {question.unit}: relative error {error:.3g} "
           f"{'<=' if ok else '>'} {question.threshold:g}")  # fmt: skip
    return _score(ok, value, False, why)


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"
