"""What each stage of the LLM builder asks for: one pydantic reply model per stage.

Every reply model is built from the Spec models' own fields (:mod:`isg_gym.spec.models`), with
the parts the builder decides itself (missing rates, start times, digits, path keys) left out
and every list and string bounded, so the JSON schema sent to a constrained decoder
(:func:`isg_gym.simulator.llm.schemas.reply_schema`) is the Spec's, piece by piece.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from isg_gym.spec.distributions import ContinuousDistribution, IntegerDistribution
from isg_gym.spec.models import (
    DATE_FORMATS,
    EXPANSION_STYLES,
    CategoricalColumn,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    IntegerColumn,
    Layout,
    PathVariable,
    VariableInfo,
)

TITLE_CANDIDATES = 5
MAX_CONDITIONS = 3  # experimental conditions encoded in the directory layout
MAX_MEASURED = 7
MAX_OUTCOMES = 4
MAX_CONFOUNDERS = 3
MAX_PATH_VALUES = 8
MAX_LABELS = 8
PATH_KEYS = ("var1", "var2", "var3", "seq_number", "researcher", "date")


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _field(model: type[BaseModel], name: str, **override: Any) -> tuple[Any, Any]:
    """``(annotation, FieldInfo)`` of a Spec model's field, with constraints overridden."""
    info = model.model_fields[name]
    if override:
        info = FieldInfo.merge_field_infos(info, Field(**override))
    return info.annotation, info


def _reply(model_name: str, /, **fields: Any) -> type[Reply]:
    return create_model(model_name, __base__=Reply, **fields)


Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,30}$", max_length=31)]
Text = Annotated[str, Field(min_length=20, max_length=800)]
Word = Annotated[str, Field(min_length=2, max_length=40)]


# --- 1. titles ----------------------------------------------------------------------------------

TitlesReply = _reply(
    "TitlesReply",
    titles=(
        list[Annotated[str, Field(min_length=10, max_length=150)]],
        Field(min_length=2, max_length=TITLE_CANDIDATES),
    ),
)


# --- 2. design: the verbose project description -------------------------------------------------

Variable = _reply(
    "Variable",
    name=(Name, ...),
    label=_field(VariableInfo, "label"),
    unit=_field(VariableInfo, "unit"),
    description=_field(VariableInfo, "description"),
)

DesignReply = _reply(
    "DesignReply",
    setting=(Text, Field(description="what is studied, where and why (2-3 sentences)")),
    goal=(Text, ...),
    hypothesis=(Text, ...),
    setup=(Text, Field(description="how the data are collected")),
    file_unit=(Word, Field(description="what one data file holds, a short noun, e.g. 'run'")),
    row_unit=(
        Annotated[str, Field(min_length=5, max_length=80)],
        Field(description="what one row is, e.g. 'one leaf sample'"),
    ),
    conditions=(list[Variable], Field(min_length=1, max_length=MAX_CONDITIONS)),
    measured=(list[Variable], Field(min_length=3, max_length=MAX_MEASURED)),
    outcomes=(list[Variable], Field(min_length=2, max_length=MAX_OUTCOMES)),
    confounders=(list[Variable], Field(min_length=1, max_length=MAX_CONFOUNDERS)),
)


# --- 3. abstract --------------------------------------------------------------------------------

AbstractReply = _reply(
    "AbstractReply", abstract=(Annotated[str, Field(min_length=400, max_length=2000)], ...)
)


# --- 4. path variables (the experimental conditions and their values) ---------------------------

PathValue = Annotated[str, Field(min_length=1, max_length=24)] | float
PathVariableReply = _reply(
    "PathVariableReply",
    name=(Name, ...),
    short=_field(PathVariable, "short"),
    kind=(Literal["numeric", "categorical"], ...),
    values=(list[PathValue], Field(min_length=2, max_length=MAX_PATH_VALUES)),
)
PathsReply = _reply(
    "PathsReply",
    path_variables=(list[PathVariableReply], Field(min_length=1, max_length=MAX_CONDITIONS)),
)


# --- 5. layout: the path template ---------------------------------------------------------------

Key = Literal[PATH_KEYS]  # type: ignore[valid-type]
LayoutReply = _reply(
    "LayoutReply",
    levels=(
        list[Annotated[list[Key], Field(min_length=1, max_length=3)]],
        Field(min_length=1, max_length=4),
    ),
    level_joiners=(list[Literal["-", "_"]], Field(min_length=1, max_length=4)),
    filename=(list[Key], Field(min_length=1, max_length=3)),
    filename_joiner=_field(Layout, "filename_joiner"),
    style=(Literal[EXPANSION_STYLES], ...),  # type: ignore[valid-type]
    date_format=(Literal[DATE_FORMATS], ...),  # type: ignore[valid-type]
)


# --- 6. columns: identifier, timestamp and the recorded independent variables -------------------

IdentifierReply = _reply(
    "IdentifierReply",
    name=(Name, ...),
    label=_field(VariableInfo, "label"),
    description=_field(VariableInfo, "description"),
    prefix=_field(IdentifierColumn, "prefix"),
)
TimestampReply = _reply(
    "TimestampReply",
    name=(Name, ...),
    label=_field(VariableInfo, "label"),
    description=_field(VariableInfo, "description"),
    interval_seconds=_field(DatetimeColumn, "interval_seconds"),
    regular=_field(DatetimeColumn, "regular"),
)
CategoricalReply = _reply(
    "CategoricalReply",
    name=(Name, ...),
    role=(Literal["categorical"], ...),
    values=(
        list[Annotated[str, Field(min_length=1, max_length=24)]],
        Field(min_length=2, max_length=MAX_LABELS),
    ),
    probabilities=(list[float], Field(min_length=2, max_length=MAX_LABELS)),
)
IntegerReply = _reply(
    "IntegerReply",
    name=(Name, ...),
    role=(Literal["integer"], ...),
    distribution=(IntegerDistribution, ...),
)
ContinuousReply = _reply(
    "ContinuousReply",
    name=(Name, ...),
    role=(Literal["continuous"], ...),
    distribution=(ContinuousDistribution, ...),
    decimals=_field(ContinuousColumn, "decimals"),
    clip=_field(ContinuousColumn, "clip"),
)
ColumnReply = Annotated[
    CategoricalReply | IntegerReply | ContinuousReply,  # type: ignore[valid-type]
    Field(discriminator="role"),
]
ColumnsReply = _reply(
    "ColumnsReply",
    identifier=(IdentifierReply, ...),
    timestamp=(TimestampReply, ...),
    columns=(list[ColumnReply], Field(min_length=1, max_length=MAX_MEASURED + MAX_CONFOUNDERS)),
)


# --- 7. dependents: expressions of the whitelisted language -------------------------------------

DependentReply = _reply(
    "DependentReply",
    name=(Name, ...),
    expression=_field(DependentColumn, "expression", min_length=1, max_length=400),
    noise_sd=_field(DependentColumn, "noise_sd"),
    decimals=_field(DependentColumn, "decimals"),
    clip=_field(DependentColumn, "clip"),
    typical_range=(
        tuple[float, float],
        Field(description="[low, high]: where most values should lie"),
    ),
)
DependentsReply = _reply(
    "DependentsReply",
    dependents=(list[DependentReply], Field(min_length=1, max_length=MAX_OUTCOMES)),
)

# The Spec models these replies are checked against once the builder fills in the rest.
SPEC_MODELS = {
    "categorical": CategoricalColumn,
    "integer": IntegerColumn,
    "continuous": ContinuousColumn,
}
