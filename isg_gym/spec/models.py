"""The Spec: a repository's data-generating program as plain, validated, JSON-round-trippable data.

A Spec holds no Python callables. Dependent columns are expression strings in the whitelisted
language of :mod:`isg_gym.spec.expressions`; validation compiles every one of them against the
variables defined before it, so a Spec that loads is a Spec that generates.
"""

from __future__ import annotations

import datetime as dt
import keyword
import re
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from isg_gym.spec.distributions import ContinuousDistribution, IntegerDistribution
from isg_gym.spec.expressions import ExpressionError, Kind, compile_expression, expression_kind

SPEC_VERSION = 3
FileFormat = Literal["csv", "json", "jsonl", "xlsx", "txt", "log"]
FILE_FORMATS: tuple[FileFormat, ...] = ("csv", "json", "jsonl", "xlsx", "txt", "log")
EXPANSION_STYLES = ("{name}={val}", "{name}_{val}", "{name}-{val}", "{name}{val}", "{val}")
DATE_FORMATS = ("%Y-%m-%d", "%Y_%m_%d", "%Y%m%d", "%m-%d", "%m_%d", "%m%d")
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,30}$")
PATH_TOKEN_RE = re.compile(r"^[A-Za-z0-9.]{1,24}$")
RESERVED_NAMES = frozenset(
    {"where", "exp", "log", "sqrt", "abs", "tanh", "sin", "cos", "min", "max", "clip", "cut",
     "noise", "pi", "e", *keyword.kwlist}
)  # fmt: skip


# Strings pandas would read back as missing, boolean or numeric are not valid category labels.
PANDAS_SPECIAL = {
    "", "NA", "N/A", "n/a", "NaN", "nan", "-nan", "-NaN", "NULL", "null", "None", "none", "<NA>",
    "#N/A", "#NA", "#N/A N/A", "1.#IND", "-1.#IND", "1.#QNAN", "-1.#QNAN",
    "True", "False", "TRUE", "FALSE", "true", "false",
}  # fmt: skip


def check_label(value: str) -> str:
    """A category label must survive a round trip through pandas as the same string."""
    if value in PANDAS_SPECIAL or value != value.strip() or "|" in value or "\t" in value:
        raise ValueError(f"category label {value!r} would not read back as a string")
    try:
        float(value)
    except ValueError:
        return value
    raise ValueError(f"category label {value!r} looks numeric")


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VariableInfo(Model):
    """What every variable carries: a column-safe name, a human label, a unit, a description."""

    name: str
    label: str = Field(min_length=2, max_length=60)
    unit: str = Field(max_length=30, description="'' for dimensionless or categorical")
    description: str = Field(min_length=10, max_length=240)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"name {v!r} must match {NAME_RE.pattern}")
        if v in RESERVED_NAMES:
            raise ValueError(f"name {v!r} is reserved (an expression function or keyword)")
        return v


class TaxonomyTriple(Model):
    field: str
    domain: str
    subdomain: str
    subdomain_description: str


class Story(Model):
    title: str = Field(min_length=5)
    description: str = Field(min_length=50, description="multi-paragraph project description")
    abstract: str = Field(min_length=50)


PathKind = Literal["sequence", "researcher", "date", "numeric", "categorical"]


class PathVariable(VariableInfo):
    """A placeholder of the path template and its values.

    ``values`` are canonical strings: ``"1"``... for sequences, ISO dates (``2024-03-05``) for
    dates, plain decimals for numeric variables, names for the rest. How they render in paths
    is the Layout's job.
    """

    key: str = Field(pattern=r"^(seq_number|researcher|date|var[1-9])$")
    short: str = Field(pattern=r"^[a-z][a-z0-9]{0,11}$")
    kind: PathKind
    values: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self):
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"path variable {self.name}: values must be distinct")
        for v in self.values:
            if self.kind == "date":
                dt.date.fromisoformat(v)
            elif self.kind in ("numeric", "sequence"):
                if float(v) < 0 or not PATH_TOKEN_RE.match(v):
                    raise ValueError(f"path variable {self.name}: bad numeric value {v!r}")
            elif not PATH_TOKEN_RE.match(v):
                raise ValueError(f"path variable {self.name}: value {v!r} is not path-safe")
        return self

    @property
    def expression_kind(self) -> Kind | None:
        """How dependent expressions may use this variable (None: not at all)."""
        return {"numeric": "numeric", "sequence": "numeric", "categorical": "categorical",
                "researcher": "categorical"}.get(self.kind)  # fmt: skip


