"""Named, fixed evaluation splits and the repository ranges of train and test.

Repository seeds are split three ways, so that training never touches what is evaluated:

- :data:`EVAL_REPOSITORIES` ``[0, 1000)``: public evaluation. ``isg-500`` is 500 questions over
  repositories 0-499.
- :data:`TRAIN_REPOSITORIES` ``[1000, 2_000_000_000)``: for training
  (``gym.make("ISG-v0", **train_env_kwargs())``).
- :data:`TEST_REPOSITORIES` ``[2_000_000_000, 2_000_001_000)``: held out. ``isg-test-500`` is
  500 questions over its first 500 repositories.

A split takes one question per repository, balanced by construction: each question's type and
answerability are chosen first, then its slot.

- **Type.** Repository ``s`` asks the type with the fewest questions so far in the split, ties
  broken in the order ``TYPES[s % 12], TYPES[s % 12 + 1], ...`` (the 12 types in alphabetical
  order). While every repository offers what it is asked, this is simply ``TYPES[s % 12]``.
- **Answerability.** Per type, the questions placed in the split are numbered ``k = 0, 1, ...``
  and cut into blocks of 5 (for the nominal 2/5 unanswerable share,
  :data:`~isg_gym.qa.sampling.DEFAULT_UNANSWERABLE_RATIO`); which questions of a block are
  unanswerable are drawn from ``derive(start, "split-answerability", type, block)`` (``start``:
  the split's first repository). Every type's unanswerable share in a split is then nominal to
  within one question, and a question's position does not predict it.
- **Slot.** The first of ``s``'s :data:`SLOTS` slots whose own answerability
  (:func:`~isg_gym.qa.sampling.slot_answerable`) is the chosen one and that holds a question of
  the type (:func:`~isg_gym.qa.sampling.make_question`), so that the id ``s.type.slot``
  regenerates the same question (:func:`~isg_gym.qa.sampling.question_from_id`).
- **Fallback.** When ``s`` offers no question of that type and answerability within
  :data:`SLOTS` slots (a title question due to be answerable, in a repository whose README hides
  the title), the next type in the tie-break order is taken, with that type's own next
  answerability; the type passed over keeps its pending answerability, and being behind it is
  asked first by the following repositories until one offers it. (Taking only "the next type"
  would leave rarely answerable types such as ``abstract`` with a handful of questions, whose
  share could not be near nominal.)

A split therefore depends on its first repository (``repos:A-B`` is computed from ``A`` on).

The question ids are stored in ``isg_gym/data/splits/NAME.txt``;
``python -m isg_gym.eval.splits --check`` regenerates and compares them, prints a per-type table
of counts and unanswerable shares of each split, and exits non-zero when a file differs or a
type's share is more than :data:`MAX_SHARE_GAP` from nominal.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path

from isg_gym.qa import QUESTION_TYPES
from isg_gym.qa.sampling import (
    DEFAULT_UNANSWERABLE_RATIO,
    make_question,
    parse_question_id,
    slot_answerable,
)
from isg_gym.repository import Repository
from isg_gym.seeding import derive

EVAL_REPOSITORIES = range(0, 1000)
TRAIN_REPOSITORIES = range(1000, 2_000_000_000)
TEST_REPOSITORIES = range(2_000_000_000, 2_000_001_000)
TYPES: tuple[str, ...] = tuple(sorted(QUESTION_TYPES))
SLOTS = 64
MAX_SHARE_GAP = 0.05  # the most a type's unanswerable share in a split may be off nominal
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


@lru_cache(maxsize=4096)
def _block(start: int, kind: str, index: int) -> tuple[bool, ...]:
    """Answerabilities of block ``index`` of type ``kind`` in the split starting at ``start``
    (with the nominal 2/5: two unanswerable questions in 5, at drawn positions)."""
    share = Fraction(DEFAULT_UNANSWERABLE_RATIO).limit_denominator(100)
    size, unanswerable = share.denominator, share.numerator
    rng = derive(start, "split-answerability", kind, index)
    picked = set(rng.permutation(size)[:unanswerable].tolist())
    return tuple(i not in picked for i in range(size))


def split_answerability(start: int, kind: str, k: int) -> bool:
    """Whether the ``k``-th question of type ``kind`` in the split starting at ``start`` is
    answerable."""
    size = len(_block(start, kind, 0))
    return _block(start, kind, k // size)[k % size]


def question_of(repo: Repository, kind: str, answerable: bool) -> str | None:
    """Id of the first of ``repo``'s slots with that answerability holding a ``kind`` question."""
    for slot in range(SLOTS):
        if slot_answerable(repo.seed, slot, DEFAULT_UNANSWERABLE_RATIO) != answerable:
            continue
        question = make_question(repo, kind, slot, answerable)
        if question is not None:
            return question.id
    return None


def generate_split(repositories: Sequence[int] | range) -> list[str]:
    """Question ids of a split over ``repositories`` (one each, in order), computed from scratch
    as the module docstring describes."""
    seeds = list(repositories)
    if not seeds:
        return []
    start = seeds[0]
    counts = dict.fromkeys(TYPES, 0)
    ids = []
    for seed in seeds:
        repo = Repository.from_seed(seed)
        first = seed % len(TYPES)
        rotation = [TYPES[(first + shift) % len(TYPES)] for shift in range(len(TYPES))]
        order = sorted(rotation, key=counts.__getitem__)  # a stable sort: ties rotate
        for kind in order:
            qid = question_of(repo, kind, split_answerability(start, kind, counts[kind]))
            if qid is not None:
                counts[kind] += 1
                ids.append(qid)
                break
        else:
            raise ValueError(f"repository {seed} offers no question in {SLOTS} slots")
    return ids


