"""Group comparison: which path-variable value or category has the highest (lowest) mean?

The groups are the values of a path variable (as the paths render them) or the labels of a
categorical column. Rows with a missing target or group are ignored; only groups with at least
one value count.

The grouping (path variable or column), the direction, the number of row conditions and their
operators and the scope plan are drawn the same way whatever the answerability. An answerable
question is robust: every group that has a value has at least ``min_group`` (5) values and the
winner leads the runner-up by at least ``rel_margin`` (1%, relative); an unanswerable one gets
its reason from its scope (realised unanswerably), from one row condition filled to keep no
usable row, or from its target column (categorical, or a variable never recorded).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    RowCondition,
    describe_row_conditions,
    fill_row_condition,
    rendered_values,
    row_op,
)
from isg_gym.qa.scope import MAX_SCOPE_FILES, Scope, ScopePlan, ScopeRows, ScopeSampler
from isg_gym.repository import Repository
from isg_gym.spec.models import PathVariable, column_kind

GROUP = "__group__"  # never a column name (names start with a letter)
SCOPE_REASONS = (Reason.NO_SUCH_FILE, Reason.NO_SUCH_PATH_VALUE, Reason.NO_MATCHING_FILES)


@dataclass
class Plan:
    """Everything a question states: scope, grouping, target column, direction, row filters."""

    scope: Scope
    group_kind: str  # "path" | "column"
    group_by: str
    column: str
    direction: str = "highest"
    row_conditions: list[RowCondition] = field(default_factory=list)

    def params(self) -> dict:
        return {
            **self.scope.params(),
            "column": self.column,
            "group_by": self.group_by,
            "group_kind": self.group_kind,
            "direction": self.direction,
            "row_conditions": [c.to_dict() for c in self.row_conditions],
        }


# --- column and variable pools ----------------------------------------------------------------


def numeric_columns(repo: Repository) -> list[str]:
    return [c.name for c in repo.spec.columns if column_kind(c) == "numeric"]


def categorical_columns(repo: Repository) -> list[str]:
    """Categorical columns that make groups (not the identifier or the timestamp)."""
    return [
        c.name
        for c in repo.spec.columns
        if column_kind(c) == "categorical" and c.role not in ("identifier", "datetime")
    ]


def groupable_path_variables(repo: Repository) -> list[PathVariable]:
    return [v for v in repo.spec.path_variables if len(v.values) >= 2]


def filter_columns(repo: Repository, exclude: set[str]) -> list[str]:
    return [
        c.name
        for c in repo.spec.columns
        if c.role not in ("identifier", "datetime") and c.name not in exclude
    ]


# --- privileged evaluation --------------------------------------------------------------------


def path_groups(repo: Repository, files: tuple[str, ...], variable: str) -> list[str]:
    """The rendered value of ``variable`` for each file (from the structured index)."""
    index = repo.index
    j = next(i for i, v in enumerate(index.variables) if v.name == variable)
    tokens = rendered_values(repo, index.variables[j])
    return [tokens[index.codes[index.row(f), j]] for f in files]


def scope_rows(repo: Repository, plan: Plan) -> ScopeRows:
    """The scope's rows, plus the group of each row as the column ``GROUP``."""
    rows = ScopeRows(repo, plan.scope.files)
    if plan.group_kind == "column":
        group = rows.array(plan.group_by)
    else:
        tokens = path_groups(repo, plan.scope.files, plan.group_by)
        sizes = [repo.columns(f).rows for f in plan.scope.files]
        group = np.repeat(np.array(tokens, dtype=object), sizes)
    rows.add(GROUP, group)
    return rows


def usable_rows(rows: ScopeRows, column: str, conditions: list[RowCondition]) -> np.ndarray:
    """Rows that pass the conditions and have both a target value and a group."""
    mask = rows.mask(conditions) & rows.present(GROUP)
    if column in rows:
        mask &= rows.present(column)
    return mask


def group_stats(
    rows: ScopeRows, column: str, conditions: list[RowCondition]
) -> tuple[pd.Series, pd.Series]:
    """Mean and count of ``column`` per group over the usable rows (groups with >= 1 value),
    both indexed by the sorted group labels (pandas' groupby kernels, without building a
    frame: a third of the time of ``DataFrame.groupby(...).agg(["mean", "size"])``)."""
    usable = usable_rows(rows, column, conditions)
    grouped = pd.Series(rows.array(column)[usable]).groupby(rows.array(GROUP)[usable], sort=True)
    return grouped.mean(), grouped.size()


