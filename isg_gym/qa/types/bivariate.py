"""Bivariate statistics of two columns over a scope of files, with 0-2 row conditions.

Statistics (rows where both columns are present): ``pearson`` and ``spearman`` (the
scipy.stats correlation coefficient), ``ols_slope`` (``scipy.stats.linregress(x, y).slope``, the
slope of y regressed on x) and ``chi_square`` (``scipy.stats.chi2_contingency`` of
``pd.crosstab(x, y)`` of two categorical columns, with or without Yates' continuity correction;
scipy applies it only when the table has one degree of freedom, so larger tables are always
asked "without").

This module also holds :class:`PairEngine`, shared with :mod:`isg_gym.qa.types.hypothesis`. The
statistic, the number of row conditions (and, for this type, the significant figures) are drawn
before the answerability; the column pair, the scope plan (:meth:`ScopeSampler.plan`) and each row
condition's operator (:func:`row_op`) come from one sampler for both answerabilities. An
answerable draw must pass the robustness rules (every expected chi-square count >= 5, >= 5
values per Welch group, >= 10 rows behind 4-5 significant figures); an unanswerable one gets
its reason from the scope (realised unanswerably), from one row condition filled to keep no row
or a single used row, or from a target column (categorical, unrecorded), never from a text form
of its own.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import permutations, product

import numpy as np

from isg_gym import stat_tests
from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    RowCondition,
    describe_row_conditions,
    fill_row_condition,
    row_op,
)
from isg_gym.qa.scope import Scope, ScopeRows, ScopeSampler
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
    linked: frozenset[frozenset[str]]  # pairs where one column is an ancestor of the other, or
    # both share an ancestor (a column or a path variable): the pairs that can be associated

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
    lineage = {c.name: _ancestors(c.name, parents) | {c.name} for c in spec.columns[2:]}
    for a, b in permutations(lineage, 2):
        if lineage[a] & lineage[b]:
            linked.add(frozenset((a, b)))
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


@dataclass(frozen=True)
class Used:
    """The values of x and y in the rows a statistic uses (from :func:`used_rows`)."""

    x: np.ndarray
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.x)


def used_mask(data: ScopeRows, pair: Pair) -> np.ndarray:
    """Rows with both values present (Welch: the value present and the group one of the two
    compared labels)."""
    if pair.stat == "welch_t":
        assert pair.groups is not None
        y = data.array(pair.y)
        return data.present(pair.x) & ((y == pair.groups[0]) | (y == pair.groups[1]))
    return data.present(pair.x) & data.present(pair.y)


def used_rows(data: ScopeRows, pair: Pair, keep: np.ndarray) -> Used:
    """The rows the statistic uses: kept by the conditions and in :func:`used_mask`."""
    rows = keep & used_mask(data, pair)
    return Used(data.array(pair.x)[rows], data.array(pair.y)[rows])


def diagnose(roles: Roles, pair: Pair, rows: Used) -> Reason | None:
    """Why the statistic cannot be computed on ``rows`` (from :func:`used_rows`), or None."""
    return diagnose_values(roles, pair, rows.x, rows.y)


def _constant(values: np.ndarray) -> bool:
    """Fewer than two distinct values (``len(set(values.tolist())) < 2``, without the set)."""
    return len(values) < 2 or not bool(np.any(values != values[0]))


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
        if all(_constant(g) for g in groups):
            return Reason.CONSTANT_COLUMN
        return None
    if len(x) < MIN_PAIRS:
        return Reason.TOO_FEW_ROWS
    if pair.stat != "chi_square" and not all(c in roles.numeric for c in pair.columns):
        return Reason.CATEGORICAL_COLUMN
    if pair.stat == "chi_square" and not all(c in roles.categorical for c in pair.columns):
        raise ValueError(f"chi-square of a numeric column: {pair}")
    if _constant(x) or _constant(y):
        return Reason.CONSTANT_COLUMN
    return None


def compute(pair: Pair, rows: Used, correction: bool = False) -> tuple[float, float]:
    """(statistic, two-sided p-value) of the pair on answerable ``rows``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pair.stat == "welch_t":
            assert pair.groups is not None
            a, b = (rows.x[rows.y == g].astype(float) for g in pair.groups)
            return stat_tests.ttest_welch(a, b)
        if pair.stat == "chi_square":
            return stat_tests.chi2_contingency(contingency(rows), correction)
        x, y = rows.x.astype(float), rows.y.astype(float)
        match pair.stat:
            case "pearson":
                return stat_tests.pearsonr(x, y)
            case "spearman":
                return stat_tests.spearmanr(x, y)
            case "ols_slope":
                return stat_tests.linregress(x, y)
    raise ValueError(pair.stat)


