"""Every generated question agrees with an independent recomputation from the served files.

``tests/checker.py`` recomputes answers (and unanswerability reasons) from what an agent sees:
the file listing, the served bytes parsed with pandas, and path tokens parsed from path strings.
``ISG_CHECKER_SEEDS=40 python -m pytest tests/test_qa_checker.py`` is the fast variant.
"""

import dataclasses
import os
from collections import Counter

import pytest
from checker import RECOMPUTE, Served, check_question, check_seeds

from isg_gym.qa import QUESTION_TYPES, generate_questions
from isg_gym.repository import Repository

SEEDS = range(int(os.environ.get("ISG_CHECKER_SEEDS", "300")))
PER_REPOSITORY = 8


@pytest.fixture(scope="module")
def reports():
    return check_seeds(SEEDS, PER_REPOSITORY)


def _listing(messages: list[str], limit: int = 60) -> str:
    more = f"\n... and {len(messages) - limit} more" if len(messages) > limit else ""
    return "\n".join(messages[:limit]) + more


def test_checker_knows_every_registered_type():
    unknown = sorted(set(QUESTION_TYPES) - set(RECOMPUTE))
    assert QUESTION_TYPES, "no question types are registered"
    assert not unknown, f"question types the checker cannot recompute: {unknown}"


def test_every_gold_answer_is_recomputed_from_served_files(reports):
    failures = [m for r in reports for m in r.failures]
    total = sum(r.questions for r in reports)
    kinds = Counter()
    for r in reports:
        kinds.update(r.kinds)
    assert total >= 0.9 * len(SEEDS) * PER_REPOSITORY, f"only {total} questions generated"
    assert not failures, (
        f"{len(failures)} of {total} questions disagree with the recomputation:\n"
        + _listing(failures)
    )
    print(f"\n{total} questions agree; by type and reason: {dict(sorted(kinds.items()))}")


def test_every_gold_answer_grades_as_correct(reports):
    if any(r.grading is None for r in reports):
        pytest.skip("isg_gym.rewards is not importable yet")
    failures = [m for r in reports for m in r.grading]
    assert not failures, f"{len(failures)} gold answers mis-graded:\n" + _listing(failures)


def _wrong(q):
    """A copy of ``q`` with a wrong gold answer or reason."""
    if not q.answerable:
        other = "no_such_file" if q.reason == "readme_missing_title" else "readme_missing_title"
        return dataclasses.replace(q, reason=other)
    match q.answer_kind:
        case "yes_no":
            answer = not q.answer
        case "integer":
            answer = q.answer + 1
        case "float":
            answer = q.answer * 1.2 + 1.0
        case _:
            answer = q.answer + "x"
    return dataclasses.replace(q, answer=answer)


def test_the_checker_catches_wrong_gold_answers():
    checked = 0
    for seed in range(12):
        repo = Repository.from_seed(seed)
        served = Served(repo)
        for q in generate_questions(repo, 6):
            assert check_question(served, _wrong(q)) is not None, q.id
            checked += 1
    assert checked >= 60
