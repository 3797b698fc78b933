"""Scripted policies: registry, always-abstain, seeded random, oracle, through the runner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from isg_gym.dataset import make_dataset
from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.policies import (
    SCRIPTED,
    AbstainPolicy,
    OraclePolicy,
    RandomPolicy,
    make_scripted,
)
from isg_gym.eval.policy import StepPolicy
from isg_gym.eval.records import RECORDS_FILE, SCHEMA_VERSION, read_records
from isg_gym.eval.runner import evaluate
from isg_gym.tools.sandbox import bwrap_available

ENV_OUTCOMES = {"correct", "wrong", "abstained", "format_error", "truncated"}
TOOLS = {"list_directory", "read_text_file", "run_python_code", "final_answer"}
SANDBOX = "bwrap" if bwrap_available() is None else "none"
ENV_KWARGS = {"sandbox": SANDBOX, "max_steps": 10}


def _ids(repositories: range, per_repository: int) -> list[str]:
    return [row["id"] for row in make_dataset(repositories, per_repository)]


def _run(policy: StepPolicy, ids: list[str], out: Path, **kw: Any) -> list[dict[str, Any]]:
    kw.setdefault("report", False)
    evaluate(policy, ids, out, concurrency=1, env_kwargs=ENV_KWARGS, **kw)
    records = sorted(read_records(out / RECORDS_FILE), key=lambda r: r["index"])
    assert [r["question_id"] for r in records] == ids
    for record in records:
        _check_record(record)
    return records


def _check_record(r: dict[str, Any]) -> None:
    """A finished, well-formed record: the transcript pairs every call with its tool message
    and matches the steps the env logged; the answer is the last final_answer's."""
    assert r["schema"] == SCHEMA_VERSION
    assert r["error"] is None and r["outcome"] in ENV_OUTCOMES, r["outcome"]
    assert r["correct"] == (r["outcome"] == "correct")
    assert r["reward"] == (1.0 if r["correct"] else 0.0)
    assert json.loads(json.dumps(r)) == r
    messages = r["transcript"]
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert len(assistant) == r["steps"] == len(r["tool_calls"])
    i = 2
    for message in assistant:
        assert messages[i] is message
        (call,) = message["tool_calls"]
        assert call["function"]["name"] in TOOLS
        assert messages[i + 1]["role"] == "tool"
        assert messages[i + 1]["tool_call_id"] == call["id"]
        i += 2
    assert i == len(messages)
    assert [c["name"] for c in r["tool_calls"]][-1] == "final_answer"
    last = json.loads(assistant[-1]["tool_calls"][0]["function"]["arguments"])
    assert r["answer"] == last["answer"]


def test_registry() -> None:
    assert set(SCRIPTED) == {"oracle", "abstain", "random"}
    assert isinstance(make_scripted("oracle"), OraclePolicy)
    assert isinstance(make_scripted("abstain"), AbstainPolicy)
    policy = make_scripted("random", seed=7, max_tool_calls=1)
    assert isinstance(policy, RandomPolicy) and (policy.seed, policy.max_tool_calls) == (7, 1)
    names = {cls.name for cls in SCRIPTED.values()}
    assert names == {"scripted-oracle", "scripted-abstain", "scripted-random"}
    assert OraclePolicy.privileged and not AbstainPolicy.privileged
    assert not RandomPolicy.privileged
    with pytest.raises(ValueError, match=r"unknown scripted policy 'gpt'.*abstain, oracle, random"):
        make_scripted("gpt")
    with pytest.raises(ValueError, match="max_tool_calls"):
        RandomPolicy(max_tool_calls=-1)


def test_abstain_scores_the_unanswerable_share(tmp_path: Path) -> None:
    ids = _ids(range(8), 5)
    summary = evaluate(AbstainPolicy(), ids, tmp_path, concurrency=2, env_kwargs=ENV_KWARGS)
    records = read_records(tmp_path / RECORDS_FILE)
    assert len(records) == len(ids) == 40
    for r in records:
        _check_record(r)
        assert r["steps"] == 1 and r["answer"] == "not possible"
        assert r["correct"] == (not r["answerable"])
        assert r["outcome"] == ("correct" if not r["answerable"] else "abstained")
    unanswerable = sum(not r["answerable"] for r in records)
    assert 0 < unanswerable < len(records)
    assert summary["n"] == len(records)
    assert summary["accuracy"] == unanswerable / len(records)


def _answers(records: list[dict[str, Any]]) -> list[tuple[str, Any, list[Any]]]:
    return [
        (r["question_id"], r["answer"], [(c["name"], c["arguments"]) for c in r["tool_calls"]])
        for r in records
    ]


def test_random_is_seeded(tmp_path: Path) -> None:
    ids = _ids(range(2), 6)
    first = _run(RandomPolicy(seed=0), ids, tmp_path / "a")
    again = _run(RandomPolicy(seed=0), ids, tmp_path / "b")
    other = _run(RandomPolicy(seed=1), ids, tmp_path / "c")
    assert _answers(first) == _answers(again)
    assert [a for _, a, _ in _answers(first)] != [a for _, a, _ in _answers(other)]
    for r in first + other:
        assert 1 <= r["steps"] <= 4 and r["outcome"] != "truncated"
        assert all(c["name"] in TOOLS for c in r["tool_calls"])
    # it did use the tools (a read of a file it saw, a listing, code), not just answer
    used = {c["name"] for r in first + other for c in r["tool_calls"]}
    assert used == TOOLS


def test_random_without_tool_calls_answers_at_once(tmp_path: Path) -> None:
    records = _run(RandomPolicy(seed=3, max_tool_calls=0), _ids(range(1), 4), tmp_path)
    assert all(r["steps"] == 1 for r in records)


def test_oracle_is_perfect_on_a_small_set(tmp_path: Path) -> None:
    ids = _ids(range(100, 103), 4)
    records = _run(OraclePolicy(), ids, tmp_path)
    assert [r["outcome"] for r in records] == ["correct"] * len(ids)
    assert all(r["steps"] == 2 for r in records)


def test_oracle_without_privileged_info_fails_cleanly(tmp_path: Path) -> None:
    class Blind(OraclePolicy):
        privileged = False

    ids = _ids(range(1), 2)
    with pytest.raises(InfrastructureError, match="privileged"):  # every episode failed
        evaluate(Blind(), ids, tmp_path, concurrency=1, env_kwargs=ENV_KWARGS, report=False)
    records = read_records(tmp_path / RECORDS_FILE)
    assert len(records) == 2
    for r in records:
        assert r["outcome"] == "policy_error" and "privileged" in r["error"]
