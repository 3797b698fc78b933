"""Grading one answer against a question's ground truth.

Rubric by ``answer_kind`` (after extraction, see :mod:`isg_gym.rewards.extract`):

- ``integer``: exact; "12", "12.0", "1,234", "1.2e1", "12 files" are 12; "12.5" is not.
- ``float``: with ``s = question.sig_figs`` (default 4), correct when the answer rounded to ``s``
  significant figures equals the gold rounded to ``s`` significant figures: an answer with more
  digits that rounds to the gold is right, one that rounds elsewhere is wrong. At a rounding tie
  (the gold within a relative 1e-9 of a rounding boundary, where a one-ulp difference in parsing
  or summation order flips the rounding) both neighbours are accepted. Signs, scientific
  notation and thousands separators are accepted; percentages are not.
- ``yes_no``: yes / y / true and no / n / false, any case, wrapping punctuation ignored.
- ``category``: exact after case folding, whitespace collapsing, stripping quotes / backticks;
  a value read from a path is right with or without its name part (``by=smith`` or ``smith``,
  from ``params["answer_prefix"]``).
- ``extension``: as category, with or without a leading dot (or ``*.``).
- ``string`` (titles) and ``text`` (abstracts): token-overlap F1 (typo tolerant, see
  :func:`~isg_gym.rewards.normalise.token_f1`) of at least :data:`TITLE_F1` /
  :data:`ABSTRACT_F1`; the score is still 0 or 1.

Abstentions (:func:`~isg_gym.rewards.abstention.is_abstention`) are correct exactly when the
question is unanswerable; any other answer to an unanswerable question is wrong. NaN, infinities,
None and empty answers never match anything and are not abstentions.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from isg_gym.numbers import round_sig
from isg_gym.qa.base import ABSTAIN, Question
from isg_gym.rewards.abstention import is_abstention
from isg_gym.rewards.extract import extract_answer
from isg_gym.rewards.normalise import (
    normalise_category,
    normalise_extension,
    parse_number,
    parse_yes_no,
    token_f1,
)

TITLE_F1 = 0.8  # titles: short, so one wrong word in five already fails
ABSTRACT_F1 = 0.7  # abstracts: long; paraphrase of a few words still passes
DEFAULT_SIG_FIGS = 4  # as format_answer uses when a float question has no sig_figs
FLOAT_SLACK = 1e-9  # relative distance to a rounding boundary treated as a tie


@dataclass(frozen=True)
class Score:
    """The grade of one answer: ``value`` is 1.0 when ``correct`` else 0.0."""

    value: float
    parsed: Any
    correct: bool
    abstained: bool
    explanation: str


def grade(question: Question, answer: object) -> Score:
    """Grade ``answer`` (a raw reply, an extracted string, or a bool / int / float) for
    ``question``."""
    text, verdict = grade_presence(question, answer)
    return verdict if verdict is not None else _grade_value(question, answer, text)


def grade_presence(question: Any, answer: object) -> tuple[str, Score | None]:
    """What every env's grader does first: the answer's text, and the score when it is missing,
    an abstention, or given to an unanswerable question (``question`` has ``answerable`` and
    ``reason``); None when the value itself must be graded."""
    text = answer_text(answer)
    if text is None:
        return "", _score(False, None, False, "no answer (None, empty, NaN or infinite)")
    if is_abstention(text):
        if question.answerable:
            return text, _score(False, ABSTAIN, True, "abstained on an answerable question")
        return text, _score(True, ABSTAIN, True, f"correctly abstained ({question.reason})")
    if not question.answerable:
        why = f"answered an unanswerable question ({question.reason})"
        return text, _score(False, text, False, why)
    return text, None


def answer_text(answer: object) -> str | None:
    """The extracted answer text; None for None, empty, NaN and infinite answers."""
    if answer is None:
        return None
    if isinstance(answer, bool):
        return "true" if answer else "false"
    if isinstance(answer, numbers.Real):
        if not math.isfinite(float(answer)):
            return None
        return repr(answer) if isinstance(answer, float) else str(int(answer))
    if isinstance(answer, Decimal):
        return str(answer) if answer.is_finite() else None
    if not isinstance(answer, str):
        answer = str(answer)
    return extract_answer(answer)


def _grade_value(question: Question, answer: object, text: str) -> Score:
    gold = question.answer
    match question.answer_kind:
        case "integer":
            return _grade_integer(gold, text)
        case "float":
            return _grade_float(gold, text, question.sig_figs or DEFAULT_SIG_FIGS)
        case "yes_no":
            return _grade_yes_no(gold, answer, text)
        case "category":
            return _grade_category(question, str(gold), text)
        case "extension":
            return _grade_exact(normalise_extension(str(gold)), normalise_extension(text))
        case "string":
            return _grade_overlap(str(gold), text, TITLE_F1)
        case "text":
            return _grade_overlap(str(gold), text, ABSTRACT_F1)
    raise ValueError(f"unknown answer_kind {question.answer_kind!r}")


def _grade_integer(gold: Any, text: str) -> Score:
    value = parse_number(text)
    if value is None:
        return _score(False, None, False, f"{text!r} is not a number")
    if value != value.to_integral_value():
        return _score(False, float(value), False, f"{text!r} is not a whole number")
    parsed = int(value)
    ok = parsed == int(gold)
    return _score(ok, parsed, False, f"{parsed} {'==' if ok else '!='} {int(gold)}")


def _grade_float(gold: Any, text: str, sig_figs: int) -> Score:
    value = parse_number(text)
    if value is None:
        return _score(False, None, False, f"{text!r} is not a number")
    parsed, target = float(value), float(gold)
    if not (math.isfinite(parsed) and math.isfinite(target)):
        return _score(False, parsed, False, "non-finite value never matches")
    accepted = {round_sig(target * (1 + d), sig_figs) for d in (0.0, -FLOAT_SLACK, FLOAT_SLACK)}
    ok = round_sig(parsed, sig_figs) in accepted
    shown = round_sig(target, sig_figs)
    why = (
        f"{parsed!r} matches {target!r} at {sig_figs} significant figures ({shown!r})"
        if ok
        else f"{parsed!r} differs from {target!r} at {sig_figs} significant figures ({shown!r})"
    )
    return _score(ok, parsed, False, why)


def _grade_yes_no(gold: Any, answer: object, text: str) -> Score:
    parsed = answer if isinstance(answer, bool) else parse_yes_no(text)
    if parsed is None:
        return _score(False, None, False, f"{text!r} is not yes or no")
    want = parse_yes_no(gold) if isinstance(gold, str) else bool(gold)
    ok = parsed == want
    return _score(ok, parsed, False, f"{_yn(parsed)} {'==' if ok else '!='} {_yn(want)}")


def _yn(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


def _grade_exact(gold: str, parsed: str) -> Score:
    if not parsed:
        return _score(False, None, False, "empty answer")
    ok = parsed == gold
    return _score(ok, parsed, False, f"{parsed!r} {'==' if ok else '!='} {gold!r} (normalised)")


def _grade_category(question: Question, gold: str, text: str) -> Score:
    """Exact after normalisation; a value read from a path may carry its name part
    (``params["answer_prefix"]``, e.g. ``by=`` or ``date_``): ``by=smith`` or ``smith``."""
    parsed = normalise_category(text)
    prefix = normalise_category(str(question.params.get("answer_prefix") or ""))
    if prefix and parsed.startswith(prefix) and parsed != normalise_category(gold):
        parsed = parsed[len(prefix):]
    return _grade_exact(normalise_category(gold), parsed)


def _grade_overlap(gold: str, text: str, threshold: float) -> Score:
    f1 = token_f1(text, gold)
    ok = f1 >= threshold
    return _score(ok, text, False, f"token F1 {f1:.3f} {'>=' if ok else '<'} {threshold}")


def _score(correct: bool, parsed: Any, abstained: bool, explanation: str) -> Score:
    return Score(1.0 if correct else 0.0, parsed, correct, abstained, explanation)
