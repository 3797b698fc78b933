"""Whether an effect shows in the served rows: one association test per kind of pair, at a
fixed level.

- numeric factor, numeric outcome: Spearman's rank correlation (a monotone effect is detectable
  when p < alpha with the program's sign); for a "depends on" effect also Kruskal-Wallis across
  the factor's quintile bins (its distinct values when it has at most 10), either test;
- categorical factor, numeric outcome: Kruskal-Wallis across the factor's levels;
- numeric factor, categorical outcome: Kruskal-Wallis of the factor across the outcome's labels;
- categorical factor, categorical outcome: the chi-square test of independence (no continuity
  correction) on the contingency table.

Rows where either value is missing are left out. A test that cannot run (fewer than two groups
or values, a constant column) gives p = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from isg_gym import stat_tests

ALPHA = 0.01
MAX_DISTINCT_AS_GROUPS = 10
BINS = 5


@dataclass(frozen=True)
class Association:
    """One test's result: its name, statistic (Spearman's rho for the rank test) and p-value."""

    test: str
    statistic: float
    pvalue: float


def _complete(x: pd.Series, y: pd.Series) -> tuple[pd.Series, pd.Series]:
    keep = x.notna() & y.notna()
    return x[keep], y[keep]


def _kruskal(groups: list[np.ndarray]) -> tuple[float, float]:
    groups = [g for g in groups if len(g)]
    if len(groups) < 2:
        return 0.0, 1.0
    try:
        h, p = stat_tests.kruskal(*groups)
    except ValueError:  # an empty group
        return 0.0, 1.0
    return h, p if np.isfinite(p) else 1.0


def _grouped(values: pd.Series, by: pd.Series) -> list[np.ndarray]:
    """``values`` split by the distinct values of ``by`` (in order of appearance)."""
    codes, _ = pd.factorize(by.astype(str))
    order = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[order])) + 1
    return np.split(values.to_numpy(dtype=float)[order], cuts)


def spearman(x: pd.Series, y: pd.Series) -> Association:
    x, y = _complete(x, y)
    if len(x) < 3 or x.nunique() < 2 or y.nunique() < 2:
        return Association("spearman", 0.0, 1.0)
    rho, p = stat_tests.spearmanr(x.to_numpy(dtype=float), y.to_numpy(dtype=float))
    return Association("spearman", rho, p if np.isfinite(p) else 1.0)


def kruskal_bins(x: pd.Series, y: pd.Series) -> Association:
    """Kruskal-Wallis of a numeric ``y`` across bins of a numeric ``x``."""
    x, y = _complete(x, y)
    if x.nunique() <= MAX_DISTINCT_AS_GROUPS:
        bins = x
    else:
        edges = np.unique(np.quantile(x.to_numpy(dtype=float), np.linspace(0, 1, BINS + 1)))
        bins = pd.Series(np.searchsorted(edges[1:-1], x.to_numpy(dtype=float), side="right"),
                         index=x.index)  # fmt: skip
    h, p = _kruskal(_grouped(y, bins))
    return Association("kruskal_bins", h, p)


def kruskal_levels(values: pd.Series, levels: pd.Series) -> Association:
    """Kruskal-Wallis of numeric ``values`` across the levels of a categorical variable."""
    values, levels = _complete(values, levels)
    h, p = _kruskal(_grouped(values, levels))
    return Association("kruskal", h, p)


def chi_square(x: pd.Series, y: pd.Series) -> Association:
    x, y = _complete(x, y)
    table = pd.crosstab(x.astype(str), y.astype(str))
    if table.shape[0] < 2 or table.shape[1] < 2:
        return Association("chi_square", 0.0, 1.0)
    statistic, p = stat_tests.chi2_contingency(table.to_numpy(), correction=False)
    return Association("chi_square", statistic, p if np.isfinite(p) else 1.0)


def associations(x: pd.Series, y: pd.Series, x_numeric: bool, y_numeric: bool) -> list[Association]:
    """The tests of the module docstring for factor ``x`` and outcome ``y`` (both numeric:
    Spearman, then Kruskal-Wallis across bins)."""
    if x_numeric and y_numeric:
        return [spearman(x, y), kruskal_bins(x, y)]
    if y_numeric:
        return [kruskal_levels(y, x)]
    if x_numeric:
        return [kruskal_levels(x, y)]
    return [chi_square(x, y)]


def detectable(
    tests: list[Association], relation: str, directional: bool, alpha: float = ALPHA
) -> bool:
    """Whether an effect with the program's ``relation`` shows in these tests at ``alpha``."""
    if relation == "no effect":
        return False
    first = tests[0]
    if directional and relation in ("increases", "decreases"):
        sign = 1.0 if relation == "increases" else -1.0
        return first.pvalue < alpha and first.statistic * sign > 0
    return any(t.pvalue < alpha for t in tests)
