"""Simulation sanity of a built Spec: does its Repository make data an analyst can study?

Checked on the clean rows (before missing values) of up to :data:`SAMPLE_FILES` data files,
taken evenly from the sorted file list, pooled with their path values:

- enough files (:data:`MIN_FILES`) and rows (:data:`MIN_ROWS`);
- finite values: at most :data:`MAX_NAN_SHARE` of any numeric column is a domain NaN (log of
  a negative number, division by zero, overflow) and no value exceeds :data:`MAX_ABS`;
- no constant dependent: at least two distinct values, none taking more than
  :data:`MAX_MODE_SHARE` of the rows;
- plausible range: the 5th and 95th percentiles of a numeric dependent lie within its stated
  typical range widened by the range's width on each side;
- a detectable effect: for each dependent, at least one variable its expression uses is
  associated with it at p < :data:`ALPHA` (Spearman for two numeric variables, Kruskal-Wallis
  for a numeric and a categorical one, chi-square of independence for two categorical ones);
- questions: :func:`isg_gym.qa.generate_questions` yields at least :data:`MIN_QUESTIONS` of
  :data:`QUESTION_SLOTS`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from isg_gym import stat_tests
from isg_gym.repository import Repository
from isg_gym.repository.tables import TableGenerator
from isg_gym.simulator.llm.parse import StageError
from isg_gym.spec.models import CategoricalColumn, DependentColumn, Spec

MIN_FILES = 4
MIN_ROWS = 200
SAMPLE_FILES = 24
MAX_NAN_SHARE = 0.05
MAX_ABS = 1e12
MAX_MODE_SHARE = 0.95
ALPHA = 1e-3
QUESTION_SLOTS = 8
MIN_QUESTIONS = 4


class SanityError(StageError):
    """The simulated data fail a check; ``retry`` is False when no new expression can help
    (the layout renders two files to one path, too few files)."""

    def __init__(self, message: str, retry: bool = True) -> None:
        super().__init__("sanity", message)
        self.retry = retry


def pooled_rows(repo: Repository) -> pd.DataFrame:
    """Clean rows of the sampled files with each file's path values as columns."""
    files = repo.data_files
    step = max(1, len(files) // SAMPLE_FILES)
    generator = TableGenerator(repo.spec)
    kinds = {p.name: p.expression_kind for p in repo.spec.path_variables}
    frames = []
    for path in files[::step][:SAMPLE_FILES]:
        values = repo.path_values(path)
        frame = pd.DataFrame(generator.clean_columns(path, values))
        for name, value in values.items():
            frame[name] = float(value) if kinds[name] == "numeric" else value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def _numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series)


def association(x: pd.Series, y: pd.Series) -> float:
    """p-value of an association between two columns (1.0 when it cannot be tested)."""
    keep = x.notna() & y.notna()
    x, y = x[keep], y[keep]
    if x.nunique() < 2 or y.nunique() < 2:
        return 1.0
    with np.errstate(all="ignore"):
        if _numeric(x) and _numeric(y):
            p = stat_tests.spearmanr(x.to_numpy(float), y.to_numpy(float))[1]
        elif _numeric(x) or _numeric(y):
            values, labels = (x, y) if _numeric(x) else (y, x)
            groups = [g.to_numpy(float) for _, g in values.groupby(labels.astype(str)) if len(g)]
            p = stat_tests.kruskal(*groups)[1] if len(groups) >= 2 else 1.0
        else:
            table = pd.crosstab(x.astype(str), y.astype(str))
            p = stat_tests.chi2_contingency(table.to_numpy())[1] if min(table.shape) >= 2 else 1.0
    return float(p) if math.isfinite(p) else 1.0


def _check_dependent(
    col: DependentColumn,
    y: pd.Series,
    rows: pd.DataFrame,
    inputs: frozenset[str],
    typical: tuple[float, float] | None,
) -> list[str]:
    problems = []
    present = y.dropna()
    counts = present.value_counts()
    if len(counts) < 2:
        value = counts.index[0] if len(counts) else "missing"
        return [f"{col.name} is constant ({value!r} in every row)"]
    if counts.iloc[0] > MAX_MODE_SHARE * len(present):
        problems.append(
            f"{col.name} is nearly constant: {counts.index[0]!r} in "
            f"{counts.iloc[0] / len(present):.0%} of the rows"
        )
    if _numeric(y) and typical is not None:
        low, high = typical
        width = high - low
        q05, q95 = np.quantile(present.to_numpy(float), [0.05, 0.95])
        if q05 < low - width or q95 > high + width:
            problems.append(
                f"{col.name} falls outside its typical range [{low:g}, {high:g}]: "
                f"90% of the values lie in [{q05:.4g}, {q95:.4g}]"
            )
    tests = {name: association(rows[name], y) for name in sorted(inputs)}
    if not any(p < ALPHA for p in tests.values()):
        shown = ", ".join(f"{n} (p={p:.2g})" for n, p in tests.items()) or "no variable"
        problems.append(
            f"{col.name} shows no detectable effect of {shown} at p < {ALPHA:g}: "
            "make its dependence stronger than its noise"
        )
    return problems


def check_spec(spec: Spec, typical: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Raise :class:`SanityError` naming every problem; else return a few figures."""
    try:
        repo = Repository(spec)
        files = repo.data_files
    except ValueError as exc:
        raise SanityError(f"the repository cannot be laid out: {exc}", retry=False) from None
    if len(files) < MIN_FILES:
        raise SanityError(f"only {len(files)} data files (at least {MIN_FILES})", retry=False)
    rows = pooled_rows(repo)
    if len(rows) < MIN_ROWS:
        raise SanityError(f"only {len(rows)} rows in the sampled files", retry=False)
    problems = []
    for name in rows.columns:
        series = rows[name]
        if not _numeric(series):
            continue
        nan_share = float(series.isna().mean())
        if nan_share > MAX_NAN_SHARE:
            problems.append(
                f"{name} is undefined (NaN: log of a non-positive number, division "
                f"by zero or overflow) in {nan_share:.0%} of the rows"
            )
        elif series.abs().max() > MAX_ABS:
            problems.append(f"{name} reaches {series.abs().max():.3g}, beyond {MAX_ABS:g}")
    expressions = TableGenerator(spec).expressions
    for col in spec.columns:
        if isinstance(col, DependentColumn):
            problems += _check_dependent(
                col, rows[col.name], rows, expressions[col.name].names, typical.get(col.name)
            )
    if problems:
        raise SanityError("; ".join(problems))
    from isg_gym.qa import generate_questions

    questions = generate_questions(repo, QUESTION_SLOTS)
    if len(questions) < MIN_QUESTIONS:
        raise SanityError(
            f"only {len(questions)} of {QUESTION_SLOTS} question slots yield a question",
            retry=False,
        )
    categorical = sum(isinstance(c, CategoricalColumn) for c in spec.columns)
    return {
        "files": len(files),
        "sampled_rows": len(rows),
        "questions": len(questions),
        "categorical_columns": categorical,
    }
