"""Structured path and row conditions: sampling, rendering as text, and privileged evaluation.

Conditions are plain dicts in ``Question.params`` so that an independent checker can re-apply
them. Path-condition values are written exactly as the paths render them (the value part of a
path component, e.g. ``300`` in ``temp=300``, ``03_05`` for a date). Every row-condition
threshold is rounded to ``THRESHOLD_DIGITS`` (3) significant figures, and its text is the
shortest decimal of the stored float, so text and params always hold the same number.

Text grammar (what a checker parses from a question; conditions are joined by `` and ``):

- path condition: ``{label} (path component "{short}") is {token}``,
  ``... is one of {t1}, {t2} or {t3}``, ``... is greater than|less than|at least|at most {x}``;
  the scope reads ``across the data files where C1 and C2`` (``across all data files`` if none);
- row condition (after ``, using only rows where``): ``"{col}" is {v}``, ``"{col}" is not {v}``,
  ``"{col}" is one of {v1}, {v2} or {v3}``, ``"{col}" is greater than|less than|at least|at
  most {x}``, ``"{col}" is between {lo} and {hi} (inclusive)``; a label ``v`` is written in
  double quotes, a number bare.

Semantics (stated in every question that uses them): a row whose filtered column is missing
never satisfies a condition; ``between`` includes both ends.

One sampler serves answerable and unanswerable questions alike: :func:`row_op` draws the
operator from one distribution per column kind, and :func:`fill_row_condition` gives it a value
that keeps rows (``"keep"``, sometimes vacuously: a threshold past the observed range), keeps
none (``"empty"``: past the range, in a gap between observed values, or a label absent from the
rows the other conditions keep) or keeps exactly one (``"one"``). Path conditions likewise
(:func:`path_op`, :func:`fill_path_condition`); absent path values come from gaps inside the
range of present values, rendered in the repository's own format (:func:`absent_path_token`).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd

from isg_gym.repository import Repository
from isg_gym.repository.index import render_value
from isg_gym.spec.models import PathVariable, column_kind

PathOp = Literal["is", "is_one_of", "gt", "lt", "ge", "le"]
RowOp = Literal["eq", "ne", "in", "gt", "lt", "ge", "le", "between"]
_COMPARE_WORDS = {"gt": "greater than", "lt": "less than", "ge": "at least", "le": "at most"}
THRESHOLD_DIGITS = 3  # significant figures of every row-condition threshold
VACUOUS_SHARE = 0.2  # share of "keep" thresholds placed past the observed range (keep all)
INSIDE_SHARE = 0.7  # share of impossible thresholds kept inside the wider range when possible


def fmt_num(x: float, digits: int = 4) -> str:
    """A number as it appears in question text: ``digits`` significant figures, no exponent."""
    text = np.format_float_positional(float(f"{float(x):.{digits}g}"), trim="-")
    return "0" if text in ("-0", "-0.") else text


def num(x: float, digits: int = 4) -> float:
    """The float whose text in the question is ``fmt_num(x, digits)``.

    That text is the shortest positional decimal of ``float(f"{x:.{digits}g}")``, which reads
    back as exactly that float (minus zero as zero), so the float is computed without the text.
    """
    y = float(f"{float(x):.{digits}g}")
    return 0.0 if y == 0 else y


def exact_num(x: float) -> str:
    """The shortest decimal text that reads back as exactly ``x`` (no exponent)."""
    if isinstance(x, int | np.integer):
        return str(int(x))
    text = np.format_float_positional(float(x), trim="-")
    return "0" if text in ("-0", "-0.") else text


def round_sig(x: float, digits: int = THRESHOLD_DIGITS, direction: int = 0) -> float:
    """``x`` at ``digits`` significant figures: nearest (0), at least ``x`` (1), at most (-1)."""
    return _toward(x, num(x, digits), digits, direction)


def _toward(x: float, t: float, digits: int, direction: int) -> float:
    """``t`` (``x`` at ``digits`` significant figures) moved a step at a time until it is on
    the ``direction`` side of ``x`` (at most 3 steps)."""
    for _ in range(3):
        if (direction > 0 and t < x) or (direction < 0 and t > x):
            step = 10.0 ** (np.floor(np.log10(abs(t) or abs(x) or 1.0)) - digits + 1)
            t = num(t + direction * step, digits)
        else:
            break
    return t


# About 300 bytes an entry. Over 2,000 resets, 44 calls each, hits are 43% at 8,192 entries and
# 28% at 4,096 (a miss costs ~2.6 us: 17 us more per reset, for 1.2 MB less held).
@lru_cache(maxsize=4096)
def _rounded(x: float) -> tuple[float, float, float]:
    """``round_sig(x, THRESHOLD_DIGITS, d)`` for d = -1, 0, 1 (memoised: candidates round the
    same observed values again and again)."""
    t = num(x, THRESHOLD_DIGITS)
    down = t if t <= x else _toward(x, t, THRESHOLD_DIGITS, -1)
    up = t if t >= x else _toward(x, t, THRESHOLD_DIGITS, 1)
    return down, t, up


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
        return f"{subject} is {_COMPARE_WORDS[self.op]} {exact_num(self.value)}"

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
        show = lambda v: f'"{v}"' if isinstance(v, str) else exact_num(v)  # noqa: E731
        match self.op:
            case "eq":
                return f"{col} is {show(self.value)}"
            case "ne":
                return f"{col} is not {show(self.value)}"
            case "in":
                return f"{col} is one of {_or_list([show(v) for v in self.value])}"
            case "between":
                return (
                    f"{col} is between {exact_num(self.value)} and {exact_num(self.high)} "
                    "(inclusive)"
                )
        return f"{col} is {_COMPARE_WORDS[self.op]} {exact_num(self.value)}"

    def mask(self, values: pd.Series) -> np.ndarray:
        """Rows that satisfy the condition (missing values never do)."""
        return self.mask_values(values.to_numpy(), values.notna().to_numpy())

    def mask_values(self, v: np.ndarray, present: np.ndarray) -> np.ndarray:
        """:meth:`mask` of a column's values and which of them are present."""
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


