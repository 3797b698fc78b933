"""Row generation: one file's table as a pure function of (Spec, file path-variable values).

The rows of a file are drawn from a generator derived from (repository seed, canonical path,
spec version): 20-299 rows; independent columns sampled from their distributions; dependent
columns evaluated vectorised from their expressions plus Gaussian noise, clipped and rounded;
then missing values and the sort key. Floats are rounded to the column's decimals, so the
shortest round-trip text of each value is what every serialiser writes and pandas reads back.

Everything that depends on the Spec alone (compiled expressions, category CDFs, the timestamp
plan, which columns get missing values, the sort key) is prepared once per generator, so a file
costs its random draws and little else. Two kinds of column are finished only when first read
(most questions read two or three columns of a file): identifier and timestamp text, and
dependent columns, whose noise is drawn in table order but whose expression is evaluated later,
on the same inputs, so the values are those of an eager evaluation.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from isg_gym.seeding import derive
from isg_gym.spec.expressions import Expression, compile_expression
from isg_gym.spec.models import (
    CategoricalColumn,
    Column,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    IntegerColumn,
    Spec,
)

MIN_ROWS, MAX_ROWS = 20, 299
_EPOCH = dt.datetime(1970, 1, 1)

# A column's sampler: (rng, rows, the path values and earlier columns by name) -> values.
Drawer = Callable[[np.random.Generator, int, dict], np.ndarray]


def _categorical(col: CategoricalColumn) -> Drawer:
    # rng.choice(k, n, p=p) is cdf.searchsorted(rng.random(n), side="right") with this cdf
    # (numpy's own algorithm; tests/test_repository.py checks the two agree draw for draw).
    cdf = np.asarray(col.probabilities, dtype=np.float64).cumsum()
    cdf /= cdf[-1]
    labels = np.array(col.values, dtype=object)

    def draw(rng: np.random.Generator, n: int, scope: dict) -> np.ndarray:
        return labels[cdf.searchsorted(rng.random(n), side="right")]

    return draw


def _integer(col: IntegerColumn) -> Drawer:
    sample = col.distribution.sample
    return lambda rng, n, scope: sample(rng, n)


def _continuous(col: ContinuousColumn) -> Drawer:
    sample, clip, decimals = col.distribution.sample, col.clip, col.decimals

    def draw(rng: np.random.Generator, n: int, scope: dict) -> np.ndarray:
        x = sample(rng, n)
        if clip is not None:
            x = np.clip(x, clip[0], clip[1])
        return x.round(decimals) + 0.0

    return draw


class _Dependent:
    """A dependent column: its noise is drawn in table order, its values computed from the
    expression's inputs whenever asked (see :class:`_Later`)."""

    def __init__(self, col: DependentColumn, expr: Expression) -> None:
        self.noise_sd, self.clip, self.decimals = col.noise_sd, col.clip, col.decimals
        self.numeric = expr.kind == "numeric"
        self.expr = expr

    def noise(self, rng: np.random.Generator, n: int) -> np.ndarray | None:
        return rng.normal(0.0, self.noise_sd, n) if self.noise_sd > 0 else None

    def values(self, scope: Mapping[str, object], n: int, noise: np.ndarray | None) -> np.ndarray:
        x = self.expr.evaluate(scope, n, noise)
        if self.numeric:
            if self.clip is not None:
                x = np.clip(x, self.clip[0], self.clip[1])
            x = x.round(self.decimals) + 0.0
        return x


class _Later:
    """A dependent column of one table not computed yet: its drawer, its noise and its inputs
    (path values and columns drawn before it, as drawn; inputs that are themselves ``_Later``
    are computed first), then the missing-value mask and the row order to apply when served.

    It keeps its inputs, not the table's whole scope: the scope holds this column too, and
    that cycle kept every array of a table alive until the cyclic garbage collector ran."""

    __slots__ = ("_values", "drawer", "inputs", "mask", "n", "noise", "order")

    def __init__(self, drawer: _Dependent, noise: np.ndarray | None, scope: dict, n: int) -> None:
        # a valid Spec's expression names only path variables and earlier columns, which are in
        # the scope already and never replaced there
        self.inputs = {name: scope[name] for name in drawer.expr.names}
        self.drawer, self.noise, self.n = drawer, noise, n
        self.mask: np.ndarray | None = None
        self.order: np.ndarray | None = None
        self._values: np.ndarray | None = None

    def values(self) -> np.ndarray:
        """The values before missing values and sorting (what later expressions read)."""
        if self._values is None:
            env = {k: v.values() if isinstance(v, _Later) else v for k, v in self.inputs.items()}
            self._values = self.drawer.values(env, self.n, self.noise)
        return self._values

    def masked(self) -> np.ndarray:
        """The values with the missing-value mask applied (before sorting)."""
        x = self.values()
        return x if self.mask is None else _with_missing(x, self.mask)

    def served(self) -> np.ndarray:
        x = self.masked()
        return x if self.order is None else x[self.order]


