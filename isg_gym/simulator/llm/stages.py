"""The seven stages of the LLM builder, in the published pipeline's order.

Each :class:`Stage` pairs a prompt (:mod:`.prompts`) with a reply model (:mod:`.replies`, whose
JSON schema goes to the backend) and an ``accept`` step: the reply text is parsed, repaired
where the fix is mechanical (:mod:`.repair`), validated with pydantic, checked against what
earlier stages decided, and stored in the :class:`~.draft.Draft`. The last stage assembles the
Spec and runs the simulation sanity checks (:mod:`.sanity`). A failed check raises
:class:`~.parse.StageError`, whose message goes back to the model.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from pydantic import BaseModel, ValidationError

from isg_gym.simulator.llm import prompts
from isg_gym.simulator.llm.assemble import add_extra_path_variables, assemble_spec
from isg_gym.simulator.llm.draft import Design, Draft, start_time
from isg_gym.simulator.llm.parse import StageError, json_object, schema_error
from isg_gym.simulator.llm.repair import (
    cut,
    free_name,
    label_token,
    match,
    number_token,
    probabilities,
    rename,
    short_name,
)
from isg_gym.simulator.llm.replies import PROFILES, Profile, reply_models
from isg_gym.simulator.llm.sanity import MIN_FILES, check_spec
from isg_gym.simulator.llm.schemas import reply_schema, response_format
from isg_gym.simulator.procedural import (
    DEMOTED,
    PROMOTED,
    _missing_rate,
    _recorded_description,
)
from isg_gym.spec.expressions import ExpressionError, compile_expression, expression_kind
from isg_gym.spec.models import (
    PATH_TOKEN_RE,
    CategoricalColumn,
    Column,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    IntegerColumn,
    Layout,
    PathVariable,
    VariableInfo,
    check_label,
)
from isg_gym.syntax import parse as parse_python

MIN_TITLE_WORDS, MAX_TITLE_WORDS = 3, 25

Repair = Callable[[Draft, dict[str, Any]], dict[str, Any]]


def _as_is(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    return data


@dataclass(frozen=True)
class Stage:
    name: str
    reply: type[BaseModel]
    prompt: Callable[[Draft, dict], str]
    accept: Callable[[Draft, Any], None]
    repair: Repair = _as_is

    @cached_property
    def schema(self) -> dict[str, Any]:
        return reply_schema(self.reply)

    @cached_property
    def response_format(self) -> dict[str, Any]:
        return response_format(f"isg_{self.name}_v{prompts.PROMPT_VERSION}", self.schema)

    def user_message(self, draft: Draft) -> str:
        return self.prompt(draft, self.schema)

    def check(self, draft: Draft, text: str) -> None:
        """Parse, repair, validate and store the reply; raise :class:`StageError` if unfit."""
        data = self.repair(draft, json_object(text))
        try:
            reply = self.reply.model_validate(data)
        except ValidationError as err:
            raise schema_error(err) from None
        try:
            self.accept(draft, reply)
        except ValidationError as err:  # a Spec model built from the reply
            raise schema_error(err) from None


def _model_error(what: str, exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return f"{what}: " + "; ".join(e["msg"] for e in exc.errors()[:3])
    return f"{what}: {exc}"


# --- 1. titles ----------------------------------------------------------------------------------


def _repair_titles(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    titles = data.get("titles")
    if isinstance(titles, list):
        clean = []
        for t in titles:
            if isinstance(t, str):
                t = cut(t.strip().strip("\"'").lstrip("0123456789.)- ").strip(), 150)
                if t and t not in clean:
                    clean.append(t)
        data["titles"] = clean[: draft.plan.profile.titles]
    return data


def _accept_titles(draft: Draft, reply: Any) -> None:
    usable = [t for t in reply.titles if MIN_TITLE_WORDS <= len(t.split()) <= MAX_TITLE_WORDS]
    if not usable:
        raise StageError(
            "schema",
            f"give {draft.plan.profile.titles} different titles of "
            f"{MIN_TITLE_WORDS}-{MAX_TITLE_WORDS} words",
        )
    draft.titles = usable
    draft.title = usable[int(draft.rng("title").integers(len(usable)))]


# --- 2. design ----------------------------------------------------------------------------------

_GROUPS = ("conditions", "measured", "outcomes", "confounders")


def _limits(draft: Draft) -> dict[str, int]:
    p = draft.plan.profile
    return {"label": p.label_chars, "unit": 30, "description": p.description_chars[1]}


def _repair_design(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    p = draft.plan.profile
    limits = _limits(draft)
    for group in _GROUPS:
        items = rename(data.get(group))
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                for key, limit in limits.items():
                    item[key] = cut(item.get(key), limit)
                if item.get("unit") is None:
                    item["unit"] = ""
    _distinct_names(data)
    for key in ("setting", "goal", "hypothesis", "setup"):
        data[key] = cut(data.get(key), p.text_chars[1])
    data["file_unit"] = cut(data.get("file_unit"), 40)
    data["row_unit"] = cut(data.get("row_unit"), 80)
    return data


def _distinct_names(data: dict[str, Any]) -> None:
    """A name given twice gets a number: ``soil_moisture_2`` (its label ``soil moisture 2``)."""
    names: set[str] = set()
    for group in _GROUPS:
        items = data.get(group)
        for item in items if isinstance(items, list) else []:
            if not (isinstance(item, dict) and isinstance(item.get("name"), str)):
                continue
            name, n = item["name"], 1
            while name in names:
                n += 1
                name = f"{item['name'][:28]}_{n}"
            if n > 1:
                item["name"] = name
                if isinstance(item.get("label"), str):
                    item["label"] = f"{item['label'][:26]} {n}"
            names.add(name)


def _accept_design(draft: Draft, reply: Any) -> None:
    groups = {g: [VariableInfo(**v.model_dump()) for v in getattr(reply, g)] for g in _GROUPS}
    names = [v.name for vs in groups.values() for v in vs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise StageError("schema", f"every variable needs its own name; repeated: {dupes}")
    unit = " ".join(reply.file_unit.split()).lower().removeprefix("one ").removeprefix("a ")
    draft.design = Design(
        setting=reply.setting,
        goal=reply.goal,
        hypothesis=reply.hypothesis,
        setup=reply.setup,
        file_unit=unit,
        row_unit=reply.row_unit,
        **groups,
    )
    _split_recorded(draft)


def _split_recorded(draft: Draft) -> None:
    """Which described variables are recorded (as the procedural builder does, so that a name
    does not tell whether it is recorded): each confounder becomes a column with probability
    PROMOTED, each measured variable is left unrecorded with probability DEMOTED (keeping at
    least 5 recorded independents and outcomes, so a Spec has its 7 columns), and every
    repository leaves at least one described variable unrecorded."""
    d = draft.design
    assert d is not None
    rng = draft.rng("recorded")
    promoted = [v for v in d.confounders if rng.random() < PROMOTED]
    kept, demoted = [], []
    for v in d.measured:
        room = len(d.measured) - len(demoted) - 1 + len(promoted) + len(d.outcomes)
        if rng.random() < DEMOTED and room >= 5 and len(d.measured) - len(demoted) > 2:
            demoted.append(v)
        else:
            kept.append(v)
    if len(promoted) == len(d.confounders) and not demoted:
        promoted.pop(int(rng.integers(len(promoted))))
    draft.recorded = kept + [
        v.model_copy(update={"description": _recorded_description(v)}) for v in promoted
    ]
    draft.unrecorded = [v for v in d.confounders if v not in promoted] + demoted


# --- 3. abstract --------------------------------------------------------------------------------


def _accept_abstract(draft: Draft, reply: Any) -> None:
    text = " ".join(reply.abstract.split())
    words = len(text.split())
    low, high = draft.plan.profile.abstract_words
    if not low <= words <= high:
        raise StageError("schema", f"the abstract has {words} words; write {low}-{high} words")
    draft.abstract = text


# --- 4. path variables --------------------------------------------------------------------------


def _repair_paths(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    items = rename(data.get("path_variables"))
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("short"), str):
            item["short"] = short_name(item["short"]) or short_name(item.get("name", "")) or "x"
    return data


def _path_values(name: str, kind: str, raw: list[Any]) -> tuple[str, list[str]]:
    numbers = [number_token(v) for v in raw]
    if kind == "categorical" and all(n is not None for n in numbers):
        kind = "numeric"  # every value is a number: a numeric condition
    if kind == "numeric":
        if any(n is None for n in numbers):
            bad = [v for v, n in zip(raw, numbers, strict=True) if n is None]
            raise StageError(
                "schema", f"condition {name}: numeric values must be numbers, got {bad}"
            )
        if any(float(n) < 0 for n in numbers):  # type: ignore[arg-type]
            raise StageError(
                "schema",
                f"condition {name}: values must be >= 0 (paths avoid '-'); shift or rescale them",
            )
        values = numbers
    else:
        values = [label_token(v) for v in raw]
        for v in values:
            try:
                check_label(v)
            except ValueError as exc:
                raise StageError("schema", f"condition {name}: {exc}") from None
    distinct = list(dict.fromkeys(v for v in values if v and PATH_TOKEN_RE.match(v)))
    if len(distinct) < 2:
        raise StageError("schema", f"condition {name}: give at least 2 different values")
    return kind, distinct  # type: ignore[return-value]


def _accept_paths(draft: Draft, reply: Any) -> None:
    d = draft.design
    assert d is not None
    items = match([v.name for v in d.conditions], reply.path_variables, "condition")
    out: list[PathVariable] = []
    for i, (info, item) in enumerate(zip(d.conditions, items, strict=True), start=1):
        kind, values = _path_values(info.name, item.kind, item.values)
        short = item.short if item.short not in {p.short for p in out} else f"{item.short}{i}"
        try:
            out.append(
                PathVariable(
                    key=f"var{i}", kind=kind, short=short[:12], values=values, **info.model_dump()
                )
            )
        except ValidationError as exc:
            raise StageError("schema", _model_error(f"condition {info.name}", exc)) from None
    draft.path_variables = add_extra_path_variables(draft, out)
    total = 1
    for var in draft.path_variables:
        total *= len(var.values)
    if total < MIN_FILES:
        raise StageError("schema", f"the conditions give only {total} files; give more values")


# --- 5. layout ----------------------------------------------------------------------------------


def _repair_layout(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    """Every placeholder exactly once, 2-4 levels of 1-3, one joiner per level."""
    keys = [v.key for v in draft.path_variables]
    seen: set[str] = set()

    def keep(group: Any) -> list[str]:
        out = []
        for k in group if isinstance(group, list) else []:
            if k in keys and k not in seen and len(out) < 3:
                seen.add(k)
                out.append(k)
        return out

    raw_levels = data.get("levels") if isinstance(data.get("levels"), list) else []
    levels = [lv for lv in (keep(g) for g in raw_levels[:4]) if lv]
    filename = keep(data.get("filename"))
    for k in keys:  # placeholders the reply left out
        if k in seen:
            continue
        seen.add(k)
        target = filename if len(filename) < 3 else next((lv for lv in levels if len(lv) < 3), None)
        if target is None and len(levels) < 4:
            levels.append(target := [])
        if target is not None:
            target.append(k)
    if not filename and levels:
        filename = [levels[-1].pop()]
        levels = [lv for lv in levels if lv]
    while len(levels) < 2:
        donor = max([*levels, filename], key=len)
        if len(donor) < 2:
            break
        levels.append([donor.pop(0)])
    joiners = [j for j in data.get("level_joiners") or [] if j in ("-", "_")]
    joiners = (joiners + [joiners[0] if joiners else "_"] * 4)[: len(levels)]
    return {**data, "levels": levels, "filename": filename, "level_joiners": joiners}


def _accept_layout(draft: Draft, reply: Any) -> None:
    seq_width = int(draft.rng("layout").integers(1, 4))
    try:
        layout = Layout(seq_width=seq_width, **reply.model_dump())
    except ValidationError as exc:
        raise StageError("schema", _model_error("layout", exc)) from None
    keys = sorted(v.key for v in draft.path_variables)
    if sorted(layout.placeholders) != keys:
        raise StageError("schema", f"use each placeholder {keys} exactly once")
    draft.layout = layout


# --- 6. columns ---------------------------------------------------------------------------------


def _repair_columns(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    rename(data.get("columns"))
    rename([data.get("identifier"), data.get("timestamp")])
    for part in ("identifier", "timestamp"):
        item = data.get(part)
        if isinstance(item, dict):
            for key in ("label", "description"):
                item[key] = cut(item.get(key), _limits(draft)[key])
    ident = data.get("identifier")
    if isinstance(ident, dict) and isinstance(ident.get("prefix"), str):
        ident["prefix"] = "".join(c for c in ident["prefix"].upper() if "A" <= c <= "Z")[:4]
    for item in data.get("columns") or []:
        if isinstance(item, dict) and item.get("role") == "categorical":
            values = [label_token(v) for v in item.get("values") or []]
            item["values"] = list(dict.fromkeys(v for v in values if v))
            probs = probabilities(item.get("probabilities") or [], len(item["values"]))
            item["probabilities"] = probs or [1 / max(len(item["values"]), 1)] * len(item["values"])
        if isinstance(item, dict) and isinstance(item.get("clip"), list | tuple):
            clip = list(item["clip"])
            if len(clip) == 2 and None not in clip and clip[0] > clip[1]:
                item["clip"] = [clip[1], clip[0]]
    return data


def _column(info: VariableInfo, item: Any, missing_rate: float) -> Column:
    common = {**info.model_dump(), "missing_rate": missing_rate}
    if item.role == "categorical":
        return CategoricalColumn(values=item.values, probabilities=item.probabilities, **common)
    if item.role == "integer":
        return IntegerColumn(distribution=item.distribution, **common)
    return ContinuousColumn(
        distribution=item.distribution, decimals=item.decimals, clip=item.clip, **common
    )


def _accept_columns(draft: Draft, reply: Any) -> None:
    d = draft.design
    assert d is not None
    taken = {v.name for v in d.variables()}
    crng = draft.rng("columns")
    ident, stamp = reply.identifier, reply.timestamp
    id_name = free_name(ident.name, taken, "_id")
    stamp_name = free_name(stamp.name, taken | {id_name}, "_time")
    errors: list[str] = []
    columns: list[Column] = []
    try:
        columns.append(
            IdentifierColumn(
                name=id_name,
                label=ident.label,
                unit="",
                description=ident.description,
                prefix=ident.prefix,
                digits=int(crng.integers(4, 6)),
            )
        )
        columns.append(
            DatetimeColumn(
                name=stamp_name,
                label=stamp.label,
                unit="UTC",
                description=stamp.description,
                start=start_time(crng),
                interval_seconds=stamp.interval_seconds,
                regular=stamp.regular,
            )
        )
    except ValidationError as exc:
        errors.append(_model_error("identifier/timestamp", exc))
    items = match([v.name for v in draft.recorded], reply.columns, "column")
    mrng = draft.rng("missing")
    for info, item in zip(draft.recorded, items, strict=True):
        try:
            columns.append(_column(info, item, _missing_rate(mrng)))
        except (ValidationError, ValueError) as exc:
            errors.append(_model_error(f"column {info.name}", exc))
    if errors:
        raise StageError("schema", "; ".join(errors))
    draft.columns = columns


# --- 7. dependents ------------------------------------------------------------------------------


def _repair_dependents(draft: Draft, data: dict[str, Any]) -> dict[str, Any]:
    items = rename(data.get("dependents"))
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            if isinstance(item.get("expression"), str):  # a stray separator inside the string
                item["expression"] = item["expression"].strip().rstrip(",;").strip()
            span = item.get("typical_range")
            if isinstance(span, list) and len(span) == 2 and None not in span:
                item["typical_range"] = sorted(span, key=float)
            clip = item.get("clip")
            if isinstance(clip, list) and len(clip) == 2 and None not in clip:
                item["clip"] = sorted(clip, key=float)
    return data


def _references(source: str, names: set[str]) -> set[str]:
    """Names of ``names`` that an expression mentions (parsed, never run)."""
    try:
        tree = parse_python(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names}


def _ordered(names: list[str], sources: dict[str, str]) -> list[str]:
    """Outcomes ordered so that each comes after the outcomes its expression uses."""
    refs = {n: _references(sources[n], set(names) - {n}) for n in names}
    order: list[str] = []
    while len(order) < len(names):
        ready = [n for n in names if n not in order and refs[n] <= set(order)]
        if not ready:
            cycle = sorted(n for n in names if n not in order)
            raise StageError("expression", f"outcomes {cycle} use each other in a cycle")
        order.append(ready[0])
    return order


def _accept_dependents(draft: Draft, reply: Any) -> None:
    d = draft.design
    assert d is not None
    info = {v.name: v for v in d.outcomes}
    items = dict(zip(info, match(list(info), reply.dependents, "outcome"), strict=True))
    kinds = dict(prompts.inputs(draft)[1])
    errors: list[str] = []
    columns: list[DependentColumn] = []
    mrng = draft.rng("missing-dependents")
    for name in _ordered(list(info), {n: i.expression for n, i in items.items()}):
        item = items[name]
        try:
            kinds[name] = compile_expression(item.expression, kinds).kind
        except ExpressionError as exc:
            errors.append(f"outcome {name}: {exc}")
            kinds[name] = expression_kind(item.expression)
            continue
        low, high = item.typical_range
        if not low < high:
            errors.append(f"outcome {name}: typical_range needs low < high")
            continue
        unit = "" if kinds[name] == "categorical" else info[name].unit
        columns.append(
            DependentColumn(
                **(info[name].model_dump() | {"unit": unit}),
                expression=item.expression,
                noise_sd=item.noise_sd,
                decimals=item.decimals,
                clip=item.clip,
                missing_rate=_missing_rate(mrng),
            )
        )
        draft.typical_ranges[name] = (low, high)
    if errors:
        raise StageError("expression", "; ".join(errors))
    draft.dependents = columns
    try:
        spec = assemble_spec(draft)
    except ValidationError as exc:
        raise StageError("schema", _model_error("the assembled Spec", exc)) from None
    draft.extra["sanity"] = check_spec(spec, draft.typical_ranges)
    draft.extra["spec"] = spec


@cache
def stages(profile: Profile) -> tuple[Stage, ...]:
    """The seven stages with ``profile``'s reply models."""
    m = reply_models(profile)
    return (
        Stage("titles", m.titles, prompts.titles, _accept_titles, _repair_titles),
        Stage("design", m.design, prompts.design, _accept_design, _repair_design),
        Stage("abstract", m.abstract, prompts.abstract, _accept_abstract),
        Stage("paths", m.paths, prompts.paths, _accept_paths, _repair_paths),
        Stage("layout", m.layout, prompts.layout, _accept_layout, _repair_layout),
        Stage("columns", m.columns, prompts.columns, _accept_columns, _repair_columns),
        Stage(
            "dependents", m.dependents, prompts.dependents, _accept_dependents, _repair_dependents
        ),
    )


STAGES = stages(PROFILES["full"])
STAGE_NAMES = tuple(s.name for s in STAGES)