# --- path conditions: sampling ------------------------------------------------------------------

PATH_OPS_NUMERIC = (("is", 0.3), ("is_one_of", 0.3), ("gt", 0.1), ("lt", 0.1), ("ge", 0.1),
                    ("le", 0.1))  # fmt: skip


def _weighted(rng: np.random.Generator, table: tuple[tuple[str, float], ...]) -> str:
    names, weights = zip(*table, strict=True)
    p = np.asarray(weights, dtype=float)
    return str(names[int(rng.choice(len(names), p=p / p.sum()))])


def path_op(repo: Repository, var: PathVariable, rng: np.random.Generator) -> PathOp:
    """The operator of a condition on ``var``, from one distribution for every question."""
    n = len(present_values(repo, var))
    if var.kind in ("numeric", "sequence") and n >= 3:
        return _weighted(rng, PATH_OPS_NUMERIC)  # type: ignore[return-value]
    if n >= 3 and rng.random() < 0.3:
        return "is_one_of"
    return "is"


def _var_column(repo: Repository, var: PathVariable) -> int:
    return next(i for i, v in enumerate(repo.index.variables) if v.name == var.name)


def fill_path_condition(
    repo: Repository,
    var: PathVariable,
    op: PathOp,
    rng: np.random.Generator,
    candidates: np.ndarray | None = None,
    mode: Literal["keep", "empty"] = "keep",
) -> PathCondition | None:
    """A condition ``var op value`` with present values only, that some (``keep``) or none
    (``empty``) of the ``candidates`` files (a mask over the index; all files by default)
    satisfies, or None."""
    index = repo.index
    j = _var_column(repo, var)
    tokens = rendered_values(repo, var)
    present = present_values(repo, var)
    mask = np.ones(len(index), dtype=bool) if candidates is None else candidates
    inside = {tokens[c] for c in np.unique(index.codes[mask, j]).tolist()}
    if op in ("is", "is_one_of"):
        hit = [t for t in present if t in inside]
        miss = [t for t in present if t not in inside]
        if op == "is":
            pool = hit if mode == "keep" else miss
            return PathCondition(var.name, "is", _pick(rng, pool)) if pool else None
        if len(present) < 3:
            return None
        k = int(rng.integers(2, len(present)))
        if mode == "empty":
            if len(miss) < k:
                return None
            chosen = set(rng.choice(miss, k, replace=False).tolist())
        else:
            if not hit:
                return None
            first = hit[int(rng.integers(len(hit)))]
            rest = [t for t in present if t != first]
            chosen = {first, *rng.choice(rest, k - 1, replace=False).tolist()}
        return PathCondition(var.name, "is_one_of", [t for t in present if t in chosen])
    values = sorted(float(t) for t in present)
    x = np.array([float(t) for t in inside])
    ok = []
    for cut in values:
        n = {"gt": x > cut, "lt": x < cut, "ge": x >= cut, "le": x <= cut}[op].sum()
        if (n > 0) == (mode == "keep"):
            ok.append(cut)
    return PathCondition(var.name, op, ok[int(rng.integers(len(ok)))]) if ok else None


