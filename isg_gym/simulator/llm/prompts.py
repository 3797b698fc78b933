"""The prompts of the LLM builder, one per stage (versioned: a change bumps PROMPT_VERSION).

Each user message says which step it is, what the project is so far, what to produce, the
JSON schema of the reply and a short example of its shape. Names the reply must use are also
given as a JSON list on a line of their own (``Required names (JSON): [...]``), and the
variables an expression may use as a JSON object (``Inputs (JSON): {...}``).
"""

from __future__ import annotations

import json

import numpy as np

from isg_gym.simulator.llm.draft import Draft
from isg_gym.simulator.llm.schemas import compact
from isg_gym.spec.models import (
    CategoricalColumn,
    ContinuousColumn,
    IntegerColumn,
    PathVariable,
    VariableInfo,
)

PROMPT_VERSION = 1
STAGES = 7

SYSTEM = (
    "You are a scientist who designs realistic research projects and the data repositories "
    "they produce, one step at a time. Answer every step with exactly one JSON object that "
    "follows the given JSON schema: no prose before or after it, no code fences, no comments."
)

RETRY = (
    "That reply was rejected: {error}\n"
    "Reply again with the complete JSON object, corrected, following the same schema."
)


def _g(x: float) -> str:
    return f"{x:.4g}"


def _project(draft: Draft) -> str:
    t = draft.plan.triple
    lines = [
        f"Field: {t.field}. Domain: {t.domain}. Subdomain: {t.subdomain} "
        f"({t.subdomain_description.strip().rstrip('.')}).",
        f"Study design: {draft.plan.study_design}.",
    ]
    if draft.title:
        lines.append(f"Title: {draft.title}")
    return "\n".join(lines)


def _variables(items: list[VariableInfo]) -> str:
    return "\n".join(
        f"- {v.name}: {v.label}{f' [{v.unit}]' if v.unit else ''}. {v.description}" for v in items
    )


def _design(draft: Draft) -> str:
    d = draft.design
    assert d is not None
    return "\n".join(
        [
            f"Setting: {d.setting}",
            f"Goal: {d.goal}",
            f"Hypothesis: {d.hypothesis}",
            f"Set-up: {d.setup}",
            f"Each data file holds one {d.file_unit}; each row is {d.row_unit}.",
        ]
    )


def _format(draft: Draft, schema: dict, example: dict) -> str:
    """The reply format: the JSON schema (full profile; the small one relies on the grammar
    and the example, to keep prompts short) and an example of the shape."""
    shape = (
        f"Example of the shape only (do not copy its content):\n"
        f"{json.dumps(example, ensure_ascii=False)}"
    )
    if draft.plan.profile.name == "small":
        return "Reply with one JSON object. " + shape
    return f"Reply with one JSON object following this JSON schema:\n{compact(schema)}\n" + shape


def _names(names: list[str]) -> str:
    return f"Required names (JSON): {json.dumps(names)}"


def titles(draft: Draft, schema: dict) -> str:
    k = draft.plan.profile.titles
    example = {"titles": ["..."] * k}
    return (
        f"Step 1 of {STAGES}: project titles.\n{_project(draft)}\n\n"
        f"Propose {k} different, specific titles for a research project in this subdomain "
        "whose data we will simulate. Each title is one line of 5 to 20 words that names what "
        "is studied and its main factor; no quotes, no numbering.\n\n"
        + _format(draft, schema, example)
    )


