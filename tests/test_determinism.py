"""Golden SHA-256 of `isg materialize` and `isg questions` output: same bytes in any process,
any PYTHONHASHSEED.

If a deliberate change alters generated repositories, bump SPEC_VERSION and update GOLDEN.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isg_gym.cli import main

GOLDEN = {  # spec v3; one seed per file format: csv jsonl json txt log xlsx, and a larger one
    0: "52d55c6dfc90fcc15f857227be4d66b9fa8393592c7357a7dcb158186e066018",
    1: "14b2e9093fbc6c23db4068002858c7fc12b1b4850460e4288f523bd5368dc183",
    3: "f60e33ba13a08c5684fd1f8bef8dcc98c1b03c61a6d398902c05054cb5b8cf1c",
    6: "de01f2b39db128ef783d685d63d6ad041b52030509b0a003dd1c6f865edd00ba",
    9: "9b5200b18ffeca265f2707314292a9ce314e2d2e44920037962537910ed64b6b",
    22: "65e2d6639f52b417d9e74fe153b12e16b4d1c922cf310c9b53cd21eb28c90f92",
    1000: "275057f799839ef902bdbb1712ed37ad29629c0964887a00461ae1ba9516afef",
}


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@pytest.mark.parametrize("seed", sorted(GOLDEN))
def test_materialize_matches_golden_hash(seed, tmp_path, capsys):
    assert main(["materialize", str(seed), str(tmp_path)]) == 0
    assert tree_hash(tmp_path) == GOLDEN[seed]


def test_subprocess_with_other_hash_seed_gives_same_bytes(tmp_path):
    seeds = sorted(GOLDEN)
    for seed in seeds:
        out = tmp_path / str(seed)
        env = {**os.environ, "PYTHONHASHSEED": str(1000 + seed)}
        subprocess.run([sys.executable, "-m", "isg_gym.cli", "materialize", str(seed), str(out)],
                       check=True, env=env, capture_output=True)  # fmt: skip
        assert tree_hash(out) == GOLDEN[seed]


# sha256 of `isg questions 118 --count 16 --json` (question generator v3, spec v3). If a
# deliberate change alters the questions, bump QUESTION_VERSION and update it.
GOLDEN_QUESTIONS = "24d142e8d3df0743f06049fb7b5d2e13328dcc3df61fe8cb4ba807bda74890de"


def test_questions_match_golden_hash_under_any_hash_seed():
    command = [sys.executable, "-m", "isg_gym.cli", "questions", "118", "--count", "16", "--json"]
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(command, check=True, env=env, capture_output=True).stdout
        assert hashlib.sha256(out).hexdigest() == GOLDEN_QUESTIONS
