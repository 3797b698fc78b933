"""ISG-Discovery-v0: the env on the shared framework, its scripted policies through the runner."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from isg_gym.envs.discovery import DISCOVERY_VERSION, NO_FINDINGS, DiscoveryEnv
from isg_gym.envs.registry import get_env
from isg_gym.eval.metrics import summarize
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.runner import evaluate
from isg_gym.spec.models import SPEC_VERSION
from isg_gym.tools.sandbox import bwrap_available

SANDBOX = "bwrap" if bwrap_available() is None else "none"
KW = {"sandbox": SANDBOX, "max_steps": 8}
QUESTION = "8.discovery"  # 18 files, factual


def _env(**kw) -> DiscoveryEnv:
    return DiscoveryEnv(**{**KW, **kw})


def test_registered_and_checked():
    entry = get_env("ISG-Discovery-v0")
    assert entry.question_version == DISCOVERY_VERSION
    assert entry.data_version == SPEC_VERSION  # its worlds are transformed procedural Specs
    assert set(entry.policies) == {"oracle", "analyst", "empty", "random"}
    env = gym.make("ISG-Discovery-v0", sandbox=SANDBOX)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_reset_prompt_and_info():
    env = _env()
    try:
        obs, info = env.reset(options={"question": QUESTION})
        assert (info["question_id"], info["repository"], info["type"]) == (QUESTION, 8, "discovery")
        assert "answer" not in info and "submit_findings" in obs
        assert "Measured outcomes: " + ", ".join(env._world.outcomes) in obs
        assert [t["function"]["name"] for t in info["tools"]] == [
            "list_directory", "read_text_file", "run_python_code", "submit_findings"]  # fmt: skip
        again = env.reset(seed=5)
        assert again == env.reset(seed=5)
    finally:
        env.close()
    env = _env(privileged_info=True)
    try:
        _, info = env.reset(options={"repository": 10})
        key = info["answer"]
        assert key["hypothesis"]["counterfactual"] and key["effects"] and key["unrecorded"]
        with pytest.raises(ValueError, match=r"SEED\.discovery"):
            env.reset(options={"question": "8.univariate_statistic.0"})
    finally:
        env.close()


def test_findings_errors_are_observations_and_messages_submit():
    env = _env()
    try:
        env.reset(options={"question": QUESTION})
        call = {"name": "submit_findings", "arguments": {"findings": [{"factor": "x"}]}}
        obs, reward, term, _, _ = env.step(call)
        assert not term and reward == 0.0 and "[submit_findings] error" in obs and "relation" in obs
        obs, _, term, _, _ = env.step({"name": "submit_findings", "arguments": {}})
        assert not term and "missing required arguments ['findings']" in obs
        obs, _, term, _, _ = env.step("I think temperature matters.")
        assert not term and NO_FINDINGS in obs
        obs, _, term, _, _ = env.step("<think>only thoughts</think>")
        assert not term and "submit_findings" in obs and "final_answer" not in obs
        obs, _, term, _, _ = env.step('[{"outcome": "nope", "factor": "x", "relation": "x"}]')
        assert not term and "error" in obs
        outcome = env._world.outcomes[0]
        factor = env._world.spec.path_variables[0].name
        message = f'Findings:\n```json\n[{{"outcome": "{outcome}", "factor": "{factor}", ' \
                  '"relation": "no effect"}]\n```'  # fmt: skip
        _, reward, term, _, info = env.step(message)
        assert term and info["outcome"] in ("wrong", "partial") and 0.0 <= reward < 1.0
        assert info["score"]["verdicts"][0]["factor"] == factor
        assert set(info["episode_metrics"]) >= {"reward", "recall", "f1", "counterfactual"}
    finally:
        env.close()


def test_python_calls_are_numbered_evidence_and_survive_pickling():
    env = _env()
    try:
        env.reset(options={"question": QUESTION})
        path = env._world.repo.data_files[0]
        code = f"import pandas as pd\nprint(len(pd.read_json({path!r}, lines=True)))"
        obs, _, _, _, info = env.step({"name": "run_python_code", "arguments": {"code": code}})
        assert obs.startswith("[run_python_code]\ncall id: 1\n") and info["files_read"] == [path]
        obs, *_ = env.step({"name": "run_python_code", "arguments": {"code": "1/0"}})
        assert "call id: 2" in obs and "ZeroDivisionError" in obs
        calls = env._calls
        assert calls[1].ok and calls[1].files_read == (path,) and "read_json" in calls[1].code
        assert not calls[2].ok
        copy = pickle.loads(pickle.dumps(env))
        assert copy._calls == calls
        copy.close()
    finally:
        env.close()


def test_truncation_reports_metrics():
    env = _env(max_steps=1)
    try:
        env.reset(options={"question": QUESTION})
        _, reward, term, trunc, info = env.step({"name": "list_directory", "arguments": {}})
        assert trunc and not term and reward == 0.0 and info["outcome"] == "truncated"
        assert info["episode_metrics"]["reward"] == 0.0
        assert "precision" not in info["episode_metrics"]
    finally:
        env.close()


def test_scripted_policies_through_the_runner(tmp_path):
    ids = ["8.discovery", "10.discovery"]  # factual, counterfactual
    entry = get_env("ISG-Discovery-v0")
    results = {}
    for name in ("oracle", "analyst", "empty", "random"):
        out = tmp_path / name
        evaluate(entry.policy(name), ids, out, concurrency=1, env_kwargs=KW,
                 report=name == "oracle", env=entry.id)  # fmt: skip
        records = sorted(read_records(out / RECORDS_FILE), key=lambda r: r["index"])
        assert [r["question_id"] for r in records] == ids
        assert all(r["error"] is None for r in records), [r["error"] for r in records]
        json.dumps(records)
        results[name] = records
    assert [r["reward"] for r in results["oracle"]] == [1.0, 1.0]
    report = (tmp_path / "oracle" / "summary.md").read_text()
    assert "ISG-Discovery-v0" in report and "Episode metrics" in report
    assert list((tmp_path / "oracle" / "plots").glob("*.png"))
    assert all(r["outcome"] == "correct" for r in results["oracle"])
    assert [r["reward"] for r in results["empty"]] == [0.0, 0.0]
    assert all(0.6 < r["reward"] <= 1.0 for r in results["analyst"])
    assert results["analyst"][1]["episode_metrics"]["followed_data"] == 1.0
    assert all(r["reward"] < 0.5 for r in results["random"])
    summary = summarize(results["analyst"])
    means = summary["episode_metrics"]["overall"]
    assert {"precision", "recall", "f1", "evidence", "unrecorded", "followed_data"} <= set(means)
    assert means["counterfactual"] == 0.5
