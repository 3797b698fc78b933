"""Structured path and row conditions: sampling, rendering as text, and privileged evaluation.

Conditions are plain dicts in ``Question.params`` so that an independent checker can re-apply
them. Path-condition values are written exactly as the paths render them (the value part of a
path component, e.g. ``300`` in ``temp=300``, ``03_05`` for a date); row-condition thresholds are
numbers whose decimal text in the question is exactly the stored float.

Semantics (stated in every question that uses them): a row whose filtered column is missing
never satisfies a condition; ``between`` includes both ends.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from isg_gym.repository import Repository
from isg_gym.repository.index import render_value
from isg_gym.spec.models import PathVariable, column_kind

PathOp = Literal["is", "is_one_of", "gt", "lt", "ge", "le"]
RowOp = Literal["eq", "ne", "in", "gt", "lt", "ge", "le", "between"]
_COMPARE_WORDS = {"gt": "greater than", "lt": "less than", "ge": "at least", "le": "at most"}


def fmt_num(x: float, digits: int = 4) -> str:
    """A number as it appears in question text: ``digits`` significant figures, no exponent."""
    text = np.format_float_positional(float(f"{float(x):.{digits}g}"), trim="-")
    return "0" if text in ("-0", "-0.") else text


def num(x: float, digits: int = 4) -> float:
    """The float whose text in the question is ``fmt_num(x, digits)``."""
    return float(fmt_num(x, digits))


def _or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


@dataclass(frozen=True)
class PathCondition:
    """A condition on one path variable: ``value`` is a rendered token (or number for gt/lt/...)."""

    variable: str  # PathVariable.name
    op: PathOp
    value: Any  # str token, list[str] tokens, or float threshold

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self, repo: Repository) -> str:
        var = _path_var(repo, self.variable)
        subject = f'{var.label} (path component "{var.short}")'
        match self.op:
            case "is":
                return f"{subject} is {self.value}"
            case "is_one_of":
                return f"{subject} is one of {_or_list(list(self.value))}"
        return f"{subject} is {_COMPARE_WORDS[self.op]} {fmt_num(self.value)}"

    def matches(self, token: str) -> bool:
        """Whether a file whose rendered value for this variable is ``token`` satisfies it."""
        match self.op:
            case "is":
                return token == self.value
            case "is_one_of":
                return token in self.value
        x = float(token)
        return {"gt": x > self.value, "lt": x < self.value, "ge": x >= self.value,
                "le": x <= self.value}[self.op]  # fmt: skip


@dataclass(frozen=True)
class RowCondition:
    """A condition on one column of the rows."""

    column: str
    op: RowOp
    value: Any = None  # str or number for eq/ne/gt/lt/ge/le; list for in
    high: float | None = None  # upper end for between (value is the lower end)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        col = f'"{self.column}"'
        show = lambda v: f'"{v}"' if isinstance(v, str) else fmt_num(v)  # noqa: E731
        match self.op:
            case "eq":
                return f"{col} is {show(self.value)}"
            case "ne":
                return f"{col} is not {show(self.value)}"
            case "in":
                return f"{col} is one of {_or_list([show(v) for v in self.value])}"
            case "between":
                return (
                    f"{col} is between {fmt_num(self.value)} and {fmt_num(self.high)} (inclusive)"
                )
        return f"{col} is {_COMPARE_WORDS[self.op]} {fmt_num(self.value)}"

    def mask(self, values: pd.Series) -> np.ndarray:
        """Rows that satisfy the condition (missing values never do)."""
        present = values.notna().to_numpy()
        v = values.to_numpy()
        match self.op:
            case "eq":
                out = v == self.value
            case "ne":
                out = v != self.value
            case "in":
                out = np.isin(v, list(self.value))
            case "between":
                out = (v >= self.value) & (v <= self.high)
            case "gt":
                out = v > self.value
            case "lt":
                out = v < self.value
            case "ge":
                out = v >= self.value
            case "le":
                out = v <= self.value
        return np.asarray(out, dtype=bool) & present


def _path_var(repo: Repository, name: str) -> PathVariable:
    for var in repo.spec.path_variables:
        if var.name == name:
            return var
    raise KeyError(name)


def rendered_values(repo: Repository, var: PathVariable) -> list[str]:
    """The variable's values as they appear in paths (value part only)."""
    return [render_value(repo.spec, var, v) for v in var.values]


