"""Lazy repository view benchmark: the environment never waits on a whole repository.

1. First ``run_python_code`` on a never-seen repository (a pandas read of one file and the mean
   of a column, through ``ISGEnv.step``, the sandbox's worker already running): p50/p99 wall
   time over ``--seeds`` repositories (by default 180 ordinary ones, seeds 3000 upward, plus the
   ``--large`` largest json and the ``--large`` largest xlsx repositories of seeds 0-2999, found
   by file count from the specs, no file generated), with the lazy FUSE view and with the
   materialising fallback (every file written before the call), and their ratio.
2. Oracle throughput: ``isg eval --backend scripted --model oracle --split isg-500 --episodes
   200 --concurrency 2`` (one question per repository: every repository seen for the first
   time), each mode in a fresh process, timing the command itself (imports excluded).

Usage: python benchmarks/lazyview.py [--seeds 200] [--large 10] [--modes lazy,materialise]
       [--episodes 200] [--concurrency 2] [--skip-first-call] [--skip-eval]
Report the machine load (printed) with the figures: timings under load are not comparable.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, fields

ORDINARY_START = 3000  # seeds never among the largest ones picked from 0-2999
READERS = {
    "csv": "pd.read_csv(p)",
    "txt": "pd.read_csv(p, sep='\\t')",
    "json": "pd.read_json(p)",
    "jsonl": "pd.read_json(p, lines=True)",
    "xlsx": "pd.read_excel(p)",
    "log": "pd.DataFrame([dict(f.split('=', 1) for f in line.rstrip('\\n').split(' | ')) "
    "for line in open(p)])",
}


@dataclass
class Args:
    seeds: int = 200
    large: int = 10
    modes: str = "lazy,materialise"
    episodes: int = 200
    concurrency: int = 2
    skip_first_call: bool = False
    skip_eval: bool = False


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        name = f"--{f.name.replace('_', '-')}"
        if isinstance(f.default, bool):
            parser.add_argument(name, action="store_true")
        else:
            parser.add_argument(name, type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args(argv)))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def largest(fmt: str, count: int, seeds: range) -> list[tuple[int, int]]:
    """(files, seed) of the ``count`` repositories of format ``fmt`` with the most files, from
    the specs and the index's file-count draw alone (no path rendered, no file generated)."""
    from isg_gym.repository.index import file_count
    from isg_gym.seeding import derive
    from isg_gym.simulator.procedural import build_spec

    found = []
    for seed in seeds:
        spec = build_spec(seed)
        if spec.file_format != fmt:
            continue
        total = math.prod(len(v.values) for v in spec.path_variables)
        found.append((file_count(total, derive(spec.seed, "files", spec.spec_version)), seed))
    return sorted(found, reverse=True)[:count]


def first_call_code(repo) -> str:
    path = repo.data_files[0]
    reader = READERS[repo.spec.file_format]
    return (
        f"import pandas as pd\np = {'/data/' + path!r}\ndf = {reader}\n"
        "float(pd.to_numeric(df.iloc[:, -1], errors='coerce').mean())"
    )


