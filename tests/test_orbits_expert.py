"""The scripted policies of ISG-Orbits-v0 played by the evaluation runner through the real
sandbox: the expert is right on every question (budget and full mode), always-abstain exactly
on the unanswerable ones, and the random agent runs. A handful of episodes by default; the
slow-marked tests play the 200 questions of orbits-200 in budget mode and a sample in full
mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from orbits_support import require_rebound

from isg_gym.eval.policies.baselines import AbstainPolicy
from isg_gym.eval.policies.orbits import OrbitsExpertPolicy, OrbitsRandomPolicy
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.runner import evaluate
from isg_gym.orbits.splits import resolve_split
from isg_gym.tools.sandbox import bwrap_available

ENV = "ISG-Orbits-v0"
# Every orbit class and both answerabilities: 4 bound, 8 unbound, 1 drag, 11 modified.
QUESTIONS = ["4.period.0", "8.period.0", "1.drag_timescale.0", "11.gravity_exponent.0",
             "11.star_mass.0", "4.max_speed.1", "8.is_bound.0", "1.apoastron.0"]  # fmt: skip


def _backend() -> str:
    return "bwrap" if bwrap_available() is None else "none"  # "none": no isolation, same code


def _play(policy, ids: list[str], out: Path, **env_kwargs) -> list[dict]:
    require_rebound()
    evaluate(policy, ids, out, env=ENV, concurrency=2, report=False,
             env_kwargs={"sandbox": _backend(), "max_steps": 8, **env_kwargs})  # fmt: skip
    records = read_records(out / RECORDS_FILE)
    assert sorted(r["question_id"] for r in records) == sorted(ids)
    return records


def _failures(records: list[dict]) -> list[str]:
    return [
        f"{r['question_id']} ({r['outcome']}): expected {r['gold']!r}, gave {r['answer']!r}\n"
        + "\n".join(m["content"][-800:] for m in r["transcript"] if m["role"] == "tool")
        for r in records
        if r["outcome"] != "correct"
    ]


@pytest.mark.parametrize("mode", ["budget", "full"])
def test_expert_is_right_through_the_sandbox(mode: str, tmp_path: Path) -> None:
    records = _play(OrbitsExpertPolicy(), QUESTIONS, tmp_path, observation=mode)
    failures = _failures(records)
    assert not failures, "\n".join(failures)
    for r in records:
        assert r["error"] is None
        metrics = r["episode_metrics"]
        if mode == "budget":
            assert metrics["observations"] == 100 and metrics["observe_calls"] == 10
            assert metrics["out_of_window"] == metrics["duplicates"] == 0
        else:
            assert "budget_utilisation" not in metrics


def test_abstain_is_right_exactly_on_the_unanswerable(tmp_path: Path) -> None:
    records = _play(AbstainPolicy(), QUESTIONS, tmp_path)
    for r in records:
        assert (r["outcome"] == "correct") == (r["answerable"] is False)


def test_random_agent_runs(tmp_path: Path) -> None:
    records = _play(OrbitsRandomPolicy(seed=3, max_tool_calls=3), QUESTIONS, tmp_path)
    assert all(r["error"] is None and r["outcome"] for r in records)
    assert any(r["episode_metrics"]["observe_calls"] > 0 for r in records)


@pytest.mark.slow
def test_expert_scores_100_percent_on_orbits_200(tmp_path: Path) -> None:
    records = _play(OrbitsExpertPolicy(), resolve_split("orbits-200"), tmp_path)
    failures = _failures(records)
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_expert_scores_100_percent_in_full_mode(tmp_path: Path) -> None:
    ids = resolve_split("orbits-test-200")[::4]
    records = _play(OrbitsExpertPolicy(), ids, tmp_path, observation="full")
    failures = _failures(records)
    assert not failures, "\n".join(failures)
