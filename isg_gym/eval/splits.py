"""Named, fixed evaluation splits and the repository ranges of train and test.

Repository seeds are split three ways, so that training never touches what is evaluated:

- :data:`EVAL_REPOSITORIES` ``[0, 1000)``: public evaluation. ``isg-500`` is 500 questions over
  repositories 0-499.
- :data:`TRAIN_REPOSITORIES` ``[1000, 2_000_000_000)``: for training
  (``gym.make("ISG-v0", **train_env_kwargs())``).
- :data:`TEST_REPOSITORIES` ``[2_000_000_000, 2_000_001_000)``: held out. ``isg-test-500`` is
  500 questions over its first 500 repositories.

A split takes one question per repository: repository ``s`` asks a question of type
``TYPES[s % 12]`` (the 12 types in alphabetical order), from the first question slot of ``s``
that holds one (:func:`isg_gym.qa.sampling.question_at`), so every type appears about equally
often and each slot keeps its answerability (a quarter of the questions are unanswerable, as
in ``ISG-v0``). When a repository offers no question of its type within 64 slots, the next
type in the order is taken. The question ids are stored in ``isg_gym/data/splits/NAME.txt``;
``python -m isg_gym.eval.splits --check`` regenerates them and compares.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from isg_gym.qa import QUESTION_TYPES
from isg_gym.qa.sampling import parse_question_id, question_at
from isg_gym.repository import Repository

EVAL_REPOSITORIES = range(0, 1000)
TRAIN_REPOSITORIES = range(1000, 2_000_000_000)
TEST_REPOSITORIES = range(2_000_000_000, 2_000_001_000)
TYPES: tuple[str, ...] = tuple(sorted(QUESTION_TYPES))
SLOTS = 64
_REPOS = re.compile(r"^repos:(\d+)-(\d+)$")


@dataclass(frozen=True)
class Split:
    """A fixed list of questions: one per repository in ``[start, start + count)``."""

    name: str
    start: int
    count: int
    description: str

    @property
    def repositories(self) -> range:
        return range(self.start, self.start + self.count)


SPLITS: dict[str, Split] = {
    "isg-500": Split(
        "isg-500", 0, 500, "500 questions over repositories 0-499, all 12 types, 1/4 unanswerable"
    ),
    "isg-test-500": Split(
        "isg-test-500",
        TEST_REPOSITORIES.start,
        500,
        "held-out test: 500 questions over repositories 2,000,000,000-2,000,000,499",
    ),
}


def split_question(seed: int) -> str:
    """The id of repository ``seed``'s question in a split (see the module docstring)."""
    repo = Repository.from_seed(seed)
    first = seed % len(TYPES)
    for shift in range(len(TYPES)):
        kind = TYPES[(first + shift) % len(TYPES)]
        for slot in range(SLOTS):
            question = question_at(repo, slot, [kind])
            if question is not None:
                return question.id
    raise ValueError(f"repository {seed} offers no question in {SLOTS} slots")


def generate_split(repositories: Sequence[int] | range) -> list[str]:
    """Question ids of a split over ``repositories`` (one each), computed from scratch."""
    return [split_question(seed) for seed in repositories]


def _split_file(name: str) -> Path:
    return Path(str(resources.files("isg_gym.data").joinpath("splits", f"{name}.txt")))


def resolve_split(split: str | Sequence[str]) -> list[str]:
    """Question ids of a split: a name of :data:`SPLITS`, ``"repos:A-B"`` (one question per
    repository ``A`` to ``B - 1``, same recipe), or a list of question ids (validated)."""
    if not isinstance(split, str):
        ids = list(split)
        for qid in ids:
            parse_question_id(qid)
        return ids
    if split in SPLITS:
        path = _split_file(split)
        if not path.exists():
            raise FileNotFoundError(
                f"split file {path} is missing; run `python -m isg_gym.eval.splits --write`"
            )
        return path.read_text(encoding="utf-8").split()
    match = _REPOS.match(split)
    if match:
        start, stop = int(match.group(1)), int(match.group(2))
        if stop <= start:
            raise ValueError(f"split {split!r}: the range is empty (use repos:A-B with A < B)")
        return generate_split(range(start, stop))
    raise ValueError(
        f"unknown split {split!r}; use one of {sorted(SPLITS)}, 'repos:A-B', or a list of "
        "question ids"
    )


def train_env_kwargs() -> dict[str, int]:
    """``ISGEnv`` arguments that draw only training repositories."""
    return {
        "start_repository": TRAIN_REPOSITORIES.start,
        "num_repositories": len(TRAIN_REPOSITORIES),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the stored evaluation splits.")
    parser.add_argument("--write", action="store_true", help="regenerate and store the files")
    parser.add_argument("--check", action="store_true", help="regenerate and compare")
    args = parser.parse_args(argv)
    status = 0
    for split in SPLITS.values():
        ids = generate_split(split.repositories)
        path = _split_file(split.name)
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(ids) + "\n", encoding="utf-8")
            print(f"wrote {path} ({len(ids)} questions)")
        else:
            stored = path.read_text(encoding="utf-8").split() if path.exists() else []
            same = stored == ids
            status |= not same
            print(f"{split.name}: {'matches' if same else 'DIFFERS from'} {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
