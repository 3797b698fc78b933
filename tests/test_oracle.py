"""The scripted oracle (isg_gym.eval.policies.OraclePolicy) answers every question correctly
through the tools, played by the evaluation runner."""

from __future__ import annotations

from pathlib import Path

from isg_gym.dataset import make_dataset
from isg_gym.eval.policies import OraclePolicy
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.runner import evaluate
from isg_gym.tools.sandbox import bwrap_available

REPOSITORIES = 40
PER_REPOSITORY = 5


def test_oracle_is_always_correct(tmp_path: Path) -> None:
    ids = [row["id"] for row in make_dataset(range(REPOSITORIES), PER_REPOSITORY)]
    assert len(ids) == REPOSITORIES * PER_REPOSITORY
    backend = "bwrap" if bwrap_available() is None else "none"  # "none": no isolation, same code
    # One env: a sandbox worker serves one repository at a time, and each env restarts its own
    # worker on every repository change, so more envs mean more restarts on a small machine.
    evaluate(OraclePolicy(), ids, tmp_path, concurrency=1, report=False,
             env_kwargs={"sandbox": backend, "max_steps": 10})  # fmt: skip
    records = read_records(tmp_path / RECORDS_FILE)
    assert sorted(r["question_id"] for r in records) == sorted(ids)
    failures = [
        f"{r['question_id']} ({r['outcome']}): expected {r['gold']!r}, gave {r['answer']!r}\n"
        + "\n".join(m["content"][-1500:] for m in r["transcript"] if m["role"] == "tool")
        for r in records
        if r["outcome"] != "correct"
    ]
    for failure in failures:
        print(failure)
    assert not failures, f"{len(failures)} of {len(records)} episodes not correct"
    assert {r["type"] for r in records} >= {"count_rows", "univariate_statistic", "hypothesis_test"}
    assert all(r["steps"] == 2 and r["error"] is None for r in records)