def contingency(rows: Used) -> np.ndarray:
    """``pd.crosstab(x, y).to_numpy()`` (labels sorted, counts), computed faster."""
    xl, xi = np.unique(rows.x.astype(str), return_inverse=True)
    yl, yi = np.unique(rows.y.astype(str), return_inverse=True)
    counts = np.bincount(xi * len(yl) + yi, minlength=len(xl) * len(yl))
    return counts.reshape(len(xl), len(yl))


def chi_square_dof(rows: Used) -> int:
    rows_, cols = contingency(rows).shape
    return (rows_ - 1) * (cols - 1)


# --- robustness ----------------------------------------------------------------------------------

ROBUST_EXPECTED = 5.0  # every expected count of an answerable chi-square table
ROBUST_GROUP = 5  # values in each Welch group of an answerable test
PRECISE_ROWS = 10  # rows behind a float asked at 4-5 significant figures
MAX_CHI_CELLS = 16  # chi-square pairs whose declared label grid is larger are not asked


def min_expected(rows: Used) -> float:
    """The smallest expected count of the pair's contingency table under independence."""
    return float(stat_tests.expected_freq(contingency(rows)).min())


def robust(pair: Pair, rows: Used, min_rows: int = MIN_PAIRS) -> bool:
    """Whether answerable ``rows`` (from :func:`used_rows`) satisfy the robustness rules: at
    least ``min_rows`` rows, chi-square expected counts >= 5, Welch groups of >= 5 values."""
    if len(rows) < min_rows:
        return False
    if pair.stat == "chi_square":
        return min_expected(rows) >= ROBUST_EXPECTED
    if pair.stat == "welch_t":
        assert pair.groups is not None
        return all(int(np.count_nonzero(rows.y == g)) >= ROBUST_GROUP for g in pair.groups)
    return True


def degenerate(stat: str, value: float) -> bool:
    """A statistic value that would dominate the answers (|r| = 1, a slope of exactly 0)."""
    if stat in ("pearson", "spearman") and abs(value) > 1 - 1e-9:
        return True
    return stat == "ols_slope" and value == 0.0