def unique_winner(means: pd.Series, direction: str, rel_tol: float) -> str | None:
    """The group with the highest (lowest) mean if it leads the runner-up by at least
    ``rel_tol`` (relative to the larger magnitude) and strictly, else None."""
    if len(means) < 2 or not np.isfinite(means.to_numpy(dtype=float)).all():
        return None
    ordered = means.sort_values(ascending=direction == "lowest", kind="stable")
    best, second = float(ordered.iloc[0]), float(ordered.iloc[1])
    if abs(best - second) < rel_tol * max(abs(best), abs(second)) or best == second:
        return None
    return str(ordered.index[0])


# --- text -------------------------------------------------------------------------------------


def group_text(repo: Repository, plan: Plan) -> tuple[str, str]:
    """(how the grouping is named, how the answer should be written)."""
    if plan.group_kind == "path":
        var = next(v for v in repo.spec.path_variables if v.name == plan.group_by)
        return (
            f'{var.label} (path component "{var.short}")',
            "Give the value as it appears in the file paths.",
        )
    return f'"{plan.group_by}"', f'Give the "{plan.group_by}" label as it appears in the data.'


def question_text(ctx: Context, plan: Plan) -> str:
    repo = ctx.repo
    group, answer_hint = group_text(repo, plan)
    scope = plan.scope.text(repo)
    lower, scope = scope, scope[0].upper() + scope[1:]
    rows = describe_row_conditions(plan.row_conditions)
    col = f'"{plan.column}"'
    missing = f"Ignore rows where {col} or the group is missing"
    rules = f"{missing}; only groups with at least one value of {col} count."
    if plan.row_conditions:
        rules += " A row whose filtered column is missing does not satisfy a condition."
    word = plan.direction
    templates = [
        f"{scope}{rows}: which value of {group} has the {word} mean {col}? {rules} {answer_hint}",
        f"{scope}{rows}, group the rows by {group} and compute the mean of {col} in each group. "
        f"Which group has the {word} mean? {rules} {answer_hint}",
        f"Compare the values of {group} by their average {col}, {lower}{rows}. "
        f"Which value has the {word} average? {rules} {answer_hint}",
        f"Grouping by {group}, {lower}{rows}, which group's mean {col} is the {word}? "
        f"{rules} {answer_hint}",
    ]
    return ctx.choice(templates)


# --- the question type ------------------------------------------------------------------------


