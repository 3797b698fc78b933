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

GOLDEN = {  # one seed per file format: csv jsonl json txt log xlsx, and a larger one
    0: "1b73fed8dd5b573ed7c135da45edcc51ca2dbd74680eb72b1dede9f65c153a9e",
    1: "f1c8718dffd5414f6ca33bb95f889596c53eea92d85c9c20dccf0e541badd4ab",
    3: "afe7fbe9bfdd71a5efcde78cbfc41d2f5a28bc5bfbfc216702378919696fbfbe",
    6: "22b3cd42aedafbe80046f793d87704009de2336f3fb1bb172a3db646e5054d43",
    9: "50ac5cfa58794b70a92f8998f0c27eb40444d784b0ff3ee9c979cb056234d7fd",
    22: "427378edb4016fa0f7f7b518a89f809a60ed89eb0e16e857c18b61603ec1825b",
    1000: "dcfca6c1c1fb80fa059c0679ccfe6d8d9b37e5928fc5c9abcc69b772ea33b6d9",
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
