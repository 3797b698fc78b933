"""Simulator speed and diversity of the embedded default builder.

Run: ``python benchmarks/simulator.py [--seeds 1000] [--files 200]``. Prints a table of figures;
goals on a 2-core machine: spec build p50 <= 2 ms; a 300-row csv generated and serialised in
<= 3 ms p50.

``python benchmarks/simulator.py --diversity 3000`` prints instead how diverse the first N
repositories are: distinct titles (count and share, and the share of repositories whose title
another repository shares), archetypes used (subdomain-specialised archetypes, and the base
archetypes they adapt), subdomains reachable by construction (those with at least one archetype;
the taxonomy draw gives every subdomain a positive probability), how many have their own
vocabulary, subdomains reached, distinct recorded variable names (columns and path variables), then
the spec build time over the same seeds.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from isg_gym.repository import Repository
from isg_gym.repository.serialisers import serialise
from isg_gym.repository.tables import TableGenerator
from isg_gym.simulator import procedural
from isg_gym.simulator.lexicon import load_lexicon
from isg_gym.simulator.taxonomy import load_taxonomy
from isg_gym.spec.models import FILE_FORMATS, SPEC_VERSION

try:  # spec v3: archetypes chosen per subdomain (absent on spec v2, for the "before" figures)
    from isg_gym.simulator.lexicon import load_subdomains, subdomain_archetypes

    SPECIALISED = True
except ImportError:
    SPECIALISED = False


@dataclass
class Args:
    seeds: int = 1000
    files: int = 200
    diversity: int = 0


def percentiles(samples: list[float]) -> str:
    ms = np.array(samples) * 1e3
    return f"p50 {np.percentile(ms, 50):7.3f} ms   p99 {np.percentile(ms, 99):7.3f} ms"


def load_all_fields() -> float:
    """Seconds to load and validate every field's lexicon (and subdomain vocabulary), a
    one-time cost per process that the spec build times below leave out."""
    start = time.perf_counter()
    for field in load_taxonomy():
        load_lexicon(field)
        if SPECIALISED:
            load_subdomains(field)
    return time.perf_counter() - start


def bench_specs(n: int) -> list[float]:
    load_all_fields()
    procedural.build_spec(0)
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


def reachable_subdomains() -> tuple[int, int, int]:
    """(subdomains with at least one archetype, those with their own vocabulary, all)."""
    taxonomy = load_taxonomy()
    total = reachable = own = 0
    for field, domains in taxonomy.items():
        vocabulary = load_subdomains(field).domains if SPECIALISED else {}
        archetypes = load_lexicon(field).archetypes
        for domain, subdomains in domains.items():
            for sub in subdomains:
                total += 1
                own += sub in vocabulary.get(domain, {})
                if SPECIALISED:
                    reachable += bool(subdomain_archetypes(field, domain, sub))
                else:  # spec v2: archetypes matched by domain
                    reachable += any(domain in a.domains for a in archetypes)
    return reachable, own, total


def diversity(n: int) -> None:
    specs = [procedural.build_spec(seed) for seed in range(n)]
    titles = Counter(s.story.title for s in specs)
    shared = sum(c for c in titles.values() if c > 1)
    triples = {(s.taxonomy.field, s.taxonomy.domain, s.taxonomy.subdomain) for s in specs}
    archetypes = {s.archetype for s in specs}
    columns = {c.name for s in specs for c in s.columns}
    names = columns | {p.name for s in specs for p in s.path_variables}
    reachable, own, total = reachable_subdomains()
    print(f"diversity over {n} repositories (seeds 0-{n - 1}), spec version {SPEC_VERSION}")
    print(f"  distinct titles:                  {len(titles)} ({len(titles) / n:.1%})")
    print(f"  repositories sharing their title: {shared} ({shared / n:.1%})")
    print(f"  archetypes used:                  {len(archetypes)} "
          f"({len({a.split('/')[0] for a in archetypes})} base archetypes)")  # fmt: skip
    print(f"  subdomains reachable:             {reachable} of {total} "
          f"({own} with their own vocabulary)")  # fmt: skip
    print(f"  subdomains reached:               {len(triples)} of {total}")
    print(f"  distinct recorded variable names: {len(names)} ({len(columns)} as columns)")
    print(f"spec build over {n} seeds:       {percentiles(bench_specs(n))}")


def main(args: Args) -> None:
    print(f"lexicon load, all fields (once per process): {load_all_fields() * 1e3:.1f} ms")
    if args.diversity:
        diversity(args.diversity)
        return
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
    parser.add_argument("--diversity", type=int, default=Args.diversity, metavar="N",
                        help="print the diversity of the first N repositories instead")
    main(Args(**vars(parser.parse_args())))