def present_values(repo: Repository, var: PathVariable) -> list[str]:
    """The rendered values of ``var`` that at least one data file has, in value order."""
    index = repo.index
    j = next(i for i, v in enumerate(index.variables) if v.name == var.name)
    used = np.unique(index.codes[:, j]).tolist()
    tokens = rendered_values(repo, var)
    return [tokens[i] for i in used]


def matching_files(repo: Repository, conditions: list[PathCondition]) -> list[str]:
    """Data files satisfying every path condition (privileged: uses the structured index)."""
    index = repo.index
    keep = np.ones(len(index), dtype=bool)
    for cond in conditions:
        j = next(i for i, v in enumerate(index.variables) if v.name == cond.variable)
        tokens = rendered_values(repo, index.variables[j])
        ok = np.array([cond.matches(t) for t in tokens], dtype=bool)
        keep &= ok[index.codes[:, j]]
    return [index.paths[i] for i in np.flatnonzero(keep)]


def combined_mask(table: pd.DataFrame, conditions: list[RowCondition]) -> np.ndarray:
    keep = np.ones(len(table), dtype=bool)
    for cond in conditions:
        keep &= cond.mask(table[cond.column])
    return keep


def describe_path_conditions(repo: Repository, conditions: list[PathCondition]) -> str:
    """``'across all files'`` or ``'across the files where A and B'``."""
    if not conditions:
        return "across all data files"
    return "across the data files where " + " and ".join(c.text(repo) for c in conditions)


def describe_row_conditions(conditions: list[RowCondition]) -> str:
    """``''`` or ``', using only rows where A and B'``."""
    if not conditions:
        return ""
    return ", using only rows where " + " and ".join(c.text() for c in conditions)


# --- sampling ---------------------------------------------------------------------------------


def sample_path_condition(
    repo: Repository, var: PathVariable, rng: np.random.Generator
) -> PathCondition:
    """A condition on ``var`` that some files satisfy (values as the paths render them).

    Only values that some file has are used, so that a value no file has is always a deliberate
    (unanswerable) construction.
    """
    tokens = present_values(repo, var)
    numeric = var.kind in ("numeric", "sequence") and len(tokens) >= 3
    roll = rng.random()
    if numeric and roll < 0.4:
        values = sorted(float(t) for t in tokens)
        cut = values[int(rng.integers(1, len(values) - 1))]
        op = ("gt", "lt", "ge", "le")[int(rng.integers(4))]
        return PathCondition(var.name, op, cut)
    if len(tokens) >= 3 and roll < 0.7:
        k = int(rng.integers(2, len(tokens)))
        picked = sorted(rng.choice(len(tokens), k, replace=False).tolist())
        return PathCondition(var.name, "is_one_of", [tokens[i] for i in picked])
    return PathCondition(var.name, "is", tokens[int(rng.integers(len(tokens)))])


