"""Question generation + ground-truth time per type, and on the largest repositories.

Run: ``python benchmarks/questions.py [--repositories 200] [--scan 3000]``. Goals on a 2-core
machine: p50 <= 5 ms for single-file questions; p99 <= 500 ms for questions over the largest
repositories (thousands of files; data questions there are narrowed to at most 100 files).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from isg_gym.qa import QUESTION_TYPES
from isg_gym.qa.sampling import make_question
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec


@dataclass
class Args:
    repositories: int = 200
    scan: int = 3000
    largest: int = 5


def timed_questions(repos: list[Repository], slots: int) -> dict[str, list[tuple[float, bool]]]:
    """type -> [(seconds, single_file)] over fresh repositories (cold table caches)."""
    out: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for repo in repos:
        for name in sorted(QUESTION_TYPES):
            for index in range(slots):
                fresh = Repository(repo.spec)  # no memoised tables: generation cost included
                _ = fresh.index
                start = time.perf_counter()
                q = make_question(fresh, name, index, answerable=index % 4 != 3)
                elapsed = time.perf_counter() - start
                if q is not None:
                    single = q.params.get("scope") != "files"
                    out[name].append((elapsed, single))
    return out


def row(label: str, samples: list[float]) -> str:
    ms = np.array(samples) * 1e3
    return (f"{label:<28} n={len(ms):5d}  p50 {np.percentile(ms, 50):8.2f} ms  "
            f"p99 {np.percentile(ms, 99):8.2f} ms")  # fmt: skip


def main(args: Args) -> None:
    repos = [Repository.from_seed(s) for s in range(args.repositories)]
    print(f"per type over {len(repos)} repositories (cold caches, answerable and not):")
    timings = timed_questions(repos, 2)
    single_all: list[float] = []
    for name, samples in sorted(timings.items()):
        print(row(name, [t for t, _ in samples]))
        single_all += [t for t, single in samples if single]
    print(row("all single-file questions", single_all))

    sizes = sorted(((len(Repository(build_spec(s)).data_files), s) for s in range(args.scan)),
                   reverse=True)[: args.largest]  # fmt: skip
    print(f"\nlargest repositories among seeds 0..{args.scan - 1}: "
          + ", ".join(f"#{s} ({n} files)" for n, s in sizes))  # fmt: skip
    big = [Repository.from_seed(s) for _, s in sizes]
    timings = timed_questions(big, 3)
    every = [t for samples in timings.values() for t, _ in samples]
    for name, samples in sorted(timings.items()):
        print(row(name, [t for t, _ in samples]))
    print(row("all, largest repositories", every))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repositories", type=int, default=Args.repositories)
    parser.add_argument("--scan", type=int, default=Args.scan)
    parser.add_argument("--largest", type=int, default=Args.largest)
    main(Args(**vars(parser.parse_args())))
