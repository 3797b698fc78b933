"""ISG-Orbits-v0 benchmark: building and simulating a system, reset and observe latency, the
expert's analysis and episodes per second through the real sandbox.

Usage: python benchmarks/orbits.py [--systems N] [--resets N] [--steps N] [--episodes N]
       [--backend auto|bwrap|landlock|none]

Printed (all under the machine's current load, shown first): p50 / p99 over fresh systems of
``build_system`` + REBOUND simulation (the per-seed cache bypassed), by physics; reset latency
(cached and fresh systems), observe step latency (10 times a call), the expert's fit on 100
observations and on the full 2000-row file (in-process), and the expert's episodes per second
in both modes played by the evaluation runner with one env (``--episodes`` of orbits-200).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict

import numpy as np
import pandas as pd

from isg_gym.envs.registry import get_env
from isg_gym.eval.policies.orbits import OrbitsExpertPolicy
from isg_gym.eval.policies.orbits_fit import Model
from isg_gym.eval.runner import evaluate
from isg_gym.orbits.observe import columns, full_table, observe, window_end
from isg_gym.orbits.simulate import simulate
from isg_gym.orbits.splits import resolve_split
from isg_gym.orbits.system import build_system
from isg_gym.orbits.units import unit_system


def percentiles(values: list[float]) -> str:
    ms = np.array(values) * 1e3
    p50, p99 = np.percentile(ms, 50), np.percentile(ms, 99)
    return f"p50 {p50:8.2f} ms   p99 {p99:8.2f} ms   (n={len(ms)})"


def bench_simulation(count: int) -> None:
    by_physics: dict[str, list[float]] = defaultdict(list)
    every = []
    for seed in range(100_000, 100_000 + count):
        start = time.perf_counter()
        system = build_system(seed)
        simulate(system)
        elapsed = time.perf_counter() - start
        by_physics[system.physics].append(elapsed)
        every.append(elapsed)
    print(f"build + simulate, all     {percentiles(every)}")
    for physics, values in sorted(by_physics.items()):
        print(f"  {physics:23s} {percentiles(values)}")


def bench_env(resets: int, steps: int, backend: str) -> None:
    env = get_env("ISG-Orbits-v0").make(sandbox=backend)
    cached, fresh = [], []
    env.reset(options={"question": "4.period.0"})
    for i in range(resets):
        start = time.perf_counter()
        env.reset(options={"question": "4.period.0"})
        cached.append(time.perf_counter() - start)
        start = time.perf_counter()
        env.reset(seed=10_000 + i)
        fresh.append(time.perf_counter() - start)
    print(f"reset, cached system      {percentiles(cached)}")
    print(f"reset, fresh system       {percentiles(fresh)}")
    observes = []
    env.reset(options={"question": "4.period.0"})
    end = window_end(env._system)
    for i in range(steps):
        if i % 10 == 0:
            env.reset(options={"question": "4.period.0"})
        times = list(np.linspace(0, end, 10) * (1 - 1e-3 * (i % 10)))
        start = time.perf_counter()
        env.step({"name": "observe", "arguments": {"times": times}})
        observes.append(time.perf_counter() - start)
    print(f"observe step (10 times)   {percentiles(observes)}")
    env.close()


def bench_fit(count: int) -> None:
    budget, full = [], []
    for seed in range(200_000, 200_000 + count):
        system = build_system(seed)
        units = unit_system(system.units)
        for rows, out in ((observe(system, np.linspace(0, window_end(system), 100)), budget),
                          (full_table(system), full)):  # fmt: skip
            table = pd.DataFrame(rows, columns=columns(system))
            start = time.perf_counter()
            Model(table, units.metres_per_length, units.seconds_per_time)
            out.append(time.perf_counter() - start)
    print(f"expert fit, 100 obs       {percentiles(budget)}")
    print(f"expert fit, 2000 rows     {percentiles(full)}")


def bench_episodes(count: int, backend: str) -> None:
    ids = resolve_split("orbits-200")[:count]
    for mode in ("budget", "full"):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            summary = evaluate(OrbitsExpertPolicy(), ids, out, env="ISG-Orbits-v0",
                               concurrency=1, report=True,
                               env_kwargs={"observation": mode, "sandbox": backend})  # fmt: skip
            elapsed = time.perf_counter() - start
        print(f"expert episodes, {mode:6s}   {count / elapsed:6.2f} episodes/s "
              f"({elapsed:.1f} s for {count}, one env, sandbox start included; "
              f"accuracy {summary['accuracy']:.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=200)
    parser.add_argument("--resets", type=int, default=50)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--fits", type=int, default=50)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    bench_simulation(args.systems)
    bench_env(args.resets, args.steps, args.backend)
    bench_fit(args.fits)
    bench_episodes(args.episodes, args.backend)


if __name__ == "__main__":
    main()
