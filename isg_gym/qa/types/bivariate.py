"""Bivariate statistics of two columns over a scope of files, with 0-2 row conditions.

Statistics (rows where both columns are present): ``pearson`` and ``spearman`` (the
scipy.stats correlation coefficient), ``ols_slope`` (``scipy.stats.linregress(x, y).slope``, the
slope of y regressed on x) and ``chi_square`` (``scipy.stats.chi2_contingency`` of
``pd.crosstab(x, y)`` of two categorical columns, with or without Yates' continuity correction;
scipy applies it only when the table has one degree of freedom, so larger tables are always
asked "without").

This module also holds :class:`PairEngine`, the scope / column-pair / row-condition sampling and
the construction of unanswerable variants shared with :mod:`isg_gym.qa.types.hypothesis`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import permutations, product

import numpy as np
import pandas as pd
from scipy import stats

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    RowCondition,
    combined_mask,
    describe_row_conditions,
    impossible_row_condition,
    num,
    sample_row_condition,
)
from isg_gym.qa.scope import Scope, ScopeSampler, gather
from isg_gym.spec.expressions import compile_expression
from isg_gym.spec.models import CategoricalColumn, DependentColumn, Spec, column_kind

NUMERIC_STATS = ("pearson", "spearman", "ols_slope")
STATISTICS = (*NUMERIC_STATS, "chi_square")
SCOPE_REASONS = (Reason.NO_SUCH_FILE, Reason.NO_SUCH_PATH_VALUE, Reason.NO_MATCHING_FILES)
DATA_REASONS = (
    Reason.NO_MATCHING_ROWS,
    Reason.TOO_FEW_ROWS,
    Reason.CATEGORICAL_COLUMN,
    Reason.CONSTANT_COLUMN,
    Reason.UNRECORDED_VARIABLE,
)
PAIR_REASONS = (*SCOPE_REASONS, *DATA_REASONS)
MIN_PAIRS = 3  # complete pairs a correlation, slope or chi-square needs
MIN_GROUP = 2  # values per group Welch's t-test needs
MISSING_NOTE = "Rows with a missing value in a condition's column do not satisfy that condition."


# --- columns -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Roles:
    """The analysable columns of a repository (identifier and timestamp excluded)."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    labels: dict[str, tuple[str, ...]]  # categorical column -> its possible labels
    linked: frozenset[frozenset[str]]  # pairs where one column is an ancestor of the other

    @property
    def analysable(self) -> tuple[str, ...]:
        return (*self.numeric, *self.categorical)


def column_roles(spec: Spec) -> Roles:
    """Numeric and categorical columns, category labels and the causal links between columns."""
    numeric, categorical, labels = [], [], {}
    kinds = spec.expression_kinds()
    parents: dict[str, set[str]] = {}
    for col in spec.columns[2:]:
        if column_kind(col) == "numeric":
            numeric.append(col.name)
        else:
            categorical.append(col.name)
        if isinstance(col, CategoricalColumn):
            labels[col.name] = tuple(col.values)
        if isinstance(col, DependentColumn):
            expr = compile_expression(col.expression, kinds)
            parents[col.name] = set(expr.names)
            if expr.kind == "categorical":
                labels[col.name] = tuple(expr.labels)
    linked = set()
    for name in parents:
        for ancestor in _ancestors(name, parents):
            linked.add(frozenset((name, ancestor)))
    return Roles(tuple(numeric), tuple(categorical), labels, frozenset(linked))