def design(draft: Draft, schema: dict) -> str:
    p = draft.plan

    def variable(name: str, unit: str, description: str) -> dict[str, str]:
        return {
            "name": name,
            "label": name.replace("_", " "),
            "unit": unit,
            "description": description,
        }

    example = {
        "setting": "...",
        "goal": "...",
        "hypothesis": "...",
        "setup": "...",
        "file_unit": "field plot",
        "row_unit": "one harvested plant",
        "conditions": [variable("nitrogen_rate", "kg/ha", "Nitrogen applied to the plot.")],
        "measured": [variable("soil_moisture", "%", "Volumetric soil water at sowing.")],
        "outcomes": [variable("grain_yield", "t/ha", "Grain yield at 13% moisture.")],
        "confounders": [variable("frost_days", "days", "Days with air frost before flowering.")],
    }
    return (
        f"Step 2 of {STAGES}: the project description.\n{_project(draft)}\n\n"
        "Describe the project and its variables:\n"
        "- setting: what is studied, where and why (2-3 sentences); goal and hypothesis "
        "(1-2 sentences each); setup: how the data are collected (2-3 sentences);\n"
        "- file_unit: what one data file holds, a short noun (e.g. run, field plot, session); "
        "row_unit: what one row of a file is (e.g. one leaf sample);\n"
        f"- conditions: {p.conditions} experimental condition(s) varied across data files (each "
        "file has one value of each; they name the directories), e.g. a temperature or a "
        "treatment;\n"
        f"- measured: {p.measured} independent variables measured on every row;\n"
        f"- outcomes: {p.outcomes} dependent variables that the conditions and measured "
        "variables affect;\n"
        f"- confounders: {p.confounders} other variable(s) that could affect the outcomes.\n"
        "Every variable has a name (lower_snake_case, at most 31 characters, all names "
        "different), a label (2-60 characters), a unit ('' if none) and a one-sentence "
        "description.\n\n" + _format(draft, schema, example)
    )


def _words(draft: Draft) -> str:
    low, high = draft.plan.profile.abstract_words
    return f"{low + (high - low) // 4} to {high - (high - low) // 4}"


def abstract(draft: Draft, schema: dict) -> str:
    d = draft.design
    assert d is not None
    recorded = [*d.conditions, *draft.recorded, *d.outcomes]
    missing = ", ".join(v.label for v in draft.unrecorded)
    return (
        f"Step 3 of {STAGES}: the abstract.\n{_project(draft)}\n{_design(draft)}\n"
        f"Recorded variables:\n{_variables(recorded)}\n"
        f"Described but not recorded: {missing}.\n\n"
        f"Write the abstract of this project as in a paper: {_words(draft)} words in one "
        "paragraph "
        "(context, aim, design, what was recorded, the hypothesis), mentioning the recorded "
        f"variables by their labels and saying that {missing} could not be recorded.\n\n"
        + _format(draft, schema, {"abstract": "..."})
    )


def paths(draft: Draft, schema: dict) -> str:
    d = draft.design
    assert d is not None
    names = [v.name for v in d.conditions]
    shapes = (
        {"short": "temp", "kind": "numeric", "values": [20, 25, 30]},
        {"short": "trt", "kind": "categorical", "values": ["control", "lowdose", "highdose"]},
    )
    example = {"path_variables": [{"name": n, **shapes[i % 2]} for i, n in enumerate(names)]}
    return (
        f"Step 4 of {STAGES}: values of the experimental conditions.\n{_project(draft)}\n"
        f"Conditions (each data file has one value of each; the values name its "
        f"directories):\n{_variables(d.conditions)}\n\n"
        f"For each condition, in this order, give: name (as listed), short (a 1-12 character "
        f"lowercase name used in paths, e.g. temp), kind (numeric or categorical) and 2-"
        f"{draft.plan.profile.path_values} values. Numeric values are non-negative numbers; "
        "categorical values "
        "are short words of letters, digits and dots only (at most 24 characters; not numbers, "
        f"not true/false/NA).\n{_names(names)}\n\n" + _format(draft, schema, example)
    )


def _key_text(var: PathVariable) -> str:
    what = {
        "sequence": "a running number",
        "date": "a date",
        "researcher": "a researcher name",
        "numeric": "a number",
        "categorical": "a word",
    }[var.kind]
    return f"- {var.key}: {var.label} ({what}, e.g. {var.values[0]})"


def layout(draft: Draft, schema: dict) -> str:
    keys = [v.key for v in draft.path_variables]
    example = {
        "levels": [["var1"], ["var2", "date"]],
        "level_joiners": ["_", "-"],
        "filename": ["seq_number"],
        "filename_joiner": "_",
        "style": "{name}={val}",
        "date_format": "%Y-%m-%d",
    }
    return (
        f"Step 5 of {STAGES}: the path template of the data files.\n{_project(draft)}\n"
        "A file's path is built from these placeholders:\n"
        + "\n".join(_key_text(v) for v in draft.path_variables)
        + "\n\nUse every placeholder exactly once: 'levels' are 2-4 directory levels of 1-3 "
        "placeholders each, 'filename' holds 1-3 placeholders; 'level_joiners' gives one "
        "joiner ('-' or '_') per level for the placeholders within it, 'filename_joiner' the "
        "same for the file name; 'style' writes a value with its short name (e.g. {name}={val} "
        "gives temp=30, {val} gives 30); 'date_format' writes dates.\n"
        f"{_names(keys)}\n\n" + _format(draft, schema, example)
    )