class Layout(Model):
    """The path template: directory levels of placeholders, then a file name."""

    levels: list[list[str]] = Field(min_length=2, max_length=4)
    level_joiners: list[Literal["-", "_"]]
    filename: list[str] = Field(min_length=1, max_length=3)
    filename_joiner: Literal["-", "_"]
    style: Literal["{name}={val}", "{name}_{val}", "{name}-{val}", "{name}{val}", "{val}"]
    date_format: Literal["%Y-%m-%d", "%Y_%m_%d", "%Y%m%d", "%m-%d", "%m_%d", "%m%d"]
    seq_width: int = Field(ge=1, le=4)

    @model_validator(mode="after")
    def _check(self):
        if len(self.level_joiners) != len(self.levels):
            raise ValueError("one joiner per directory level")
        for level in [*self.levels, self.filename]:
            if not 1 <= len(level) <= 3:
                raise ValueError("each directory level and the file name hold 1-3 placeholders")
        keys = self.placeholders
        if len(set(keys)) != len(keys):
            raise ValueError(f"a placeholder appears twice in the template: {keys}")
        return self

    @property
    def placeholders(self) -> list[str]:
        return [k for level in [*self.levels, self.filename] for k in level]

    def template(self, extension: str, names: dict[str, str] | None = None) -> str:
        """The template, e.g. ``{var1}-{date}/{seq_number}.csv``; ``names`` renames keys."""
        names = names or {}
        show = lambda k: f"{{{names.get(k, k)}}}"  # noqa: E731
        dirs = [j.join(map(show, lv)) for lv, j in zip(self.levels, self.level_joiners,
                                                       strict=True)]  # fmt: skip
        name = self.filename_joiner.join(map(show, self.filename))
        return "/".join([*dirs, f"{name}.{extension}"])


class _Column(VariableInfo):
    missing_rate: float = Field(default=0.0, ge=0, le=0.5)
    always_present: ClassVar[bool] = False

    @model_validator(mode="after")
    def _missing_allowed(self):
        if self.always_present and self.missing_rate:
            raise ValueError(f"the {self.role} column cannot have missing values")
        return self


class IdentifierColumn(_Column):
    role: Literal["identifier"] = "identifier"
    always_present: ClassVar[bool] = True
    prefix: str = Field(pattern=r"^[A-Z]{1,4}$")
    digits: int = Field(ge=4, le=6)


class DatetimeColumn(_Column):
    role: Literal["datetime"] = "datetime"
    always_present: ClassVar[bool] = True
    start: dt.datetime = Field(description="first timestamp (UTC) when no date path variable")
    interval_seconds: int = Field(ge=1, le=86_400 * 7)
    regular: bool = Field(description="regular interval, or sorted random times within the span")


class CategoricalColumn(_Column):
    role: Literal["categorical"] = "categorical"
    values: list[str] = Field(min_length=2)
    probabilities: list[float]

    @model_validator(mode="after")
    def _check(self):
        for value in self.values:
            check_label(value)
        if len(self.probabilities) != len(self.values) or min(self.probabilities) <= 0:
            raise ValueError(f"{self.name}: one positive probability per value")
        if abs(sum(self.probabilities) - 1) > 1e-9:
            raise ValueError(f"{self.name}: probabilities must sum to 1")
        return self