def first_calls(mode: str, seeds: list[int]) -> tuple[list[float], list[float], int]:
    """Wall and env-process CPU seconds of the first run_python_code on each repository."""
    from isg_gym.envs import ISGEnv
    from isg_gym.tools.sandbox import SandboxLimits, get_sandbox

    limits = SandboxLimits(cpu_seconds=60, wall_seconds=600, memory_mb=2048)
    sandbox = get_sandbox("auto", limits, files=mode)
    env = ISGEnv(sandbox=sandbox, max_steps=4)
    walls, cpus, failures = [], [], 0
    try:
        for i, seed in enumerate([10**6, *seeds]):  # the first one starts the worker
            env.reset(options={"repository": seed})
            action = {"name": "run_python_code", "arguments": {"code": first_call_code(env._repo)}}
            w0, c0 = time.perf_counter(), time.process_time()
            _, _, _, _, info = env.step(action)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            result = info["tool_results"][0]
            if result["error"] or "[error]" in result["output"]:
                failures += 1
                print(f"  seed {seed}: {result['output'][:200]!r}", file=sys.stderr)
            if i:
                walls.append(wall)
                cpus.append(cpu)
    finally:
        env.close()
    assert sandbox.files_mode == mode, f"asked for {mode}, ran {sandbox.files_mode}"
    return walls, cpus, failures


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def eval_rate(mode: str, episodes: int, concurrency: int) -> tuple[float, float]:
    """(episodes per second, seconds) of the oracle through ``isg eval`` in a fresh process."""
    child = (
        "import sys, tempfile, time\nfrom isg_gym.cli import main\n"
        "with tempfile.TemporaryDirectory() as out:\n"
        "    argv = ['eval', '--backend', 'scripted', '--model', 'oracle', '--split', 'isg-500',\n"
        f"            '--episodes', '{episodes}', '--concurrency', '{concurrency}',\n"
        "            '--out', out + '/run', '--no-progress']\n"
        "    t = time.perf_counter()\n    rc = main(argv)\n"
        "    print('SECONDS', time.perf_counter() - t, rc)\n"
    )
    env = {**os.environ, "ISG_SANDBOX_FILES": mode, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          env=env, check=False, cwd=tempfile.gettempdir())  # fmt: skip
    line = next((x for x in proc.stdout.splitlines() if x.startswith("SECONDS")), None)
    if line is None or not line.endswith(" 0"):
        tail = f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        raise RuntimeError(f"isg eval failed ({mode}):\n{tail}")
    seconds = float(line.split()[1])
    headline = [x for x in proc.stdout.splitlines() if x and not x.startswith("SECONDS")]
    print(f"  {mode}: {headline[-1] if headline else ''}")
    return episodes / seconds, seconds


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    print(f"lazy view benchmark; {load()}")
    if not args.skip_first_call:
        t = time.perf_counter()
        big = [s for fmt in ("json", "xlsx") for _, s in largest(fmt, args.large, range(3000))]
        ordinary = list(range(ORDINARY_START, ORDINARY_START + max(0, args.seeds - len(big))))
        seeds = ordinary + big
        print(f"1. first run_python_code on a never-seen repository: {len(seeds)} repositories "
              f"({len(ordinary)} from seed {ORDINARY_START}, the {args.large} largest json and "
              f"xlsx of 0-2999: {big}; picked in {time.perf_counter() - t:.1f} s)")  # fmt: skip
        p50s = {}
        for mode in modes:
            walls, cpus, failures = first_calls(mode, seeds)
            p50s[mode] = statistics.median(walls)
            print(
                f"  {mode:12s} wall p50 {1000 * p50s[mode]:8.1f} ms  p99 "
                f"{1000 * quantile(walls, 0.99):9.1f} ms  max {1000 * max(walls):9.1f} ms   "
                f"env CPU p50 {1000 * statistics.median(cpus):7.1f} ms  p99 "
                f"{1000 * quantile(cpus, 0.99):8.1f} ms   failures {failures}   ({load()})"
            )
        if {"lazy", "materialise"} <= set(p50s):
            print(f"  p50 ratio materialise / lazy: {p50s['materialise'] / p50s['lazy']:.1f}x")
    if not args.skip_eval:
        print(f"2. oracle: isg eval --backend scripted --model oracle --split isg-500 --episodes "
              f"{args.episodes} --concurrency {args.concurrency}")  # fmt: skip
        rates = {}
        for mode in modes:
            rates[mode], seconds = eval_rate(mode, args.episodes, args.concurrency)
            print(f"  {mode:12s} {rates[mode]:6.2f} episodes/s ({seconds:.1f} s; {load()})")
        if {"lazy", "materialise"} <= set(rates):
            print(f"  ratio lazy / materialise: {rates['lazy'] / rates['materialise']:.1f}x")


if __name__ == "__main__":
    main()
