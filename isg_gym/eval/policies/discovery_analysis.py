"""The scripted analyst's analysis, as code that runs in the sandbox (sent as source text by
:mod:`isg_gym.eval.policies.discovery`, never run by the host on an agent's behalf).

It loads every data file under ``/data`` (the README's layout gives the path variables),
then for every outcome and every other recorded variable:

- a variable that is not an outcome (a column or a path variable; the variables of a design
  are set independently of one another) is tested marginally: Spearman's rank correlation for
  a numeric factor and outcome, Kruskal-Wallis across levels or labels when one is categorical.
  A numeric effect is "depends on" when a quadratic fit is clearly curved and turns inside the
  factor's range, else it follows the sign of the rank correlation;
- an earlier outcome (outcomes are listed in the order they are computed; a later one cannot
  drive an earlier one) is tested on residuals: both are regressed on the design variables and
  the outcomes listed before the factor (numeric ones in quantile bins, categorical ones as
  indicators), and the residuals are rank-correlated, so that a shared cause does not count.

Each result is ``{"outcome", "factor", "relation", "p"}``; effects at ``p < alpha`` are
claimed. Repositories with more than ``max_rows`` rows are analysed on a fixed random sample of
that many rows.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from isg_gym.eval.policies.oracle import sb_data_files, sb_read


def sd_layout(layout: dict[str, Any]) -> re.Pattern:
    """A regex over data-file paths with one group per path variable (``layout``: the README's
    template, each variable's style and value pattern)."""
    template = layout["template"]
    parts = re.split(r"(\{[a-z][a-z0-9]*\})", template)
    out = []
    for part in parts:
        if part.startswith("{") and part.endswith("}"):
            short = part[1:-1]
            style, value = layout["styles"][short], layout["values"][short]
            token = style.replace("{name}", re.escape(short))
            out.append(token.replace("{val}", f"(?P<{short}>{value})"))
        else:
            out.append(re.escape(part))
    return re.compile("^" + "".join(out) + "$")


def sd_load(layout: dict[str, Any]) -> pd.DataFrame:
    """Every data file's rows, with one column per path variable (named by its placeholder;
    numeric when every value is a number and the variable is not a date)."""
    pattern = sd_layout(layout)
    frames = []
    for path in sb_data_files():
        match = pattern.match(path)
        if match is None:
            raise ValueError(f"path {path!r} does not match the layout {pattern.pattern}")
        frame = sb_read(path)
        for short, value in match.groupdict().items():
            frame[layout["columns"][short]] = value
        frames.append(frame)
    data = pd.concat(frames, ignore_index=True)
    for short, column in layout["columns"].items():
        if short in layout["dates"]:
            continue
        as_number = pd.to_numeric(data[column], errors="coerce")
        if as_number.notna().all():
            data[column] = as_number
    return data


def sd_is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def sd_kruskal(values: pd.Series, groups: pd.Series) -> float:
    parts = [g.to_numpy(dtype=float) for _, g in values.groupby(groups.astype(str)) if len(g)]
    if len(parts) < 2:
        return 1.0
    try:
        return float(stats.kruskal(*parts).pvalue)
    except ValueError:
        return 1.0


def sd_shape(x: np.ndarray, y: np.ndarray, alpha: float) -> str | None:
    """ "depends on" when a quadratic fit is curved (p < alpha) and its fitted curve over the
    1st-99th percentiles of ``x`` moves against its main direction by over 10%, else None."""
    if len(np.unique(x)) < 3:
        return None
    z = (x - x.mean()) / (x.std() or 1.0)
    design = np.column_stack([np.ones_like(z), z, z * z])
    coef, *_ = np.linalg.lstsq(design.T @ design, design.T @ y, rcond=None)
    resid = y - design @ coef
    dof = max(len(y) - 3, 1)
    cov = np.linalg.pinv(design.T @ design) * (resid @ resid) / dof
    t = coef[2] / np.sqrt(max(cov[2, 2], 1e-300))
    if 2 * stats.t.sf(abs(t), dof) >= alpha:
        return None
    grid = np.linspace(*np.quantile(z, [0.01, 0.99]), 25)
    steps = np.diff(coef[1] * grid + coef[2] * grid * grid)
    rise, fall = steps[steps > 0].sum(), -steps[steps < 0].sum()
    return "depends on" if min(rise, fall) > 0.1 * (rise + fall) else None


def sd_block(column: pd.Series, numeric: bool) -> np.ndarray:
    """Control columns of one variable (NaN rows where it is missing): a numeric one
    standardised plus indicators of its quantile bins (deciles), a categorical one as
    indicators of its levels (the first left out)."""
    missing = column.isna().to_numpy()
    parts = []
    if numeric and column.nunique() > 10:
        x = column.to_numpy(dtype=float)
        parts.append(((x - np.nanmean(x)) / (np.nanstd(x) or 1.0))[:, None])
        edges = np.unique(np.nanquantile(x, np.linspace(0, 1, 11)))[1:-1]
        codes = np.searchsorted(edges, x, side="right")
    else:
        codes = pd.factorize(column.astype(str))[0]
    levels = np.unique(codes[~missing])
    parts.append((codes[:, None] == levels[None, 1:]).astype(float))
    block = np.concatenate(parts, axis=1)
    block[missing] = np.nan
    return block


def sd_residual(values: np.ndarray, controls: list[np.ndarray]) -> np.ndarray:
    """``values`` minus their least-squares fit on the control blocks (rows complete)."""
    design = np.concatenate([np.ones((len(values), 1)), *controls], axis=1)
    coef, *_ = np.linalg.lstsq(design.T @ design, design.T @ values, rcond=None)
    return values - design @ coef


def sd_relation(x: pd.Series, y: pd.Series, nx: bool, ny: bool, alpha: float):
    """The relation and p-value of ``x`` to ``y`` (rows complete)."""
    if len(x) < 10 or x.nunique() < 2 or y.nunique() < 2:
        return None, 1.0
    if nx and ny:
        a, b = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
        res = stats.spearmanr(a, b)
        p = float(res.pvalue)
        if sd_shape(a, b, alpha) is not None:
            bins = pd.qcut(x.rank(method="first"), 5, labels=False) if x.nunique() > 10 else x
            return "depends on", min(p, sd_kruskal(y, bins))
        return ("increases" if res.statistic > 0 else "decreases"), p
    if ny:
        return "depends on", sd_kruskal(y, x)
    if nx:
        return "depends on", sd_kruskal(x, y)
    table = pd.crosstab(x.astype(str), y.astype(str))
    if min(table.shape) < 2:
        return None, 1.0
    return "depends on", float(stats.chi2_contingency(table, correction=False).pvalue)


def sd_adjusted(data, y, x, controls, blocks, numeric, alpha):
    """The relation of ``x`` to ``y`` after the ``controls`` are regressed out of ``y`` (and
    of a numeric ``x``; a categorical ``x`` is tested across its levels)."""
    if not controls:
        rows = data[[x, y]].dropna()
        return sd_relation(rows[x], rows[y], numeric[x], numeric[y], alpha)
    keep = data[[x, y]].notna().all(axis=1).to_numpy().copy()
    for c in controls:
        keep &= ~np.isnan(blocks[c]).any(axis=1)
    if keep.sum() < 50:
        return None, 1.0
    parts = [blocks[c][keep] for c in controls]
    xs = data[x][keep].reset_index(drop=True)
    ys = data[y][keep].reset_index(drop=True)
    if numeric[y]:
        ys = pd.Series(sd_residual(ys.to_numpy(dtype=float), parts))
        if numeric[x] and xs.nunique() > 10:
            xs = pd.Series(sd_residual(xs.to_numpy(dtype=float), parts))
    elif numeric[x]:
        xs = pd.Series(sd_residual(xs.to_numpy(dtype=float), parts))
    else:
        strata = data[controls][keep].astype(str).agg("|".join, axis=1).reset_index(drop=True)
        return "depends on", sd_stratified_chi_square(xs, ys, strata)
    return sd_relation(xs, ys, numeric[x], numeric[y], alpha)


def sd_stratified_chi_square(x: pd.Series, y: pd.Series, strata: pd.Series) -> float:
    """p-value of independence of two categorical variables within strata: the chi-square
    statistics and degrees of freedom of the strata's tables, summed."""
    xc, yc, sc = (pd.factorize(v.astype(str))[0] for v in (x, y, strata))
    shape = (sc.max() + 1, xc.max() + 1, yc.max() + 1)
    counts = np.bincount(np.ravel_multi_index((sc, xc, yc), shape), minlength=np.prod(shape))
    counts = counts.reshape(shape).astype(float)
    rows, cols = counts.sum(axis=2), counts.sum(axis=1)
    n = counts.sum(axis=(1, 2))
    expected = rows[:, :, None] * cols[:, None, :] / np.maximum(n, 1)[:, None, None]
    cells = expected > 0
    total = float((((counts - expected) ** 2)[cells] / expected[cells]).sum())
    dof = int((((rows > 0).sum(axis=1) - 1) * ((cols > 0).sum(axis=1) - 1)).clip(0).sum())
    return float(stats.chi2.sf(total, dof)) if dof else 1.0


def sd_analyse(data: pd.DataFrame, plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (outcome, factor) result of the module docstring."""
    outcomes, design, paths = plan["outcomes"], plan["design"], plan["paths"]
    alpha = plan["alpha"]
    if len(data) > plan["max_rows"]:  # the tests keep their power; the time stays bounded
        data = data.sample(plan["max_rows"], random_state=0).reset_index(drop=True)
    numeric = {name: sd_is_numeric(data[name]) for name in [*outcomes, *design]}
    blocks = {name: sd_block(data[name], numeric[name]) for name in [*outcomes, *design]}
    out: list[dict[str, Any]] = []
    found: dict[str, set[str]] = {}  # outcome -> the variables found to affect it
    for i, y in enumerate(outcomes):
        found[y] = set()
        for x in design:
            others = [p for p in paths if p != x] if x in paths else []
            relation, p = sd_adjusted(data, y, x, others, blocks, numeric, alpha)
            out.append({"outcome": y, "factor": x, "relation": relation, "p": p})
            if relation is not None and p < alpha:
                found[y].add(x)
        for j, d in enumerate(outcomes[:i]):
            controls = sorted((found[y] | found[d]) - {d}, key=[*design, *outcomes].index)
            controls = [c for c in controls if c in design or c in outcomes[:j]]
            relation, p = sd_adjusted(data, y, d, controls, blocks, numeric, alpha)
            out.append({"outcome": y, "factor": d, "relation": relation, "p": p})
            if relation is not None and p < alpha:
                found[y].add(d)
    return out