class IntegerColumn(_Column):
    role: Literal["integer"] = "integer"
    distribution: IntegerDistribution


class ContinuousColumn(_Column):
    role: Literal["continuous"] = "continuous"
    distribution: ContinuousDistribution
    decimals: int = Field(ge=0, le=6)
    clip: tuple[float | None, float | None] | None = None


class DependentColumn(_Column):
    """``expression`` (+ Gaussian noise with ``noise_sd``), clipped, rounded to ``decimals``.

    A ``cut(...)`` expression makes the column categorical; its noise is added to the score.
    """

    role: Literal["dependent"] = "dependent"
    expression: str
    noise_sd: float = Field(ge=0)
    decimals: int = Field(default=3, ge=0, le=6)
    clip: tuple[float | None, float | None] | None = None


Column = Annotated[
    IdentifierColumn
    | DatetimeColumn
    | CategoricalColumn
    | IntegerColumn
    | ContinuousColumn
    | DependentColumn,
    Field(discriminator="role"),
]


class ReadmeVisibility(Model):
    present: bool
    title: bool
    abstract: bool

    @model_validator(mode="after")
    def _nested(self):
        if (self.abstract and not self.title) or (self.title and not self.present):
            raise ValueError("README visibility nests: abstract needs title, title needs README")
        return self


class Spec(Model):
    spec_version: int = SPEC_VERSION
    seed: int = Field(ge=0)
    taxonomy: TaxonomyTriple
    archetype: str
    story: Story
    path_variables: list[PathVariable] = Field(min_length=1)
    layout: Layout
    columns: list[Column] = Field(min_length=7, max_length=19)
    unrecorded: list[VariableInfo] = Field(
        description="variables the description mentions (confounders, planned) but never recorded"
    )
    sort_by: str | None
    file_format: FileFormat
    readme: ReadmeVisibility

    @model_validator(mode="after")
    def _consistent(self):
        if self.spec_version != SPEC_VERSION:
            raise ValueError(f"spec_version {self.spec_version} is not supported ({SPEC_VERSION})")
        keys = [p.key for p in self.path_variables]
        if sorted(keys) != sorted(self.layout.placeholders):
            raise ValueError(f"layout placeholders {self.layout.placeholders} != {keys}")
        roles = [c.role for c in self.columns]
        if (
            roles[:2] != ["identifier", "datetime"]
            or roles.count("identifier") != 1
            or (roles.count("datetime") != 1)
        ):
            raise ValueError("columns start with one identifier and one datetime column")
        names = [c.name for c in self.columns] + [p.name for p in self.path_variables]
        names += [u.name for u in self.unrecorded]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate variable names: {dupes}")
        if self.sort_by is not None and self.sort_by not in names[: len(self.columns)]:
            raise ValueError(f"sort_by {self.sort_by!r} is not a column")
        kinds: dict[str, Kind] = {
            p.name: p.expression_kind for p in self.path_variables if p.expression_kind
        }
        for col in self.columns:
            if isinstance(col, DependentColumn):
                try:
                    kinds[col.name] = compile_expression(col.expression, kinds).kind
                except ExpressionError as err:
                    raise ValueError(f"column {col.name}: {err}") from None
            else:
                kinds[col.name] = column_kind(col)
        return self

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"no column {name!r}; columns: {[c.name for c in self.columns]}")

    def expression_kinds(self) -> dict[str, Kind]:
        kinds = {p.name: p.expression_kind for p in self.path_variables if p.expression_kind}
        return kinds | {c.name: column_kind(c) for c in self.columns}

    def to_json(self, indent: int | None = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Spec:
        return cls.model_validate_json(text)


def column_kind(col: Column) -> Kind:
    """numeric or categorical, as data analysis sees it (identifier/datetime: categorical)."""
    if isinstance(col, IntegerColumn | ContinuousColumn):
        return "numeric"
    if isinstance(col, DependentColumn):
        return expression_kind(col.expression)
    return "categorical"