@register
class GroupComparison(QuestionType):
    name = "group_comparison"
    family = "group_comparison"
    reasons = (
        *SCOPE_REASONS,
        Reason.NO_MATCHING_ROWS,
        Reason.CATEGORICAL_COLUMN,
        Reason.UNRECORDED_VARIABLE,
    )

    @dataclass(frozen=True)
    class Config:
        max_row_conditions: int = 2
        path_share: float = 0.5  # share of questions grouped by a path variable
        tries: int = 10
        rel_margin: float = 0.01  # the winner leads the runner-up by at least this (relative)
        min_group: int = 5  # values in every group of an answerable question
        max_files: int = MAX_SCOPE_FILES

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        self._frames: dict[tuple, ScopeRows] = {}
        self._scopes: list[Scope] = []
        grouping = self._grouping(ctx)
        if grouping is None or not numeric_columns(ctx.repo):
            return None
        k = int(ctx.rng.integers(0, self.config.max_row_conditions + 1))
        if answerable:
            for _ in range(self.config.tries):
                question = self._answerable(ctx, grouping, k)
                if question is not None:
                    return question
            return None
        makers = [self._scope_reason, self._categorical, self._unrecorded]
        if k >= 1:
            makers.append(self._no_rows)
        for i in ctx.rng.permutation(len(makers)):
            for _ in range(2):
                question = makers[int(i)](ctx, grouping, k)
                if question is not None:
                    return question
        return None

    # --- building blocks --------------------------------------------------------------------

    def _sampler(self, ctx: Context) -> ScopeSampler:
        return ScopeSampler(ctx.repo, ctx.rng, max_files=self.config.max_files)

    def _scope_plan(self, ctx: Context, kind: str, group_by: str) -> ScopePlan:
        """A scope plan as every data question draws it; grouped by a path variable: several
        files, and no condition on that variable."""
        sampler = self._sampler(ctx)
        if kind != "path":
            return sampler.plan()
        plan = sampler.plan(single_file_share=0.0)
        return ScopePlan(False, tuple(c for c in plan.conditions if c[0] != group_by))

    def _scope(self, ctx: Context, kind: str, group_by: str, answerable: bool) -> Scope | None:
        scope = self._sampler(ctx).realize(self._scope_plan(ctx, kind, group_by), answerable)
        if scope is None or not answerable or kind != "path":
            return scope
        return scope if len(set(path_groups(ctx.repo, scope.files, group_by))) >= 2 else None

    def _grouping(self, ctx: Context) -> tuple[str, str] | None:
        """(group_kind, group_by): a path variable or a categorical column."""
        paths = groupable_path_variables(ctx.repo)
        cats = categorical_columns(ctx.repo)
        use_path = bool(paths) and (not cats or ctx.rng.random() < self.config.path_share)
        if use_path:
            return "path", ctx.choice(paths).name
        if cats:
            return "column", ctx.choice(cats)
        return None

    def _ops(self, ctx: Context, exclude: set[str], k: int) -> list[tuple[str, str]]:
        """Up to ``k`` (column, operator) pairs on distinct filter columns (:func:`row_op`)."""
        pool = filter_columns(ctx.repo, exclude)
        chosen = ctx.rng.permutation(len(pool))[:k].tolist()
        return [(pool[j], row_op(ctx.repo, pool[j], ctx.rng)) for j in chosen]

    def _fill(
        self, ctx: Context, rows: ScopeRows, ops: list[tuple[str, str]], focus: np.ndarray,
        skip: int | None = None,
    ) -> list[RowCondition | None] | None:
        """Conditions keeping some of the ``focus`` rows, each filled on the rows the earlier
        ones keep (``skip`` left out as None); None where an operator cannot keep rows."""
        conds: list[RowCondition | None] = [None] * len(ops)
        keep = focus.copy()
        for i, (col, op) in enumerate(ops):
            if i == skip:
                continue
            cond = fill_row_condition(ctx.repo, col, op, rows.array(col)[keep], ctx.rng)
            if cond is None:
                return None
            conds[i] = cond
            keep &= cond.mask_values(rows.array(col), rows.present(col))
        return conds

    def _frame(self, ctx: Context, plan: Plan) -> ScopeRows:
        """The scope's rows with their groups (cached per scope)."""
        key = (plan.scope.files, plan.group_kind, plan.group_by)
        if key not in self._frames:
            self._frames[key] = scope_rows(ctx.repo, plan)
        return self._frames[key]

    def _question(self, ctx: Context, plan: Plan, answer=None, reason=None) -> Question:
        params = plan.params()
        if plan.group_kind == "path":  # the grader accepts the value with its name part too
            var = next((v for v in ctx.spec.path_variables if v.name == plan.group_by), None)
            prefix = ctx.spec.layout.style.format(name=var.short, val="") if var else ""
            if prefix:
                params["answer_prefix"] = prefix
        return ctx.question(
            question_text(ctx, plan),
            "category",
            answer,
            reason=reason,
            params=params,
            evidence=plan.scope.files,
        )

    def _realised(self, ctx: Context, grouping: tuple[str, str], target: str, k: int,
                  skip: bool = False) -> tuple[Plan, ScopeRows, list, list] | None:  # fmt: skip
        """An answerable scope for the grouping and ``target``, the frame and conditions that
        keep usable rows (one left unfilled, at a random position, when ``skip``)."""
        kind, group_by = grouping
        if not self._scopes or ctx.rng.random() < 0.4:  # a scope serves ~2.5 draws on average
            scope = self._scope(ctx, kind, group_by, True)
            if scope is None:
                return None
            self._scopes.append(scope)
        scope = self._scopes[-1]
        plan = Plan(scope, kind, group_by, target, ctx.choice(("highest", "lowest")))
        ops = self._ops(ctx, {target, group_by}, k)
        if skip and not ops:
            return None
        rows = self._frame(ctx, plan)
        hole = int(ctx.rng.integers(len(ops))) if skip else None
        conds = self._fill(ctx, rows, ops, usable_rows(rows, target, []), hole)
        if conds is None:
            return None
        return plan, rows, ops, conds

    # --- answerable -------------------------------------------------------------------------

    def _answerable(self, ctx: Context, grouping: tuple[str, str], k: int) -> Question | None:
        targets = [c for c in numeric_columns(ctx.repo) if c != grouping[1]]
        if not targets:
            return None
        got = self._realised(ctx, grouping, ctx.choice(targets), k)
        if got is None:
            return None
        plan, rows, _, conds = got
        plan.row_conditions = [c for c in conds if c is not None]
        means, sizes = group_stats(rows, plan.column, plan.row_conditions)
        if means.empty or int(sizes.min()) < self.config.min_group:
            return None
        winner = unique_winner(means, plan.direction, self.config.rel_margin)
        if winner is None:
            return None
        return self._question(ctx, plan, answer=winner)

    # --- unanswerable -----------------------------------------------------------------------

    def _scope_reason(self, ctx: Context, grouping: tuple[str, str], k: int) -> Question | None:
        kind, group_by = grouping
        scope = self._scope(ctx, kind, group_by, False)
        if scope is None:
            return None
        targets = [c for c in numeric_columns(ctx.repo) if c != group_by]
        if not targets:
            return None
        plan = Plan(scope, kind, group_by, ctx.choice(targets), ctx.choice(("highest", "lowest")))
        ops = self._ops(ctx, {plan.column, group_by}, k)
        example = ScopeRows(ctx.repo, (ctx.choice(ctx.repo.data_files),))
        conds = self._fill(ctx, example, ops, example.present(plan.column))
        if conds is None:
            return None
        plan.row_conditions = [c for c in conds if c is not None]
        return self._question(ctx, plan, reason=scope.reason)

    def _no_rows(self, ctx: Context, grouping: tuple[str, str], k: int) -> Question | None:
        """All conditions keep rows but one, filled last: it keeps no usable row."""
        targets = [c for c in numeric_columns(ctx.repo) if c != grouping[1]]
        if not targets:
            return None
        got = self._realised(ctx, grouping, ctx.choice(targets), k, skip=True)
        if got is None:
            return None
        plan, rows, ops, conds = got
        hole = conds.index(None)
        others = [c for c in conds if c is not None]
        focus = usable_rows(rows, plan.column, others)
        col, op = ops[hole]
        cond = fill_row_condition(ctx.repo, col, op, rows.array(col)[focus], ctx.rng, "empty")
        if cond is None:
            return None
        conds[hole] = cond
        plan.row_conditions = [c for c in conds if c is not None]
        if usable_rows(rows, plan.column, plan.row_conditions).any():
            return None
        return self._question(ctx, plan, reason=Reason.NO_MATCHING_ROWS)

    def _categorical(self, ctx: Context, grouping: tuple[str, str], k: int) -> Question | None:
        cats = [c for c in categorical_columns(ctx.repo) if c != grouping[1]]
        if not cats:
            return None
        return self._with_rows(ctx, grouping, ctx.choice(cats), k, Reason.CATEGORICAL_COLUMN)

    def _unrecorded(self, ctx: Context, grouping: tuple[str, str], k: int) -> Question | None:
        if not ctx.spec.unrecorded:
            return None
        name = ctx.choice(ctx.spec.unrecorded).name
        return self._with_rows(ctx, grouping, name, k, Reason.UNRECORDED_VARIABLE)

    def _with_rows(self, ctx: Context, grouping: tuple[str, str], target: str, k: int,
                   reason: Reason) -> Question | None:  # fmt: skip
        """The question with ``reason`` if its row conditions still leave grouped rows."""
        got = self._realised(ctx, grouping, target, k)
        if got is None:
            return None
        plan, rows, _, conds = got
        plan.row_conditions = [c for c in conds if c is not None]
        if not usable_rows(rows, plan.column, plan.row_conditions).any():
            return None
        return self._question(ctx, plan, reason=reason)
