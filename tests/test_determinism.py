"""Golden SHA-256 of `isg materialize` output: same bytes in any process, any PYTHONHASHSEED.

If a deliberate change alters generated repositories, bump SPEC_VERSION and update GOLDEN.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isg_gym.cli import main

GOLDEN = {  # spec v2; one seed per file format: csv jsonl json txt log xlsx, and a larger one
    0: "4198bfc7e883ac7dbac46ab1740f4172104bbfcc5f31693601a2997ae3ae77c0",
    1: "d0bdd432a2ee8b1512a93299f21619e911c62f4b2f9146ef5de5498991996c3e",
    3: "9325fe0a52c849cebc3222dfd0a181bd836e78032033c0a200eae41677e96394",
    6: "d7de0cc42afbb0a27d0e6ae56ade20f82cb8eb9c04161d6fd9452ac8124661d2",
    9: "b1047daf22ec3b589d0945e98f0609b3524bf4e8e7472e4cffdd1b26749c78a5",
    22: "42d75dfcccf3999f3d969f85786492ef44497dd07987efb337c62c19f1afef76",
    1000: "17e2fcc96910aaf664e1d7ed96dc54b81f47a229a1b38712c50b9016b77f2cce",
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
