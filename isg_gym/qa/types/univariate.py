"""Univariate statistics of one column over a scope of files, with 0-3 row conditions.

Statistics: ``mode`` (categorical columns; ties go to the alphabetically first label),
``min``, ``max``, ``median``, ``mean``, ``std`` and ``var`` (sample, ddof=1; numeric columns),
and ``n_distinct`` (distinct non-missing values; any column but the identifier). Missing values
are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from isg_gym.qa.base import AnswerKind, Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    RowCondition,
    describe_row_conditions,
    impossible_row_condition,
    num,
    sample_row_condition,
)
from isg_gym.qa.scope import Scope, ScopeSampler
from isg_gym.repository import Repository
from isg_gym.spec.models import Spec, column_kind

NUMERIC_STATS = ("min", "max", "median", "mean", "std", "var")
STATISTICS = ("mode", *NUMERIC_STATS, "n_distinct")
# Numeric statistics asked of categorical columns (min/max of labels or timestamps could be read
# as alphabetical / chronological order, so they are not used for this reason).
CATEGORICAL_REASON_STATS = ("mean", "median", "std", "var")
_PHRASES = {
    "mode": "the most common value of {col}",
    "min": "the minimum of {col}",
    "max": "the maximum of {col}",
    "median": "the median of {col}",
    "mean": "the mean of {col}",
    "std": "the standard deviation (sample, n - 1 denominator) of {col}",
    "var": "the variance (sample, n - 1 denominator) of {col}",
    "n_distinct": "the number of distinct values of {col}",
}
_TEMPLATES = (
    "What is {stat} {scope}{rows}?",
    "{Scope}{rows}, what is {stat}?",
    "Compute {stat} {scope}{rows}.",
    "Considering the data {scope}{rows}, report {stat}.",
)


def min_values(statistic: str) -> int:
    """How many non-missing values the statistic needs."""
    return 2 if statistic in ("std", "var") else 1


def compute(statistic: str, values: np.ndarray) -> Any:
    """The statistic of ``values`` (non-missing, and enough of them for the statistic)."""
    if statistic in ("mode", "n_distinct"):
        labels, counts = np.unique(values, return_counts=True)
        if statistic == "n_distinct":
            return len(labels)
        return str(labels[int(np.argmax(counts))])  # np.unique sorts: ties -> first label
    x = values.astype(float)
    match statistic:
        case "min":
            return float(x.min())
        case "max":
            return float(x.max())
        case "median":
            return float(np.median(x))
        case "mean":
            return float(x.mean())
        case "std":
            return float(x.std(ddof=1))
        case "var":
            return float(x.var(ddof=1))
    raise ValueError(statistic)


class Rows:
    """The rows of a scope, column by column, built lazily (tables are read-only)."""

    def __init__(self, repo: Repository, files: tuple[str, ...]) -> None:
        self.tables = [repo.table(f) for f in files]
        self.n = sum(len(t) for t in self.tables)
        self._series: dict[str, pd.Series] = {}
        self._present: dict[str, np.ndarray] = {}

    def __contains__(self, column: str) -> bool:
        return bool(self.tables) and column in self.tables[0].columns

    def series(self, column: str) -> pd.Series:
        if column not in self._series:
            if len(self.tables) == 1:
                self._series[column] = self.tables[0][column]
            else:
                parts = [t[column].to_numpy() for t in self.tables]
                self._series[column] = pd.Series(np.concatenate(parts), name=column)
        return self._series[column]

    def present(self, column: str) -> np.ndarray:
        if column not in self._present:
            self._present[column] = self.series(column).notna().to_numpy()
        return self._present[column]

    def values(self, column: str, mask: np.ndarray) -> np.ndarray:
        """The non-missing values of ``column`` in the rows of ``mask``."""
        return self.series(column).to_numpy()[mask & self.present(column)]


def column_kinds(spec: Spec) -> dict[str, str]:
    """``column_kind`` of every column (cheap: expression kinds are cached by source)."""
    return {c.name: column_kind(c) for c in spec.columns}


def answer_kind(statistic: str) -> AnswerKind:
    if statistic == "mode":
        return "category"
    return "integer" if statistic == "n_distinct" else "float"


@register
class UnivariateStatistic(QuestionType):
    name = "univariate_statistic"
    family = "univariate_statistics"
    reasons = (
        Reason.NO_SUCH_FILE,
        Reason.NO_SUCH_PATH_VALUE,
        Reason.NO_MATCHING_FILES,
        Reason.NO_MATCHING_ROWS,
        Reason.TOO_FEW_ROWS,
        Reason.CATEGORICAL_COLUMN,
        Reason.UNRECORDED_VARIABLE,
    )

    @dataclass(frozen=True)
    class Config:
        sig_figs: tuple[int, int] = (2, 5)  # inclusive range
        max_row_conditions: int = 3
        tries: int = 6

    # --- columns ---------------------------------------------------------------------------

    @staticmethod
    def _targets(ctx: Context, statistic: str) -> list[str]:
        """Columns ``statistic`` may be asked of in an answerable question."""
        out = []
        for col in ctx.spec.columns:
            if col.role == "identifier" or (col.role == "datetime" and statistic != "n_distinct"):
                continue
            categorical = column_kinds(ctx.spec)[col.name] == "categorical"
            if statistic == "n_distinct" or categorical == (statistic == "mode"):
                out.append(col.name)
        return out

    @staticmethod
    def _filter_columns(ctx: Context, target: str | None) -> list[str]:
        return [
            c.name
            for c in ctx.spec.columns
            if c.role not in ("identifier", "datetime") and c.name != target
        ]

    def _pick_statistic(self, ctx: Context, pool: tuple[str, ...] = STATISTICS) -> tuple[str, str]:
        stats = [s for s in pool if self._targets(ctx, s)]
        statistic = ctx.choice(stats)
        return statistic, ctx.choice(self._targets(ctx, statistic))

    # --- rows ------------------------------------------------------------------------------

    def _conditions(
        self, ctx: Context, rows: Rows, target: str | None, count: int, need: int
    ) -> tuple[list[RowCondition], np.ndarray]:
        """Up to ``count`` row conditions (from the data) keeping ``need`` target values."""
        mask = np.ones(rows.n, dtype=bool)
        present = rows.present(target) if target is not None and target in rows else mask
        conds: list[RowCondition] = []
        columns = self._filter_columns(ctx, target)
        for j in ctx.rng.permutation(len(columns)):
            if len(conds) >= count:
                break
            series = rows.series(columns[int(j)])
            cond = sample_row_condition(ctx.repo, series.name, series[mask], ctx.rng)
            if cond is None:
                continue
            new = mask & cond.mask(series)
            if int((new & present).sum()) >= need:
                conds.append(cond)
                mask = new
        return conds, mask

    def _n_conditions(self, ctx: Context) -> int:
        return int(ctx.rng.integers(0, self.config.max_row_conditions + 1))

    def _sig_figs(self, ctx: Context) -> int:
        lo, hi = self.config.sig_figs
        return int(ctx.rng.integers(lo, hi + 1))

    # --- text ------------------------------------------------------------------------------

    def _question(
        self,
        ctx: Context,
        scope: Scope,
        column: str,
        statistic: str,
        conds: list[RowCondition],
        answer: Any = None,
        reason: Reason | None = None,
    ) -> Question:
        kind = answer_kind(statistic)
        sig_figs = self._sig_figs(ctx) if kind == "float" else None
        label = next((v.label for v in [*ctx.spec.columns, *ctx.spec.unrecorded]
                      if v.name == column), column)  # fmt: skip
        col_text = f'"{column}" ({label})' if label != column else f'"{column}"'
        where = scope.text(ctx.repo)
        body = ctx.choice(_TEMPLATES).format(
            stat=_PHRASES[statistic].format(col=col_text), scope=where,
            Scope=where[:1].upper() + where[1:], rows=describe_row_conditions(conds),
        )  # fmt: skip
        rules = ["Ignore missing values."]
        if conds:
            rules.append("A row whose filter column is missing does not satisfy its condition.")
        if statistic == "mode":
            rules.append("If several values are equally common, give the alphabetically first.")
        if sig_figs is not None:
            rules.append(f"Give the answer to {sig_figs} significant figures.")
        params = {
            **scope.params(),
            "column": column,
            "statistic": statistic,
            "row_conditions": [c.to_dict() for c in conds],
        }
        return ctx.question(
            " ".join([body, *rules]), kind, answer, reason=reason, sig_figs=sig_figs,
            params=params, evidence=scope.files,
        )  # fmt: skip

    # --- generation ------------------------------------------------------------------------

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        if answerable:
            return self._answerable(ctx)
        makers: list[Callable[[Context], Question | None]] = [
            self._bad_scope,
            self._no_matching_rows,
            self._too_few_rows,
            self._categorical_column,
            self._unrecorded,
        ]
        for i in ctx.rng.permutation(len(makers)):
            question = makers[int(i)](ctx)
            if question is not None:
                return question
        return None

    def _answerable(self, ctx: Context) -> Question | None:
        sampler = ScopeSampler(ctx.repo, ctx.rng)
        for _ in range(self.config.tries):
            statistic, target = self._pick_statistic(ctx)
            scope = sampler.answerable()
            rows = Rows(ctx.repo, scope.files)
            need = min_values(statistic)
            conds, mask = self._conditions(ctx, rows, target, self._n_conditions(ctx), need)
            values = rows.values(target, mask)
            if len(values) < need:
                continue
            answer = compute(statistic, values)
            if statistic in NUMERIC_STATS and not np.isfinite(answer):
                continue
            if statistic in ("std", "var") and answer <= 0:
                continue
            return self._question(ctx, scope, target, statistic, conds, answer)
        return None

    def _bad_scope(self, ctx: Context) -> Question | None:
        """No such file, no such path value, or path conditions that no file satisfies."""
        scope = ScopeSampler(ctx.repo, ctx.rng).unanswerable()
        if scope is None:
            return None
        statistic, target = self._pick_statistic(ctx)
        # Row conditions read naturally when drawn from a real file of the repository.
        files = ctx.repo.data_files
        rows = Rows(ctx.repo, (files[int(ctx.rng.integers(len(files)))],))
        conds, _ = self._conditions(ctx, rows, target, self._n_conditions(ctx) % 3, 1)
        return self._question(ctx, scope, target, statistic, conds, reason=scope.reason)

    def _no_matching_rows(self, ctx: Context) -> Question | None:
        """An impossible row condition (verified: no row keeps a value of the target)."""
        sampler = ScopeSampler(ctx.repo, ctx.rng)
        for _ in range(self.config.tries):
            statistic, target = self._pick_statistic(ctx, ("mode", *NUMERIC_STATS))
            scope = sampler.answerable()
            rows = Rows(ctx.repo, scope.files)
            conds, mask = self._conditions(ctx, rows, target, int(ctx.rng.integers(0, 3)), 1)
            used = {k.column for k in conds}
            columns = [c for c in self._filter_columns(ctx, target) if c not in used]
            if not columns:
                continue
            series = rows.series(ctx.choice(columns))
            bad = impossible_row_condition(ctx.repo, series.name, series[mask], ctx.rng)
            if bad is None:
                continue
            if rows.values(target, mask & bad.mask(series)).size:
                continue
            conds.insert(int(ctx.rng.integers(len(conds) + 1)), bad)
            return self._question(
                ctx, scope, target, statistic, conds, reason=Reason.NO_MATCHING_ROWS
            )
        return None

    def _too_few_rows(self, ctx: Context) -> Question | None:
        """std/var where the row conditions leave exactly one value of the target."""
        sampler = ScopeSampler(ctx.repo, ctx.rng)
        statistic = ctx.choice(("std", "var"))
        targets = self._targets(ctx, statistic)
        if not targets:
            return None
        for _ in range(self.config.tries):
            target = ctx.choice(targets)
            scope = sampler.answerable()
            rows = Rows(ctx.repo, scope.files)
            conds, mask = self._conditions(ctx, rows, target, int(ctx.rng.integers(0, 2)), 3)
            extreme = self._single_out(ctx, rows, target, mask, {c.column for c in conds})
            if extreme is None:
                continue
            mask = mask & extreme.mask(rows.series(extreme.column))
            if rows.values(target, mask).size != 1:
                continue
            conds.append(extreme)
            return self._question(ctx, scope, target, statistic, conds, reason=Reason.TOO_FEW_ROWS)
        return None

    def _single_out(
        self, ctx: Context, rows: Rows, target: str, mask: np.ndarray, used: set[str]
    ) -> RowCondition | None:
        """A threshold on a numeric column that only its most extreme row passes."""
        kinds = column_kinds(ctx.spec)
        columns = [c for c in self._filter_columns(ctx, target)
                   if c not in used and kinds[c] == "numeric"]  # fmt: skip
        if not columns:
            return None
        col = ctx.choice(columns)
        x = np.unique(rows.values(col, mask & rows.present(target)).astype(float))
        if len(x) < 2:
            return None
        top = ctx.rng.random() < 0.5
        inner, outer = (x[-2], x[-1]) if top else (x[1], x[0])
        for digits in range(2, 8):
            t = num((inner + outer) / 2, digits)
            if top and inner <= t < outer:
                return RowCondition(col, "gt", t)
            if not top and outer < t <= inner:
                return RowCondition(col, "lt", t)
        return None

    def _categorical_column(self, ctx: Context) -> Question | None:
        """A numeric statistic of a categorical column (identifier and timestamp included)."""
        kinds = column_kinds(ctx.spec)
        columns = [name for name, kind in kinds.items() if kind == "categorical"]
        sampler = ScopeSampler(ctx.repo, ctx.rng)
        for _ in range(self.config.tries):
            statistic = ctx.choice(CATEGORICAL_REASON_STATS)
            target = ctx.choice(columns)
            scope = sampler.answerable()
            rows = Rows(ctx.repo, scope.files)
            conds, mask = self._conditions(ctx, rows, target, self._n_conditions(ctx), 2)
            if rows.values(target, mask).size < 2:
                continue
            return self._question(
                ctx, scope, target, statistic, conds, reason=Reason.CATEGORICAL_COLUMN
            )
        return None

    def _unrecorded(self, ctx: Context) -> Question | None:
        """A statistic of a variable the project describes but never recorded."""
        if not ctx.spec.unrecorded:
            return None
        var = ctx.choice(ctx.spec.unrecorded)
        statistic = ctx.choice((*NUMERIC_STATS, "n_distinct"))
        scope = ScopeSampler(ctx.repo, ctx.rng).answerable()
        rows = Rows(ctx.repo, scope.files)
        conds, _ = self._conditions(ctx, rows, None, self._n_conditions(ctx), 1)
        return self._question(
            ctx, scope, var.name, statistic, conds, reason=Reason.UNRECORDED_VARIABLE
        )
