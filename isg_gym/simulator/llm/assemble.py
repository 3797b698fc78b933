"""From the accepted stages to a Spec: extra path variables, the description text, the rest.

The running number, researcher and date path variables are added by the seed (as the
procedural builder adds them); the project description is composed from the model's setting,
goal, hypothesis and set-up with the variables as finally recorded, so that every variable it
names as not recorded is in ``Spec.unrecorded`` and every other one is a column or a path
variable.
"""

from __future__ import annotations

from isg_gym.simulator.llm.draft import Draft, file_format, readme_visibility
from isg_gym.simulator.llm.repair import free_name, short_name, snake
from isg_gym.simulator.procedural import _dates, _researchers
from isg_gym.spec.models import (
    ContinuousColumn,
    IntegerColumn,
    PathVariable,
    Spec,
    Story,
    VariableInfo,
)

ARCHETYPE = "llm"  # Spec.archetype of every LLM-built Spec (no lexicon archetype has this id)
EXTRA_ODDS = {"seq_number": 0.75, "researcher": 0.35, "date": 0.4}


def _free_short(short: str, taken: set[str]) -> str:
    out, n = short, 2
    while out in taken:
        out, n = f"{short[:10]}{n}", n + 1
    return out


def add_extra_path_variables(draft: Draft, conditions: list[PathVariable]) -> list[PathVariable]:
    """``conditions`` plus a running number, a researcher and a collection date, each with the
    procedural builder's odds, so that there are at least 3 path variables."""
    d = draft.design
    assert d is not None
    rng = draft.rng("extras")
    extras = {key: bool(rng.random() < odds) for key, odds in EXTRA_ODDS.items()}
    while len(conditions) + sum(extras.values()) < 3:
        extras[next(k for k in ("seq_number", "date", "researcher") if not extras[k])] = True
    names = {v.name for v in d.variables()}
    shorts = {v.short for v in conditions}
    out = list(conditions)

    def add(
        key: str, kind: str, name: str, short: str, label: str, description: str, values: list[str]
    ) -> None:
        var = PathVariable(
            key=key,
            kind=kind,
            name=free_name(name, names, "_path"),
            short=_free_short(short, shorts),
            label=label,
            unit="",
            description=description,
            values=values,
        )
        names.add(var.name)
        shorts.add(var.short)
        out.append(var)

    unit = snake(d.file_unit, 20)
    if extras["seq_number"]:
        count = int(rng.integers(2, 25))
        add(
            "seq_number",
            "sequence",
            f"{unit}_number",
            short_name(unit) or "run",
            f"{d.file_unit} number"[:60],
            f"Running number of the {d.file_unit} within its condition."[:240],
            [str(i) for i in range(1, count + 1)],
        )
    if extras["researcher"]:
        add(
            "researcher",
            "researcher",
            "researcher",
            "by",
            "researcher",
            "Researcher who collected the data file.",
            _researchers(rng, int(rng.integers(2, 6))),
        )
    if extras["date"]:
        add(
            "date",
            "date",
            "collection_date",
            "date",
            "collection date",
            "Date on which the file was recorded.",
            _dates(rng, int(rng.integers(2, 11))),
        )
    return out


def _listing(items: list[VariableInfo] | list[PathVariable]) -> str:
    parts = [f"{v.label} ({v.unit})" if v.unit else v.label for v in items]
    if len(parts) <= 1:
        return "".join(parts) or "none"
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def compose_description(draft: Draft) -> str:
    """The multi-paragraph project description of the Spec."""
    d = draft.design
    assert d is not None
    t = draft.plan.triple
    conditions = [p for p in draft.path_variables if p.kind in ("numeric", "categorical")]
    confounders = [v for v in draft.unrecorded if v in d.confounders]
    planned = [v for v in draft.unrecorded if v not in d.confounders]
    first = (
        f"Possible confounders that were not recorded: {_listing(confounders)}."
        if confounders
        else "No unrecorded confounders were identified."
    )
    second = (
        f" Measured in the design but not recorded in the files: {_listing(planned)}."
        if planned
        else ""
    )
    return "\n\n".join(
        [
            f"{_sentence(d.setting)} This project belongs to {t.subdomain} ({t.domain}).",
            f"Goal. {_sentence(d.goal)}",
            f"Hypothesis. {_sentence(d.hypothesis)}",
            f"Set-up. {_sentence(d.setup)} Each data file holds one {d.file_unit}; each row is "
            f"{_sentence(d.row_unit)} Experimental conditions are encoded in the directory "
            f"layout: {_listing(conditions)}.",
            f"Independent variables. Recorded for each row: {_listing(draft.recorded)}.",
            f"Dependent variables. {_sentence(_listing(d.outcomes))}",
            "Confounders. " + first + second,
        ]
    )


def _sort_key(draft: Draft) -> str | None:
    """No order 30%, the identifier 20%, the timestamp 30%, a numeric column 20%."""
    columns = [*draft.columns, *draft.dependents]
    numeric = [c.name for c in columns if isinstance(c, ContinuousColumn | IntegerColumn)]
    u = float(draft.rng("sorting").random())
    if u < 0.3:
        return None
    if u < 0.5:
        return columns[0].name
    if u < 0.8 or not numeric:
        return columns[1].name
    return numeric[int(draft.rng("sort-column").integers(len(numeric)))]


def assemble_spec(draft: Draft) -> Spec:
    """The Spec of a draft whose stages have all been accepted."""
    assert draft.title and draft.abstract and draft.layout is not None
    story = Story(
        title=draft.title, description=compose_description(draft), abstract=draft.abstract
    )
    return Spec(
        seed=draft.seed,
        taxonomy=draft.plan.triple,
        archetype=ARCHETYPE,
        story=story,
        path_variables=draft.path_variables,
        layout=draft.layout,
        columns=[*draft.columns, *draft.dependents],
        unrecorded=draft.unrecorded,
        sort_by=_sort_key(draft),
        file_format=file_format(draft.seed),
        readme=readme_visibility(draft.seed),
    )
