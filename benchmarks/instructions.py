"""Instructions per new repository (spec build + file index), counted by valgrind's cachegrind.

On a shared 2-core VM the CPU time of the same build varies by 20-40% from one process to the
next (benchmarks/env.py --only build gave p50 2.3-3.5 ms for one commit in one hour), which
hides any change smaller than that. The number of instructions executed does not depend on the
neighbours: this script runs N builds and 0 builds under cachegrind (hash seed fixed, address
randomisation off where ``setarch`` exists, one BLAS thread) and prints the difference per build;
two runs of one tree agree within 0.1%. With ``--baseline DIR`` it does the same for another
checkout (a ``git worktree`` of an older commit) and prints the ratio.

Instructions are not time (cache misses and branch mispredictions cost time, not instructions),
so this is for comparing two versions of the code, not for the goal in milliseconds.

Usage: python benchmarks/instructions.py [--builds 600] [--baseline DIR]
Needs: valgrind (``apt-get install -y valgrind``); about 1-2 minutes per tree.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = """
import sys
import isg_gym
assert isg_gym.__file__.startswith(sys.argv[2]), isg_gym.__file__  # the tree asked for
from isg_gym.repository import Repository
from isg_gym.simulator import procedural
procedural.build_spec(0)
for s in range(7_000_000, 7_000_100):  # lexicon, taxonomy and caches warm
    len(Repository.from_seed(s).index)
for s in range(7_100_000, 7_100_000 + int(sys.argv[1])):
    len(Repository.from_seed(s).index)
"""


def instructions(tree: Path, builds: int) -> int:
    """Instructions of one process that imports ``tree``'s isg_gym and runs ``builds`` builds."""
    env = os.environ | {"PYTHONPATH": str(tree), "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, "-c", LOOP, str(builds), str(tree)]  # fmt: skip
    if shutil.which("setarch"):
        command = ["setarch", "-R", *command]
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=False)
    match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"cachegrind failed in {tree}: {done.stderr.strip()[-400:]}")
    return int(match.group(1).replace(",", ""))


def per_build(tree: Path, builds: int) -> float:
    return (instructions(tree, builds) - instructions(tree, 0)) / builds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=600, help="builds counted (seeds 7,100,000+)")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare against")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found: apt-get install -y valgrind")
    this = per_build(ROOT, args.builds)
    print(f"this tree ({ROOT}): {this / 1e6:.3f} M instructions per new repository "
          f"(spec + index, mean of {args.builds})")  # fmt: skip
    if args.baseline is not None:
        base = per_build(args.baseline.resolve(), args.builds)
        print(f"baseline ({args.baseline}): {base / 1e6:.3f} M instructions; "
              f"this / baseline = {this / base:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
