"""Univariate statistics of one column over a scope of files, with 0-3 row conditions.

Statistics: ``mode`` (label columns; the gold mode leads the runner-up by >= 2 counts),
``min``, ``max``, ``median``, ``mean``, ``std`` and ``var`` (sample, ddof=1; numeric columns),
and ``n_distinct`` (distinct non-missing values; any column, identifier and timestamp included).
Missing values are ignored.

Construction (v2): a question's visible structure is drawn first, identically for both
answerabilities (:class:`Plan`: statistic, significant figures, template, scope plan, number of
row conditions); then it is realised as an answerable question (robust gold: 4-5 significant
figures only with >= 10 values, a mode leading by >= 2, std/var > 0) or as an unanswerable one
with a reason that applies to that statistic. Row conditions of both come from one sampler
(:func:`isg_gym.qa.conditions.fill_row_condition`); an impossible one empties the rows that the
other conditions keep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from isg_gym.qa.base import AnswerKind, Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    ROW_OPS_FLOAT,
    ROW_OPS_INTEGER,
    ROW_OPS_LABEL,
    RowCondition,
    describe_row_conditions,
    fill_row_condition,
    row_op,
)
from isg_gym.qa.scope import Scope, ScopePlan, ScopeRows, ScopeSampler
from isg_gym.spec.models import Spec, column_kind

NUMERIC_STATS = ("min", "max", "median", "mean", "std", "var")
STATISTICS = ("mode", *NUMERIC_STATS, "n_distinct")
# Numeric statistics asked of label, identifier or timestamp columns are "not possible" (v2
# conventions), min and max included.
CATEGORICAL_REASON_STATS = NUMERIC_STATS
# Relative weights of the unanswerable constructions (each applies to some statistics only).
REASON_WEIGHTS = {"scope": 1.0, "rows": 1.0, "too_few": 1.0, "categorical": 0.3,
                  "unrecorded": 0.4}  # fmt: skip
MODE_LEAD = 2  # the gold mode leads the runner-up by at least this many counts
MANY_VALUES = 10  # 4-5 significant figures only with at least this many values
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
        labels, counts = np.unique(values.astype(str), return_counts=True)
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


def column_kinds(spec: Spec) -> dict[str, str]:
    """``column_kind`` of every column (cheap: expression kinds are cached by source)."""
    return {c.name: column_kind(c) for c in spec.columns}


def mode_lead(values: np.ndarray) -> int:
    """How many counts the most common value leads the second most common by."""
    counts = np.sort(np.unique(values.astype(str), return_counts=True)[1])[::-1]
    return int(counts[0] - (counts[1] if len(counts) > 1 else 0))


@dataclass(frozen=True)
class Plan:
    """What the text of a question shows, drawn before its answerability is realised."""

    statistic: str
    sig_figs: int | None
    template: int
    scope: ScopePlan
    n_conditions: int


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
        tries: int = 12

    # --- columns ---------------------------------------------------------------------------

    @staticmethod
    def _kinds(ctx: Context) -> dict[str, list[str]]:
        """Column names by what a statistic sees: numeric, label, identifier, timestamp."""
        kinds = column_kinds(ctx.spec)
        out: dict[str, list[str]] = {"numeric": [], "label": [], "identifier": [], "timestamp": []}
        for col in ctx.spec.columns:
            if col.role == "identifier":
                out["identifier"].append(col.name)
            elif col.role == "datetime":
                out["timestamp"].append(col.name)
            else:
                out["numeric" if kinds[col.name] == "numeric" else "label"].append(col.name)
        return out

    def _statistics(self, ctx: Context) -> list[str]:
        """Statistics the repository can ask answerably (one pool for both answerabilities)."""
        kinds = self._kinds(ctx)
        out = []
        for stat in STATISTICS:
            if (stat == "mode" and kinds["label"]) or (stat in NUMERIC_STATS and kinds["numeric"]):
                out.append(stat)
        return [*out, "n_distinct"]

    def _target(self, ctx: Context, statistic: str) -> str:
        """An answerable target: a label column for mode, numeric for the numeric statistics,
        any kind (drawn uniformly over kinds) for n_distinct."""
        kinds = self._kinds(ctx)
        if statistic == "mode":
            return ctx.choice(kinds["label"])
        if statistic in NUMERIC_STATS:
            return ctx.choice(kinds["numeric"])
        return ctx.choice(ctx.choice([names for names in kinds.values() if names]))

    def _non_numeric_target(self, ctx: Context) -> str:
        """A label (half the time), identifier or timestamp column."""
        kinds = self._kinds(ctx)
        if kinds["label"] and ctx.rng.random() < 0.5:
            return ctx.choice(kinds["label"])
        return ctx.choice(kinds["identifier"] + kinds["timestamp"])

    @staticmethod
    def _targets(ctx: Context, statistic: str) -> list[str]:
        """Columns ``statistic`` may be asked of in an answerable question."""
        kinds = UnivariateStatistic._kinds(ctx)
        if statistic == "mode":
            return kinds["label"]
        if statistic in NUMERIC_STATS:
            return kinds["numeric"]
        return [name for names in kinds.values() for name in names]

    @staticmethod
    def _filter_columns(ctx: Context, target: str | None) -> list[str]:
        return [
            c.name
            for c in ctx.spec.columns
            if c.role not in ("identifier", "datetime") and c.name != target
        ]

    # --- plan ------------------------------------------------------------------------------

    def _plan(self, ctx: Context, sampler: ScopeSampler, statistic: str, sig: int | None) -> Plan:
        return Plan(
            statistic=statistic,
            sig_figs=sig,
            template=int(ctx.rng.integers(len(_TEMPLATES))),
            scope=sampler.plan(),
            n_conditions=int(ctx.rng.integers(0, self.config.max_row_conditions + 1)),
        )

    # --- rows ------------------------------------------------------------------------------

    def _conditions(
        self,
        ctx: Context,
        rows: ScopeRows,
        target: str | None,
        count: int,
        need: int,
        kill: tuple[int, str] | None = None,
    ) -> tuple[list[RowCondition], np.ndarray] | None:
        """Exactly ``count`` row conditions on distinct columns, or None.

        Without ``kill`` every condition keeps at least ``need`` target values. With ``kill =
        (position, mode)`` the condition at that position is drawn last, on the rows the others
        keep, and leaves none (``"empty"``) or exactly one (``"one"``) target value.
        """
        mask = np.ones(rows.n, dtype=bool)
        present = rows.present(target) if target is not None and target in rows else mask
        pool = self._filter_columns(ctx, target)
        columns = [pool[int(j)] for j in ctx.rng.permutation(len(pool))]
        if len(columns) < count:
            return None
        slots: list[RowCondition | None] = [None] * count
        plan = [(column, row_op(ctx.repo, column, ctx.rng)) for column in columns[:count]]
        spare = columns[count:]
        killable = [i for i, (_, op) in enumerate(plan) if op != "ne"]
        if kill is not None:
            if not killable:
                return None
            kill = (killable[int(ctx.rng.integers(len(killable)))], kill[1])
        for i, (column, op) in enumerate(plan):
            if kill is not None and i == kill[0]:
                continue
            cond = None
            tries = [(column, op)] + [(c, row_op(ctx.repo, c, ctx.rng)) for c in spare[::-1]]
            for j, (name, name_op) in enumerate(tries):
                values = rows.array(name)
                cand = fill_row_condition(ctx.repo, name, name_op, values[mask & present], ctx.rng)
                kept = None if cand is None else cand.mask_values(values, rows.present(name))
                if kept is not None and int((mask & present & kept).sum()) >= need:
                    cond = cand
                    if j:
                        spare.remove(name)
                    break
            if cond is None:
                return None
            slots[i] = cond
            mask = mask & rows.mask([cond])
        if kill is not None:
            position, mode = kill
            column, op = plan[position]
            tables = {"categorical": ROW_OPS_LABEL, "integer": ROW_OPS_INTEGER}

            def allows(name: str) -> bool:  # the op is one the column's kind draws
                col = ctx.spec.column(name)
                kind = "categorical" if column_kinds(ctx.spec)[name] == "categorical" else col.role
                return op in dict(tables.get(kind, ROW_OPS_FLOAT))

            for name in [column, *[c for c in spare[::-1] if allows(c)]]:
                values, there = rows.array(name), rows.present(name)
                universe, within = None, None
                if column_kinds(ctx.spec)[name] == "categorical":
                    universe = sorted({str(v) for v in values[there].tolist()})
                elif there.any():
                    within = (float(values[there].min()), float(values[there].max()))
                cond = fill_row_condition(ctx.repo, name, op, values[mask & present], ctx.rng,
                                          mode, universe, within)  # fmt: skip
                if cond is None:
                    continue
                kept = cond.mask_values(values, there)
                left = int((mask & present & kept).sum())
                if left == (0 if mode == "empty" else 1):
                    slots[position] = cond
                    mask = mask & kept
                    break
            else:
                return None
        return [c for c in slots if c is not None], mask

    # --- text ------------------------------------------------------------------------------

    def _question(
        self,
        ctx: Context,
        plan: Plan,
        scope: Scope,
        column: str,
        conds: list[RowCondition],
        answer: Any = None,
        reason: Reason | None = None,
    ) -> Question:
        statistic, sig_figs = plan.statistic, plan.sig_figs
        kind = answer_kind(statistic)
        label = next((v.label for v in [*ctx.spec.columns, *ctx.spec.unrecorded]
                      if v.name == column), column)  # fmt: skip
        col_text = f'"{column}" ({label})' if label != column else f'"{column}"'
        where = scope.text(ctx.repo)
        body = _TEMPLATES[plan.template].format(
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
        sampler = ScopeSampler(ctx.repo, ctx.rng)
        # The statistic and the precision are drawn once, so that retries (which fail at
        # different rates for the two answerabilities) cannot shift the statistic mix.
        statistic = ctx.choice(self._statistics(ctx))
        lo, hi = self.config.sig_figs
        sig = int(ctx.rng.integers(lo, hi + 1)) if answer_kind(statistic) == "float" else None
        for _ in range(self.config.tries):
            plan = self._plan(ctx, sampler, statistic, sig)
            if answerable:
                question = self._answerable(ctx, sampler, plan)
            else:
                question = self._unanswerable(ctx, sampler, plan)
            if question is not None:
                return question
        return None

    def _answerable(self, ctx: Context, sampler: ScopeSampler, plan: Plan) -> Question | None:
        statistic = plan.statistic
        target = self._target(ctx, statistic)
        scope = sampler.realize(plan.scope, True)
        if scope is None:
            return None
        rows = ScopeRows(ctx.repo, scope.files)
        need = min_values(statistic)
        made = self._conditions(ctx, rows, target, plan.n_conditions, need)
        if made is None:
            return None
        conds, mask = made
        values = rows.values(target, mask)
        if len(values) < need:
            return None
        if plan.sig_figs is not None and plan.sig_figs >= 4 and len(values) < MANY_VALUES:
            return None
        if statistic == "mode" and mode_lead(values) < MODE_LEAD:
            return None
        answer = compute(statistic, values)
        if statistic in NUMERIC_STATS and not np.isfinite(answer):
            return None
        if statistic in ("std", "var") and answer <= 0:
            return None
        if statistic in ("min", "max") and self._at_bound(ctx, target, statistic, answer):
            return None
        return self._question(ctx, plan, scope, target, conds, answer)

    @staticmethod
    def _at_bound(ctx: Context, target: str, statistic: str, answer: float) -> bool:
        """Whether a min/max answer sits at the column's clip bound (such answers repeat across
        questions, so they are left out to keep the answer values balanced)."""
        col = ctx.spec.column(target)
        clip = getattr(col, "clip", None)
        if not clip:
            return False
        bound = clip[0] if statistic == "min" else clip[1]
        return bound is not None and float(answer) == float(bound)

    def _unanswerable(self, ctx: Context, sampler: ScopeSampler, plan: Plan) -> Question | None:
        """A reason that applies to the plan's statistic and structure, drawn by weight."""
        makers: dict[str, Callable[[Context, ScopeSampler, Plan], Question | None]] = {}
        if plan.scope.single_file or plan.scope.conditions:
            makers["scope"] = self._bad_scope
        if plan.n_conditions:
            makers["rows"] = self._no_matching_rows
            if min_values(plan.statistic) > 1:
                makers["too_few"] = self._too_few_rows
        if plan.statistic in CATEGORICAL_REASON_STATS:
            makers["categorical"] = self._categorical_column
        if ctx.spec.unrecorded:
            makers["unrecorded"] = self._unrecorded
        names = list(makers)
        weights = np.array([REASON_WEIGHTS[n] for n in names])
        order = ctx.rng.choice(len(names), len(names), replace=False, p=weights / weights.sum())
        for i in order:
            question = makers[names[int(i)]](ctx, sampler, plan)
            if question is not None:
                return question
        return None

    def _bad_scope(self, ctx: Context, sampler: ScopeSampler, plan: Plan) -> Question | None:
        """No such file, no such path value, or path conditions that no file satisfies."""
        scope = sampler.realize(plan.scope, False)
        if scope is None:
            return None
        target = self._target(ctx, plan.statistic)
        # Row conditions read naturally when drawn from a real file of the repository.
        files = ctx.repo.data_files
        rows = ScopeRows(ctx.repo, (files[int(ctx.rng.integers(len(files)))],))
        made = self._conditions(ctx, rows, target, plan.n_conditions, 1)
        if made is None:
            return None
        return self._question(ctx, plan, scope, target, made[0], reason=scope.reason)

    def _killed(
        self, ctx: Context, sampler: ScopeSampler, plan: Plan, mode: str, reason: Reason
    ) -> Question | None:
        scope = sampler.realize(plan.scope, True)
        if scope is None or not plan.n_conditions:
            return None
        target = self._target(ctx, plan.statistic)
        rows = ScopeRows(ctx.repo, scope.files)
        kill = (int(ctx.rng.integers(plan.n_conditions)), mode)
        made = self._conditions(ctx, rows, target, plan.n_conditions, 2, kill)
        if made is None:
            return None
        conds, mask = made
        if rows.values(target, mask).size != (0 if mode == "empty" else 1):
            return None
        return self._question(ctx, plan, scope, target, conds, reason=reason)

    def _no_matching_rows(self, ctx: Context, sampler: ScopeSampler, plan: Plan) -> Question | None:
        """Row conditions that together leave no value of the target (verified)."""
        return self._killed(ctx, sampler, plan, "empty", Reason.NO_MATCHING_ROWS)

    def _too_few_rows(self, ctx: Context, sampler: ScopeSampler, plan: Plan) -> Question | None:
        """std/var where the row conditions leave exactly one value of the target."""
        return self._killed(ctx, sampler, plan, "one", Reason.TOO_FEW_ROWS)

    def _categorical_column(
        self, ctx: Context, sampler: ScopeSampler, plan: Plan
    ) -> Question | None:
        """A numeric statistic of a label, identifier or timestamp column."""
        target = self._non_numeric_target(ctx)
        scope = sampler.realize(plan.scope, True)
        if scope is None:
            return None
        rows = ScopeRows(ctx.repo, scope.files)
        made = self._conditions(ctx, rows, target, plan.n_conditions, 2)
        if made is None or rows.values(target, made[1]).size < 2:
            return None
        return self._question(ctx, plan, scope, target, made[0],
                              reason=Reason.CATEGORICAL_COLUMN)  # fmt: skip

    def _unrecorded(self, ctx: Context, sampler: ScopeSampler, plan: Plan) -> Question | None:
        """A statistic of a variable the project describes but never recorded."""
        var = ctx.choice(ctx.spec.unrecorded)
        scope = sampler.realize(plan.scope, True)
        if scope is None:
            return None
        rows = ScopeRows(ctx.repo, scope.files)
        made = self._conditions(ctx, rows, None, plan.n_conditions, 1)
        if made is None:
            return None
        return self._question(ctx, plan, scope, var.name, made[0],
                              reason=Reason.UNRECORDED_VARIABLE)  # fmt: skip
