"""Named evaluation splits of ISG-Orbits-v0 and the system ranges of train and test.

Systems are split three ways, like ISG-v0's repositories: :data:`EVAL_SYSTEMS` ``[0, 1000)``
(public evaluation, ``orbits-200``), :data:`TRAIN_SYSTEMS` ``[1000, 2_000_000_000)`` and
:data:`TEST_SYSTEMS` ``[2_000_000_000, 2_000_001_000)`` (held out, ``orbits-test-200``).

A split of ``N`` questions is balanced by task and answerability: every task gets ``N // T`` or
one more questions (the first ``N mod T`` tasks in alphabetical order get one more), 40% of them
unanswerable (rounded) and, for yes/no tasks, the answerable ones half yes; each task takes
the first systems of the range (in seed order) whose question falls in a stratum it still
needs, question index 0. So a question's position and task predict neither its answer nor its
answerability. The ids are stored in ``isg_gym/data/splits/NAME.txt``;
``python -m isg_gym.orbits.splits --check`` regenerates and compares them.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from isg_gym.orbits.sampling import UNANSWERABLE_SHARE, make_question, parse_question_id
from isg_gym.orbits.system import build_system
from isg_gym.orbits.tasks import TASKS

EVAL_SYSTEMS = range(0, 1000)
TRAIN_SYSTEMS = range(1000, 2_000_000_000)
TEST_SYSTEMS = range(2_000_000_000, 2_000_001_000)
SPLITS: dict[str, tuple[range, int]] = {
    "orbits-200": (EVAL_SYSTEMS, 200),
    "orbits-test-200": (TEST_SYSTEMS, 200),
}


def quotas(task: str, count: int) -> dict[str, int]:
    """How many questions of each stratum ``task`` takes in a split with ``count`` of them."""
    unanswerable = round(count * UNANSWERABLE_SHARE)
    answerable = count - unanswerable
    if TASKS[task].kind == "yes_no":
        return {"unanswerable": unanswerable, "yes": (answerable + 1) // 2,
                "no": answerable // 2}  # fmt: skip
    return {"unanswerable": unanswerable, "value": answerable}


def build_split(systems: range, size: int) -> list[str]:
    """The question ids of a balanced split of ``size`` questions over ``systems``."""
    names = sorted(TASKS)
    ids: list[str] = []
    for i, task in enumerate(names):
        need = quotas(task, size // len(names) + (1 if i < size % len(names) else 0))
        for seed in systems:
            if not any(need.values()):
                break
            question = make_question(build_system(seed), task, 0)
            if need.get(question.stratum, 0) > 0:
                need[question.stratum] -= 1
                ids.append(question.id)
        if any(need.values()):
            raise RuntimeError(f"{task}: systems {systems} leave {need} unfilled")
    return sorted(ids, key=lambda q: (parse_question_id(q)[0], q))


def _path(name: str) -> Any:
    return resources.files("isg_gym.data.splits").joinpath(f"{name}.txt")


@cache
def stored_split(name: str) -> tuple[str, ...]:
    if name not in SPLITS:
        raise ValueError(f"unknown orbits split {name!r}; known: {', '.join(SPLITS)}")
    return tuple(_path(name).read_text(encoding="utf-8").split())


def resolve_split(split: Any) -> list[str]:
    """A split name's question ids, or a list of ids checked for their form."""
    if isinstance(split, str):
        return list(stored_split(split))
    ids = [str(q) for q in split]
    for qid in ids:
        parse_question_id(qid)
    return ids


def describe(ids: list[str]) -> str:
    """Per task: questions and how many of them are unanswerable."""
    counts, unanswerable = Counter(), Counter()
    for qid in ids:
        seed, task, index = parse_question_id(qid)
        question = make_question(build_system(seed), task, index)
        counts[task] += 1
        unanswerable[task] += not question.answerable
    lines = [f"{'task':24s} questions unanswerable"]
    lines += [f"{t:24s} {counts[t]:9d} {unanswerable[t]:12d}" for t in sorted(counts)]
    lines.append(f"{'all':24s} {sum(counts.values()):9d} {sum(unanswerable.values()):12d}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check the stored orbits splits.")
    parser.add_argument("--write", action="store_true", help="regenerate and store the files")
    args = parser.parse_args(argv)
    status = 0
    for name, (systems, size) in SPLITS.items():
        ids = build_split(systems, size)
        if args.write:
            Path(str(_path(name))).write_text("\n".join(ids) + "\n", encoding="utf-8")
            print(f"wrote {name}: {len(ids)} questions")
        elif list(stored_split(name)) != ids:
            print(f"{name}: the stored ids differ from the recipe", file=sys.stderr)
            status = 1
        print(describe(ids))
    return status


if __name__ == "__main__":
    sys.exit(main())