def split_question(seed: int) -> str:
    """The id of repository ``seed``'s question in a split that starts at ``seed``."""
    return generate_split([seed])[0]


def question_answerable(question_id: str) -> bool:
    """Whether a split question is answerable, from its id alone (its slot's answerability)."""
    seed, _, slot = parse_question_id(question_id)
    return slot_answerable(seed, slot, DEFAULT_UNANSWERABLE_RATIO)


def type_shares(ids: Sequence[str]) -> dict[str, tuple[int, float]]:
    """Type -> (number of questions, unanswerable share) over the question ids of a split."""
    out: dict[str, tuple[int, float]] = {}
    for kind in TYPES:
        mine = [qid for qid in ids if parse_question_id(qid)[1] == kind]
        unanswerable = sum(not question_answerable(qid) for qid in mine)
        out[kind] = (len(mine), unanswerable / len(mine) if mine else float("nan"))
    return out


def share_problems(ids: Sequence[str], gap: float | None = None) -> list[str]:
    """Types whose unanswerable share is more than ``gap`` (default :data:`MAX_SHARE_GAP`) from
    nominal, or that have no question."""
    gap = MAX_SHARE_GAP if gap is None else gap
    problems = []
    for kind, (count, share) in type_shares(ids).items():
        if not count:
            problems.append(f"{kind}: no question")
        elif abs(share - DEFAULT_UNANSWERABLE_RATIO) > gap:
            problems.append(
                f"{kind}: unanswerable share {share:.1%} over {count} questions, nominal "
                f"{DEFAULT_UNANSWERABLE_RATIO:.0%} +/- {gap:.0%}"
            )
    return problems


def share_table(ids: Sequence[str]) -> str:
    """A per-type table of counts and unanswerable shares (and the total)."""
    lines = [f"  {'type':<22} {'n':>4} {'unans.':>6} {'share':>6}"]
    for kind, (count, share) in type_shares(ids).items():
        unanswerable = round(share * count) if count else 0
        lines.append(f"  {kind:<22} {count:4d} {unanswerable:6d} {share:6.1%}")
    total = sum(not question_answerable(qid) for qid in ids)
    lines.append(f"  {'all':<22} {len(ids):4d} {total:6d} {total / max(len(ids), 1):6.1%}")
    return "\n".join(lines)


def _split_file(name: str) -> Path:
    return Path(str(resources.files("isg_gym.data").joinpath("splits", f"{name}.txt")))


def resolve_split(split: str | Sequence[str]) -> list[str]:
    """Question ids of a split: a name of :data:`SPLITS`, ``"repos:A-B"`` (one question per
    repository ``A`` to ``B - 1``, same recipe), or a list of question ids (validated)."""
    return resolve_named_split(
        split, SPLITS, parse_question_id, generate_split, "isg_gym.eval.splits", "question ids"
    )


def resolve_named_split(
    split: str | Sequence[str],
    names: Collection[str],
    check_id: Callable[[str], object],
    from_range: Callable[[range], list[str]],
    module: str,
    id_example: str,
) -> list[str]:
    """An env's split resolution: a list of ids (each checked by ``check_id``), a stored split
    of ``names`` (``isg_gym/data/splits/NAME.txt``, written by ``python -m MODULE --write``),
    or ``"repos:A-B"`` (``from_range(range(A, B))``)."""
    if not isinstance(split, str):
        ids = list(split)
        for qid in ids:
            check_id(qid)
        return ids
    if split in names:
        path = _split_file(split)
        if not path.exists():
            raise FileNotFoundError(
                f"split file {path} is missing; run `python -m {module} --write`"
            )
        return path.read_text(encoding="utf-8").split()
    match = _REPOS.match(split)
    if match:
        start, stop = int(match.group(1)), int(match.group(2))
        if stop <= start:
            raise ValueError(f"split {split!r}: the range is empty (use repos:A-B with A < B)")
        return from_range(range(start, stop))
    raise ValueError(
        f"unknown split {split!r}; use one of {sorted(names)}, 'repos:A-B', or a list of "
        f"{id_example}"
    )


def train_env_kwargs() -> dict[str, int]:
    """``ISGEnv`` arguments that draw only training repositories."""
    return {
        "start_repository": TRAIN_REPOSITORIES.start,
        "num_repositories": len(TRAIN_REPOSITORIES),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write or check the stored evaluation splits (and print their per-type "
        "unanswerable shares)."
    )
    parser.add_argument("--write", action="store_true", help="regenerate and store the files")
    parser.add_argument("--check", action="store_true", help="regenerate and compare (default)")
    args = parser.parse_args(argv)
    if args.write and args.check:
        parser.error("use --write or --check, not both")
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
        print(share_table(ids))
        problems = share_problems(ids)
        for problem in problems:
            print(f"  OFF NOMINAL: {problem}")
        status |= bool(problems)
    return status


if __name__ == "__main__":
    sys.exit(main())
