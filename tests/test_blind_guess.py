"""No policy that never calls a tool beats always-abstain (isg_gym.rewards.blind_guess).

The strongest blind policy that knows nothing but the question type: per type, give the most
common answer of the type's answerable questions or abstain, whichever scored more on training
repositories. Fitted on one set of repositories and scored on another, it must not beat
always-abstain. The same policy under v2's 25% unanswerable share does beat it (coin flips on
yes/no questions), which is what shows that the check can fail.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import pytest

from isg_gym.orbits.grading import grade as grade_orbits
from isg_gym.orbits.sampling import iter_questions
from isg_gym.orbits.system import build_system
from isg_gym.qa import ABSTAIN, format_answer, generate_questions
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO
from isg_gym.repository import Repository
from isg_gym.rewards import UNANSWERABLE_SHARE, break_even_share, grade
from isg_gym.rewards.blind_guess import MAX_TOP_ANSWER_SHARE


def test_break_even_share() -> None:
    assert break_even_share(0.5) == pytest.approx(1 / 3)
    assert break_even_share(0.0) == 0.0
    assert break_even_share(MAX_TOP_ANSWER_SHARE) < UNANSWERABLE_SHARE
    assert DEFAULT_UNANSWERABLE_RATIO == UNANSWERABLE_SHARE
    with pytest.raises(ValueError, match="top_share must be within"):
        break_even_share(1.5)


Grader = Callable[[Any, str], float]


def prior_policy(train: Sequence[Any], gold: Callable[[Any], str], score: Grader) -> dict:
    """Per type: the most common answer of its answerable training questions, or ABSTAIN if
    that scored no more than abstaining on the training questions."""
    by_type: dict[str, list[Any]] = defaultdict(list)
    for q in train:
        by_type[q.type].append(q)
    policy = {}
    for kind, questions in by_type.items():
        answers = Counter(gold(q) for q in questions if q.answerable)
        guess = answers.most_common(1)[0][0] if answers else ABSTAIN
        guessed = sum(score(q, guess) for q in questions)
        abstained = sum(not q.answerable for q in questions)
        policy[kind] = guess if guessed > abstained else ABSTAIN
    return policy


def gap(questions: Sequence[Any], gold: Callable[[Any], str], score: Grader) -> float:
    """Accuracy of the type-prior policy minus always-abstain's, fitted on the first half of
    ``questions`` and scored on the second."""
    half = len(questions) // 2
    policy = prior_policy(questions[:half], gold, score)
    test = questions[half:]
    blind = sum(score(q, policy.get(q.type, ABSTAIN)) for q in test)
    return (blind - sum(not q.answerable for q in test)) / len(test)


@cache
def isg_questions(ratio: float) -> tuple[Any, ...]:
    questions = []
    for seed in range(5000, 5300):
        questions += generate_questions(Repository.from_seed(seed), 8, unanswerable_ratio=ratio)
    return tuple(questions)


def isg_score(q: Any, answer: str) -> float:
    return grade(q, answer).value


def test_isg_blind_policy_does_not_beat_abstain() -> None:
    questions = isg_questions(DEFAULT_UNANSWERABLE_RATIO)
    assert len(questions) == 2400
    assert gap(questions, format_answer, isg_score) <= 0.0


def test_isg_blind_policy_beat_abstain_at_v2_share() -> None:
    """The check has teeth: at 25% unanswerable the yes/no types pay a blind guess."""
    assert gap(isg_questions(0.25), format_answer, isg_score) > 0.01


def orbits_gold(q: Any) -> str:
    if not q.answerable:
        return ABSTAIN
    if isinstance(q.answer, bool):
        return "yes" if q.answer else "no"
    return repr(q.answer)


def orbits_score(q: Any, answer: str) -> float:
    return grade_orbits(q, answer).value


def test_orbits_blind_policy_does_not_beat_abstain() -> None:
    """Numeric answers are guessed by exact value here (never right); the constant within a
    task's tolerance of the most answers is benchmarks/orbits_baselines.py's job."""
    questions = [q for seed in range(1000, 3000) for q in iter_questions(build_system(seed), 4)]
    assert gap(questions, orbits_gold, orbits_score) <= 0.0
