"""ISG-Orbits-v0: the observe tool's budget accounting, the files the sandbox sees, both
modes, reset options, grading and abstention, privileged info, pickling, vector envs and the
Gymnasium checker. A fake sandbox stands in for the real one (tests/test_orbits_expert.py runs
the real one)."""

from __future__ import annotations

import io
import math
import os
import pickle
import stat

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from env_fakes import FakeResult
from gymnasium.utils.env_checker import check_env
from orbits_support import require_rebound

import isg_gym  # noqa: F401  (registers the envs)
from isg_gym.envs.registry import get_env
from isg_gym.orbits.observe import FULL_ROWS, observe, window_end
from isg_gym.orbits.sampling import QUESTION_VERSION, question_from_id
from isg_gym.orbits.system import build_system

QID = "4.period.0"  # system 4: Newtonian, bound, answerable


class FileSandbox:
    """Returns the text of the file named by the code (``"read NAME"``), or the listing."""

    def __init__(self) -> None:
        self.dirs: list[str] = []

    def run(self, code: str, files_dir: str) -> FakeResult:
        self.dirs.append(files_dir)
        if code.startswith("lines "):
            with open(os.path.join(files_dir, code[6:]), encoding="ascii") as fh:
                return FakeResult(stdout=str(len(fh.read().splitlines())))
        if code.startswith("read "):
            with open(os.path.join(files_dir, code[5:]), encoding="ascii") as fh:
                return FakeResult(stdout=fh.read())
        return FakeResult(stdout=" ".join(sorted(os.listdir(files_dir))))

    def close(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _rebound() -> None:
    require_rebound()


def _env(**kwargs):
    return get_env("ISG-Orbits-v0").make(**{"sandbox": FileSandbox(), **kwargs})


def _observe(env, times):
    return env.step({"name": "observe", "arguments": {"times": times}})


def _used(text: str) -> int:
    return int(text.rsplit("Budget: ", 1)[1].split(" of ")[0])


def test_registry_and_gym_make() -> None:
    entry = get_env("ISG-Orbits-v0")
    assert entry.question_version == QUESTION_VERSION
    assert set(entry.policies) == {"expert", "abstain", "random"}
    assert len(entry.resolve_split("orbits-200")) == 200
    env = gym.make("ISG-Orbits-v0", sandbox=FileSandbox())
    obs, info = env.reset(seed=0)
    assert "observe" in obs and info["question_id"].count(".") == 2
    env.close()


@pytest.mark.parametrize("mode", ["budget", "full"])
def test_check_env(mode: str) -> None:
    env = _env(observation=mode, max_steps=5)
    check_env(env, skip_render_check=True)
    env.close()


def test_observe_accounting() -> None:
    env = _env(budget=10, per_call=5)
    env.reset(options={"question": QID})
    end = window_end(env._system)
    # a list over per_call is refused whole and free
    obs, _, _, _, info = _observe(env, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert info["tool_results"][0]["error"] and "at most 5 per call" in obs
    assert "Nothing was observed or charged" in obs and "0 of 10" in obs
    # outside the window, non-finite and duplicates: refused without charge, with reasons
    obs, *_ = _observe(env, [-1.0, end * 1.5, 0.0, 0.0, math.nan])
    assert "1 observation(s) added" in obs
    assert f"outside the window [0, {end:.10g}]" in obs
    assert "not a finite number" in obs and "already observed" in obs
    assert "Budget: 1 of 10 observations used, 9 remaining" in obs
    obs, *_ = _observe(env, [0.0, end])  # 0.0 again: a duplicate of an earlier call
    assert "already observed" in obs and "Budget: 2 of 10" in obs
    # the budget runs out inside a call: the rest is refused, free
    times = list(np.linspace(end * 0.1, end * 0.9, 5))
    _observe(env, times)
    obs, *_ = _observe(env, [t * 0.99 for t in times])
    assert "3 observation(s) added" in obs and "the observation budget is spent" in obs
    assert "10 of 10" in obs
    obs, *_ = _observe(env, [end / 3])
    assert "0 remaining" in obs and "added" not in obs
    assert _used(obs) == 10
    _, _, done, _, info = env.step({"name": "final_answer", "arguments": {"answer": "1"}})
    metrics = info["episode_metrics"]
    assert done and metrics["observations"] == 10 and metrics["budget_utilisation"] == 1.0
    assert metrics["out_of_window"] == 2 and metrics["non_finite"] == 1
    assert metrics["duplicates"] == 2 and metrics["refused_calls"] == 1
    assert metrics["over_budget"] == 3 and metrics["observe_calls"] == 5
    env.close()


def test_bad_observe_arguments_are_error_observations() -> None:
    env = _env()
    env.reset(options={"question": QID})
    for args in ({}, {"times": "soon"}, {"times": [1, "x"]}, {"times": []}, {"when": [1]}):
        obs, reward, done, _trunc, info = env.step({"name": "observe", "arguments": args})
        assert info["tool_results"][0]["error"] and "Budget: 0 of 100" in obs
        assert not done and reward == 0.0
    env.close()


def test_the_sandbox_sees_each_snapshot_whole() -> None:
    sandbox = FileSandbox()
    env = _env(sandbox=sandbox)
    env.reset(options={"question": QID})
    run = {"name": "run_python_code", "arguments": {"code": "read observations.csv"}}
    obs, *_ = env.step(run)
    assert obs.split("\n")[2] == "time,star1_x,star1_y,star1_z,star2_x,star2_y,star2_z"
    first = sandbox.dirs[-1]
    assert stat.S_IMODE(os.stat(os.path.join(first, "observations.csv")).st_mode) == 0o444
    end = window_end(env._system)
    times = [0.0, end / 7, end / 2]
    _observe(env, times)
    obs, _, _, _, info = env.step(run)
    table = pd.read_csv(io.StringIO(info["tool_results"][0]["output"].split("\n", 2)[2]))
    want = observe(env._system, times)
    assert np.allclose(table.to_numpy(), want, rtol=1e-14, atol=0)
    assert sandbox.dirs[-1] != first and not os.path.exists(first)  # a fresh snapshot
    env.step(run)
    assert sandbox.dirs[-1] == sandbox.dirs[-2]  # unchanged table: same snapshot
    env.close()
    assert not os.path.exists(sandbox.dirs[-1])


def test_full_mode_has_the_trajectory_and_no_observe() -> None:
    env = _env(observation="full")
    obs, info = env.reset(options={"question": QID})
    assert "observe(" not in obs and [t["function"]["name"] for t in info["tools"]] == [
        "run_python_code", "final_answer"]
    obs, *_ = env.step({"name": "run_python_code", "arguments": {"code": "lines trajectory.csv"}})
    assert obs.split("\n")[2] == str(FULL_ROWS + 1)
    obs, _, _, _, info = _observe(env, [0.0])
    assert info["tool_results"][0]["error"] and "unknown tool" in obs
    env.close()


def test_reset_options_and_errors() -> None:
    env = _env(privileged_info=True)
    _, info = env.reset(options={"question": QID})
    assert info["question_id"] == QID and info["repository"] == 4
    assert info["answer"] == f"{question_from_id(QID).answer:.6g}"
    _, info = env.reset(options={"system": 4, "task": "eccentricity"})
    assert info["repository"] == 4 and info["type"] == "eccentricity"
    _, info = env.reset(options={"system": 4})
    assert info["repository"] == 4
    for bad in ({"question": "4.nope.0"}, {"question": "x"}, {"task": "nope"},
                {"system": -1}, {"colour": 1}, {"question": QID, "system": 5}):  # fmt: skip
        with pytest.raises(ValueError):
            env.reset(options=bad)
    with pytest.raises(ValueError, match="observation must be"):
        _env(observation="partial")
    with pytest.raises(ValueError, match="per_call"):
        _env(per_call=0)
    with pytest.raises(ValueError, match="unknown orbit tasks"):
        _env(tasks=["period", "nope"])
    env.close()


def test_seeded_resets_are_reproducible_and_balanced() -> None:
    env = _env(tasks=["is_bound"], privileged_info=True)
    first = [env.reset(seed=s)[1]["question_id"] for s in range(3)]
    assert first == [env.reset(seed=s)[1]["question_id"] for s in range(3)]
    strata = [env._pick({}).stratum for _ in range(800)]  # what resets draw (no simulation)
    share = {a: strata.count(a) / len(strata) for a in set(strata)}
    assert share["unanswerable"] == pytest.approx(0.4, abs=0.05)  # sd 0.017
    assert share["yes"] == pytest.approx(0.3, abs=0.05)
    env.close()


def test_privileged_info_only_when_asked() -> None:
    env = _env()
    _, info = env.reset(options={"question": QID})
    assert not {"answer", "answerable", "reason", "orbit"} & set(info)
    env.close()


@pytest.mark.parametrize(
    ("qid", "answer", "outcome", "reward"),
    [
        ("8.period.0", "not possible", "correct", 1.0),  # unbound: no period
        ("8.period.0", "12345", "wrong", 0.0),
        (QID, "not possible", "abstained", 0.0),
        (QID, "gold*1.04", "correct", 1.0),
        (QID, "gold*1.06", "wrong", 0.0),
        (QID, "soon", "format_error", 0.0),
        ("4.is_bound.0", "yes", "correct", 1.0),
        ("8.is_bound.0", "no", "correct", 1.0),
    ],
)
def test_grading_and_abstention(qid: str, answer: str, outcome: str, reward: float) -> None:
    env = _env()
    env.reset(options={"question": qid})
    if answer.startswith("gold"):
        answer = repr(question_from_id(qid).answer * float(answer.split("*")[1]))
    _, value, done, _, info = env.step({"name": "final_answer", "arguments": {"answer": answer}})
    assert done and info["outcome"] == outcome and value == reward
    env.close()


def test_truncation_reports_episode_metrics() -> None:
    env = _env(max_steps=2)
    env.reset(options={"question": QID})
    _observe(env, [0.0])
    _, _, _, truncated, info = env.step("no tool call here")
    assert truncated and info["outcome"] == "truncated"
    assert info["episode_metrics"]["observations"] == 1
    env.close()


def test_pickle_keeps_the_observations() -> None:
    env = _env()
    env.reset(options={"question": QID})
    end = window_end(env._system)
    _observe(env, [0.0, end / 2])
    clone = pickle.loads(pickle.dumps(env))
    obs, *_ = _observe(clone, [end / 2, end])
    assert "already observed" in obs and "Budget: 3 of 100" in obs
    assert len(clone._rows) == 3
    env.close()
    clone.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_envs(kind: str) -> None:
    def make():
        return gym.make("ISG-Orbits-v0", sandbox=FileSandbox(), max_steps=4,
                        privileged_info=True)  # fmt: skip

    fns = [make for _ in range(3)]
    envs = (gym.vector.SyncVectorEnv(fns) if kind == "sync"
            else gym.vector.AsyncVectorEnv(fns, shared_memory=False))  # fmt: skip
    try:
        obs, infos = envs.reset(seed=7)
        assert len(obs) == 3 and len(set(infos["question_id"])) == 3
        calls = [{"name": "observe", "arguments": {"times": [0.0]}}] * 3
        obs, rewards, terminated, _, infos = envs.step(calls)
        assert all("Budget: 1 of 100" in o for o in obs) and not terminated.any()
        answers = [{"name": "final_answer", "arguments": {"answer": "not possible"}}] * 3
        obs, rewards, terminated, _truncated, infos = envs.step(answers)
        assert terminated.all() and rewards.shape == (3,)
        assert list(rewards) == [float(a == "not possible") for a in infos["answer"]]
    finally:
        envs.close()


def test_systems_in_episodes_match_the_world() -> None:
    env = _env(start_system=1000, num_systems=50)
    for seed in range(5):
        _, info = env.reset(seed=seed)
        assert 1000 <= info["repository"] < 1050
        assert env._system == build_system(info["repository"])
    env.close()