# --- sampling ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Skeleton:
    """What a question shows before its answerability is realised: the statistic and column
    pair, and the (column, operator) of each row condition (drawn identically for both)."""

    pair: Pair
    ops: tuple[tuple[str, str], ...]


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
    """Statistic, column pair, scope plan and row-condition operators are drawn first and the
    same way for answerable and unanswerable questions; answerability is realised afterwards
    (an answerable scope and conditions that keep rows; or a scope, one condition or a target
    column that makes the question unanswerable), so that no text feature predicts it."""

    def __init__(self, ctx: Context, stats_allowed: tuple[str, ...], *, max_conditions: int = 2,
                 linked_share: float = 0.5, linked_only: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.ctx = ctx
        self.repo = ctx.repo
        self.rng = ctx.rng
        self.roles = column_roles(ctx.spec)
        self.sampler = ScopeSampler(ctx.repo, ctx.rng)
        self.max_conditions = max_conditions
        self.linked_share = linked_share
        self.linked_only = linked_only  # statistics offered only where some pair is linked
        self.stats = tuple(s for s in stats_allowed if self._pairs(s))
        self._data: dict[tuple[str, ...], ScopeRows] = {}  # gathered rows by scope files
        self._shared: Scope | None = None

    # columns

    def _cells(self, pair: tuple[str, str]) -> int:
        sizes = [len(self.roles.labels.get(c, ())) or MAX_CHI_CELLS + 1 for c in pair]
        return sizes[0] * sizes[1]

    def _pairs(self, stat: str) -> list[tuple[str, str]]:
        r = self.roles
        if stat in NUMERIC_STATS:
            return list(permutations(r.numeric, 2))
        if stat == "chi_square":
            pairs = [p for p in permutations(r.categorical, 2) if self._cells(p) <= MAX_CHI_CELLS]
        else:
            pairs = list(product(r.numeric, r.categorical))
        if stat in self.linked_only and not any(frozenset(p) in r.linked for p in pairs):
            return []
        return pairs

    def draw_pair(self, stat: str) -> Pair:
        """A column pair for ``stat``: causally linked with probability ``linked_share``."""
        pairs = self._pairs(stat)
        linked = [p for p in pairs if frozenset(p) in self.roles.linked]
        unlinked = [p for p in pairs if frozenset(p) not in self.roles.linked]
        use_linked = linked and (self.rng.random() < self.linked_share or not unlinked)
        x, y = self.ctx.choice(linked if use_linked else unlinked)
        return Pair(stat, x, y)

    def draw_k(self) -> int:
        """The number of row conditions (0..max_conditions), drawn before answerability."""
        return int(self.rng.integers(0, self.max_conditions + 1))

    def others(self, pair: Pair) -> list[str]:
        """Columns row conditions may use (never the pair's own columns)."""
        return [c for c in self.roles.analysable if c not in pair.columns]

    def skeleton(self, pair: Pair, k: int) -> Skeleton:
        """``pair`` with up to ``k`` row-condition columns and their operators (:func:`row_op`)."""
        others = self.others(pair)
        cols = [others[int(i)] for i in self.rng.permutation(len(others))[:k]]
        return Skeleton(pair, tuple((c, row_op(self.repo, c, self.rng)) for c in cols))

    def gather(self, scope: Scope) -> ScopeRows:
        """The scope's rows (cached by files)."""
        if scope.files not in self._data:
            self._data[scope.files] = ScopeRows(self.repo, scope.files)
        return self._data[scope.files]

    def scope(self) -> Scope | None:
        """An answerable scope from a drawn plan (None if the plan has no answerable form)."""
        return self.sampler.realize(self.sampler.plan(), True)

    def shared_scope(self) -> Scope | None:
        """The answerable scope shared by one :meth:`unanswerable` call's makers (drawn once,
        up to 3 plans), so that trying several reasons gathers one scope's rows."""
        if self._shared is None:
            for _ in range(3):
                self._shared = self.scope()
                if self._shared is not None:
                    break
        return self._shared

    def fill(
        self, data: ScopeRows, ops: tuple[tuple[str, str], ...], skip: int | None = None
    ) -> tuple[list[RowCondition | None], np.ndarray] | None:
        """Conditions that keep rows for every (column, op) but ``skip``, each filled on the rows
        the earlier ones keep; None where an operator cannot keep rows here."""
        conds: list[RowCondition | None] = [None] * len(ops)
        keep = np.ones(len(data), dtype=bool)
        for i, (col, op) in enumerate(ops):
            if i == skip:
                continue
            cond = fill_row_condition(self.repo, col, op, data.array(col)[keep], self.rng)
            if cond is None:
                return None
            conds[i] = cond
            keep &= cond.mask_values(data.array(col), data.present(col))
        return conds, keep

    def _with_groups(self, pair: Pair, data: ScopeRows, keep: np.ndarray) -> Pair | None:
        """For Welch: two labels with >= ROBUST_GROUP values in the kept rows (else >= 2, else
        any present), drawn the same way whatever the answerability."""
        if pair.stat != "welch_t" or pair.y not in data:
            return pair
        rows = keep & data.present(pair.y)
        if pair.x in data:
            rows &= data.present(pair.x)
        groups, sizes = np.unique(data.array(pair.y)[rows], return_counts=True)
        counts = list(zip(groups.tolist(), sizes.tolist(), strict=True))
        labels: list[str] = []
        for least in (ROBUST_GROUP, MIN_GROUP, 1):
            labels = sorted(str(g) for g, n in counts if n >= least)
            if len(labels) >= 2:
                break
        if len(labels) < 2:
            labels = sorted(self.roles.labels.get(pair.y, ()))
        if len(labels) < 2:
            return None
        i, j = self.rng.choice(len(labels), 2, replace=False).tolist()
        return replace(pair, groups=(labels[i], labels[j]))

    # answerable

    def answerable(self, sk: Skeleton, scope: Scope, min_rows: int = MIN_PAIRS) -> Candidate | None:
        """The skeleton realised answerably on ``scope`` (robust, finite), or None."""
        realised = self._on_scope(sk, scope)
        if realised is None:
            return None
        pair, conds, data, keep = realised
        rows = used_rows(data, pair, keep)
        if diagnose(self.roles, pair, rows) is not None or not robust(pair, rows, min_rows):
            return None
        dof = chi_square_dof(rows) if pair.stat == "chi_square" else 0
        correction = dof == 1 and bool(self.rng.random() < 0.5)
        value, pvalue = compute(pair, rows, correction)
        if not (math.isfinite(value) and math.isfinite(pvalue)) or degenerate(pair.stat, value):
            return None
        return Candidate(scope, pair, tuple(c for c in conds if c), None, value, pvalue,
                         correction, dof)  # fmt: skip

    def candidates(self, stat: str, k: int, tries: int, min_rows: int = MIN_PAIRS,
                   per_scope: int = 6) -> Iterator[Candidate]:  # fmt: skip
        """Answerable candidates of ``stat`` with ``k`` row conditions from up to ``tries``
        attempts (a new pair and operators each, a new scope every ``per_scope``)."""
        scope = None
        for attempt in range(tries):
            if scope is None or attempt % per_scope == 0:
                scope = self.scope()
                if scope is None:
                    continue
            cand = self.answerable(self.skeleton(self.draw_pair(stat), k), scope, min_rows)
            if cand is not None:
                yield cand

    # unanswerable

    def unanswerable(self, stat: str, k: int) -> Candidate | None:
        """A candidate of ``stat`` with ``k`` row conditions and exactly one reason (makers tried
        in random order, each a bounded number of times), or None."""
        makers = [self._bad_scope, self._constant, self._unrecorded]
        if k >= 1 and len(self.others(self.draw_pair(stat))) >= 1:
            makers += [self._no_matching_rows, self._too_few_rows]
        if stat != "chi_square":
            makers.append(self._categorical)
        self._shared = None  # one answerable scope for the makers that need one (speed)
        for i in self.rng.permutation(len(makers)):
            for _ in range(2):
                cand = makers[int(i)](stat, k)
                if cand is not None:
                    return replace(cand, correction=self._maybe_correction(cand.pair))
        return None

    def _maybe_correction(self, pair: Pair) -> bool:
        """Yates' correction, half the time, where the crosstab could be 2 x 2 (as answerable
        questions ask it only then)."""
        two = all(len(self.roles.labels.get(c, ())) == 2 for c in pair.columns)
        return pair.stat == "chi_square" and two and bool(self.rng.random() < 0.5)

    def _bad_scope(self, stat: str, k: int) -> Candidate | None:
        """An unanswerable scope (drawn from the answerable plan distribution); conditions and
        Welch groups filled on the rows of a real file."""
        scope = self.sampler.realize(self.sampler.plan(), False)
        if scope is None:
            return None
        sk = self.skeleton(self.draw_pair(stat), k)
        example = self.gather(self.sampler.single_file())
        filled = self.fill(example, sk.ops)
        if filled is None:
            return None
        conds, keep = filled
        pair = self._with_groups(sk.pair, example, keep)
        if pair is None:
            return None
        return Candidate(scope, pair, tuple(c for c in conds if c), scope.reason)

    def _row_reason(self, stat: str, k: int, reason: Reason) -> Candidate | None:
        """All conditions keep rows but one, filled last on the rows the others keep: it keeps
        none (no_matching_rows) or exactly one used row (too_few_rows)."""
        sk = self.skeleton(self.draw_pair(stat), k)
        scope = self.shared_scope()
        if scope is None or not sk.ops:
            return None
        data = self.gather(scope)
        kill = int(self.rng.integers(len(sk.ops)))
        filled = self.fill(data, sk.ops, skip=kill)
        if filled is None:
            return None
        conds, keep = filled
        pair = self._with_groups(sk.pair, data, keep)
        if pair is None:
            return None
        col, op = sk.ops[kill]
        focus = keep if reason == Reason.NO_MATCHING_ROWS else keep & used_mask(data, pair)
        mode = "empty" if reason == Reason.NO_MATCHING_ROWS else "one"
        cond = fill_row_condition(self.repo, col, op, data.array(col)[focus], self.rng, mode)
        if cond is None:
            return None
        conds[kill] = cond
        final = [c for c in conds if c is not None]
        mask = data.mask(final)
        if reason == Reason.NO_MATCHING_ROWS:
            if mask.any():
                return None
        elif diagnose(self.roles, pair, used_rows(data, pair, mask)) != reason:
            return None
        return Candidate(scope, pair, tuple(final), reason)

    def _no_matching_rows(self, stat: str, k: int) -> Candidate | None:
        return self._row_reason(stat, k, Reason.NO_MATCHING_ROWS)

    def _too_few_rows(self, stat: str, k: int) -> Candidate | None:
        return self._row_reason(stat, k, Reason.TOO_FEW_ROWS)

    def _realised(self, sk: Skeleton) -> tuple[Scope, Pair, list[RowCondition], ScopeRows,
                                                 np.ndarray] | None:  # fmt: skip
        """The skeleton on an answerable scope with conditions that keep rows."""
        scope = self.shared_scope()
        realised = None if scope is None else self._on_scope(sk, scope)
        if scope is None or realised is None:
            return None
        pair, conds, data, keep = realised
        return scope, pair, [c for c in conds if c is not None], data, keep

    def _on_scope(self, sk: Skeleton, scope: Scope) -> tuple[Pair, list, ScopeRows,
                                                            np.ndarray] | None:  # fmt: skip
        """The skeleton's conditions filled to keep rows of ``scope`` and its pair's groups."""
        data = self.gather(scope)
        filled = self.fill(data, sk.ops)
        if filled is None:
            return None
        conds, keep = filled
        pair = self._with_groups(sk.pair, data, keep)
        return None if pair is None else (pair, conds, data, keep)

    def _constant(self, stat: str, k: int) -> Candidate | None:
        """A draw whose used rows happen to hold a constant column (never forced: forcing it
        would favour low-cardinality columns and narrow thresholds)."""
        got = self._realised(self.skeleton(self.draw_pair(stat), k))
        if got is None:
            return None
        scope, pair, conds, data, keep = got
        if diagnose(self.roles, pair, used_rows(data, pair, keep)) != Reason.CONSTANT_COLUMN:
            return None
        return Candidate(scope, pair, tuple(conds), Reason.CONSTANT_COLUMN)

    def _categorical(self, stat: str, k: int) -> Candidate | None:
        """A numeric statistic (or Welch's measured column) of a categorical column."""
        r = self.roles
        if stat == "chi_square" or not r.categorical:
            return None
        if stat == "welch_t":
            if len(r.categorical) < 2:
                return None
            x, y = self.rng.choice(len(r.categorical), 2, replace=False).tolist()
            pair = Pair(stat, r.categorical[x], r.categorical[y])
        else:
            if not r.numeric:
                return None
            cat, other = self.ctx.choice(r.categorical), self.ctx.choice(r.numeric)
            pair = Pair(stat, *((cat, other) if self.rng.random() < 0.5 else (other, cat)))
        got = self._realised(self.skeleton(pair, k))
        if got is None:
            return None
        scope, pair, conds, data, keep = got
        if diagnose(r, pair, used_rows(data, pair, keep)) != Reason.CATEGORICAL_COLUMN:
            return None
        return Candidate(scope, pair, tuple(conds), Reason.CATEGORICAL_COLUMN)

    def _unrecorded(self, stat: str, k: int) -> Candidate | None:
        """One target (Welch: the measured column) named after a variable never recorded."""
        unrecorded = [u.name for u in self.ctx.spec.unrecorded]
        if not unrecorded:
            return None
        got = self._realised(self.skeleton(self.draw_pair(stat), k))
        if got is None:
            return None
        scope, pair, conds, data, keep = got
        which = 0 if pair.stat == "welch_t" else int(self.rng.integers(2))
        real = pair.columns[1 - which]
        if int(np.count_nonzero(keep & data.present(real))) < MIN_PAIRS:
            return None
        name = self.ctx.choice(unrecorded)
        pair = replace(pair, x=name) if which == 0 else replace(pair, y=name)
        return Candidate(scope, pair, tuple(conds), Reason.UNRECORDED_VARIABLE)


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
        stat = ctx.choice(engine.stats)
        k = engine.draw_k()
        sig = int(ctx.rng.integers(cfg.sig_figs[0], cfg.sig_figs[1] + 1))
        if answerable:
            min_rows = PRECISE_ROWS if sig >= 4 else MIN_PAIRS
            cand = next(engine.candidates(stat, k, cfg.tries, min_rows), None)
        else:
            cand = engine.unanswerable(stat, k)
        if cand is None:
            return None
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