def absent_path_token(repo: Repository, var: PathVariable, rng: np.random.Generator) -> str | None:
    """A plausible value of ``var`` that no file has, rendered as paths would, or None."""
    present = set(present_values(repo, var))
    candidates: list[str] = []
    if var.kind == "numeric":
        values = [float(v) for v in var.values]
        step = (max(values) - min(values)) / max(len(values) - 1, 1) or 1.0
        candidates = [fmt_num(max(values) + step * k) for k in (1, 2, 3)]
    elif var.kind == "sequence":
        candidates = [render_value(repo.spec, var, str(len(var.values) + k)) for k in (1, 2, 5)]
    elif var.kind == "date":
        import datetime as dt

        last = max(dt.date.fromisoformat(v) for v in var.values)
        candidates = [render_value(repo.spec, var, (last + dt.timedelta(days=k)).isoformat())
                      for k in (3, 17, 40)]  # fmt: skip
    else:
        from isg_gym.simulator.lexicon import load_common, load_lexicon

        pool: list[str] = []
        if var.kind == "categorical":
            try:
                arch = next(a for a in load_lexicon(repo.spec.taxonomy.field).archetypes
                            if a.id == repo.spec.archetype)  # fmt: skip
                pool = [str(v) for p in arch.path_variables if p.name == var.name for v in p.values]
            except (StopIteration, FileNotFoundError):
                pool = []
        else:
            pool = [name.lower() for name in load_common()["last_names"]]
        candidates = [v for v in pool if v not in present]
    candidates += [t for t in rendered_values(repo, var) if t not in candidates]  # unsampled
    candidates = [c for c in candidates if c not in present]
    if not candidates:
        return None
    return candidates[int(rng.integers(len(candidates)))]


def sample_row_condition(
    repo: Repository, column: str, values: pd.Series, rng: np.random.Generator
) -> RowCondition | None:
    """A condition on ``column`` that keeps a meaningful share of ``values`` (from the data)."""
    col = repo.spec.column(column)
    present = values.dropna()
    if present.empty:
        return None
    if column_kind(col) == "categorical":
        counts = present.value_counts()
        labels = counts.index.tolist()
        if len(labels) >= 3 and rng.random() < 0.35:
            k = int(rng.integers(2, len(labels)))
            return RowCondition(column, "in", sorted(str(x) for x in labels[:k]))
        return RowCondition(column, "eq", str(labels[int(rng.integers(min(2, len(labels))))]))
    x = present.to_numpy(dtype=float)
    is_int = col.role == "integer"
    roll = rng.random()
    if is_int and roll < 0.35:
        counts = present.value_counts()
        common = [float(v) for v in counts.index[:3]]
        pick = int(common[int(rng.integers(len(common)))])
        if len(common) >= 2 and roll < 0.12:
            return RowCondition(column, "ne", pick)
        if len(common) >= 2 and roll < 0.2:
            return RowCondition(column, "in", sorted(int(c) for c in common[:2]))
        return RowCondition(column, "eq", pick)
    if roll < 0.75:
        op = ("gt", "lt", "ge", "le")[int(rng.integers(4))]
        q = rng.uniform(0.2, 0.8)
        return RowCondition(column, op, num(np.quantile(x, q), 3))
    lo, hi = np.quantile(x, [rng.uniform(0.05, 0.4), rng.uniform(0.6, 0.95)])
    lo, hi = num(lo, 3), num(hi, 3)
    if lo >= hi:
        return RowCondition(column, "ge", lo)
    return RowCondition(column, "between", lo, hi)


def impossible_row_condition(
    repo: Repository, column: str, values: pd.Series, rng: np.random.Generator
) -> RowCondition | None:
    """A condition on ``column`` that no row of ``values`` satisfies, or None."""
    col = repo.spec.column(column)
    present = values.dropna()
    if column_kind(col) == "categorical":
        labels = getattr(col, "values", None) or []
        absent = [v for v in labels if v not in set(present.astype(str))]
        return (
            RowCondition(column, "eq", str(absent[int(rng.integers(len(absent)))]))
            if absent
            else None
        )
    if present.empty:
        return None
    top = float(present.max())
    bottom = float(present.min())
    span = (top - bottom) or abs(top) or 1.0
    if rng.random() < 0.5:
        threshold = num(top + span * rng.uniform(0.1, 0.5), 3)
        return RowCondition(column, "gt", threshold) if threshold > top else None
    threshold = num(bottom - span * rng.uniform(0.1, 0.5), 3)
    return RowCondition(column, "lt", threshold) if threshold < bottom else None
