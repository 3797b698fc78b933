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

GOLDEN = {
    1: "",
    2: "",
    7: "",
    42: "",
    1000: "",
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
    seeds = sorted(GOLDEN)[:3]
    for seed in seeds:
        out = tmp_path / str(seed)
        env = {**os.environ, "PYTHONHASHSEED": str(1000 + seed)}
        subprocess.run([sys.executable, "-m", "isg_gym.cli", "materialize", str(seed), str(out)],
                       check=True, env=env, capture_output=True)  # fmt: skip
        assert tree_hash(out) == GOLDEN[seed]
