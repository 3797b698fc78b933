"""ISG-Discovery-v0 benchmark: reset latency, truth computation time, scoring time.

Usage: python benchmarks/discovery.py [--repositories N] [--start S]

For each of N Discovery repositories from seed S on (cold caches: every repository is new to
the process), it times

- ``reset``: ``DiscoveryEnv.reset`` without privileged info (builds the Spec, chooses the
  hypothesis, transforms the Spec; no data is generated and no truth computed);
- ``truth``: :func:`isg_gym.discovery.compute_truth` (every file's table generated and pooled,
  every pair's relation on the program grid, the detectability tests);
- ``score``: scoring the oracle's report (the truth already computed), which is what a
  submission costs once the truth is cached for the repository.

It prints the median, 90th percentile and maximum of each, the mean number of data files and
rows (truth time grows with the rows), and what the truths hold: the share of (outcome, factor)
pairs that are effects in the program, the share of those detectable in the served rows, and
the relations.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass, fields

from isg_gym.discovery import CallRecord, Resolver, parse_findings, score
from isg_gym.discovery.splits import is_discovery_seed, question_id
from isg_gym.discovery.world import discovery_world
from isg_gym.envs.discovery import DiscoveryEnv


@dataclass
class Args:
    repositories: int = 30
    start: int = 5000  # training seeds: new to a process that evaluated discovery-200


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name}", type=type(f.default), default=f.default)
    return Args(**vars(parser.parse_args()))


def oracle_claims(world) -> tuple[list, dict[int, CallRecord]]:
    truth = world.truth
    claims = [{"outcome": p.outcome, "factor": p.factor, "relation": p.relation,
               "evidence": [1]} for p in truth.effects(detectable_only=True)]  # fmt: skip
    claims += [{"factor": n, "relation": "untestable"} for n in truth.unrecorded]
    code = f"NAMES = {sorted(truth.variables)!r}"
    return claims, {1: CallRecord(1, code, True, tuple(world.repo.data_files))}


def row(name: str, times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"| {name} | {statistics.median(ordered) * 1e3:.1f} | {p90 * 1e3:.1f} | "
            f"{ordered[-1] * 1e3:.1f} |")  # fmt: skip


def main() -> None:
    args = parse_args()
    seeds, seed = [], args.start
    while len(seeds) < args.repositories:
        if is_discovery_seed(seed):
            seeds.append(seed)
        seed += 1
    env = DiscoveryEnv(sandbox="none")
    resets, truths, scores, files, rows = [], [], [], [], []
    pairs = effects = found = on_outcomes = 0
    relations: dict[str, int] = {}
    for seed in seeds:
        t = time.perf_counter()
        env.reset(options={"question": question_id(seed)})
        resets.append(time.perf_counter() - t)
        world = discovery_world(seed)
        t = time.perf_counter()
        truth = world.truth  # computed once per repository (compute_truth), then cached
        truths.append(time.perf_counter() - t)
        files.append(len(world.repo.data_files))
        rows.append(len(truth.rows))
        pairs += len(truth.pairs)
        for pair in truth.effects():
            effects += 1
            found += pair.detectable
            on_outcomes += truth.variables[pair.factor].outcome
            kind = pair.relation if pair.directional else "effect without a direction"
            relations[kind] = relations.get(kind, 0) + 1
        claims, calls = oracle_claims(world)
        t = time.perf_counter()
        resolved = Resolver(world.spec).resolve_all(parse_findings(claims))
        result = score(resolved, truth, calls, world.files_in, world.hypothesis)
        scores.append(time.perf_counter() - t)
        assert result.reward == 1.0, (seed, result.explanation())
    env.close()
    load = os.getloadavg()
    print(f"{len(seeds)} Discovery repositories from seed {args.start}; mean "
          f"{statistics.mean(files):.0f} data files, {statistics.mean(rows):.0f} rows "
          f"(max {max(rows)}); load average {load[0]:.2f} on {os.cpu_count()} CPUs\n")  # fmt: skip
    print(f"(outcome, factor) pairs: {pairs}; effects in the program: {effects} "
          f"({effects / pairs:.1%}), of which detectable: {found} ({found / effects:.1%}), "
          f"factor another outcome: {on_outcomes}; relations: {relations}\n")  # fmt: skip
    print("| step | median ms | p90 ms | max ms |\n|---|---|---|---|")
    print(row("reset (no privileged info)", resets))
    print(row("truth computation", truths))
    print(row("scoring the oracle's report", scores))


if __name__ == "__main__":
    main()