def _ancestors(name: str, parents: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(parents.get(name, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(parents.get(node, ()))
    return seen


# --- a pair of columns and its statistic ---------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """What is computed: ``stat`` of ``x`` and ``y``; for ``welch_t`` x is the numeric column,
    y the group column and ``groups`` the two compared labels."""

    stat: str  # pearson | spearman | ols_slope | chi_square | welch_t
    x: str
    y: str
    groups: tuple[str, str] | None = None

    @property
    def columns(self) -> tuple[str, str]:
        return (self.x, self.y)


def used_mask(data: pd.DataFrame, pair: Pair) -> np.ndarray:
    """Rows with both values present (Welch: the value present and the group one of the two
    compared labels)."""
    x, y = data[pair.x], data[pair.y]
    if pair.stat == "welch_t":
        assert pair.groups is not None
        return (x.notna() & y.isin(list(pair.groups))).to_numpy()
    return (x.notna() & y.notna()).to_numpy()


def used_rows(data: pd.DataFrame, pair: Pair, keep: np.ndarray) -> pd.DataFrame:
    """The rows the statistic uses: kept by the conditions and in :func:`used_mask`."""
    return data.loc[keep & used_mask(data, pair), [pair.x, pair.y]]


def diagnose(roles: Roles, pair: Pair, rows: pd.DataFrame) -> Reason | None:
    """Why the statistic cannot be computed on ``rows`` (from :func:`used_rows`), or None."""
    return diagnose_values(roles, pair, rows[pair.x].to_numpy(), rows[pair.y].to_numpy())


def _n_distinct(values: np.ndarray) -> int:
    return len(set(values.tolist()))


def diagnose_values(roles: Roles, pair: Pair, x: np.ndarray, y: np.ndarray) -> Reason | None:
    """:func:`diagnose` on the used rows' values of x and y."""
    if len(x) == 0:
        return Reason.NO_MATCHING_ROWS
    if pair.stat == "welch_t":
        assert pair.groups is not None
        groups = [x[y == g] for g in pair.groups]
        if min(len(g) for g in groups) < MIN_GROUP:
            return Reason.TOO_FEW_ROWS
        if pair.x not in roles.numeric:
            return Reason.CATEGORICAL_COLUMN
        if all(_n_distinct(g) < 2 for g in groups):
            return Reason.CONSTANT_COLUMN
        return None
    if len(x) < MIN_PAIRS:
        return Reason.TOO_FEW_ROWS
    if pair.stat != "chi_square" and not all(c in roles.numeric for c in pair.columns):
        return Reason.CATEGORICAL_COLUMN
    if pair.stat == "chi_square" and not all(c in roles.categorical for c in pair.columns):
        raise ValueError(f"chi-square of a numeric column: {pair}")
    if _n_distinct(x) < 2 or _n_distinct(y) < 2:
        return Reason.CONSTANT_COLUMN
    return None


def compute(pair: Pair, rows: pd.DataFrame, correction: bool = False) -> tuple[float, float]:
    """(statistic, two-sided p-value) of the pair on answerable ``rows``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pair.stat == "welch_t":
            assert pair.groups is not None
            a, b = (rows.loc[rows[pair.y] == g, pair.x].to_numpy(float) for g in pair.groups)
            res = stats.ttest_ind(a, b, equal_var=False)
            return float(res.statistic), float(res.pvalue)
        if pair.stat == "chi_square":
            res = stats.chi2_contingency(contingency(rows, pair), correction)
            return float(res.statistic), float(res.pvalue)
        x, y = rows[pair.x].to_numpy(float), rows[pair.y].to_numpy(float)
        match pair.stat:
            case "pearson":
                res = stats.pearsonr(x, y)
                return float(res.statistic), float(res.pvalue)
            case "spearman":
                res = stats.spearmanr(x, y)
                return float(res.statistic), float(res.pvalue)
            case "ols_slope":
                res = stats.linregress(x, y)
                return float(res.slope), float(res.pvalue)
    raise ValueError(pair.stat)


def contingency(rows: pd.DataFrame, pair: Pair) -> np.ndarray:
    """``pd.crosstab(x, y).to_numpy()`` (labels sorted, counts), computed faster."""
    xl, xi = np.unique(rows[pair.x].to_numpy(str), return_inverse=True)
    yl, yi = np.unique(rows[pair.y].to_numpy(str), return_inverse=True)
    counts = np.bincount(xi * len(yl) + yi, minlength=len(xl) * len(yl))
    return counts.reshape(len(xl), len(yl))


def chi_square_dof(rows: pd.DataFrame, pair: Pair) -> int:
    rows_, cols = contingency(rows, pair).shape
    return (rows_ - 1) * (cols - 1)


# --- sampling ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A sampled question: scope, pair, row conditions; ``reason`` None when answerable."""

    scope: Scope
    pair: Pair
    conditions: tuple[RowCondition, ...]
    reason: Reason | None = None
    value: float = math.nan
    pvalue: float = math.nan
    correction: bool = False
    chi_dof: int = 0

    @property
    def row_params(self) -> list[dict]:
        return [c.to_dict() for c in self.conditions]


class PairEngine:
    """Scopes, column pairs and row conditions for pair statistics and tests, both answerable and
    unanswerable by construction (and verified against the data)."""

    def __init__(self, ctx: Context, stats_allowed: tuple[str, ...], *, max_conditions: int = 2,
                 linked_share: float = 0.5) -> None:  # fmt: skip
        self.ctx = ctx
        self.repo = ctx.repo
        self.rng = ctx.rng
        self.roles = column_roles(ctx.spec)
        self.sampler = ScopeSampler(ctx.repo, ctx.rng)
        self.max_conditions = max_conditions
        self.linked_share = linked_share
        self.stats = tuple(s for s in stats_allowed if self._pairs(s))
        self._data: dict[tuple[str, ...], pd.DataFrame] = {}  # gathered rows by scope files

    # columns

    def _pairs(self, stat: str) -> list[tuple[str, str]]:
        r = self.roles
        if stat in NUMERIC_STATS:
            return list(permutations(r.numeric, 2))
        if stat == "chi_square":
            return list(permutations(r.categorical, 2))
        return list(product(r.numeric, r.categorical))

    def draw_pair(self, stat: str) -> Pair:
        """A column pair for ``stat``: causally linked with probability ``linked_share``."""
        pairs = self._pairs(stat)
        linked = [p for p in pairs if frozenset(p) in self.roles.linked]
        unlinked = [p for p in pairs if frozenset(p) not in self.roles.linked]
        use_linked = linked and (self.rng.random() < self.linked_share or not unlinked)
        x, y = self.ctx.choice(linked if use_linked else unlinked)
        return Pair(stat, x, y)

    def others(self, pair: Pair) -> list[str]:
        """Columns row conditions may use (never the pair's own columns)."""
        return [c for c in self.roles.analysable if c not in pair.columns]

    def gather(self, scope: Scope, pair: Pair) -> pd.DataFrame:
        """Every analysable column of the scope's rows (``pair`` must be recorded columns)."""
        assert all(c in self.roles.analysable for c in pair.columns), pair
        if scope.files not in self._data:
            self._data[scope.files] = gather(self.repo, scope.files, list(self.roles.analysable))
        return self._data[scope.files]

    def sample_conditions(
        self, data: pd.DataFrame, columns: list[str], k: int
    ) -> list[RowCondition]:
        """Up to ``k`` conditions on distinct ``columns``, each sampled from the rows left."""
        conds: list[RowCondition] = []
        keep = np.ones(len(data), dtype=bool)
        for j in self.rng.permutation(len(columns))[:k]:
            col = columns[int(j)]
            cond = sample_row_condition(self.repo, col, data.loc[keep, col], self.rng)
            if cond is not None:
                conds.append(cond)
                keep &= cond.mask(data[col])
        return conds

    def _with_groups(self, pair: Pair, data: pd.DataFrame, keep: np.ndarray) -> Pair | None:
        """For Welch: two labels with enough values in the kept rows (any if none qualify)."""
        if pair.stat != "welch_t":
            return pair
        rows = data.loc[keep]
        counts = rows.loc[rows[pair.x].notna(), pair.y].value_counts()
        labels = sorted(str(g) for g, n in counts.items() if n >= MIN_GROUP)
        if len(labels) < 2:
            labels = sorted(str(g) for g in counts.index)
        if len(labels) < 2:
            labels = sorted(self.roles.labels.get(pair.y, ()))
        if len(labels) < 2:
            return None
        i, j = self.rng.choice(len(labels), 2, replace=False).tolist()
        return replace(pair, groups=(labels[i], labels[j]))

    def _num_conditions(self) -> int:
        return int(self.rng.integers(0, self.max_conditions + 1))

    # answerable

    def candidates(self, stat: str, tries: int, per_scope: int = 4) -> Iterator[Candidate]:
        """Up to ``tries`` attempts at :meth:`answerable`, a new scope every ``per_scope``."""
        scope = self.sampler.answerable()
        for attempt in range(tries):
            if attempt and attempt % per_scope == 0:
                scope = self.sampler.answerable()
            cand = self.answerable(stat, scope)
            if cand is not None:
                yield cand

    def filtered(
        self, scope: Scope, pair: Pair
    ) -> tuple[Pair, pd.DataFrame, list[RowCondition], np.ndarray] | None:
        """The scope's data, 0-k sampled row conditions, their mask, and Welch groups."""
        data = self.gather(scope, pair)
        conds = self.sample_conditions(data, self.others(pair), self._num_conditions())
        keep = combined_mask(data, conds)
        grouped = self._with_groups(pair, data, keep)
        return None if grouped is None else (grouped, data, conds, keep)

    def answerable(self, stat: str, scope: Scope | None = None) -> Candidate | None:
        """An answerable candidate with a finite statistic and p-value, or None."""
        pair = self.draw_pair(stat)
        scope = scope or self.sampler.answerable()
        filtered = self.filtered(scope, pair)
        if filtered is None:
            return None
        pair, data, conds, keep = filtered
        rows = used_rows(data, pair, keep)
        if diagnose(self.roles, pair, rows) is not None:
            return None
        dof = chi_square_dof(rows, pair) if stat == "chi_square" else 0
        correction = dof == 1 and bool(self.rng.random() < 0.5)
        value, pvalue = compute(pair, rows, correction)
        if not (math.isfinite(value) and math.isfinite(pvalue)):
            return None
        return Candidate(scope, pair, tuple(conds), None, value, pvalue, correction, dof)

    # unanswerable

    def unanswerable(self) -> Candidate | None:
        """A candidate with exactly one reason (reasons tried in random order), or None."""
        makers = {
            "scope": self._bad_scope,
            Reason.NO_MATCHING_ROWS: self._no_matching_rows,
            Reason.TOO_FEW_ROWS: self._too_few_rows,
            Reason.CATEGORICAL_COLUMN: self._categorical,
            Reason.CONSTANT_COLUMN: self._constant,
            Reason.UNRECORDED_VARIABLE: self._unrecorded,
        }
        keys = list(makers)
        for i in self.rng.permutation(len(keys)):
            for _ in range(3):
                cand = makers[keys[int(i)]]()
                if cand is not None:
                    return replace(cand, correction=self._maybe_correction(cand.pair))
        return None

    def _maybe_correction(self, pair: Pair) -> bool:
        """Yates' correction, half the time, where the crosstab could be 2 x 2 (as answerable
        questions ask it only then)."""
        two = all(len(self.roles.labels.get(c, ())) == 2 for c in pair.columns)
        return pair.stat == "chi_square" and two and bool(self.rng.random() < 0.5)

    def _stat(self) -> str:
        return self.ctx.choice(self.stats)

    def _bad_scope(self) -> Candidate | None:
        scope = self.sampler.unanswerable()
        if scope is None:
            return None
        pair = self.draw_pair(self._stat())
        table = self.repo.table(self.ctx.choice(self.repo.data_files))
        conds = self.sample_conditions(table, self.others(pair), int(self.rng.integers(0, 2)))
        keep = combined_mask(table, conds)
        pair = self._with_groups(pair, table, keep)
        if pair is None:
            return None
        return Candidate(scope, pair, tuple(conds), scope.reason)

    def _no_matching_rows(self) -> Candidate | None:
        pair = self.draw_pair(self._stat())
        scope = self.sampler.answerable()
        data = self.gather(scope, pair)
        pair = self._with_groups(pair, data, np.ones(len(data), dtype=bool))
        others = self.others(pair)
        if pair is None or not others:
            return None
        col = self.ctx.choice(others)
        bad = impossible_row_condition(self.repo, col, data[col], self.rng)
        if bad is None:
            return None
        rest = [c for c in others if c != col]
        conds = self.sample_conditions(data, rest, int(self.rng.integers(0, 2)))
        conds.insert(int(self.rng.integers(len(conds) + 1)), bad)
        if combined_mask(data, conds).any():
            return None
        return Candidate(scope, pair, tuple(conds), Reason.NO_MATCHING_ROWS)

    def _narrowed(self, pair: Pair, reason: Reason, prefer_largest: bool,
                  scope: Scope | None = None) -> Candidate | None:  # fmt: skip
        """A scope plus 0-1 ordinary conditions and one threshold condition on a numeric column
        that leaves rows for which ``diagnose`` gives ``reason``."""
        scope = scope or self.sampler.answerable()
        data = self.gather(scope, pair)
        pair = self._with_groups(pair, data, np.ones(len(data), dtype=bool))
        if pair is None:
            return None
        others = self.others(pair)
        numeric = [c for c in others if c in self.roles.numeric]
        if not numeric:
            return None
        col = self.ctx.choice(numeric)
        rest = [c for c in others if c != col]
        conds = self.sample_conditions(data, rest, int(self.rng.integers(0, 2)))
        keep = combined_mask(data, conds)
        cut = self._threshold(data, keep, pair, col, reason, prefer_largest)
        if cut is None:
            return None
        conds.insert(int(self.rng.integers(len(conds) + 1)), cut)
        rows = used_rows(data, pair, combined_mask(data, conds))
        if diagnose(self.roles, pair, rows) != reason:
            return None
        return Candidate(scope, pair, tuple(conds), reason)

    def _threshold(self, data: pd.DataFrame, keep: np.ndarray, pair: Pair, col: str,
                   reason: Reason, prefer_largest: bool) -> RowCondition | None:  # fmt: skip
        """A ``gt``/``lt`` condition on ``col`` keeping the top/bottom rows so that the rows
        used give ``reason`` (thresholds of at most 4 significant figures)."""
        sub = data.loc[keep & data[col].notna().to_numpy()]
        if sub.empty:
            return None
        top = bool(self.rng.random() < 0.5)
        sub = sub.sort_values(col, ascending=not top, kind="stable")
        v = sub[col].to_numpy(float)
        used = used_mask(sub, pair)
        xs, ys = sub[pair.x].to_numpy(), sub[pair.y].to_numpy()
        found: list[tuple[int, float]] = []
        for m in range(1, min(len(sub), 60)):
            if v[m - 1] == v[m]:
                continue
            sel = used[:m]
            if diagnose_values(self.roles, pair, xs[:m][sel], ys[:m][sel]) != reason:
                continue
            t = _separating(v[m], v[m - 1]) if top else _separating(v[m - 1], v[m])
            if t is not None:
                found.append((m, t))
        if not found:
            return None
        m, t = found[-1] if prefer_largest else self.ctx.choice(found)
        return RowCondition(col, "gt" if top else "lt", t)

    def _too_few_rows(self) -> Candidate | None:
        return self._narrowed(self.draw_pair(self._stat()), Reason.TOO_FEW_ROWS, False)

    def _constant(self) -> Candidate | None:
        stat = self._stat()
        pair = self.draw_pair(stat)
        scope = self.sampler.answerable()
        data = self.gather(scope, pair)
        full = np.ones(len(data), dtype=bool)
        grouped = self._with_groups(pair, data, full)
        if grouped is None:
            return None
        if diagnose(self.roles, grouped, used_rows(data, grouped, full)) == Reason.CONSTANT_COLUMN:
            return Candidate(scope, grouped, (), Reason.CONSTANT_COLUMN)
        pair = self._low_cardinality(pair, data)
        return self._narrowed(pair, Reason.CONSTANT_COLUMN, True, scope)

    def _low_cardinality(self, pair: Pair, data: pd.DataFrame) -> Pair:
        """The pair with one column (Welch: the numeric one) replaced by a column of the same
        kind with the fewest distinct values in ``data``."""
        position = 0 if pair.stat == "welch_t" else int(self.rng.integers(2))
        keep = pair.columns[1 - position]
        pool = self.roles.categorical if pair.stat == "chi_square" else self.roles.numeric
        pool = [c for c in pool if c != keep]
        if not pool or data.empty:
            return pair
        counts = np.array([data[c].nunique() for c in pool])
        best = self.ctx.choice([c for c, n in zip(pool, counts, strict=True) if n == counts.min()])
        return replace(pair, x=best) if position == 0 else replace(pair, y=best)

    def _categorical(self) -> Candidate | None:
        stats_ok = [s for s in self.stats if s != "chi_square"]
        r = self.roles
        if not stats_ok or not r.categorical or len(r.analysable) < 3:
            return None
        stat = self.ctx.choice(stats_ok)
        if stat == "welch_t":
            if len(r.categorical) < 2:
                return None
            x, y = self.rng.choice(len(r.categorical), 2, replace=False).tolist()
            pair = Pair(stat, r.categorical[x], r.categorical[y])
        else:
            cat, other = self.ctx.choice(r.categorical), self.ctx.choice(r.numeric)
            pair = Pair(stat, *((cat, other) if self.rng.random() < 0.5 else (other, cat)))
        scope = self.sampler.answerable()
        filtered = self.filtered(scope, pair)
        if filtered is None:
            return None
        pair, data, conds, keep = filtered
        if diagnose(r, pair, used_rows(data, pair, keep)) != Reason.CATEGORICAL_COLUMN:
            return None
        return Candidate(scope, pair, tuple(conds), Reason.CATEGORICAL_COLUMN)

    def _unrecorded(self) -> Candidate | None:
        unrecorded = [u.name for u in self.ctx.spec.unrecorded]
        if not unrecorded:
            return None
        pair = self.draw_pair(self._stat())
        scope = self.sampler.answerable()
        filtered = self.filtered(scope, pair)
        if filtered is None:
            return None
        pair, data, conds, keep = filtered
        name = self.ctx.choice(unrecorded)
        which = 0 if pair.stat == "welch_t" else int(self.rng.integers(2))
        real = pair.columns[1 - which]
        if int(data.loc[keep, real].notna().sum()) < MIN_PAIRS:
            return None
        pair = replace(pair, x=name) if which == 0 else replace(pair, y=name)
        return Candidate(scope, pair, tuple(conds), Reason.UNRECORDED_VARIABLE)


def _separating(low: float, high: float) -> float | None:
    """The shortest number (<= 4 significant figures) strictly between ``low`` and ``high``."""
    mid = (low + high) / 2
    for digits in (1, 2, 3, 4):
        t = num(mid, digits)
        if low < t < high:
            return t
    return None


# --- text ----------------------------------------------------------------------------------------


def q(name: str) -> str:
    return f'"{name}"'


def correction_text(correction: bool) -> str:
    return f"{'with' if correction else 'without'} Yates' continuity correction"


def scope_phrases(ctx: Context, cand: Candidate) -> dict[str, str]:
    """``scope``, ``Scope`` (capitalised), ``rows`` (row conditions) and the missing-value note."""
    scope = cand.scope.text(ctx.repo)
    return {
        "scope": scope,
        "Scope": scope[0].upper() + scope[1:],
        "rows": describe_row_conditions(list(cand.conditions)),
        "note": f" {MISSING_NOTE}" if cand.conditions else "",
    }


_STAT_PHRASES = {
    "pearson": "the Pearson correlation coefficient between {x} and {y}",
    "spearman": "the Spearman rank correlation coefficient between {x} and {y}",
    "ols_slope": "the slope of the ordinary least-squares regression of {y} on {x} "
    "(b in {y} = a + b * {x})",
    "chi_square": "the chi-square statistic of the test of independence of {x} and {y} "
    "(on their contingency table of counts, {corr})",
}
TEMPLATES = (
    "What is {stat} {scope}{rows}? {rules} Give the answer to {sig} significant figures.",
    "Compute {stat} {scope}{rows}. {rules} Report the result to {sig} significant figures.",
    "{Scope}{rows}, what is {stat}? {rules} Round it to {sig} significant figures.",
    "Considering the rows {scope}{rows}, calculate {stat}. {rules} "
    "Answer with {sig} significant figures.",
)


@register
class BivariateStatistic(QuestionType):
    name = "bivariate_statistic"
    family = "bivariate_statistics"
    reasons = PAIR_REASONS

    @dataclass(frozen=True)
    class Config:
        sig_figs: tuple[int, int] = (2, 5)
        max_row_conditions: int = 2
        linked_share: float = 0.5
        tries: int = 8

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        cfg = self.config
        engine = PairEngine(
            ctx, STATISTICS, max_conditions=cfg.max_row_conditions, linked_share=cfg.linked_share
        )
        if not engine.stats:
            return None
        if answerable:
            cand = next(engine.candidates(ctx.choice(engine.stats), cfg.tries), None)
        else:
            cand = engine.unanswerable()
        if cand is None:
            return None
        sig = int(ctx.rng.integers(cfg.sig_figs[0], cfg.sig_figs[1] + 1))
        return self._question(ctx, cand, sig)

    def _question(self, ctx: Context, cand: Candidate, sig: int) -> Question:
        pair = cand.pair
        chi = pair.stat == "chi_square"
        correction = cand.correction and (cand.reason is not None or cand.chi_dof == 1)
        stat = _STAT_PHRASES[pair.stat].format(x=q(pair.x), y=q(pair.y),
                                               corr=correction_text(correction))  # fmt: skip
        rules = f"Use only the rows where both {q(pair.x)} and {q(pair.y)} are present."
        phrases = scope_phrases(ctx, cand)
        text = ctx.choice(TEMPLATES).format(stat=stat, rules=rules + phrases["note"], sig=sig,
                                            **phrases)  # fmt: skip
        params = {**cand.scope.params(), "statistic": pair.stat, "x": pair.x, "y": pair.y,
                  "row_conditions": cand.row_params}  # fmt: skip
        if chi:
            params["correction"] = correction
        return ctx.question(
            text,
            "float",
            float(cand.value),
            reason=cand.reason,
            sig_figs=sig,
            params=params,
            evidence=cand.scope.files,
        )