_EXAMPLE_COLUMNS = (  # the shape of each role, given the names asked for
    {"name": "", "role": "continuous", "distribution": {"name": "normal", "mean": 24, "sd": 4},
     "decimals": 1, "clip": [0, 100]},
    {"name": "", "role": "integer", "distribution": {"name": "poisson", "lam": 6}},
    {"name": "", "role": "categorical", "values": ["Apex", "Blaze"], "probabilities": [0.6, 0.4]},
)  # fmt: skip


def columns(draft: Draft, schema: dict) -> str:
    names = [v.name for v in draft.recorded]
    example = {
        "identifier": {
            "name": "plant_id",
            "label": "plant identifier",
            "prefix": "PL",
            "description": "Code of the harvested plant.",
        },
        "timestamp": {
            "name": "measured_at",
            "label": "measurement time",
            "description": "When the plant was weighed.",
            "interval_seconds": 3600,
            "regular": True,
        },
        "columns": [_EXAMPLE_COLUMNS[i % 3] | {"name": name} for i, name in enumerate(names)],
    }
    return (
        f"Step 6 of {STAGES}: the columns of the data files.\n{_project(draft)}\n"
        f"Each row is {draft.design.row_unit if draft.design else 'one record'}. It has an "
        "identifier, a timestamp and these variables:\n"
        f"{_variables(draft.recorded)}\n\n"
        "Give the identifier (name, label, description, prefix: 1-4 capital letters that "
        "start every id), the timestamp (name, label, description, interval_seconds between "
        "rows from 1 to 604800, regular: true for a fixed interval) and one entry of 'columns' "
        "per variable above, in this order, with its role:\n"
        f"- categorical: values (2-{draft.plan.profile.labels} word labels, not numbers) and "
        "their probabilities "
        "(summing to 1);\n"
        "- integer: a distribution: poisson {lam}, binomial {n, p}, bernoulli {p}, geometric "
        "{p} or negative_binomial {n, p};\n"
        "- continuous: a distribution: normal {mean, sd}, uniform {low, high}, lognormal {mu, "
        "sigma, on the log scale}, beta {a, b, low, high} or exponential {scale}; decimals "
        "(0-6) and clip [low, high] for physical limits (null for none).\n"
        "Choose parameters that are realistic in the variable's unit.\n"
        f"{_names(names)}\n\n" + _format(draft, schema, example)
    )


def _spread(dist) -> str:
    mean, sd = dist.moments()
    low = getattr(dist, "low", None)
    high = getattr(dist, "high", None)
    if low is not None and high is not None:
        return f"{_g(low)} to {_g(high)}"
    lo = max(mean - 2 * sd, 0.0) if dist.nonnegative else mean - 2 * sd
    return f"about {_g(lo)} to {_g(mean + 2 * sd)}"


def _input_line(name: str, kind: str, detail: str, unit: str) -> str:
    unit = f" [{unit}]" if unit else ""
    return f"- {name} ({kind}{unit}): {detail}"


def inputs(draft: Draft) -> tuple[list[str], dict[str, str]]:
    """Lines describing the variables an expression may use, and name -> kind."""
    lines, kinds = [], {}
    for var in draft.path_variables:
        if var.expression_kind is None:
            continue
        if var.expression_kind == "numeric":
            xs = np.array([float(v) for v in var.values])
            detail = f"one value per file, {_g(xs.min())} to {_g(xs.max())}"
        else:
            detail = "one per file, labels " + ", ".join(repr(v) for v in var.values)
        lines.append(_input_line(var.name, var.expression_kind, detail, var.unit))
        kinds[var.name] = var.expression_kind
    for col in draft.columns[2:]:
        if isinstance(col, CategoricalColumn):
            detail = "labels " + ", ".join(repr(v) for v in col.values)
            kinds[col.name] = "categorical"
        elif isinstance(col, IntegerColumn | ContinuousColumn):
            detail = f"{col.distribution.name}, {_spread(col.distribution)}"
            kinds[col.name] = "numeric"
        else:
            continue
        lines.append(_input_line(col.name, kinds[col.name], detail, col.unit))
    return lines, kinds


