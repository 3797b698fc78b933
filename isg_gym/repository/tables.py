"""Row generation: one file's table as a pure function of (Spec, file path-variable values).

The rows of a file are drawn from a generator derived from (repository seed, canonical path,
spec version): 20-299 rows; independent columns sampled from their distributions; dependent
columns evaluated vectorised from their expressions plus Gaussian noise, clipped and rounded;
then missing values and the sort key. Floats are rounded to the column's decimals, so the
shortest round-trip text of each value is what every serialiser writes and pandas reads back.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from isg_gym.seeding import derive
from isg_gym.spec.expressions import Expression, compile_expression
from isg_gym.spec.models import (
    CategoricalColumn,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    IntegerColumn,
    Spec,
)

MIN_ROWS, MAX_ROWS = 20, 299


class TableGenerator:
    """Compiles a Spec's expressions once and generates file tables on demand."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        kinds = spec.expression_kinds()
        self.expressions: dict[str, Expression] = {
            c.name: compile_expression(c.expression, kinds)
            for c in spec.columns
            if isinstance(c, DependentColumn)
        }
        self._path_variables = {p.name: p for p in spec.path_variables}

    def clean_columns(self, path: str, values: dict[str, str]) -> dict[str, np.ndarray]:
        """All columns before missing values and sorting (a NaN here is a domain NaN)."""
        return self._draw(path, values)[0]

    def _draw(
        self, path: str, values: dict[str, str]
    ) -> tuple[dict[str, np.ndarray], np.random.Generator]:
        spec = self.spec
        rng = derive(spec.seed, "file", path, spec.spec_version)
        n = int(rng.integers(MIN_ROWS, MAX_ROWS + 1))
        env: dict[str, np.ndarray | float | str] = {}
        for name, value in values.items():
            kind = self._path_variables[name].expression_kind
            if kind == "numeric":
                env[name] = float(value)
            elif kind == "categorical":
                env[name] = value
        cols: dict[str, np.ndarray] = {}
        for col in spec.columns:
            match col:
                case IdentifierColumn():
                    low = 10 ** (col.digits - 1)
                    ids = rng.choice(9 * low, n, replace=False) + low
                    cols[col.name] = np.array([f"{col.prefix}{i}" for i in ids.tolist()],
                                              dtype=object)  # fmt: skip
                case DatetimeColumn():
                    cols[col.name] = self._timestamps(col, values, n, rng)
                case CategoricalColumn():
                    idx = rng.choice(len(col.values), n, p=col.probabilities)
                    cols[col.name] = np.array(col.values, dtype=object)[idx]
                case IntegerColumn():
                    cols[col.name] = col.distribution.sample(rng, n)
                case ContinuousColumn():
                    x = col.distribution.sample(rng, n)
                    if col.clip is not None:
                        x = np.clip(x, col.clip[0], col.clip[1])
                    cols[col.name] = np.round(x, col.decimals) + 0.0
                case DependentColumn():
                    expr = self.expressions[col.name]
                    noise = rng.normal(0.0, col.noise_sd, n) if col.noise_sd > 0 else None
                    x = expr.evaluate({**env, **cols}, n, noise)
                    if expr.kind == "numeric":
                        if col.clip is not None:
                            x = np.clip(x, col.clip[0], col.clip[1])
                        x = np.round(x, col.decimals) + 0.0
                    cols[col.name] = x
        return cols, rng

    def _timestamps(
        self, col: DatetimeColumn, values: dict[str, str], n: int, rng: np.random.Generator
    ) -> np.ndarray:
        date = next((values[p.name] for p in self.spec.path_variables if p.kind == "date"), None)
        start = col.start.replace(tzinfo=None)
        if date is not None:
            start = dt.datetime.combine(dt.date.fromisoformat(date), start.time())
        else:
            start += dt.timedelta(days=int(rng.integers(0, 365)))
        if col.regular:
            offsets = np.arange(n, dtype=np.int64) * col.interval_seconds
        else:
            offsets = np.sort(rng.integers(0, n * col.interval_seconds, n))
        stamps = np.datetime64(start, "s") + offsets.astype("timedelta64[s]")
        return np.char.add(np.datetime_as_string(stamps, unit="s"), "Z").astype(object)

    def table(self, path: str, values: dict[str, str]) -> pd.DataFrame:
        """The file's table as served (missing values applied, rows sorted)."""
        cols, rng = self._draw(path, values)
        n = len(next(iter(cols.values())))
        for col in self.spec.columns:
            if col.missing_rate > 0:
                mask = rng.random(n) < col.missing_rate
                x = cols[col.name]
                if x.dtype == object:
                    x = x.copy()
                    x[mask] = None
                else:
                    x = np.where(mask, np.nan, x.astype(np.float64))
                cols[col.name] = x
        if self.spec.sort_by is not None:
            order = np.argsort(cols[self.spec.sort_by], kind="stable")
            cols = {k: v[order] for k, v in cols.items()}
        return pd.DataFrame(cols)
