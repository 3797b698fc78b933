"""The rows a repository serves, pooled over its data files, with each file's path-variable
values as columns (numeric and sequence ones as numbers, the rest as their canonical text)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from isg_gym.repository import Repository


def pooled_rows(repo: Repository) -> pd.DataFrame:
    """Every served row of every data file (missing values as served), plus one column per
    path variable. Path variables never share a name with a column (the Spec forbids it)."""
    spec = repo.spec
    names = [c.name for c in spec.columns]
    parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
    paths: dict[str, list[np.ndarray]] = {v.name: [] for v in spec.path_variables}
    for path in repo.data_files:
        table = repo.table(path)
        for name in names:
            parts[name].append(table[name].to_numpy())
        values = repo.path_values(path)
        for var in spec.path_variables:
            value = values[var.name]
            if var.kind in ("numeric", "sequence"):
                paths[var.name].append(np.full(len(table), float(value)))
            else:
                paths[var.name].append(np.full(len(table), value, dtype=object))
    columns = {name: np.concatenate(chunks) for name, chunks in {**parts, **paths}.items()}
    return pd.DataFrame(columns)
