"""The classical tests behind the gold answers, computed with numpy and ``scipy.special``.

``scipy.stats`` costs about 50 MB resident and 0.5-1 s to import, and the environment needs
seven of its functions. Each function here follows the arithmetic of the ``scipy.stats`` function
it names (scipy 1.17, two-sided, no NaN in the input), step for step, so it returns the same
float bits; ``tests/test_stat_tests.py`` compares both on hundreds of inputs per function. The
question texts still name ``scipy.stats``: that is what an agent calls, and what these equal.

Each function returns ``(statistic, pvalue)`` as Python floats; inputs are 1-D float arrays
without NaN (callers drop missing rows first). A constant input gives NaN, as in scipy.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = [
    "chi2_contingency",
    "expected_freq",
    "kruskal",
    "linregress",
    "pearsonr",
    "rankdata",
    "spearmanr",
    "ttest_welch",
]


def _two_sided_t(t: float | np.ndarray, df: float | np.ndarray) -> float:
    """``2 * P(T > |t|)`` for Student's t with ``df`` degrees of freedom."""
    return float(2 * special.stdtr(df, -np.abs(t)))


def _floats(values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    return arr if arr.dtype.kind == "f" else arr.astype(np.float64)


def pearsonr(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.pearsonr(x, y)``: the correlation coefficient and its p-value."""
    x, y = _floats(x), _floats(y)
    n = len(x)
    if n < 2 or len(y) != n:
        raise ValueError(f"pearsonr needs two arrays of the same length >= 2, got {n}, {len(y)}")
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan"), float("nan")
    xmean = np.mean(x, axis=-1, keepdims=True)
    ymean = np.mean(y, axis=-1, keepdims=True)
    xm, ym = x - xmean, y - ymean
    xmax = np.max(np.abs(xm), axis=-1, keepdims=True)
    ymax = np.max(np.abs(ym), axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        normxm = xmax * np.linalg.norm(xm / xmax, ord=2, axis=-1, keepdims=True)
        normym = ymax * np.linalg.norm(ym / ymax, ord=2, axis=-1, keepdims=True)
        r = np.vecdot(xm / normxm, ym / normym, axis=-1)
    r = np.clip(r, -1.0, 1.0)
    if n == 2:
        return float(np.round(r)), 1.0
    ab = np.asarray(n / 2 - 1, dtype=r.dtype)
    pvalue = 2 * special.betaincc(ab, ab, (np.abs(r) + 1) / 2)  # r ~ Beta(ab, ab) on [-1, 1]
    return float(r), float(pvalue)


def rankdata(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; tied values share the mean of their ranks)."""
    return _ranks(values)[0]


def _ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks of ``values``, and the size of each run of tied values (in sorted order)."""
    values = np.asarray(values)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    n = len(ordered)
    starts = np.flatnonzero(np.concatenate([[True], ordered[:-1] != ordered[1:]]))
    counts = np.diff(starts, append=n)
    mid = (starts + 1).astype(np.float64) + (counts.astype(np.float64) - 1) / 2
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = np.repeat(mid, counts)
    return ranks, counts


def spearmanr(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.spearmanr(x, y)``: the rank correlation and its p-value."""
    a = np.column_stack((np.asarray(x), np.asarray(y)))
    n = a.shape[0]
    if n <= 1 or (a[:, 0][0] == a[:, 0]).all() or (a[:, 1][0] == a[:, 1]).all():
        return float("nan"), float("nan")
    ranked = np.column_stack((rankdata(a[:, 0]), rankdata(a[:, 1])))
    rs = np.corrcoef(ranked, rowvar=False)[1, 0]
    dof = n - 2
    with np.errstate(divide="ignore"):
        t = rs * np.sqrt(np.clip(dof / ((rs + 1.0) * (1.0 - rs)), 0, None))
    return float(rs), _two_sided_t(t, dof)


def linregress(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.linregress(x, y)``: the slope of y on x and the p-value of no slope."""
    x, y = np.asarray(x), np.asarray(y)
    n = len(x)
    if n == 0 or (np.amax(x) == np.amin(x) and n > 1):
        raise ValueError("linregress needs at least one row and x values that are not all equal")
    ssxm, ssxym, _, ssym = np.cov(x, y, bias=True).flat
    if ssxm == 0.0 or ssym == 0.0:
        r = np.nan if ssxym == 0 else 0.0
    else:
        r = min(max(ssxym / np.sqrt(ssxm * ssym), -1.0), 1.0)
    slope = ssxym / ssxm
    if n == 2:
        return float(slope), 1.0 if y[0] == y[1] else 0.0
    tiny = 1.0e-20
    df = n - 2
    t = r * np.sqrt(df / ((1.0 - r + tiny) * (1.0 + r + tiny)))
    return float(slope), _two_sided_t(t, df)


def _variance(a: np.ndarray) -> np.ndarray:
    """The sample variance (ddof 1) as ``scipy.stats`` computes it."""
    n = np.asarray(a.shape[-1], dtype=a.dtype)
    var = np.mean((a - np.mean(a, axis=-1, keepdims=True)) ** 2, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        var *= n / (n - 1)
    return var


def ttest_welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.ttest_ind(a, b, equal_var=False)``: Welch's t and its p-value."""
    a, b = _floats(a), _floats(b)
    if a.size == 0 or b.size == 0:
        return float("nan"), float("nan")
    n1, n2 = a.shape[-1], b.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        vn1, vn2 = _variance(a) / n1, _variance(b) / n2
        df = (vn1 + vn2) ** 2 / (vn1**2 / (n1 - 1) + vn2**2 / (n2 - 1))
        df = np.where(np.isnan(df), 1.0, df)
        t = np.divide(np.mean(a, axis=-1) - np.mean(b, axis=-1), np.sqrt(vn1 + vn2))
    return float(t), _two_sided_t(t, np.asarray(df, dtype=t.dtype))


def expected_freq(observed: np.ndarray) -> np.ndarray:
    """``scipy.stats.contingency.expected_freq`` of a two-way table."""
    observed = np.asarray(observed, dtype=np.float64)
    if observed.ndim != 2:
        raise ValueError(f"expected_freq takes a two-way table, got {observed.ndim} dimensions")
    rows = observed.sum(axis=1, keepdims=True)
    cols = observed.sum(axis=0, keepdims=True)
    return rows * cols / observed.sum()


def chi2_contingency(observed: np.ndarray, correction: bool = True) -> tuple[float, float]:
    """``scipy.stats.chi2_contingency(observed, correction)``: Pearson's chi-square of
    independence of a two-way table (Yates' correction when ``correction`` and dof is 1)."""
    observed = np.asarray(observed)
    if np.any(observed < 0) or observed.size == 0:
        raise ValueError("chi2_contingency needs a non-empty table of non-negative counts")
    expected = expected_freq(observed)
    if np.any(expected == 0):
        raise ValueError("chi2_contingency: a row or column of the table sums to zero")
    dof = expected.size - sum(expected.shape) + expected.ndim - 1
    if dof == 0:
        return 0.0, 1.0
    if dof == 1 and correction:
        diff = expected - observed
        observed = observed + np.minimum(0.5, np.abs(diff)) * np.sign(diff)
    f_obs = np.asarray(observed, dtype=np.float64)
    stat = np.sum((f_obs - expected) ** 2 / expected, axis=None)
    return float(stat), float(special.chdtrc(np.float64(dof), stat))


def kruskal(*groups: np.ndarray) -> tuple[float, float]:
    """``scipy.stats.kruskal(*groups)``: the Kruskal-Wallis H (tie-corrected) and its p-value."""
    if len(groups) < 2:
        raise ValueError("kruskal needs at least two groups")
    samples = [_floats(g) for g in groups]
    sizes = [len(s) for s in samples]
    if min(sizes) < 1:
        raise ValueError("kruskal: a group is empty")
    alldata = np.concatenate(samples)
    total = sum(sizes)
    ranked, counts = _ranks(alldata)
    ties = 1 - np.sum(counts.astype(np.float64) ** 3 - counts) / (total**3 - total)
    bounds = np.cumsum([0, *sizes])
    ssbn = sum(np.sum(ranked[bounds[i] : bounds[i + 1]]) ** 2 / sizes[i] for i in range(len(sizes)))
    h = 12.0 / (total * (total + 1)) * ssbn - 3 * (total + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.float64(h) / ties
    return float(h), float(special.chdtrc(np.float64(len(sizes) - 1), h))
