"""Orbit questions: the record, the task base class and the task registry.

A task is a class with a frozen ``Config``, its question templates, the orbit classes in which
its quantity does not exist (``undefined``: class -> :class:`~isg_gym.orbits.truth.Reason`)
and ``value(facts, params)``, its ground truth elsewhere. Whether a question is answerable
depends only on the system's physics (never on the task's text or parameters): every task is
defined, answerable or not, on every system.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from isg_gym.orbits.system import System
from isg_gym.orbits.truth import Facts, OrbitClass, Reason, facts

AnswerKind = Literal["number", "yes_no"]
ABSTAIN = "not possible"
DEFAULT_THRESHOLD = 0.05  # before calibration (isg_gym/data/orbits/thresholds.json)


@dataclass(frozen=True)
class OrbitQuestion:
    """One question about a system, with its gold ``answer`` (SI float or bool) or the
    ``reason`` it has none. Numbers are right within ``threshold`` relative error."""

    id: str
    system: int
    type: str
    family: str
    text: str
    answer_kind: AnswerKind
    answer: float | bool | None
    reason: str | None
    unit: str
    threshold: float
    orbit: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return self.reason is None

    @property
    def stratum(self) -> str:
        """``unanswerable``, ``yes`` / ``no`` (booleans) or ``value``: what the splits and the
        sampler balance."""
        if not self.answerable:
            return "unanswerable"
        if self.answer_kind == "yes_no":
            return "yes" if self.answer else "no"
        return "value"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["answerable"] = self.answerable
        return out


def format_answer(question: OrbitQuestion) -> str:
    """The gold answer as text: "not possible", yes/no, or the number at 6 significant
    figures."""
    if not question.answerable:
        return ABSTAIN
    if question.answer_kind == "yes_no":
        return "yes" if question.answer else "no"
    return f"{float(question.answer):.6g}"


@dataclass
class Context:
    """What a task gets to build a question: the system, its facts, a random stream, the id."""

    system: System
    facts: Facts
    rng: np.random.Generator
    type: str
    index: int

    def choice(self, items):
        return items[int(self.rng.integers(len(items)))]


class OrbitTask:
    """Base of every task: set ``name``, ``family``, ``unit``, ``templates``, ``undefined``
    and ``value``. ``per_star`` tasks draw which star they ask about (``{star}``)."""

    name: ClassVar[str]
    family: ClassVar[str]
    kind: ClassVar[AnswerKind] = "number"
    unit: ClassVar[str] = ""
    templates: ClassVar[tuple[str, ...]]
    per_star: ClassVar[bool] = False
    undefined: ClassVar[dict[OrbitClass, Reason]] = {}
    # Booleans: the answer in each class where it is defined (the sampler balances them).
    answers: ClassVar[dict[OrbitClass, bool]] = {}

    @dataclass(frozen=True)
    class Config:
        pass

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    def value(self, facts: Facts, params: dict[str, Any]) -> float | bool:
        raise NotImplementedError

    def stratum(self, orbit: OrbitClass) -> str:
        """The stratum of this task's question on a system of class ``orbit``."""
        if orbit in self.undefined:
            return "unanswerable"
        if self.kind == "yes_no":
            return "yes" if self.answers[orbit] else "no"
        return "value"

    def generate(self, ctx: Context, thresholds: dict[str, float]) -> OrbitQuestion:
        params: dict[str, Any] = {}
        if self.per_star:
            params["star"] = int(ctx.rng.integers(1, 3))
        text = ctx.choice(self.templates).format(unit=self.unit, **params)
        orbit = ctx.facts.orbit
        reason = self.undefined.get(orbit)
        answer: float | bool | None = None
        if reason is None:
            answer = self.answers[orbit] if self.kind == "yes_no" else self.value(ctx.facts, params)
            if self.kind == "number" and not (math.isfinite(answer) and answer != 0):
                raise RuntimeError(f"{self.name} on system {ctx.system.seed}: gold {answer!r}")
        threshold = thresholds.get(self.name, DEFAULT_THRESHOLD) if self.kind == "number" else 0.0
        return OrbitQuestion(
            id=f"{ctx.system.seed}.{self.name}.{ctx.index}",
            system=ctx.system.seed,
            type=self.name,
            family=self.family,
            text=text,
            answer_kind=self.kind,
            answer=answer,
            reason=None if reason is None else str(reason),
            unit=self.unit,
            threshold=threshold,
            orbit=orbit,
            params=params,
        )


TASKS: dict[str, type[OrbitTask]] = {}


def register(cls: type[OrbitTask]) -> type[OrbitTask]:
    """Class decorator: make a task available by its ``name``."""
    if cls.name in TASKS:
        raise ValueError(f"orbit task {cls.name!r} registered twice")
    if cls.kind == "yes_no":
        missing = {"bound", "unbound", "drag", "modified"} - set(cls.undefined) - set(cls.answers)
        if missing:
            raise ValueError(f"{cls.name}: no answer for classes {sorted(missing)}")
    TASKS[cls.name] = cls
    return cls


def build_context(system: System, type_name: str, index: int, rng) -> Context:
    return Context(system=system, facts=facts(system), rng=rng, type=type_name, index=index)