def sample_path_condition(
    repo: Repository, var: PathVariable, rng: np.random.Generator
) -> PathCondition:
    """A condition on ``var`` that some files satisfy (values as the paths render them).

    Only values that some file has are used, so that a value no file has is always a deliberate
    (unanswerable) construction.
    """
    cond = fill_path_condition(repo, var, path_op(repo, var, rng), rng)
    if cond is None:  # cannot happen for keep over all files; be safe
        cond = fill_path_condition(repo, var, "is", rng)
    assert cond is not None
    return cond


def _researcher_format(values: list[str]) -> str | None:
    """Which of the procedural researcher formats renders every value (None if none does)."""
    from isg_gym.simulator.lexicon import load_common

    lasts = {n.lower() for n in load_common()["last_names"]}
    checks = {
        "{Last}": lambda v: v[:1].isupper() and v.lower() in lasts and v[1:].islower(),
        "{F}{Last}": lambda v: len(v) > 2 and v[:2].isupper() and v[1:].lower() in lasts,
        "{f}.{last}": lambda v: v[1:2] == "." and v.islower() and v[2:] in lasts,
        "{f}{last}": lambda v: v.islower() and v[1:] in lasts,
        "{last}{f}": lambda v: v.islower() and v[:-1] in lasts,
    }
    for fmt, check in checks.items():
        if values and all(check(v) for v in values):
            return fmt
    return None


def _archetype_path_variables(repo: Repository) -> list:
    """The path variables of the repository's archetype (none for a Spec of another builder)."""
    from isg_gym.simulator.lexicon import spec_archetype

    arch = spec_archetype(repo.spec)
    return arch.path_variables if arch is not None else []


def absent_path_tokens(repo: Repository, var: PathVariable) -> list[str]:
    """Values of ``var`` inside the range of present values that no file has, rendered as the
    repository renders the variable."""
    present = present_values(repo, var)
    out: list[str] = []
    if var.kind in ("numeric", "sequence"):
        xs = sorted(float(t) for t in present)
        if var.kind == "sequence":
            have = {int(x) for x in xs}
            out = [render_value(repo.spec, var, str(i)) for i in range(int(xs[0]), int(xs[-1]))
                   if i not in have]  # fmt: skip
        else:
            decimals = max((len(t.split(".")[1]) if "." in t else 0) for t in present)
            pool = {float(v) for p in _archetype_path_variables(repo) if p.name == var.name
                    for v in p.values}  # fmt: skip
            pool |= {round((a + b) / 2, decimals) for a, b in itertools.pairwise(xs)}
            for x in sorted(pool):
                token = np.format_float_positional(x, trim="-")
                if xs[0] < x < xs[-1] and token not in present and x not in xs:
                    out.append(token)
    elif var.kind == "date":
        import datetime as dt

        have = sorted(dt.date.fromisoformat(v) for v, t in zip(var.values,
                      rendered_values(repo, var), strict=True) if t in present)  # fmt: skip
        for a, b in itertools.pairwise(have):
            for k in range(1, (b - a).days):
                token = render_value(repo.spec, var, (a + dt.timedelta(days=k)).isoformat())
                if token not in present:
                    out.append(token)
    elif var.kind == "researcher":
        from isg_gym.simulator.lexicon import load_common

        fmt = _researcher_format(present)
        if fmt is not None:
            common = load_common()
            used = {p.lower() for p in present}
            for last in common["last_names"]:
                for first in common["first_names"][:6]:
                    token = fmt.format(f=first[0].lower(), F=first[0], last=last.lower(),
                                       Last=last)  # fmt: skip
                    if token.lower() not in used and not any(last.lower() in u for u in used):
                        out.append(token)
    else:
        pool = [str(v) for p in _archetype_path_variables(repo) if p.name == var.name
                for v in p.values]  # fmt: skip
        out = [v for v in pool if v not in present]
    if var.kind in ("categorical", "researcher"):  # declared values no file has
        out += [t for t in rendered_values(repo, var) if t not in present and t not in out]
    return [t for t in dict.fromkeys(out) if t not in present]


