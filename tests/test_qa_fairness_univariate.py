"""Fairness and robust gold of univariate_statistic (question generator v2) over 200 repositories.

Nothing visible in a question's text may predict its answerability: for answerable and
unanswerable questions, the distributions of row-condition operators, threshold precision,
numbers of row and path conditions, path operators, single-file share, statistic, target kind,
vacuous / out-of-range thresholds and negative thresholds must agree. The tolerance is a
total-variation distance (TVD) below 0.1: with 400-700 draws per side over 2-9 categories, the
sampling noise of the TVD between two samples of ONE distribution is about 0.02-0.06, while the
v1 generator's tells (e.g. impossible conditions only ever "greater than" / "less than", one
or two plain "is" path conditions) give 0.2-0.6. Gold answers are re-checked against the rules
(>= 10 values behind 4-5 significant figures, a mode leading by >= 2, no answer value above 30%
of a statistic's answerable questions), recomputed from the repository tables.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from functools import cache

import numpy as np
import pandas as pd
import pytest
from test_qa_univariate import scope_files, target_values

from isg_gym.qa.base import Question, Reason
from isg_gym.qa.conditions import THRESHOLD_DIGITS, exact_num, num, present_values
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO, make_question
from isg_gym.repository import Repository
from isg_gym.spec.models import column_kind

TYPE = "univariate_statistic"
SEEDS = range(3000, 3200)
SLOTS = 2
TOLERANCE = 0.1
NOMINAL = DEFAULT_UNANSWERABLE_RATIO
THRESHOLD_OPS = ("gt", "lt", "ge", "le", "between")


@cache
def generated() -> tuple[tuple[Repository, Question, Question | None], ...]:
    """(repository, answerable question or None, unanswerable question or None) per slot."""
    out = []
    for seed in SEEDS:
        repo = Repository.from_seed(seed)
        for index in range(SLOTS):
            out.append(
                (
                    repo,
                    make_question(repo, TYPE, index, True),
                    make_question(repo, TYPE, index, False),
                )
            )
    return tuple(out)


def pairs(answerable: bool) -> list[tuple[Repository, Question]]:
    return [(r, a if answerable else u) for r, a, u in generated() if (a if answerable else u)]


def tvd(a: Counter, b: Counter) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a[k] / na - b[k] / nb) for k in set(a) | set(b))


def per_question(feature) -> tuple[Counter, Counter]:
    return tuple(Counter(feature(r, q) for r, q in pairs(ans)) for ans in (True, False))


def per_condition(feature) -> tuple[Counter, Counter]:
    out = []
    for ans in (True, False):
        out.append(
            Counter(feature(r, q, c) for r, q in pairs(ans) for c in q.params["row_conditions"])
        )
    return tuple(out)


def sig_digits(x: float) -> int:
    digits = exact_num(x).lstrip("-").replace(".", "").lstrip("0")
    return len(digits.rstrip("0")) if "." not in exact_num(x) else len(digits)


def kind(repo: Repository, name: str) -> str:
    if name not in {c.name for c in repo.spec.columns}:
        return "unrecorded"
    col = repo.spec.column(name)
    if col.role in ("identifier", "datetime"):
        return col.role
    return column_kind(col)


def observed(repo: Repository, q: Question, column: str) -> np.ndarray:
    files = scope_files(repo, q.params) or repo.data_files[:1]
    return pd.concat([repo.table(f)[column] for f in files]).dropna().to_numpy(dtype=float)


def outside(repo: Repository, q: Question, cond: dict) -> str:
    """Where a threshold lies against the scope's observed values of its column."""
    if cond["op"] not in THRESHOLD_OPS:
        return "label"
    x = observed(repo, q, cond["column"])
    ends = [cond["value"]] + ([cond["high"]] if cond["op"] == "between" else [])
    if x.size == 0:
        return "no data"
    return "outside" if all(e < x.min() or e > x.max() for e in ends) else "inside"


FEATURES_PER_QUESTION = {
    "statistic": lambda r, q: q.params["statistic"],
    "sig_figs": lambda r, q: q.sig_figs,
    "row conditions": lambda r, q: len(q.params["row_conditions"]),
    "path conditions": lambda r, q: (
        -1 if q.params["scope"] == "file" else len(q.params["path_conditions"])
    ),
    "target kind": lambda r, q: kind(r, q.params["column"]).replace("unrecorded", "numeric"),
    "opening": lambda r, q: q.text.split()[0],
}
FEATURES_PER_CONDITION = {
    "row op": lambda r, q, c: c["op"],
    "threshold digits": lambda r, q, c: (
        sig_digits(c["value"]) if c["op"] in THRESHOLD_OPS else None
    ),
    "negative threshold": lambda r, q, c: isinstance(c["value"], float) and c["value"] < 0,
    "out of range": outside,
}


def test_enough_questions():
    assert len(pairs(True)) >= 300 and len(pairs(False)) >= 300


