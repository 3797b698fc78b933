"""Group comparison: which path-variable value or category has the highest (lowest) mean?

The groups are the values of a path variable (as the paths render them) or the labels of a
categorical column. Rows with a missing target or group are ignored; only groups with at least
one value count; the winner must be unique (clear of the runner-up by more than ``rel_tol``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    RowCondition,
    combined_mask,
    describe_row_conditions,
    impossible_row_condition,
    matching_files,
    rendered_values,
    sample_path_condition,
    sample_row_condition,
)
from isg_gym.qa.scope import MAX_SCOPE_FILES, Scope, ScopeSampler, gather
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


def scope_frame(repo: Repository, plan: Plan, columns: list[str]) -> pd.DataFrame:
    """The scope's rows restricted to ``columns``, plus the group of each row in ``GROUP``."""
    columns = list(dict.fromkeys(columns))
    if plan.group_kind == "column":
        df = gather(repo, plan.scope.files, list(dict.fromkeys([*columns, plan.group_by])))
        return df.assign(**{GROUP: df[plan.group_by]})
    frames = []
    for f, token in zip(
        plan.scope.files, path_groups(repo, plan.scope.files, plan.group_by), strict=True
    ):
        frames.append(repo.table(f)[columns].assign(**{GROUP: token}))
    return pd.concat(frames, ignore_index=True)


def usable_rows(df: pd.DataFrame, column: str, conditions: list[RowCondition]) -> np.ndarray:
    """Rows that pass the conditions and have both a target value and a group."""
    mask = combined_mask(df, conditions) & df[GROUP].notna().to_numpy()
    if column in df:
        mask &= df[column].notna().to_numpy()
    return mask


def group_means(df: pd.DataFrame, column: str, conditions: list[RowCondition]) -> pd.Series:
    """Mean of ``column`` per group over the usable rows (groups with >= 1 value)."""
    rows = df.loc[usable_rows(df, column, conditions), [GROUP, column]]
    return rows.groupby(GROUP, sort=True)[column].mean()