def _with_missing(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``x`` with missing values where ``mask``: None in text columns, NaN in numeric ones
    (whose integers then become floats)."""
    if x.dtype == object:
        x = x.copy()
        x[mask] = None
        return x
    return np.where(mask, np.nan, x)


class _Identifiers:
    """Distinct identifiers: the prefix, then ``digits`` digits (no leading zero)."""

    def __init__(self, col: IdentifierColumn) -> None:
        self.low = 10 ** (col.digits - 1)
        self.prefix = col.prefix

    def numbers(self, rng: np.random.Generator, n: int, values: Mapping[str, str]) -> np.ndarray:
        return rng.choice(9 * self.low, n, replace=False) + self.low

    def text(self, numbers: np.ndarray) -> np.ndarray:
        prefix = self.prefix
        return np.array([f"{prefix}{i}" for i in numbers.tolist()], dtype=object)


class _Timestamps:
    """ISO 8601 UTC timestamps from the file's date path value (or a random day after the
    column's start), at a regular interval or sorted random times within ``n`` intervals."""

    def __init__(self, col: DatetimeColumn, date_variable: str | None) -> None:
        start = col.start.replace(tzinfo=None)
        self.date_variable = date_variable
        self.start = (start - _EPOCH) // dt.timedelta(seconds=1)
        self.time_of_day = start.hour * 3600 + start.minute * 60 + start.second
        self.interval = col.interval_seconds
        self.regular = col.regular

    def numbers(self, rng: np.random.Generator, n: int, values: Mapping[str, str]) -> np.ndarray:
        """Seconds since the epoch, ascending."""
        if self.date_variable is not None:
            day = dt.date.fromisoformat(values[self.date_variable]).toordinal()
            start = (day - _EPOCH.toordinal()) * 86400 + self.time_of_day
        else:
            start = self.start + int(rng.integers(0, 365)) * 86400
        if self.regular:
            offsets = np.arange(n, dtype=np.int64) * self.interval
        else:
            offsets = np.sort(rng.integers(0, n * self.interval, n))
        return start + offsets

    @staticmethod
    def text(seconds: np.ndarray) -> np.ndarray:
        stamps = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s")
        return np.char.add(stamps, "Z").astype(object)


_Numbered = _Identifiers | _Timestamps  # drawn as integers, served as text


class _Text:
    """A text column not formatted yet: its integers and how to format them."""

    def __init__(self, drawer: _Numbered, numbers: np.ndarray) -> None:
        self.drawer, self.numbers = drawer, numbers

    def take(self, order: np.ndarray) -> _Text:
        return _Text(self.drawer, self.numbers[order])

    def text(self) -> np.ndarray:
        return self.drawer.text(self.numbers)


class Columns(Mapping[str, np.ndarray]):
    """A file's columns by name, in table order, all read-only. Identifier and timestamp
    columns are formatted from their integers the first time they are read: most questions
    never read them, and formatting them is a large part of a file's cost."""

    def __init__(self, arrays: dict[str, np.ndarray | _Text | _Later], rows: int) -> None:
        self._arrays = arrays
        self.rows = rows
        for x in arrays.values():
            if isinstance(x, np.ndarray):
                x.setflags(write=False)

    def __getitem__(self, name: str) -> np.ndarray:
        x = self._arrays[name]
        if isinstance(x, _Text | _Later):
            x = x.text() if isinstance(x, _Text) else x.served()
            x.setflags(write=False)
            self._arrays[name] = x
        return x

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)


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
        self._path_kinds = {p.name: p.expression_kind for p in spec.path_variables}
        date_variable = next((p.name for p in spec.path_variables if p.kind == "date"), None)
        self._draws: list[tuple[str, Drawer | _Numbered | _Dependent]] = [
            (col.name, self._drawer(col, date_variable)) for col in spec.columns
        ]
        self._missing = [(c.name, c.missing_rate) for c in spec.columns if c.missing_rate > 0]
        # text columns an expression reads are formatted as they are drawn (never, in practice)
        used = set().union(*(e.names for e in self.expressions.values()))
        self._deferred = {
            name for name, drawer in self._draws
            if isinstance(drawer, _Numbered) and name not in used
            and name not in {m for m, _ in self._missing}
        }  # fmt: skip
        self._sort_by = spec.sort_by
        # An identifier or timestamp column without missing values sorts like its integer
        # draws (fixed-width digits; four-digit years), which argsort compares much faster.
        sort_col = None if spec.sort_by is None else spec.column(spec.sort_by)
        self._sort_by_number = (
            isinstance(sort_col, IdentifierColumn | DatetimeColumn) and not sort_col.missing_rate
        )

    def _drawer(self, col: Column, date_variable: str | None) -> Drawer | _Numbered | _Dependent:
        match col:
            case IdentifierColumn():
                return _Identifiers(col)
            case DatetimeColumn():
                return _Timestamps(col, date_variable)
            case CategoricalColumn():
                return _categorical(col)
            case IntegerColumn():
                return _integer(col)
            case ContinuousColumn():
                return _continuous(col)
            case DependentColumn():
                return _Dependent(col, self.expressions[col.name])
        raise TypeError(f"unknown column type {type(col).__name__}")

    def clean_columns(self, path: str, values: Mapping[str, str]) -> dict[str, np.ndarray]:
        """All columns before missing values and sorting (a NaN here is a domain NaN)."""
        cols, _, _, n = self._draw(path, values)
        return dict(Columns(cols, n))

    def _draw(
        self, path: str, values: Mapping[str, str]
    ) -> tuple[dict[str, np.ndarray | _Text | _Later], np.random.Generator, np.ndarray | None, int]:
        """The columns (text columns not formatted yet, dependent columns not computed yet),
        the file's generator (positioned after them), the sort key of a table sorted by an
        identifier or timestamp column (its integers) and the number of rows."""
        spec = self.spec
        rng = derive(spec.seed, "file", path, spec.spec_version)
        n = int(rng.integers(MIN_ROWS, MAX_ROWS + 1))
        # path values first, columns added as drawn (a column's name shadows nothing: the Spec
        # forbids duplicate names)
        scope: dict = {}
        for name, value in values.items():
            kind = self._path_kinds[name]
            if kind == "numeric":
                scope[name] = float(value)
            elif kind == "categorical":
                scope[name] = value
        cols: dict[str, np.ndarray | _Text | _Later] = {}
        key = None
        for name, drawer in self._draws:
            if isinstance(drawer, _Numbered):
                numbers = drawer.numbers(rng, n, values)
                if self._sort_by_number and name == self._sort_by:
                    key = numbers
                if name in self._deferred:
                    cols[name] = _Text(drawer, numbers)
                    continue
                x = drawer.text(numbers)
            elif isinstance(drawer, _Dependent):
                x = _Later(drawer, drawer.noise(rng, n), scope, n)
            else:
                x = drawer(rng, n, scope)
            cols[name] = scope[name] = x
        return cols, rng, key, n

    def columns(self, path: str, values: Mapping[str, str]) -> Columns:
        """The file's columns as served: missing values applied (NaN in numeric columns, whose
        integers then become floats; None in text columns), rows sorted."""
        cols, rng, key, n = self._draw(path, values)
        for name, rate in self._missing:
            mask = rng.random(n) < rate
            x = cols[name]
            if isinstance(x, _Later):
                x.mask = mask
            else:
                cols[name] = _with_missing(x, mask)  # type: ignore[arg-type]
        if self._sort_by is not None:
            by = cols[self._sort_by]
            by = by.masked() if isinstance(by, _Later) else by
            order = np.argsort(key if key is not None else by, kind="stable")
            cols = {k: self._sorted(v, order) for k, v in cols.items()}
        return Columns(cols, n)

    @staticmethod
    def _sorted(x: np.ndarray | _Text | _Later, order: np.ndarray) -> np.ndarray | _Text | _Later:
        if isinstance(x, _Text):
            return x.take(order)
        if isinstance(x, _Later):
            x.order = order
            return x
        return x[order]

    def table(self, path: str, values: Mapping[str, str]) -> pd.DataFrame:
        """The file's table as served (missing values applied, rows sorted)."""
        return pd.DataFrame(dict(self.columns(path, values)))
