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

GOLDEN = {  # spec v3; one seed per file format: csv jsonl json txt log xlsx, and a larger one
    0: "1ea298e18f0270f576c8cf51c2ac9c9fe54f700fa5541cc707c43828252e9660",
    1: "c4ef24b5cbcb3e17b92baa7de7f08d3cfdad8b290a66d7870f4ccaeafcf2f9fb",
    3: "1df88a70f6666580be889486a25b44a37cdc57abb48fd5f77964d8fe2dc626f3",
    6: "24ba7785a85634c4c080f068f6f7bef6e83a36a55c6c87060c064860092b4690",
    9: "0ab1ae7fbfbba75cff223fe7084c3eed16bcb541db9642d812005723db9a146e",
    22: "865161ef23ec090e4f4a51ffb299a5e94fb82d7582c7cc0c6dcf8c1e569e6d34",
    1000: "22fc0d991a66a4d2eee154bbab9cd9341bb2fb2e56369663d37a07843ade9597",
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
