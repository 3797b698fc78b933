"""The opt-in effect_direction question type: asked only when named, gold recomputed from the
served files, ISG-v0's default questions unchanged."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest
from conftest import served_rows
from scipy import stats

from isg_gym.envs import ISGEnv
from isg_gym.eval.policies.oracle import OraclePolicy
from isg_gym.eval.runner import evaluate
from isg_gym.qa import QUESTION_TYPES, generate_questions, question_from_id
from isg_gym.qa.base import OPT_IN_QUESTION_TYPES, known_types
from isg_gym.repository import Repository
from isg_gym.tools.sandbox import bwrap_available

SEEDS = range(4, 10)
# sha256 of the default questions of repositories 0-5 (8 each), SPEC_VERSION 3, question
# generator v3 (40% unanswerable): update it only when the default questions change (with a
# QUESTION_VERSION bump). The same under any PYTHONHASHSEED (tests/test_determinism.py).
DEFAULT_QUESTIONS_SHA = "72b3af99239c89ca6d9f80b5a7003a754d60cbf1247915f378a6447b93a76393"


def _default_questions_digest() -> str:
    rows = [q.to_dict() for s in range(6) for q in generate_questions(Repository.from_seed(s), 8)]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()


def test_opt_in_only():
    assert "effect_direction" not in QUESTION_TYPES and len(QUESTION_TYPES) == 12
    assert "effect_direction" in OPT_IN_QUESTION_TYPES
    assert known_types()[-1] == "effect_direction"
    for seed in range(3):
        types = {q.type for q in generate_questions(Repository.from_seed(seed), 12)}
        assert "effect_direction" not in types
    assert "effect_direction" not in ISGEnv(sandbox="none").question_types


def test_gold_is_recomputed_from_the_served_files():
    answers = []
    for seed in SEEDS:
        repo = Repository.from_seed(seed)
        rows = None
        for q in generate_questions(repo, 2, types=["effect_direction"]):
            assert question_from_id(q.id).to_dict() == q.to_dict()
            factor, outcome = q.params["factor"], q.params["outcome"]
            if not q.answerable:
                assert q.reason == "unrecorded_variable"
                assert factor in {u.name for u in repo.spec.unrecorded}
                rows = served_rows(repo) if rows is None else rows
                assert factor not in rows.columns
                continue
            rows = served_rows(repo) if rows is None else rows
            pairs = rows[[factor, outcome]].apply(pd.to_numeric).dropna()
            tau = stats.kendalltau(pairs[factor], pairs[outcome])
            assert tau.pvalue < 1e-4
            assert q.answer == ("increases" if tau.statistic > 0 else "decreases")
            answers.append(q.answer)
    assert {"increases", "decreases"} <= set(answers)


def test_the_isg_oracle_answers_it(tmp_path):
    repos = [Repository.from_seed(s) for s in (4, 5)]
    ids = [q.id for r in repos for q in generate_questions(r, 2, types=["effect_direction"])]
    sandbox = "bwrap" if bwrap_available() is None else "none"
    env_kwargs = {"sandbox": sandbox, "max_steps": 4, "question_types": ["effect_direction"]}
    summary = evaluate(OraclePolicy(), ids, tmp_path, concurrency=1, env_kwargs=env_kwargs,
                       report=False)  # fmt: skip
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert summary["n"] == len(ids) and all(r["correct"] for r in records)


@pytest.mark.parametrize("bad", [["effect_direction", "nope"], ["nope"]])
def test_unknown_types_are_still_rejected(bad):
    with pytest.raises(ValueError, match="effect_direction"):
        ISGEnv(sandbox="none", question_types=bad)


def test_default_questions_unchanged():
    assert _default_questions_digest() == DEFAULT_QUESTIONS_SHA
