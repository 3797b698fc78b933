"""The scripted oracle (examples/oracle_agent.py) answers every question correctly via the tools."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from isg_gym.tools.sandbox import bwrap_available

ORACLE = Path(__file__).resolve().parents[1] / "examples" / "oracle_agent.py"
REPOSITORIES = 40
PER_REPOSITORY = 5


def _load_oracle():
    spec = importlib.util.spec_from_file_location("oracle_agent", ORACLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_oracle_is_always_correct() -> None:
    oracle = _load_oracle()
    backend = "bwrap" if bwrap_available() is None else "none"  # "none": no isolation, same code
    args = oracle.Args(
        episodes=REPOSITORIES * PER_REPOSITORY, per_repository=PER_REPOSITORY, sandbox=backend
    )
    episodes = oracle.run(args)
    assert len(episodes) == REPOSITORIES * PER_REPOSITORY
    failures = [
        f"{e.question_id} ({e.outcome}): expected {e.expected!r}, gave {e.answer!r}\n"
        + "\n".join(out[-1500:] for out in e.outputs)
        for e in episodes
        if e.outcome != "correct"
    ]
    for failure in failures:
        print(failure)
    assert not failures, f"{len(failures)} of {len(episodes)} episodes not correct"
    assert {e.type for e in episodes} >= {"count_rows", "univariate_statistic", "hypothesis_test"}
