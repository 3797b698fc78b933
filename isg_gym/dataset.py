"""A plain dataset view of ISG questions (reasoning-gym style): rows of id, question, answer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from isg_gym.qa import ABSTAIN, Question, format_answer
from isg_gym.qa.conventions import CONVENTIONS
from isg_gym.qa.sampling import (
    DEFAULT_UNANSWERABLE_RATIO,
    _check_ratio,
    _check_types,
    iter_questions,
)
from isg_gym.repository import Repository

ANSWER_INSTRUCTIONS = (
    "Answer with the value only. If the question cannot be answered from the repository's data "
    f'(for example the data needed does not exist), answer "{ABSTAIN}".'
)


def make_dataset(
    repositories: Iterable[int] = range(100),
    per_repository: int = 5,
    types: Iterable[str] | None = None,
    unanswerable_ratio: float = DEFAULT_UNANSWERABLE_RATIO,
    configs: Mapping[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield ``{id, question, answer, metadata}`` rows, reproducibly.

    ``question`` is the question text followed by :data:`ANSWER_INSTRUCTIONS` and the
    conventions (:data:`isg_gym.qa.conventions.CONVENTIONS`); ``answer`` is the
    gold answer as text (``"not possible"`` for unanswerable questions); ``metadata`` holds the
    full :class:`~isg_gym.qa.Question` record (type, family, reason, sig figs, params, evidence).
    ``configs`` maps question-type names to instances of their ``Config`` dataclass.
    """
    names = _check_types(types)
    ratio = _check_ratio(unanswerable_ratio)
    if per_repository < 1:
        raise ValueError(f"per_repository must be a positive integer, got {per_repository!r}")
    for seed in repositories:
        repo = Repository.from_seed(seed)
        for question in iter_questions(repo, per_repository, names, ratio, configs=configs):
            yield to_row(question)


def to_row(question: Question) -> dict[str, Any]:
    return {
        "id": question.id,
        "question": f"{question.text}\n\n{ANSWER_INSTRUCTIONS}\n\n{CONVENTIONS}",
        "answer": format_answer(question),
        "metadata": question.to_dict(),
    }


def question_of(row: dict[str, Any]) -> Question:
    """The Question record stored in a dataset row."""
    meta = dict(row["metadata"])
    meta.pop("answerable", None)
    meta["evidence"] = tuple(meta.get("evidence", ()))
    return Question(**meta)


def score(answer: object, row: dict[str, Any]) -> float:
    """The grader's correctness score (0.0 or 1.0) of ``answer`` for a dataset row."""
    from isg_gym.rewards import grade

    return grade(question_of(row), answer).value