def absent_path_token(repo: Repository, var: PathVariable, rng: np.random.Generator) -> str | None:
    """A plausible value of ``var`` that no file has, or None: drawn from gaps inside the range
    of present values (numeric, sequence, date), from the archetype's other values
    (categorical), or a new name in the repository's researcher format; rendered exactly as the
    repository's paths render the variable."""
    candidates = absent_path_tokens(repo, var)
    if not candidates:
        return None
    return candidates[int(rng.integers(len(candidates)))]


# --- row conditions: sampling -------------------------------------------------------------------

ROW_OPS_LABEL = (("eq", 0.55), ("in", 0.3), ("ne", 0.15))
ROW_OPS_INTEGER = (("eq", 0.14), ("ne", 0.06), ("in", 0.08), ("gt", 0.15), ("lt", 0.15),
                   ("ge", 0.15), ("le", 0.15), ("between", 0.12))  # fmt: skip
ROW_OPS_FLOAT = (("gt", 0.19), ("lt", 0.19), ("ge", 0.19), ("le", 0.19), ("between", 0.24))
FillMode = Literal["keep", "empty", "one"]


def row_op(repo: Repository, column: str, rng: np.random.Generator) -> RowOp:
    """The operator of a row condition on ``column``: one distribution per column kind, used by
    answerable and unanswerable questions alike."""
    col = repo.spec.column(column)
    if column_kind(col) == "categorical":
        table = ROW_OPS_LABEL
    else:
        table = ROW_OPS_INTEGER if col.role == "integer" else ROW_OPS_FLOAT
    return _weighted(rng, table)  # type: ignore[return-value]


def _pick(rng: np.random.Generator, items: list) -> Any:
    return items[int(rng.integers(len(items)))] if items else None


def _count(x: np.ndarray, op: str, t: float | np.ndarray) -> int | np.ndarray:
    """Rows of sorted ``x`` satisfying ``op t`` (for each threshold of an array ``t``)."""
    n = len(x)
    match op:
        case "gt":
            return n - np.searchsorted(x, t, "right")
        case "ge":
            return n - np.searchsorted(x, t, "left")
        case "lt":
            return np.searchsorted(x, t, "left")
    return np.searchsorted(x, t, "right")  # le


class _Candidates:
    """3-significant-figure thresholds near the observed values, their midpoints and just past
    both ends (non-negative when every value is).

    The random draws happen here, in order; the rounding (``values``) only when a caller needs
    the candidates, which a ``keep`` condition mostly does not."""

    def __init__(self, x: np.ndarray, rng: np.random.Generator) -> None:
        lo, hi = float(x[0]), float(x[-1])
        span = (hi - lo) or abs(hi) or 1.0
        u = np.unique(x)
        ends = [lo - span * rng.uniform(0.01, 0.2), hi + span * rng.uniform(0.01, 0.2)]
        points = [*u.tolist(), *((u[1:] + u[:-1]) / 2).tolist(), *ends]
        if len(points) > 600:
            chosen = np.sort(rng.choice(len(points), 600, replace=False)).tolist()
            points = [points[i] for i in chosen]
            points += [lo, hi, lo - span * rng.uniform(0.01, 0.2),
                       hi + span * rng.uniform(0.01, 0.2)]  # fmt: skip
        self._points, self._nonnegative = points, lo >= 0
        self._values: np.ndarray | None = None

    @property
    def values(self) -> np.ndarray:
        """``round_sig(p, THRESHOLD_DIGITS, d)`` for every point and d in (-1, 0, 1), sorted."""
        if self._values is None:
            out = {t for p in self._points for t in _rounded(p)}
            cands = np.array(sorted(out), dtype=float)
            self._values = cands[cands >= 0] if self._nonnegative else cands
        return self._values