def _spreads(draft: Draft) -> dict[str, tuple[float, float]]:
    """Centre and spread of each numeric input (path values, or the distribution's moments)."""
    out = {}
    for var in draft.path_variables:
        if var.expression_kind == "numeric":
            xs = np.array([float(v) for v in var.values])
            out[var.name] = (float(xs.mean()), float(xs.std()) or 1.0)
    for col in draft.columns[2:]:
        if isinstance(col, IntegerColumn | ContinuousColumn):
            mean, sd = col.distribution.moments()
            out[col.name] = (mean, sd or 1.0)
    return out


def _own_example(draft: Draft) -> dict:
    """The small profile's example: the seed's own outcome and input names in a standardised
    saturating form (a model that copies it gets a valid, if bland, outcome)."""
    d = draft.design
    assert d is not None
    spreads = list(_spreads(draft).items())
    out = []
    for i, outcome in enumerate(d.outcomes):
        x, (centre, scale) = spreads[i % len(spreads)] if spreads else ("x", (0.0, 1.0))
        out.append(
            {
                "name": outcome.name,
                "expression": f"10 + 2*tanh(({x} - {_g(centre)})/{_g(scale)})",
                "noise_sd": 0.3,
                "decimals": 2,
                "clip": None,
                "typical_range": [6, 14],
            }
        )
    return {"dependents": out}


def dependents(draft: Draft, schema: dict) -> str:
    d = draft.design
    assert d is not None
    lines, kinds = inputs(draft)
    example = (
        _own_example(draft)
        if draft.plan.profile.name == "small"
        else {
            "dependents": [
                {
                    "name": "grain_yield",
                    "expression": "2 + 3*nitrogen/(nitrogen + 40) - 0.05*weeds",
                    "noise_sd": 0.3,
                    "decimals": 2,
                    "clip": [0, None],
                    "typical_range": [1.5, 5],
                },
                {
                    "name": "disease_class",
                    "expression": "cut(0.1*moisture + (cultivar == 'Apex'), [2, 3], "
                    "['low', 'moderate', 'high'])",
                    "noise_sd": 0.2,
                    "decimals": 0,
                    "clip": None,
                    "typical_range": [1, 4],
                },
            ]
        }
    )
    return (
        f"Step 7 of {STAGES}: how the outcomes are generated.\n{_project(draft)}\n"
        f"Hypothesis: {d.hypothesis}\n"
        f"Outcomes:\n{_variables(d.outcomes)}\n"
        f"Variables an expression may use:\n" + "\n".join(lines) + "\n\n"
        "For each outcome, in this order, write an expression of these variables (and of "
        "earlier outcomes) giving its typical value; Gaussian noise with sd noise_sd is added. "
        "Also give decimals, clip [low, high] for physical limits (null: none) and "
        "typical_range [low, high] where most of its values lie. Each outcome must clearly "
        "depend on at least one variable: make its effect large compared with noise_sd. Use "
        "varied, realistic forms (linear, saturating x/(x + k), optimum exp(-((x - a)/b)**2), "
        "threshold (x > a), logarithmic, interactions).\n"
        "Expression language (nothing else is accepted): numbers; variable names; + - * / **; "
        "comparisons < <= > >= == != (giving 1 or 0); functions exp log sqrt abs tanh sin cos "
        "min max clip(x, lo, hi) where(cond, a, b); a categorical variable only as "
        "name == 'label' or name != 'label'; for a categorical outcome, the whole expression "
        "is cut(score, [t1, t2], ['low', 'mid', 'high']) (thresholds increasing, one more "
        "label than thresholds).\n"
        f"{_names([v.name for v in d.outcomes])}\nInputs (JSON): {json.dumps(kinds)}\n\n"
        + _format(draft, schema, example)
    )
