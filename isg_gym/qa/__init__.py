"""Questions about a repository with exact ground truth, or a reason they are unanswerable."""

from isg_gym.qa import types as _types  # noqa: F401  (registers the question types)
from isg_gym.qa.base import (
    ABSTAIN,
    QUESTION_TYPES,
    QUESTION_VERSION,
    Question,
    Reason,
    format_answer,
)
from isg_gym.qa.sampling import (
    DEFAULT_UNANSWERABLE_RATIO,
    generate_questions,
    question_at,
    question_from_id,
)

__all__ = [
    "ABSTAIN",
    "DEFAULT_UNANSWERABLE_RATIO",
    "QUESTION_TYPES",
    "QUESTION_VERSION",
    "Question",
    "Reason",
    "format_answer",
    "generate_questions",
    "question_at",
    "question_from_id",
]