def _numeric_condition(
    column: str, op: str, x: np.ndarray, rng: np.random.Generator, mode: FillMode,
    within: tuple[float, float] | None = None,
) -> RowCondition | None:  # fmt: skip
    x = np.sort(x.astype(float))
    n, lo, hi = len(x), float(x[0]), float(x[-1])
    candidates = _Candidates(x, rng)
    if op == "between":
        return _between(column, x, candidates, rng, mode, within)
    if mode == "keep":
        if rng.random() < VACUOUS_SHARE:
            cands = candidates.values
            counts = _count(x, op, cands)
            vac = cands[(counts == n) & ((cands < lo) | (cands > hi))]
            if len(vac):
                return RowCondition(column, op, float(_pick(rng, vac.tolist())))
        t = num(np.quantile(x, rng.uniform(0.2, 0.8)), THRESHOLD_DIGITS)
        if lo >= 0 > t:
            t = 0.0
        return RowCondition(column, op, t) if _count(x, op, t) > 0 else None
    cands = candidates.values
    counts = _count(x, op, cands)
    want = 0 if mode == "empty" else 1
    ok = cands[counts == want]
    if within is not None:  # prefer thresholds inside the wider observed range
        inner = ok[(ok >= within[0]) & (ok <= within[1])]
        if len(inner) and rng.random() < INSIDE_SHARE:
            ok = inner
    return RowCondition(column, op, float(_pick(rng, ok.tolist()))) if len(ok) else None


def _between(
    column: str, x: np.ndarray, candidates: _Candidates, rng: np.random.Generator,
    mode: FillMode, within: tuple[float, float] | None = None,
) -> RowCondition | None:  # fmt: skip
    lo, hi = float(x[0]), float(x[-1])
    if mode == "keep":
        if rng.random() < VACUOUS_SHARE:
            cands = candidates.values
            a, b = cands[cands <= lo], cands[cands >= hi]
            if len(a) and len(b):
                return RowCondition(column, "between", float(_pick(rng, a.tolist())),
                                    float(_pick(rng, b.tolist())))  # fmt: skip
        qa, qb = np.quantile(x, [rng.uniform(0.05, 0.4), rng.uniform(0.6, 0.95)])
        a, b = num(qa, THRESHOLD_DIGITS), num(qb, THRESHOLD_DIGITS)
        if a >= b or not ((x >= a) & (x <= b)).any():
            return None
        return RowCondition(column, "between", a, b)
    # empty: both ends in one gap between observed values (or past an end); one: one row inside
    cands = candidates.values
    left = np.searchsorted(x, cands, "left")  # rows below each candidate
    right = np.searchsorted(x, cands, "right")  # rows at or below
    want = 0 if mode == "empty" else 1
    pairs = []
    order = rng.permutation(len(cands))[:80]
    for i in order.tolist():
        ks = rng.permutation(len(cands))[:40]
        ks = ks[cands[ks] > cands[i]]
        low = float(cands[i])
        pairs += [(low, high) for high in cands[ks[right[ks] - left[i] == want]].tolist()]
    if not pairs:
        return None
    if within is not None:
        lo, hi = min(lo, within[0]), max(hi, within[1])
    gap = [p for p in pairs if lo < p[0] and p[1] < hi]
    pool = gap if gap and rng.random() < 0.5 else pairs
    a, b = pool[int(rng.integers(len(pool)))]
    return RowCondition(column, "between", a, b)


