"""Question ids and named splits of ``ISG-Discovery-v0``.

A Discovery episode's id is ``"SEED.discovery"``. Seeds follow ISG-v0's three ranges
(:mod:`isg_gym.eval.splits`): evaluation ``[0, 1000)``, training ``[1000, 2_000_000_000)``,
held-out test ``[2_000_000_000, 2_000_001_000)``.

A split holds a fixed number of counterfactual and factual repositories (at the default
counterfactual share), balanced by construction: the first ``counterfactual`` counterfactual
Discovery seeds and the first ``factual`` factual ones of its range, in seed order.

- ``discovery-200``: 50 counterfactual + 150 factual repositories from seed 0 on;
- ``discovery-test-200``: the same from the held-out test range.

The ids are stored in ``isg_gym/data/splits/NAME.txt``; ``python -m isg_gym.discovery.splits
--check`` regenerates and compares them (``--write`` rewrites them).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from isg_gym.discovery.hypothesis import choose
from isg_gym.discovery.world import DEFAULT_COUNTERFACTUAL_SHARE, is_counterfactual
from isg_gym.eval.splits import (
    EVAL_REPOSITORIES,
    TEST_REPOSITORIES,
    TRAIN_REPOSITORIES,
    _split_file,
    resolve_named_split,
)
from isg_gym.simulator.procedural import build_spec

SUFFIX = ".discovery"
_ID = re.compile(r"^(\d+)\.discovery$")


def question_id(seed: int) -> str:
    return f"{seed}{SUFFIX}"


def question_seed(question: str) -> int:
    """The seed of ``"SEED.discovery"``; ValueError naming the form otherwise."""
    m = _ID.match(question) if isinstance(question, str) else None
    if m is None:
        raise ValueError(
            f"question id {question!r} is not of the form 'SEED.discovery', e.g. '118.discovery'"
        )
    return int(m.group(1))


@dataclass(frozen=True)
class Split:
    name: str
    start: int
    stop: int  # seeds are searched in [start, stop)
    counterfactual: int
    factual: int
    description: str


SPLITS: dict[str, Split] = {
    "discovery-200": Split("discovery-200", EVAL_REPOSITORIES.start, EVAL_REPOSITORIES.stop,
                           50, 150, "50 counterfactual + 150 factual repositories, seeds 0-999"),
    "discovery-test-200": Split("discovery-test-200", TEST_REPOSITORIES.start,
                                TEST_REPOSITORIES.stop, 50, 150,
                                "held-out test: 50 counterfactual + 150 factual repositories"),
}  # fmt: skip


def is_discovery_seed(seed: int) -> bool:
    """Whether ``seed`` has a Discovery repository (its program offers a hypothesis pair)."""
    return choose(build_spec(seed)) is not None


def generate(split: Split, share: float = DEFAULT_COUNTERFACTUAL_SHARE) -> list[str]:
    """The split's ids, in seed order (module docstring)."""
    need = {True: split.counterfactual, False: split.factual}
    seeds = []
    for seed in range(split.start, split.stop):
        if not any(need.values()):
            break
        flag = is_counterfactual(seed, share)
        if need[flag] and is_discovery_seed(seed):
            need[flag] -= 1
            seeds.append(seed)
    if any(need.values()):
        raise ValueError(f"split {split.name}: seeds {split.start}-{split.stop} hold too few "
                         f"Discovery repositories (missing {need})")  # fmt: skip
    return [question_id(s) for s in seeds]


def resolve_split(split: str | Sequence[str]) -> list[str]:
    """Ids of a named split, of every Discovery repository in ``"repos:A-B"``, or a list of
    ids (validated)."""
    return resolve_named_split(
        split,
        SPLITS,
        question_seed,
        lambda seeds: [question_id(s) for s in seeds if is_discovery_seed(s)],
        "isg_gym.discovery.splits",
        "ids like '118.discovery'",
    )


def train_env_kwargs() -> dict[str, int]:
    """``DiscoveryEnv`` arguments that draw only training repositories."""
    return {"start_repository": TRAIN_REPOSITORIES.start,
            "num_repositories": len(TRAIN_REPOSITORIES)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the stored Discovery splits.")
    parser.add_argument("--write", action="store_true", help="regenerate and store the files")
    args = parser.parse_args(argv)
    status = 0
    for split in SPLITS.values():
        ids = generate(split)
        path = _split_file(split.name)
        if args.write:
            path.write_text("\n".join(ids) + "\n", encoding="utf-8")
            print(f"wrote {path} ({len(ids)} repositories)")
            continue
        stored = path.read_text(encoding="utf-8").split() if path.exists() else []
        same = stored == ids
        status |= not same
        print(f"{split.name}: {'matches' if same else 'DIFFERS from'} {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
