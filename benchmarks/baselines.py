"""Shortcut baselines: how far answering without looking at the data gets.

Run: ``python benchmarks/baselines.py [--repositories 400]``. Questions of repositories with an
even seed are the "train" half (used to find the most common gold answer per type); the odd half
is scored. A baseline far above chance on its slice would mean the generator leaks its answers.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from dataclasses import dataclass

from isg_gym.qa import Question, format_answer, generate_questions
from isg_gym.repository import Repository
from isg_gym.rewards import grade


@dataclass
class Args:
    repositories: int = 400
    per_repository: int = 10


def accuracy(questions: list[Question], answer_of) -> float:
    if not questions:
        return float("nan")
    return sum(grade(q, answer_of(q)).value for q in questions) / len(questions)


def main(args: Args) -> None:
    train: list[Question] = []
    test: list[Question] = []
    for seed in range(args.repositories):
        qs = generate_questions(Repository.from_seed(seed), args.per_repository)
        (train if seed % 2 == 0 else test).extend(qs)
    unanswerable = [q for q in test if not q.answerable]
    share = len(unanswerable) / len(test)
    print(f"{len(test)} scored questions ({len(train)} for training), "
          f"unanswerable share {share:.3f}")  # fmt: skip

    abstain = accuracy(test, lambda q: "not possible")
    print(f"always 'not possible':           overall {abstain:.3f} (= unanswerable share)")
    for family in ("hypothesis_tests",):
        sub = [q for q in test if q.family == family and q.answerable]
        yes = accuracy(sub, lambda q: "yes")
        print(f"always 'yes' on answerable {family}: {yes:.3f} over {len(sub)} (chance 0.5)")
    sub = [q for q in test if q.type == "has_readme"]
    print(f"always 'yes' on has_readme:      {accuracy(sub, lambda q: 'yes'):.3f} "
          f"over {len(sub)} (chance 0.5)")  # fmt: skip

    common: dict[str, str] = {}
    by_type: dict[str, list[Question]] = defaultdict(list)
    for q in train:
        by_type[q.type].append(q)
    for name, qs in by_type.items():
        common[name] = Counter(format_answer(q) for q in qs).most_common(1)[0][0]
    print("\nmost common training answer per type, scored on the test half:")
    print(f"  {'type':<22} {'answer':<16} {'accuracy':>8} {'n':>5}  share of that answer in test")
    for name in sorted(common):
        qs = [q for q in test if q.type == name]
        acc = accuracy(qs, lambda q, a=common[name]: a)
        gold_share = sum(format_answer(q) == common[name] for q in qs) / max(len(qs), 1)
        print(f"  {name:<22} {common[name][:16]:<16} {acc:8.3f} {len(qs):5d}  {gold_share:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repositories", type=int, default=Args.repositories)
    parser.add_argument("--per-repository", type=int, default=Args.per_repository)
    main(Args(**vars(parser.parse_args())))
