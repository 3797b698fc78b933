"""Which rows a data question ranges over: one file, or the files matching 0-3 path conditions.

Also builds the scopes of unanswerable questions (a file that does not exist, a path value no
file has, path conditions that no file satisfies), and gathers the in-memory rows of a scope.

Answerable and unanswerable scopes come from one plan (:meth:`ScopeSampler.plan`: single file
or not, how many path conditions on which variables with which operators), realised either way
(:meth:`ScopeSampler.realize`), so that the share of single-file scopes and the condition kinds
and counts are the same for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from isg_gym.qa.base import Reason
from isg_gym.qa.conditions import (
    PathCondition,
    PathOp,
    RowCondition,
    absent_path_token,
    absent_path_tokens,
    describe_path_conditions,
    fill_path_condition,
    path_op,
    present_values,
    rendered_values,
)
from isg_gym.repository import Repository
from isg_gym.repository.index import PathRenderer

MAX_SCOPE_FILES = 100  # data questions over more files are narrowed by path conditions
SINGLE_FILE_SHARE = 0.45


@dataclass(frozen=True)
class ScopePlan:
    """The text-visible structure of a scope: one file, or (variable, operator) conditions."""

    single_file: bool
    conditions: tuple[tuple[str, PathOp], ...] = ()


@dataclass(frozen=True)
class Scope:
    """A single ``file`` (possibly nonexistent) or the files matching ``path_conditions``."""

    files: tuple[str, ...]
    file: str | None = None
    path_conditions: tuple[PathCondition, ...] = ()
    reason: Reason | None = None  # set when the scope itself makes the question unanswerable

    def text(self, repo: Repository) -> str:
        if self.file is not None:
            return f"in the file `{self.file}`"
        return describe_path_conditions(repo, list(self.path_conditions))

    def params(self) -> dict[str, Any]:
        if self.file is not None:
            return {"scope": "file", "file": self.file}
        return {"scope": "files", "path_conditions": [c.to_dict() for c in self.path_conditions]}


@dataclass
class ScopeSampler:
    repo: Repository
    rng: np.random.Generator
    max_files: int = MAX_SCOPE_FILES
    _tries: int = field(default=12, repr=False)

    def single_file(self) -> Scope:
        files = self.repo.data_files
        path = files[int(self.rng.integers(len(files)))]
        return Scope(files=(path,), file=path)

    def plan(self, single_file_share: float = SINGLE_FILE_SHARE) -> ScopePlan:
        """Single file or 0-3 path conditions (distinct variables, operators per variable)."""
        if self.rng.random() < single_file_share:
            return ScopePlan(True)
        variables = list(self.repo.spec.path_variables)
        k = int(self.rng.integers(0, min(3, len(variables)) + 1))
        chosen = self.rng.choice(len(variables), k, replace=False).tolist()
        return ScopePlan(False, tuple((variables[j].name, path_op(self.repo, variables[j],
                                       self.rng)) for j in chosen))  # fmt: skip

    def realize(self, plan: ScopePlan, answerable: bool = True) -> Scope | None:
        """The plan as a scope with 1..max_files files, or as an unanswerable scope (a missing
        file; a path value no file has; conditions no file satisfies together), or None."""
        if plan.single_file:
            return self.single_file() if answerable else self.missing_file()
        variables = {v.name: v for v in self.repo.spec.path_variables}
        index = self.repo.index
        if answerable:
            for _ in range(3):
                mask = np.ones(len(index), dtype=bool)
                conds = []
                for name, op in plan.conditions:
                    cond = fill_path_condition(self.repo, variables[name], op, self.rng, mask)
                    if cond is None:
                        break
                    conds.append(cond)
                    mask &= self._mask([cond])
                else:
                    if 1 <= mask.sum() <= self.max_files:
                        files = [index.paths[i] for i in np.flatnonzero(mask)]
                        return Scope(files=tuple(files), path_conditions=tuple(conds))
            return None
        if not plan.conditions:
            return None
        kill = int(self.rng.integers(len(plan.conditions)))
        name, op = plan.conditions[kill]
        mask = np.ones(len(index), dtype=bool)
        conds: list[PathCondition | None] = [None] * len(plan.conditions)
        for i, (other, other_op) in enumerate(plan.conditions):
            if i != kill:
                cond = fill_path_condition(self.repo, variables[other], other_op, self.rng, mask)
                if cond is None:
                    return None
                conds[i] = cond
                mask &= self._mask([cond])
        reason = Reason.NO_MATCHING_FILES
        cond = None
        if op in ("is", "is_one_of") and self.rng.random() < 0.5:
            cond, reason = self._absent(variables[name], op), Reason.NO_SUCH_PATH_VALUE
        if cond is None:
            cond = fill_path_condition(self.repo, variables[name], op, self.rng, mask, "empty")
            reason = Reason.NO_MATCHING_FILES
        if cond is None and op in ("is", "is_one_of"):
            cond, reason = self._absent(variables[name], op), Reason.NO_SUCH_PATH_VALUE
        if cond is None:
            return None
        conds[kill] = cond
        return Scope(files=(), path_conditions=tuple(c for c in conds if c), reason=reason)

    def _mask(self, conds: list[PathCondition]) -> np.ndarray:
        index = self.repo.index
        keep = np.ones(len(index), dtype=bool)
        for cond in conds:
            j = next(i for i, v in enumerate(index.variables) if v.name == cond.variable)
            tokens = rendered_values(self.repo, index.variables[j])
            keep &= np.array([cond.matches(t) for t in tokens], dtype=bool)[index.codes[:, j]]
        return keep

    def _absent(self, var, op: PathOp) -> PathCondition | None:
        """``is`` an absent value, or ``is_one_of`` absent values only (as many as the
        answerable ``is_one_of`` lists name)."""
        if op == "is":
            token = absent_path_token(self.repo, var, self.rng)
            return None if token is None else PathCondition(var.name, "is", token)
        gaps = absent_path_tokens(self.repo, var)
        n_present = len(present_values(self.repo, var))
        if n_present < 3:
            return None
        k = int(self.rng.integers(2, n_present))
        if len(gaps) < k:
            return None
        picked = self.rng.choice(len(gaps), k, replace=False)
        return PathCondition(var.name, "is_one_of", [gaps[i] for i in sorted(picked)])

    def answerable(self, single_file_share: float = SINGLE_FILE_SHARE) -> Scope:
        """A scope with 1..max_files files (a single file if no plan fits)."""
        for _ in range(self._tries):
            scope = self.realize(self.plan(single_file_share), True)
            if scope is not None:
                return scope
        return self.single_file()

    def unanswerable(self, single_file_share: float = SINGLE_FILE_SHARE) -> Scope | None:
        """A scope that makes the question unanswerable by itself, or None if none is found;
        its plan is drawn as an answerable scope's is."""
        for _ in range(self._tries):
            scope = self.realize(self.plan(single_file_share), False)
            if scope is not None:
                return scope
        return None

    def missing_file(self) -> Scope | None:
        """A well-formed path of a value combination that has no file."""
        index = self.repo.index
        if index.total_combinations <= len(index):
            return None
        sizes = [len(v.values) for v in index.variables]
        renderer = PathRenderer(self.repo.spec)
        for _ in range(self._tries):
            codes = [int(self.rng.integers(n)) for n in sizes]
            path = renderer.render(codes)
            if index.row(path) is None:
                return Scope(files=(), file=path, reason=Reason.NO_SUCH_FILE)
        return None

    def absent_value(self) -> Scope | None:
        variables = list(self.repo.spec.path_variables)
        for j in self.rng.permutation(len(variables)):
            token = absent_path_token(self.repo, variables[j], self.rng)
            if token is not None:
                cond = PathCondition(variables[j].name, "is", token)
                return Scope(files=(), path_conditions=(cond,), reason=Reason.NO_SUCH_PATH_VALUE)
        return None

    def empty_combination(self) -> Scope | None:
        """Two 'is' conditions on values that files have, but no file has together."""
        index = self.repo.index
        variables = index.variables
        pairs = [(a, b) for a in range(len(variables)) for b in range(a + 1, len(variables))]
        for k in self.rng.permutation(len(pairs)):
            a, b = pairs[k]
            seen = np.zeros((len(variables[a].values), len(variables[b].values)), dtype=bool)
            seen[index.codes[:, a], index.codes[:, b]] = True
            empty = np.argwhere(~seen & seen.any(axis=1)[:, None] & seen.any(axis=0)[None, :])
            if len(empty):
                i, j = empty[int(self.rng.integers(len(empty)))].tolist()
                conds = (
                    PathCondition(
                        variables[a].name, "is", rendered_values(self.repo, variables[a])[i]
                    ),
                    PathCondition(
                        variables[b].name, "is", rendered_values(self.repo, variables[b])[j]
                    ),
                )
                return Scope(files=(), path_conditions=conds, reason=Reason.NO_MATCHING_FILES)
        return None


