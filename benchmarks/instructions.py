"""Instructions per new repository (spec build + file index), or per ``reset()`` of ISG-v0 on a
fresh repository (``--resets``: build, index and question), counted by valgrind.

On a shared 2-core VM the CPU time of the same build varies by 20-40% from one process to the
next (benchmarks/env.py --only build gave p50 2.3-3.5 ms for one commit in one hour), which
hides any change smaller than that. What valgrind counts does not depend on the neighbours.

Two modes:

- default: N builds and 0 builds under cachegrind (hash seed fixed, address randomisation off
  where ``setarch`` exists, one BLAS thread); the difference per build. Two runs of one tree
  agree within 0.1%. This includes the first builds of a process, when its caches are cold.
- ``--warm W``: a long run's steady state. W builds run first without counting, then N builds
  are counted by callgrind (switched on with ``callgrind_control``) with its cache simulation:
  instructions, level-1 instruction and data misses, last-level misses, and an estimate of
  cycles, ``Ir + 10 x L1 misses + 100 x LL misses`` (valgrind's own rule of thumb). The build
  touches much code once, so level-1 instruction misses are a real part of its time.

Instructions are not time, so this is for comparing two versions of the code (``--baseline
DIR``, a ``git worktree`` of an older commit), not for the goal in milliseconds.

Usage: python benchmarks/instructions.py [--builds 600 [--warm W] | --resets 300] [--baseline DIR]
Needs: valgrind (``apt-get install -y valgrind``); 1-2 minutes per tree, about 5 with --warm 2000.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = """
import os, subprocess, sys
import isg_gym
assert isg_gym.__file__.startswith(sys.argv[2]), isg_gym.__file__  # the tree asked for
from isg_gym.repository import Repository
from isg_gym.simulator import procedural
builds, warm = int(sys.argv[1]), int(sys.argv[3])
procedural.build_spec(0)
for s in range(7_000_000, 7_000_000 + (warm or 100)):  # lexicon, taxonomy and caches warm
    len(Repository.from_seed(s).index)
if warm:
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True,
                   capture_output=True)
for s in range(7_100_000, 7_100_000 + builds):
    len(Repository.from_seed(s).index)
if warm:
    subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True,
                   capture_output=True)
"""
RESET_LOOP = """
import sys
import isg_gym
assert isg_gym.__file__.startswith(sys.argv[2]), isg_gym.__file__  # the tree asked for
from isg_gym.envs import ISGEnv
env = ISGEnv()  # the sandbox starts at the first tool call: resets alone never start it
env.reset(seed=0)
for _ in range(100):  # lexicon, taxonomy and caches warm
    env.reset()
for _ in range(int(sys.argv[1])):
    env.reset()
"""
ENV = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}


def _valgrind(
    tree: Path, tool: list[str], builds: int, warm: int, loop: str = LOOP
) -> subprocess.CompletedProcess:
    env = os.environ | ENV | {"PYTHONPATH": str(tree)}
    command = ["valgrind", *tool, sys.executable, "-c", loop, str(builds), str(tree), str(warm)]
    if shutil.which("setarch"):
        command = ["setarch", "-R", *command]
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"valgrind failed in {tree}: {done.stderr.strip()[-400:]}")
    return done


def instructions(tree: Path, builds: int, loop: str = LOOP) -> int:
    """Instructions of one process that imports ``tree``'s isg_gym and runs ``builds`` builds
    (or resets, with ``RESET_LOOP``)."""
    tool = ["--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = _valgrind(tree, tool, builds, 0, loop)
    match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if match is None:
        raise SystemExit(f"no instruction count from cachegrind in {tree}")
    return int(match.group(1).replace(",", ""))


def per_build(tree: Path, builds: int, loop: str = LOOP) -> float:
    return (instructions(tree, builds, loop) - instructions(tree, 0, loop)) / builds


def steady_state(tree: Path, builds: int, warm: int) -> dict[str, float]:
    """Per build, after ``warm`` uncounted builds: Ir, L1 and LL misses, estimated cycles."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        tool = ["--tool=callgrind", "--instr-atstart=no", "--cache-sim=yes",
                f"--callgrind-out-file={out}"]  # fmt: skip
        _valgrind(tree, tool, builds, warm)
        text = out.read_text()
    events = re.search(r"^events:\s*(.+)$", text, re.M)
    totals = re.findall(r"^(?:summary|totals):\s*(.+)$", text, re.M)
    if events is None or not totals:
        raise SystemExit(f"no totals in callgrind's output for {tree}")
    names = events.group(1).split()
    values = [int(v) for v in totals[-1].split()]
    counts = dict(zip(names, values + [0] * (len(names) - len(values)), strict=True))
    l1 = counts["I1mr"] + counts["D1mr"] + counts["D1mw"]
    ll = counts["ILmr"] + counts["DLmr"] + counts["DLmw"]
    return {"Ir": counts["Ir"] / builds, "I1 misses": counts["I1mr"] / builds,
            "L1 misses": l1 / builds, "LL misses": ll / builds,
            "cycles": (counts["Ir"] + 10 * l1 + 100 * ll) / builds}  # fmt: skip


def _steady_line(name: str, figures: dict[str, float]) -> str:
    return (f"{name}: {figures['Ir'] / 1e6:.3f} M instructions, "
            f"{figures['I1 misses'] / 1e3:.0f} k L1 instruction misses, "
            f"{figures['L1 misses'] / 1e3:.0f} k L1 misses, {figures['LL misses'] / 1e3:.1f} k LL "
            f"misses, about {figures['cycles'] / 1e6:.3f} M cycles per new repository")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=600, help="builds counted (seeds 7,100,000+)")
    parser.add_argument("--warm", type=int, default=0, help="uncounted builds first (steady state)")
    parser.add_argument("--resets", type=int, help="count this many ISG-v0 resets instead")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare against")
    args = parser.parse_args()
    if args.resets and args.warm:
        raise SystemExit("--warm counts builds; it cannot be combined with --resets")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind not found: apt-get install -y valgrind")
    trees = [("this tree", ROOT)]
    if args.baseline is not None:
        trees.append(("baseline", args.baseline.resolve()))
    if args.warm:
        figures = [steady_state(tree, args.builds, args.warm) for _, tree in trees]
        print(f"steady state: {args.warm} builds first, then {args.builds} counted")
        for (name, tree), f in zip(trees, figures, strict=True):
            print(_steady_line(f"{name} ({tree})", f))
        if len(figures) == 2:
            this, base = figures
            print(f"this / baseline: instructions {this['Ir'] / base['Ir']:.3f}, "
                  f"estimated cycles {this['cycles'] / base['cycles']:.3f}")  # fmt: skip
        return
    n, loop = (args.resets, RESET_LOOP) if args.resets else (args.builds, LOOP)
    what = "reset (fresh repository)" if args.resets else "new repository (spec + index)"
    counts = [per_build(tree, n, loop) for _, tree in trees]
    print(f"this tree ({ROOT}): {counts[0] / 1e6:.3f} M instructions per {what}, mean of {n}")
    if len(counts) == 2:
        print(f"baseline ({args.baseline}): {counts[1] / 1e6:.3f} M instructions; "
              f"this / baseline = {counts[0] / counts[1]:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