def _label_condition(
    column: str, op: str, present: pd.Series, universe: list, rng: np.random.Generator,
    mode: FillMode, integer: bool,
) -> RowCondition | None:  # fmt: skip
    counts = present.value_counts()
    cast = int if integer else str
    labels = [cast(v) for v in counts.index]
    seen = set(labels)
    absent = sorted({cast(v) for v in universe} - seen)
    once = [cast(v) for v, c in counts.items() if c == 1]
    if mode == "keep":
        if op == "eq":
            return RowCondition(column, "eq", _pick(rng, labels[:2]))
        if op == "ne":
            if len(labels) < 2:
                return None
            return RowCondition(column, "ne", _pick(rng, labels[:3]))
        pool = sorted(set(labels[:3]) | set(_pick(rng, [[], absent[:1]]) or []))
        if len(pool) < 2:
            return None
        k = int(rng.integers(2, len(pool) + 1))
        return RowCondition(column, "in", sorted(rng.choice(pool, k, replace=False).tolist()))
    if op == "eq":
        pool = absent if mode == "empty" else once
        return RowCondition(column, "eq", _pick(rng, pool)) if pool else None
    if op == "ne":
        if mode == "empty" and len(labels) == 1:
            return RowCondition(column, "ne", labels[0])
        if mode == "one" and len(labels) == 2 and int(counts.iloc[-1]) == 1:
            return RowCondition(column, "ne", labels[0])
        return None
    if mode == "empty":
        if len(absent) < 2:
            return None
        k = int(rng.integers(2, min(len(absent), 3) + 1))
        chosen = rng.choice(len(absent), k, replace=False)
        return RowCondition(column, "in", sorted(absent[i] for i in chosen))
    if not once or not absent:
        return None
    return RowCondition(column, "in", sorted([_pick(rng, once), _pick(rng, absent)]))


def fill_row_condition(
    repo: Repository,
    column: str,
    op: RowOp,
    values: pd.Series | np.ndarray,
    rng: np.random.Generator,
    mode: FillMode = "keep",
    universe: list | None = None,
    within: tuple[float, float] | None = None,
) -> RowCondition | None:
    """A condition ``column op value`` that keeps some (``keep``), none (``empty``) or exactly
    one (``one``) of the non-missing ``values`` (a Series, or the column's array of the rows),
    or None if ``op`` cannot do so here.

    Thresholds are at 3 significant figures and never negative on non-negative values;
    ``universe`` is the labels a label condition may name (default: the column's declared
    labels and the values seen), so that an empty ``eq`` names a real label that only never
    co-occurs with the other conditions; ``within`` is the column's range over the wider scope,
    inside which an ``empty``/``one`` threshold is preferred (share ``INSIDE_SHARE``).
    """
    col = repo.spec.column(column)
    label = column_kind(col) == "categorical"
    if isinstance(values, np.ndarray):
        if not label and values.dtype.kind in "fiu" and op not in ("eq", "ne", "in"):
            x = values[~np.isnan(values)] if values.dtype.kind == "f" else values
            if x.size == 0:
                return None
            return _numeric_condition(column, op, x.astype(float), rng, mode, within)
        values = pd.Series(values)
    present = values.dropna()
    if present.empty:
        return None
    if label or (col.role == "integer" and op in ("eq", "ne", "in")):
        if not label and op not in ("eq", "ne", "in"):
            return None
        pool = list(universe if universe is not None else getattr(col, "values", None) or [])
        if not label:
            x = present.to_numpy(dtype=float)
            pool += list(range(int(x.min()), int(x.max()) + 1))
            pool = [int(v) for v in pool]
        return _label_condition(column, op, present, pool, rng, mode, integer=not label)
    if op in ("eq", "ne", "in"):
        return None
    return _numeric_condition(column, op, present.to_numpy(dtype=float), rng, mode, within)


def sample_row_condition(
    repo: Repository, column: str, values: pd.Series, rng: np.random.Generator
) -> RowCondition | None:
    """A condition on ``column`` that keeps some of ``values`` (from the data; sometimes a
    vacuous threshold past the observed range, at the rate unanswerable questions show one)."""
    return fill_row_condition(repo, column, row_op(repo, column, rng), values, rng, "keep")


def impossible_row_condition(
    repo: Repository, column: str, values: pd.Series, rng: np.random.Generator
) -> RowCondition | None:
    """A condition on ``column`` that no row of ``values`` satisfies, or None: the operator is
    drawn from the same distribution as answerable conditions (:func:`row_op`)."""
    if values.dropna().empty:
        return None
    universe = None
    if column_kind(repo.spec.column(column)) == "categorical":
        universe = getattr(repo.spec.column(column), "values", None)
    for _ in range(4):
        op = row_op(repo, column, rng)
        cond = fill_row_condition(repo, column, op, values, rng, "empty", universe)
        if cond is not None:
            return cond
    return None