class ScopeRows:
    """The rows of a scope's files (in-memory, privileged) as column arrays, each built on
    first use: the values the tables hold (NaN or None where missing) and which are present."""

    def __init__(self, repo: Repository, files: tuple[str, ...] | list[str]) -> None:
        self.repo = repo
        self.files = tuple(files)
        self._arrays = [repo.columns(f) for f in self.files]
        self.n = sum(a.rows for a in self._arrays)
        self._values: dict[str, np.ndarray] = {}
        self._present: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return self.n

    def __contains__(self, column: str) -> bool:
        return column in self._values or (bool(self._arrays) and column in self._arrays[0])

    def add(self, name: str, values: np.ndarray) -> None:
        """An extra column (one value per row), e.g. each row's group."""
        if len(values) != self.n:
            raise ValueError(f"column {name!r} has {len(values)} values for {self.n} rows")
        self._values[name] = values

    def array(self, column: str) -> np.ndarray:
        """Every row's value of ``column`` (read-only)."""
        if column not in self._values:
            parts = [a[column] for a in self._arrays]
            self._values[column] = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return self._values[column]

    def present(self, column: str) -> np.ndarray:
        """Which rows have a value of ``column``."""
        if column not in self._present:
            x = self.array(column)
            if x.dtype.kind == "f":
                self._present[column] = ~np.isnan(x)
            elif x.dtype.kind in "iub":
                self._present[column] = np.ones(len(x), dtype=bool)
            else:
                self._present[column] = ~pd.isna(x)
        return self._present[column]

    def values(self, column: str, mask: np.ndarray) -> np.ndarray:
        """The non-missing values of ``column`` in the rows of ``mask``."""
        return self.array(column)[mask & self.present(column)]

    def mask(self, conditions: list[RowCondition] | tuple[RowCondition, ...]) -> np.ndarray:
        """Rows satisfying every row condition."""
        keep = np.ones(self.n, dtype=bool)
        for cond in conditions:
            keep &= cond.mask_values(self.array(cond.column), self.present(cond.column))
        return keep
