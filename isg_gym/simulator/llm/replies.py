"""What each stage of the LLM builder asks for: one pydantic reply model per stage.

Every reply model is built from the Spec models' own fields (:mod:`isg_gym.spec.models`), with
the parts the builder decides itself (missing rates, start times, digits, path keys) left out
and every list and string bounded, so the JSON schema sent to a constrained decoder
(:func:`isg_gym.simulator.llm.schemas.reply_schema`) is the Spec's, piece by piece.

The bounds come from a :class:`Profile`: ``full`` (the default, for instruction-tuned models
of a few billion parameters and up) or ``small`` (for models of a few hundred million
parameters on a CPU: the fewest variables a Spec allows and short texts, so that a reply
under a grammar stays within a few hundred tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from isg_gym.spec.distributions import ContinuousDistribution, IntegerDistribution
from isg_gym.spec.models import (
    DATE_FORMATS,
    EXPANSION_STYLES,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    Layout,
    PathVariable,
    VariableInfo,
)

PATH_KEYS = ("var1", "var2", "var3", "seq_number", "researcher", "date")


@dataclass(frozen=True)
class Profile:
    """Bounds of the replies (inclusive ranges)."""

    name: str
    titles: int  # candidate titles asked for
    title_chars: tuple[int, int]
    text_chars: tuple[int, int]  # setting, goal, hypothesis, set-up
    label_chars: int
    description_chars: tuple[int, int]
    conditions: tuple[int, int]  # experimental conditions encoded in the directory layout
    measured: tuple[int, int]
    outcomes: tuple[int, int]
    confounders: tuple[int, int]
    abstract_chars: tuple[int, int]
    abstract_words: tuple[int, int]
    path_values: int
    labels: int  # categorical labels per column
    expression_chars: int


PROFILES = {
    "full": Profile(
        name="full",
        titles=5,
        title_chars=(10, 150),
        text_chars=(20, 800),
        label_chars=60,
        description_chars=(10, 240),
        conditions=(1, 3),
        measured=(3, 7),
        outcomes=(2, 4),
        confounders=(1, 3),
        abstract_chars=(400, 2000),
        abstract_words=(100, 300),
        path_values=8,
        labels=8,
        expression_chars=400,
    ),
    "small": Profile(
        name="small",
        titles=3,
        title_chars=(10, 80),
        text_chars=(20, 120),
        label_chars=30,
        description_chars=(10, 60),
        conditions=(1, 1),
        measured=(3, 3),
        outcomes=(2, 2),
        confounders=(1, 1),
        abstract_chars=(300, 600),
        abstract_words=(50, 120),
        path_values=4,
        labels=3,
        expression_chars=120,
    ),
}


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


def _text(bounds: tuple[int, int]) -> Any:
    return Annotated[str, Field(min_length=bounds[0], max_length=bounds[1])]


def _list(item: Any, bounds: tuple[int, int]) -> tuple[Any, Any]:
    return list[item], Field(min_length=bounds[0], max_length=bounds[1])


Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,30}$", max_length=31)]


@cache
def reply_models(profile: Profile) -> SimpleNamespace:
    """The seven reply models (``titles`` ... ``dependents``) under ``profile``'s bounds."""
    p = profile
    text = _text(p.text_chars)
    label = _field(VariableInfo, "label", max_length=p.label_chars)
    description = _field(
        VariableInfo,
        "description",
        min_length=p.description_chars[0],
        max_length=p.description_chars[1],
    )
    m = SimpleNamespace()
    m.titles = _reply("TitlesReply", titles=_list(_text(p.title_chars), (1, p.titles)))

    variable = _reply(
        "Variable",
        name=(Name, ...),
        label=label,
        unit=_field(VariableInfo, "unit"),
        description=description,
    )
    m.design = _reply(
        "DesignReply",
        setting=(text, Field(description="what is studied, where and why")),
        goal=(text, ...),
        hypothesis=(text, ...),
        setup=(text, Field(description="how the data are collected")),
        file_unit=(_text((2, 40)), Field(description="what one data file holds, e.g. 'run'")),
        row_unit=(_text((5, 80)), Field(description="what one row is, e.g. 'one leaf sample'")),
        conditions=_list(variable, p.conditions),
        measured=_list(variable, p.measured),
        outcomes=_list(variable, p.outcomes),
        confounders=_list(variable, p.confounders),
    )
    m.abstract = _reply("AbstractReply", abstract=(_text(p.abstract_chars), ...))

    value = _text((1, 24)) | float
    path_variable = _reply(
        "PathVariableReply",
        name=(Name, ...),
        short=_field(PathVariable, "short"),
        kind=(Literal["numeric", "categorical"], ...),
        values=_list(value, (2, p.path_values)),
    )
    m.paths = _reply("PathsReply", path_variables=_list(path_variable, p.conditions))

    key = Literal[PATH_KEYS]  # type: ignore[valid-type]
    m.layout = _reply(
        "LayoutReply",
        levels=_list(Annotated[list[key], Field(min_length=1, max_length=3)], (1, 4)),
        level_joiners=_list(Literal["-", "_"], (1, 4)),
        filename=_list(key, (1, 3)),
        filename_joiner=_field(Layout, "filename_joiner"),
        style=(Literal[EXPANSION_STYLES], ...),  # type: ignore[valid-type]
        date_format=(Literal[DATE_FORMATS], ...),  # type: ignore[valid-type]
    )

    identifier = _reply(
        "IdentifierReply",
        name=(Name, ...),
        label=label,
        description=description,
        prefix=_field(IdentifierColumn, "prefix"),
    )
    timestamp = _reply(
        "TimestampReply",
        name=(Name, ...),
        label=label,
        description=description,
        interval_seconds=_field(DatetimeColumn, "interval_seconds"),
        regular=_field(DatetimeColumn, "regular"),
    )
    categorical = _reply(
        "CategoricalReply",
        name=(Name, ...),
        role=(Literal["categorical"], ...),
        values=_list(_text((1, 24)), (2, p.labels)),
        probabilities=_list(float, (2, p.labels)),
    )
    integer = _reply(
        "IntegerReply",
        name=(Name, ...),
        role=(Literal["integer"], ...),
        distribution=(IntegerDistribution, ...),
    )
    continuous = _reply(
        "ContinuousReply",
        name=(Name, ...),
        role=(Literal["continuous"], ...),
        distribution=(ContinuousDistribution, ...),
        decimals=_field(ContinuousColumn, "decimals"),
        clip=_field(ContinuousColumn, "clip"),
    )
    column = Annotated[categorical | integer | continuous, Field(discriminator="role")]
    recorded = (1, p.measured[1] + p.confounders[1])
    m.columns = _reply(
        "ColumnsReply",
        identifier=(identifier, ...),
        timestamp=(timestamp, ...),
        columns=_list(column, recorded),
    )

    dependent = _reply(
        "DependentReply",
        name=(Name, ...),
        expression=_field(
            DependentColumn, "expression", min_length=1, max_length=p.expression_chars
        ),
        noise_sd=_field(DependentColumn, "noise_sd"),
        decimals=_field(DependentColumn, "decimals"),
        clip=_field(DependentColumn, "clip"),
        typical_range=(tuple[float, float], Field(description="[low, high] of most values")),
    )
    m.dependents = _reply("DependentsReply", dependents=_list(dependent, p.outcomes))
    return m
