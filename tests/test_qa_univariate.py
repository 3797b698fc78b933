"""univariate_statistic: answers recomputed with plain pandas, reasons re-checked, variety."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from isg_gym.qa.base import Question, Reason
from isg_gym.qa.conditions import PathCondition, matching_files, present_values
from isg_gym.qa.sampling import make_question
from isg_gym.qa.types.univariate import UnivariateStatistic
from isg_gym.repository import Repository
from isg_gym.spec.models import column_kind

TYPE = "univariate_statistic"
SEEDS = range(150)
PER_REPO = 4  # slots per answerability per repository
NUMERIC = {"min", "max", "median", "mean", "std", "var"}


def _questions() -> list[tuple[Repository, Question]]:
    out = []
    for seed in SEEDS:
        repo = Repository.from_seed(seed)
        for index in range(PER_REPO):
            for answerable in (True, False):
                q = make_question(repo, TYPE, index, answerable)
                if q is not None:
                    assert q.answerable == answerable, q.id
                    out.append((repo, q))
    return out


@pytest.fixture(scope="module")
def questions() -> list[tuple[Repository, Question]]:
    return _questions()


def scope_files(repo: Repository, params: dict) -> list[str]:
    if params["scope"] == "file":
        return [params["file"]] if params["file"] in repo.data_files else []
    conds = [PathCondition(**c) for c in params["path_conditions"]]
    return matching_files(repo, conds)


def row_mask(df: pd.DataFrame, cond: dict) -> pd.Series:
    s, op, v = df[cond["column"]], cond["op"], cond["value"]
    match op:
        case "eq":
            m = s == v
        case "ne":
            m = s != v
        case "in":
            m = s.isin(v)
        case "gt":
            m = s > v
        case "lt":
            m = s < v
        case "ge":
            m = s >= v
        case "le":
            m = s <= v
        case "between":
            m = (s >= v) & (s <= cond["high"])
        case _:
            raise AssertionError(op)
    return m.fillna(False).astype(bool) & s.notna()


def target_values(repo: Repository, q: Question) -> pd.Series:
    files = scope_files(repo, q.params)
    df = pd.concat([repo.table(f) for f in files], ignore_index=True)
    keep = pd.Series(True, index=df.index)
    for cond in q.params["row_conditions"]:
        keep &= row_mask(df, cond)
    return df.loc[keep, q.params["column"]].dropna()


def pandas_statistic(statistic: str, s: pd.Series):
    match statistic:
        case "mode":
            counts = s.astype(str).value_counts()
            return sorted(counts[counts == counts.max()].index)[0]
        case "n_distinct":
            return int(s.nunique())
        case "std":
            return float(s.astype(float).std(ddof=1))
        case "var":
            return float(s.astype(float).var(ddof=1))
    return float(getattr(s.astype(float), statistic)())


def test_answers_recomputed_with_pandas(questions):
    bad = []
    n = 0
    for repo, q in questions:
        if not q.answerable:
            continue
        n += 1
        stat = q.params["statistic"]
        assert q.evidence == tuple(scope_files(repo, q.params)), q.id
        want = pandas_statistic(stat, target_values(repo, q))
        if q.answer_kind == "float":
            assert isinstance(q.answer, float) and 2 <= q.sig_figs <= 5, q.id
            ok = math.isclose(q.answer, want, rel_tol=1e-9, abs_tol=1e-12)
        else:
            assert q.sig_figs is None, q.id
            assert type(q.answer) is (int if stat == "n_distinct" else str), q.id
            ok = q.answer == want
        if not ok:
            bad.append((q.id, q.answer, want))
    assert n > 400
    assert not bad, bad[:20]


def test_answerable_structure(questions):
    for repo, q in questions:
        if not q.answerable:
            continue
        p = q.params
        col = repo.spec.column(p["column"])
        filters = [c["column"] for c in p["row_conditions"]]
        assert p["column"] not in filters, q.id
        assert len(filters) == len(set(filters)) <= 3, q.id
        if col.role in ("identifier", "datetime"):  # v2: n_distinct of any column
            assert p["statistic"] == "n_distinct", q.id
        if p["statistic"] in NUMERIC:
            assert column_kind(col) == "numeric", q.id
        if p["statistic"] == "mode":
            assert column_kind(col) == "categorical" and col.role != "datetime", q.id
        if p["statistic"] in ("std", "var"):
            assert q.answer > 0, q.id


def absent_value(repo: Repository, cond: dict) -> bool:
    """``is`` a value no file has, or ``is one of`` values no file has (v2)."""
    if cond["op"] not in ("is", "is_one_of"):
        return False
    var = next(v for v in repo.spec.path_variables if v.name == cond["variable"])
    values = [cond["value"]] if cond["op"] == "is" else cond["value"]
    return not set(values) & set(present_values(repo, var))


def test_unanswerable_reasons_hold(questions):
    for repo, q in questions:
        if q.answerable:
            continue
        p, reason = q.params, Reason(q.reason)
        assert q.answer is None, q.id
        if reason is Reason.NO_SUCH_FILE:
            assert p["scope"] == "file" and p["file"] not in repo.data_files, q.id
            continue
        if reason is Reason.NO_SUCH_PATH_VALUE:
            assert any(absent_value(repo, c) for c in p["path_conditions"]), q.id
            assert not scope_files(repo, p), q.id
            continue
        if reason is Reason.NO_MATCHING_FILES:
            assert p["scope"] == "files" and not scope_files(repo, p), q.id
            continue
        assert scope_files(repo, p), q.id  # the scope is fine for the other reasons
        if reason is Reason.UNRECORDED_VARIABLE:
            assert p["column"] in {u.name for u in repo.spec.unrecorded}, q.id
            assert p["column"] not in repo.table(repo.data_files[0]).columns, q.id
            label = next(u.label for u in repo.spec.unrecorded if u.name == p["column"])
            assert label in q.text, q.id
            continue
        values = target_values(repo, q)
        col = repo.spec.column(p["column"])
        if reason is Reason.NO_MATCHING_ROWS:
            assert values.empty and p["row_conditions"], q.id
        elif reason is Reason.TOO_FEW_ROWS:
            assert p["statistic"] in ("std", "var") and len(values) == 1, q.id
            assert column_kind(col) == "numeric", q.id
        elif reason is Reason.CATEGORICAL_COLUMN:
            assert p["statistic"] in NUMERIC and len(values) >= 2, q.id
            assert column_kind(col) == "categorical", q.id
            assert not pd.api.types.is_numeric_dtype(values), q.id
        else:
            raise AssertionError(f"{q.id}: unexpected reason {reason}")
        assert p["column"] not in [c["column"] for c in p["row_conditions"]], q.id


def test_variety(questions):
    reasons = Counter(q.reason for _, q in questions if not q.answerable)
    stats = Counter(q.params["statistic"] for _, q in questions if q.answerable)
    scopes = Counter(q.params["scope"] for _, q in questions if q.answerable)
    n_conds = Counter(len(q.params["row_conditions"]) for _, q in questions if q.answerable)
    sig = Counter(q.sig_figs for _, q in questions if q.sig_figs is not None)
    openings = Counter(re.match(r"\w+", q.text).group() for _, q in questions)
    assert set(reasons) == {str(r) for r in UnivariateStatistic.reasons}, reasons
    assert set(stats) == {"mode", *NUMERIC, "n_distinct"}, stats
    assert set(scopes) == {"file", "files"}, scopes
    assert set(n_conds) == {0, 1, 2, 3}, n_conds
    assert set(sig) == {2, 3, 4, 5}, sig
    assert len(openings) >= 4, openings  # What / Compute / Considering / In / Across


def test_text_states_the_rules(questions):
    for _, q in questions:
        p = q.params
        assert f'"{p["column"]}"' in q.text, q.id
        assert "Ignore missing values." in q.text, q.id
        if q.sig_figs is not None:
            assert f"to {q.sig_figs} significant figures" in q.text, q.id
        if p["statistic"] in ("std", "var"):
            assert "(sample, n - 1 denominator)" in q.text, q.id
        if p["statistic"] == "mode":
            assert "alphabetically first" in q.text, q.id
        for cond in p["row_conditions"]:
            assert f'"{cond["column"]}"' in q.text, q.id
        if p["scope"] == "file":
            assert f"`{p['file']}`" in q.text, q.id


def test_deterministic():
    for seed in (3, 41, 118):
        a, b = Repository.from_seed(seed), Repository.from_seed(seed)
        for index in range(5):
            for answerable in (True, False):
                qa = make_question(a, TYPE, index, answerable)
                qb = make_question(b, TYPE, index, answerable)
                assert (qa is None) == (qb is None)
                if qa is not None:
                    assert qa.to_dict() == qb.to_dict()


def test_answers_are_plain_python(questions):
    for _, q in questions:
        assert not isinstance(q.answer, np.generic), q.id