def unique_winner(means: pd.Series, direction: str, rel_tol: float) -> str | None:
    """The group with the highest (lowest) mean if it beats the runner-up clearly, else None."""
    if len(means) < 2 or not np.isfinite(means.to_numpy(dtype=float)).all():
        return None
    ordered = means.sort_values(ascending=direction == "lowest", kind="stable")
    best, second = float(ordered.iloc[0]), float(ordered.iloc[1])
    if abs(best - second) <= rel_tol * max(abs(best), abs(second)) or best == second:
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
        tries: int = 8
        rel_tol: float = 1e-9  # the winner must beat the runner-up by more than this (relative)
        max_files: int = MAX_SCOPE_FILES

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        if answerable:
            for _ in range(self.config.tries):
                question = self._answerable(ctx)
                if question is not None:
                    return question
            return None
        makers = [self._scope_reason, self._no_rows, self._categorical, self._unrecorded]
        for i in ctx.rng.permutation(len(makers)):
            for _ in range(3):
                question = makers[i](ctx)
                if question is not None:
                    return question
        return None

    # --- building blocks --------------------------------------------------------------------

    def _path_scope(self, ctx: Context, var: PathVariable) -> Scope | None:
        """Files across >= 2 values of ``var``: 0-2 conditions on other variables, <= max."""
        repo = ctx.repo
        others = [v for v in repo.spec.path_variables if v.name != var.name]
        for _ in range(12):
            k = int(ctx.rng.integers(0, min(2, len(others)) + 1))
            chosen = ctx.rng.choice(len(others), k, replace=False).tolist() if k else []
            conds = [sample_path_condition(repo, others[j], ctx.rng) for j in sorted(chosen)]
            files = matching_files(repo, conds)
            if not 1 <= len(files) <= self.config.max_files:
                continue
            if len(set(path_groups(repo, tuple(files), var.name))) >= 2:
                return Scope(files=tuple(files), path_conditions=tuple(conds))
        return None

    def _grouping(self, ctx: Context, exclude: set[str] = frozenset()) -> tuple[str, str] | None:
        """(group_kind, group_by): a path variable or a categorical column not in ``exclude``."""
        paths = groupable_path_variables(ctx.repo)
        cats = [c for c in categorical_columns(ctx.repo) if c not in exclude]
        use_path = bool(paths) and (not cats or ctx.rng.random() < self.config.path_share)
        if use_path:
            return "path", ctx.choice(paths).name
        if cats:
            return "column", ctx.choice(cats)
        return None

    def _plan(self, ctx: Context, targets: list[str], exclude: set[str] = frozenset()):
        """A valid scope and grouping with a target from ``targets`` (None if impossible)."""
        grouping = self._grouping(ctx, exclude)
        if grouping is None:
            return None
        kind, group_by = grouping
        pool = [t for t in targets if t != group_by]
        if not pool:
            return None
        if kind == "path":
            var = next(v for v in ctx.spec.path_variables if v.name == group_by)
            scope = self._path_scope(ctx, var)
            if scope is None:
                return None
        else:
            scope = ScopeSampler(ctx.repo, ctx.rng, max_files=self.config.max_files).answerable()
        return Plan(scope, kind, group_by, ctx.choice(pool), ctx.choice(("highest", "lowest")))

    def _row_conditions(
        self, ctx: Context, plan: Plan, df: pd.DataFrame, most: int
    ) -> list[RowCondition]:
        pool = filter_columns(ctx.repo, {plan.column, plan.group_by})
        k = min(int(ctx.rng.integers(0, most + 1)), len(pool))
        chosen = sorted(ctx.rng.choice(len(pool), k, replace=False).tolist()) if k else []
        conds = [sample_row_condition(ctx.repo, pool[j], df[pool[j]], ctx.rng) for j in chosen]
        return [c for c in conds if c is not None]

    def _frame(self, ctx: Context, plan: Plan) -> pd.DataFrame:
        columns = [plan.column, *filter_columns(ctx.repo, {plan.column, plan.group_by})]
        return scope_frame(ctx.repo, plan, [c for c in columns if c in self._names(ctx)])

    @staticmethod
    def _names(ctx: Context) -> set[str]:
        return {c.name for c in ctx.spec.columns}

    def _question(self, ctx: Context, plan: Plan, answer=None, reason=None) -> Question:
        return ctx.question(
            question_text(ctx, plan),
            "category",
            answer,
            reason=reason,
            params=plan.params(),
            evidence=plan.scope.files,
        )

    # --- answerable -------------------------------------------------------------------------

    def _answerable(self, ctx: Context) -> Question | None:
        plan = self._plan(ctx, numeric_columns(ctx.repo))
        if plan is None:
            return None
        df = self._frame(ctx, plan)
        plan.row_conditions = self._row_conditions(ctx, plan, df, self.config.max_row_conditions)
        means = group_means(df, plan.column, plan.row_conditions)
        winner = unique_winner(means, plan.direction, self.config.rel_tol)
        if winner is None:
            return None
        return self._question(ctx, plan, answer=winner)

    # --- unanswerable -----------------------------------------------------------------------

    def _scope_reason(self, ctx: Context) -> Question | None:
        scope = ScopeSampler(ctx.repo, ctx.rng, max_files=self.config.max_files).unanswerable()
        if scope is None:
            return None
        used = {c.variable for c in scope.path_conditions}
        paths = [v for v in groupable_path_variables(ctx.repo) if v.name not in used]
        cats = categorical_columns(ctx.repo)
        if scope.file is None and paths and (not cats or ctx.rng.random() < 0.5):
            kind, group_by = "path", ctx.choice(paths).name
        elif cats:
            kind, group_by = "column", ctx.choice(cats)
        else:
            return None
        targets = [c for c in numeric_columns(ctx.repo) if c != group_by]
        if not targets:
            return None
        plan = Plan(scope, kind, group_by, ctx.choice(targets), ctx.choice(("highest", "lowest")))
        example = ctx.repo.table(ctx.choice(ctx.repo.data_files))
        plan.row_conditions = self._row_conditions(ctx, plan, example, 1)
        return self._question(ctx, plan, reason=scope.reason)

    def _no_rows(self, ctx: Context) -> Question | None:
        plan = self._plan(ctx, numeric_columns(ctx.repo))
        if plan is None:
            return None
        df = self._frame(ctx, plan)
        conds = self._row_conditions(ctx, plan, df, 1)
        pool = filter_columns(ctx.repo, {plan.column, plan.group_by} | {c.column for c in conds})
        if not pool:
            return None
        col = ctx.choice(pool)
        impossible = impossible_row_condition(ctx.repo, col, df[col], ctx.rng)
        if impossible is None:
            return None
        conds.insert(int(ctx.rng.integers(len(conds) + 1)), impossible)
        if usable_rows(df, plan.column, conds).any():
            return None
        plan.row_conditions = conds
        return self._question(ctx, plan, reason=Reason.NO_MATCHING_ROWS)

    def _categorical(self, ctx: Context) -> Question | None:
        cats = categorical_columns(ctx.repo)
        if not cats:
            return None
        target = ctx.choice(cats)
        plan = self._plan(ctx, [target], exclude={target})
        if plan is None:
            return None
        return self._with_rows(ctx, plan, Reason.CATEGORICAL_COLUMN)

    def _unrecorded(self, ctx: Context) -> Question | None:
        if not ctx.spec.unrecorded:
            return None
        plan = self._plan(ctx, [ctx.choice(ctx.spec.unrecorded).name])
        if plan is None:
            return None
        return self._with_rows(ctx, plan, Reason.UNRECORDED_VARIABLE)

    def _with_rows(self, ctx: Context, plan: Plan, reason: Reason) -> Question | None:
        """The question with ``reason`` if its row conditions still leave grouped rows."""
        df = self._frame(ctx, plan)
        plan.row_conditions = self._row_conditions(ctx, plan, df, self.config.max_row_conditions)
        if not usable_rows(df, plan.column, plan.row_conditions).any():
            return None
        return self._question(ctx, plan, reason=reason)