@pytest.mark.parametrize("name", sorted(FEATURES_PER_QUESTION))
def test_question_features_match(name):
    a, u = per_question(FEATURES_PER_QUESTION[name])
    assert tvd(a, u) < TOLERANCE, (name, a, u)


@pytest.mark.parametrize("name", sorted(FEATURES_PER_CONDITION))
def test_condition_features_match(name):
    a, u = per_condition(FEATURES_PER_CONDITION[name])
    assert tvd(a, u) < TOLERANCE, (name, a, u)


def test_path_ops_match():
    a, u = (
        Counter(c["op"] for _, q in pairs(ans) for c in q.params.get("path_conditions", []))
        for ans in (True, False)
    )
    assert tvd(a, u) < TOLERANCE, (a, u)
    assert set(u) >= {"is", "is_one_of"} and set(u) & {"gt", "lt", "ge", "le"}, u


def test_every_reason_uses_every_kind_of_condition():
    """The impossible row condition is not always a strict comparison."""
    ops = Counter(
        c["op"]
        for _, q in pairs(False)
        if q.reason == Reason.NO_MATCHING_ROWS
        for c in q.params["row_conditions"]
    )
    assert {"gt", "lt", "ge", "le", "between", "eq"} <= set(ops), ops


def test_per_statistic_unanswerable_share_is_nominal():
    """Slots are unanswerable with the nominal probability whatever their statistic: the implied
    share per statistic (from both answerabilities of every slot) is within 0.05 of nominal."""
    a = Counter(q.params["statistic"] for _, q in pairs(True))
    u = Counter(q.params["statistic"] for _, q in pairs(False))
    for stat in a:
        share = NOMINAL * u[stat] / (NOMINAL * u[stat] + (1 - NOMINAL) * a[stat])
        assert abs(share - NOMINAL) < 0.05, (stat, share, a, u)


def test_thresholds_printed_exactly_at_three_significant_figures():
    for _, q in pairs(True) + pairs(False):
        for c in q.params["row_conditions"]:
            for key in ("value", "high"):
                v = c[key]
                if c["op"] in THRESHOLD_OPS and v is not None:
                    assert num(v, THRESHOLD_DIGITS) == v, (q.id, c)
                    assert f" {exact_num(v)} " in q.text.replace(",", " ").replace(".", ". ") or (
                        exact_num(v) in q.text
                    ), (q.id, c)


def test_robust_gold():
    for repo, q in pairs(True):
        values = target_values(repo, q)
        stat = q.params["statistic"]
        if q.sig_figs is not None and q.sig_figs >= 4:
            assert len(values) >= 10, q.id
        if stat in ("std", "var"):
            assert len(values) >= 2, q.id
        if stat == "mode":
            counts = [*values.astype(str).value_counts().tolist(), 0]
            assert counts[0] - counts[1] >= 2, q.id


def test_answer_values_balanced():
    by_stat: dict[str, Counter] = {}
    for _, q in pairs(True):
        by_stat.setdefault(q.params["statistic"], Counter())[q.answer] += 1
    for stat, counts in by_stat.items():
        top, n = counts.most_common(1)[0][1], sum(counts.values())
        assert top <= 0.3 * n, (stat, counts.most_common(3), n)


def test_absent_path_values_in_the_repository_format():
    seen = 0
    for repo, q in pairs(False):
        if q.reason != Reason.NO_SUCH_PATH_VALUE:
            continue
        variables = {v.name: v for v in repo.spec.path_variables}
        for c in q.params["path_conditions"]:
            var = variables[c["variable"]]
            have = present_values(repo, var)
            values = [c["value"]] if c["op"] == "is" else c["value"]
            if c["op"] not in ("is", "is_one_of") or set(values) & set(have):
                continue
            seen += 1
            for token in values:
                if var.kind == "sequence":
                    assert token == str(int(token)).zfill(repo.spec.layout.seq_width), token
                if var.kind in ("numeric", "sequence"):
                    xs = [float(t) for t in have]
                    assert min(xs) < float(token) < max(xs), (q.id, token, have)
                if var.kind == "date":
                    fmt = repo.spec.layout.date_format
                    day = dt.datetime.strptime(token, fmt)
                    days = [dt.datetime.strptime(t, fmt) for t in have]
                    assert min(days) < day < max(days), (q.id, token, have)
                if var.kind == "researcher":
                    assert token.islower() == have[0].islower(), (q.id, token, have)
                    assert ("." in token) == ("." in have[0]), (q.id, token, have)
    assert seen >= 20, seen


def test_target_names_do_not_predict_answerability():
    """Label, identifier and timestamp targets appear answerably too (mode / n_distinct)."""
    a, u = per_question(lambda r, q: kind(r, q.params["column"]))
    for k in ("categorical", "identifier", "datetime"):
        assert a[k] > 0, (k, a)
    shares = {k: u[k] / (u[k] + a[k]) for k in ("categorical", "identifier", "datetime")}
    assert all(s < 0.5 + 0.15 for s in shares.values()), shares  # 0.5 = both sides equal
