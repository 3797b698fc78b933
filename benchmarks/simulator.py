"""Simulator speed: spec build time, per-format file generation time, cells generated per second.

Run: ``python benchmarks/simulator.py [--seeds 1000] [--files 200]``. Prints a table of figures;
goals on a 2-core machine: spec build p50 <= 2 ms; a 300-row csv generated and serialised in
<= 3 ms p50.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from isg_gym.repository import Repository
from isg_gym.repository.serialisers import serialise
from isg_gym.repository.tables import TableGenerator
from isg_gym.simulator import procedural
from isg_gym.spec.models import FILE_FORMATS


@dataclass
class Args:
    seeds: int = 1000
    files: int = 200


def percentiles(samples: list[float]) -> str:
    ms = np.array(samples) * 1e3
    return f"p50 {np.percentile(ms, 50):7.3f} ms   p99 {np.percentile(ms, 99):7.3f} ms"


def bench_specs(n: int) -> list[float]:
    procedural.build_spec(0)  # load lexicon and taxonomy once
    times = []
    for seed in range(1, n + 1):
        procedural._build.cache_clear()
        start = time.perf_counter()
        procedural.build_spec(seed)
        times.append(time.perf_counter() - start)
    return times


def three_hundred_row_files(count: int) -> list[tuple[TableGenerator, str, dict]]:
    """(generator, path, values) for files whose table has exactly 299 or 298 rows."""
    found = []
    for seed in range(10_000):
        repo = Repository.from_seed(seed)
        for path in repo.data_files[:20]:
            if len(repo.table(path)) >= 298:
                found.append((repo._generator, path, repo.path_values(path)))
                break
        if len(found) >= count:
            break
    return found


def main(args: Args) -> None:
    print(f"spec build over {args.seeds} seeds:       {percentiles(bench_specs(args.seeds))}")
    files = three_hundred_row_files(args.files)
    print(f"{len(files)} files of 298-299 rows from different repositories")
    for generator, path, values in files[:20]:  # warm up caches and code paths
        serialise(generator.table(path, values), "csv", generator.spec.columns[1].name)
    gen_times, cells = [], 0
    for generator, path, values in files:
        start = time.perf_counter()
        table = generator.table(path, values)
        gen_times.append(time.perf_counter() - start)
        cells += table.size
    print(f"  table generation:                 {percentiles(gen_times)}")
    print(f"  cells generated per second:       {cells / sum(gen_times):,.0f}")
    for fmt in FILE_FORMATS:
        sample = files if fmt != "xlsx" else files[: max(1, len(files) // 10)]
        times = []
        for generator, path, values in sample:
            start = time.perf_counter()
            table = generator.table(path, values)
            serialise(table, fmt, generator.spec.columns[1].name)
            times.append(time.perf_counter() - start)
        print(f"  generate + serialise {fmt:<5}:       {percentiles(times)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=Args.seeds)
    parser.add_argument("--files", type=int, default=Args.files)
    main(Args(**vars(parser.parse_args())))
