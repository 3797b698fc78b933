"""Questions: the record, the unanswerability reasons, and the question-type registry.

A question type is a class with a frozen config dataclass and one method,
``generate(ctx, answerable) -> Question | None``: it computes the ground truth with privileged
access (the Repository's in-memory tables and structured file index), or builds a question that
is unanswerable by construction and says why. ``None`` means this repository offers no such
question (the sampler then tries another type).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from isg_gym.repository import Repository

Family = Literal[
    "repository_metadata",
    "directory_traversal",
    "file_metadata",
    "univariate_statistics",
    "bivariate_statistics",
    "hypothesis_tests",
    "group_comparison",
    "effects",
]
AnswerKind = Literal["yes_no", "integer", "float", "category", "string", "extension", "text"]
ABSTAIN = "not possible"
# The question generator's version. Question ids (``"{seed}.{type}.{slot}"``) mean what they
# mean under one version only; records and summaries carry it. v2: shortcut-free construction
# (unanswerable questions drawn from the answerable distributions), stated conventions,
# balanced answers and robust gold (see the README's questions section). v3: 40% of the
# questions unanswerable (25% before), so that no blind guess beats abstaining
# (:mod:`isg_gym.rewards.blind_guess`); question texts and gold are built as in v2.
QUESTION_VERSION = 3


class Reason(enum.StrEnum):
    """Why a question is unanswerable (machine-readable)."""

    README_MISSING = "readme_missing"  # title/abstract asked but the README does not exist
    README_MISSING_TITLE = "readme_missing_title"
    README_MISSING_ABSTRACT = "readme_missing_abstract"
    NO_SUCH_FILE = "no_such_file"  # a file path that does not exist
    NO_SUCH_PATH_VALUE = "no_such_path_value"  # a path-variable value that no file has
    NO_MATCHING_FILES = "no_matching_files"  # path conditions leave no file
    NO_MATCHING_ROWS = "no_matching_rows"  # row conditions leave no row with a value
    TOO_FEW_ROWS = "too_few_rows"  # fewer rows than the statistic needs
    CATEGORICAL_COLUMN = "categorical_column"  # numeric statistic of a categorical column
    CONSTANT_COLUMN = "constant_column"  # correlation / test with a constant column
    UNRECORDED_VARIABLE = "unrecorded_variable"  # described in the project, never recorded


@dataclass(frozen=True)
class Question:
    """One question with its ground truth (``answer``) or its unanswerability ``reason``.

    ``answer`` is JSON-able: bool for yes_no, int, float (full precision; graded at
    ``sig_figs`` significant figures), or str. ``params`` is the structured description of the
    question (target columns, statistic, path and row conditions as dicts) from which an
    independent checker recomputes the answer; ``evidence`` lists the files the answer depends on.
    """

    id: str
    repository: int
    type: str
    family: str
    text: str
    answer_kind: AnswerKind
    answer: Any
    reason: str | None = None
    sig_figs: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["evidence"] = list(self.evidence)
        out["answerable"] = self.answerable
        return out


@dataclass
class Context:
    """What a generator gets: the repository, its own random stream, and the question id parts."""

    repo: Repository
    rng: np.random.Generator
    type: str
    index: int

    @property
    def spec(self):
        return self.repo.spec

    def question(
        self,
        text: str,
        answer_kind: AnswerKind,
        answer: Any,
        *,
        reason: Reason | None = None,
        sig_figs: int | None = None,
        params: dict[str, Any] | None = None,
        evidence: tuple[str, ...] | list[str] = (),
    ) -> Question:
        """Build the Question record (answer forced to None when unanswerable)."""
        cls = question_type(self.type)
        return Question(
            id=f"{self.repo.seed}.{self.type}.{self.index}",
            repository=self.repo.seed,
            type=self.type,
            family=cls.family,
            text=text,
            answer_kind=answer_kind,
            answer=None if reason is not None else answer,
            reason=None if reason is None else str(reason),
            sig_figs=sig_figs,
            params=params or {},
            evidence=tuple(evidence),
        )

    def choice(self, items):
        """A uniformly chosen element of a non-empty sequence."""
        return items[int(self.rng.integers(len(items)))]


class QuestionType:
    """Base of every question type: set ``name``, ``family``, ``reasons`` and ``generate``."""

    name: ClassVar[str]
    family: ClassVar[Family]
    reasons: ClassVar[tuple[Reason, ...]] = ()  # reasons it can construct; () = always answerable
    # Shares of repositories offering an answerable / an unanswerable question of this type.
    answerable_share: ClassVar[float] = 1.0
    unanswerable_share: ClassVar[float] = 1.0
    # An opt-in type is generated only where it is named (``question_types``); the default
    # types, the default questions and the stored splits never include it.
    opt_in: ClassVar[bool] = False

    @dataclass(frozen=True)
    class Config:
        pass

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        raise NotImplementedError


QUESTION_TYPES: dict[str, type[QuestionType]] = {}  # the default types
OPT_IN_QUESTION_TYPES: dict[str, type[QuestionType]] = {}  # generated only when named


def register(cls: type[QuestionType]) -> type[QuestionType]:
    """Class decorator: make a question type available by its ``name`` (an ``opt_in`` one only
    when named)."""
    if cls.name in QUESTION_TYPES or cls.name in OPT_IN_QUESTION_TYPES:
        raise ValueError(f"question type {cls.name!r} registered twice")
    (OPT_IN_QUESTION_TYPES if cls.opt_in else QUESTION_TYPES)[cls.name] = cls
    return cls


def question_type(name: str) -> type[QuestionType]:
    """The question type named ``name``, default or opt-in (KeyError otherwise)."""
    if name in QUESTION_TYPES:
        return QUESTION_TYPES[name]
    return OPT_IN_QUESTION_TYPES[name]


def known_types() -> list[str]:
    """Every type name that may be asked for: the defaults, then the opt-in ones."""
    return sorted(QUESTION_TYPES) + sorted(OPT_IN_QUESTION_TYPES)


def format_answer(question: Question) -> str:
    """The gold answer as an agent should write it ("not possible" when unanswerable)."""
    from isg_gym.numbers import format_sig

    if not question.answerable:
        return ABSTAIN
    value = question.answer
    match question.answer_kind:
        case "yes_no":
            return "yes" if value else "no"
        case "float":
            return format_sig(float(value), question.sig_figs or 4)
        case "integer":
            return str(int(value))
    return str(value)
