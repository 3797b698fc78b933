"""Sandbox latency: p50/p99 of run() for a small pandas cell, and calls per second.

Usage: python benchmarks/sandbox.py [--backend bwrap|none] [--calls N]
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "x.csv").write_text("a,b\n" + "".join(f"{i},{i * 2}\n" for i in range(1000)))
        with get_sandbox(args.backend) as sb:
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
    times.sort()
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
    print(f"backend={args.backend} calls={args.calls}")
    print(f"first call (worker start + call): {startup * 1000:.0f} ms")
    print(f"run() p50 {statistics.median(times) * 1000:.1f} ms  p99 {p99 * 1000:.1f} ms")
    print(f"calls per second: {args.calls / total:.1f}")


if __name__ == "__main__":
    main()
