"""The state of one LLM build: the seed's own random decisions and what each stage accepted.

Everything random comes from streams derived from the seed (:func:`isg_gym.seeding.derive`):
the taxonomy triple (the same stream as the procedural builder, so seed *n* studies the same
subdomain with either builder), the study design asked for, how many variables of each kind,
which title candidate is taken, which described variables are recorded, the extra path
variables (running number, researcher, date), README visibility, file format and sort key.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from isg_gym.seeding import derive
from isg_gym.simulator.llm.replies import Profile
from isg_gym.simulator.taxonomy import sample_triple
from isg_gym.spec.models import (
    FILE_FORMATS,
    Column,
    DependentColumn,
    Layout,
    PathVariable,
    ReadmeVisibility,
    TaxonomyTriple,
    VariableInfo,
)

STUDY_DESIGNS = (
    "a controlled laboratory experiment",
    "a field survey at several sites",
    "a long-term monitoring programme",
    "a randomised controlled trial",
    "a computer simulation study",
    "a multi-site observational study",
    "a benchmark comparison of methods or devices",
    "a pilot study with a small team",
    "a factorial experiment",
    "a quality-control study in a production setting",
    "a natural experiment using existing records",
    "a cohort study followed over time",
)


def _stream(seed: int, label: str) -> np.random.Generator:
    return derive(seed, "llm", label)


@dataclass(frozen=True)
class Plan:
    """What the seed decides before any model call."""

    seed: int
    profile: Profile
    triple: TaxonomyTriple
    study_design: str
    conditions: int
    measured: int
    outcomes: int
    confounders: int

    @classmethod
    def of(cls, seed: int, profile: Profile) -> Plan:
        """The seed's plan; variable counts are drawn within the profile's bounds (the
        measured variables one short of the bound, which leaves room for the confounders)."""
        rng = _stream(seed, "plan")
        draw = lambda bounds: int(rng.integers(bounds[0], bounds[1] + 1))  # noqa: E731
        return cls(
            seed=seed,
            profile=profile,
            triple=sample_triple(derive(seed, "taxonomy")),
            study_design=STUDY_DESIGNS[int(rng.integers(len(STUDY_DESIGNS)))],
            conditions=draw(profile.conditions),
            measured=draw((profile.measured[0], max(profile.measured[1] - 1, profile.measured[0]))),
            outcomes=draw(profile.outcomes),
            confounders=draw(profile.confounders),
        )


@dataclass
class Design:
    """The accepted project description (stage 2)."""

    setting: str
    goal: str
    hypothesis: str
    setup: str
    file_unit: str
    row_unit: str
    conditions: list[VariableInfo]
    measured: list[VariableInfo]
    outcomes: list[VariableInfo]
    confounders: list[VariableInfo]

    def variables(self) -> list[VariableInfo]:
        return [*self.conditions, *self.measured, *self.outcomes, *self.confounders]


@dataclass
class Draft:
    """One seed's build in progress; each stage fills its part."""

    plan: Plan
    titles: list[str] = field(default_factory=list)
    title: str | None = None
    design: Design | None = None
    recorded: list[VariableInfo] = field(default_factory=list)  # independent columns to define
    unrecorded: list[VariableInfo] = field(default_factory=list)
    abstract: str | None = None
    path_variables: list[PathVariable] = field(default_factory=list)
    layout: Layout | None = None
    columns: list[Column] = field(default_factory=list)  # identifier, timestamp, independents
    dependents: list[DependentColumn] = field(default_factory=list)
    typical_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return self.plan.seed

    def rng(self, label: str) -> np.random.Generator:
        return _stream(self.seed, label)


def readme_visibility(seed: int) -> ReadmeVisibility:
    """Half the repositories have a README; of those half show the title, of those half the
    abstract (the procedural builder's odds, from the LLM builder's own stream)."""
    rng = _stream(seed, "readme")
    present = bool(rng.random() < 0.5)
    title = present and bool(rng.random() < 0.5)
    abstract = title and bool(rng.random() < 0.5)
    return ReadmeVisibility(present=present, title=title, abstract=abstract)


def file_format(seed: int) -> str:
    return FILE_FORMATS[int(_stream(seed, "format").integers(len(FILE_FORMATS)))]


def start_time(rng: np.random.Generator) -> dt.datetime:
    return dt.datetime(
        int(rng.integers(2015, 2025)),
        int(rng.integers(1, 13)),
        int(rng.integers(1, 29)),
        int(rng.integers(0, 24)),
        tzinfo=dt.UTC,
    )
