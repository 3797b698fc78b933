"""Which rows a data question ranges over: one file, or the files matching 0-3 path conditions.

Also builds the scopes of unanswerable questions (a file that does not exist, a path value no
file has, path conditions that no file satisfies), and gathers the in-memory rows of a scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from isg_gym.qa.base import Reason
from isg_gym.qa.conditions import (
    PathCondition,
    absent_path_token,
    describe_path_conditions,
    matching_files,
    rendered_values,
    sample_path_condition,
)
from isg_gym.repository import Repository
from isg_gym.repository.index import PathRenderer

MAX_SCOPE_FILES = 100  # data questions over more files are narrowed by path conditions


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

    def answerable(self, single_file_share: float = 0.45) -> Scope:
        """A scope with 1..max_files files."""
        if self.rng.random() < single_file_share:
            return self.single_file()
        variables = list(self.repo.spec.path_variables)
        for _ in range(self._tries):
            k = int(self.rng.integers(0, min(3, len(variables)) + 1))
            chosen = self.rng.choice(len(variables), k, replace=False).tolist()
            conds = [sample_path_condition(self.repo, variables[j], self.rng) for j in chosen]
            files = matching_files(self.repo, conds)
            if 1 <= len(files) <= self.max_files:
                return Scope(files=tuple(files), path_conditions=tuple(conds))
        return self.single_file()

    def unanswerable(self) -> Scope | None:
        """A scope that makes the question unanswerable by itself, or None if none is found."""
        makers = [self.missing_file, self.absent_value, self.empty_combination]
        for i in self.rng.permutation(len(makers)):
            scope = makers[i]()
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


def gather(
    repo: Repository, files: tuple[str, ...] | list[str], columns: list[str]
) -> pd.DataFrame:
    """The rows of ``files`` (in-memory tables, privileged), restricted to ``columns``."""
    if not files:
        return pd.DataFrame({c: [] for c in columns})
    frames = [repo.table(f)[columns] for f in files]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
