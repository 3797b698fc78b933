"""Sandbox latency: worker start, p50/p99 of run() for a small pandas cell, calls per second,
repository switch (view swap) p50, and resident memory of the worker's process tree.

Usage: python benchmarks/sandbox.py [--backend bwrap|landlock|none] [--calls N]
       [--preload numpy,pandas,...]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from isg_gym.tools.sandbox import get_sandbox

CODE = "import pandas as pd; pd.read_csv('x.csv')['a'].mean()"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", default="bwrap")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--preload", default=None, help="comma-separated zygote preloads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as other:
        Path(tmp, "x.csv").write_text("a,b\n" + "".join(f"{i},{i * 2}\n" for i in range(1000)))
        for i in range(20):
            Path(other, f"f{i}.csv").write_text("a\n1\n")
        with get_sandbox(args.backend) as sb:
            if args.preload is not None:
                sb.preload = tuple(filter(None, args.preload.split(",")))
            t0 = time.perf_counter()
            first = sb.run(CODE, tmp)
            startup = time.perf_counter() - t0
            assert first.error is None, first.stderr
            times = []
            t_all = time.perf_counter()
            for _ in range(args.calls):
                t0 = time.perf_counter()
                res = sb.run(CODE, tmp)
                times.append(time.perf_counter() - t0)
                assert res.value == "np.float64(499.5)", res
            total = time.perf_counter() - t_all
            switches = []
            for i in range(20):
                t0 = time.perf_counter()
                sb.run("1", other if i % 2 == 0 else tmp)
                switches.append(time.perf_counter() - t0)
            rss = tree_rss_mb(sb._proc.pid) if sb._proc is not None else 0.0
            preload = sb.worker_info.get("preload")
    times.sort()
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    print(f"backend={args.backend} calls={args.calls}")
    print(f"first call (worker start + call): {startup * 1000:.0f} ms")
    print(f"run() p50 {statistics.median(times) * 1000:.1f} ms  p99 {p99 * 1000:.1f} ms")
    print(f"calls per second: {args.calls / total:.1f}")
    print(f"repository switch + call p50 {statistics.median(switches) * 1000:.1f} ms (n=20)")
    print(f"worker process tree RSS {rss:.0f} MB (preload {preload})")


def tree_rss_mb(pid: int) -> float:
    """Summed VmRSS of ``pid`` and its descendants (reads /proc)."""
    import os

    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            parents.setdefault(ppid, []).append(int(name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += parents.get(p, [])
        try:
            with open(f"/proc/{p}/status") as fh:
                total += next((int(x.split()[1]) for x in fh if x.startswith("VmRSS:")), 0)
        except OSError:
            pass
    return total / 1024


if __name__ == "__main__":
    main()
