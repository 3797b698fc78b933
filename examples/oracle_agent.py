"""Run the scripted oracle (isg_gym.eval.policies.OraclePolicy) and print its accuracy.

The oracle reads the question's type, structured ``params`` and significant figures from the
privileged reset info to learn WHAT to compute, then computes the answer through the env's tools
only (``list_directory`` / ``read_text_file`` for README questions, pandas / scipy code sent to
``run_python_code`` for the rest) and submits it with ``final_answer``. It never reads the gold
answer, and should score 100%.

    python examples/oracle_agent.py --episodes 50
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from itertools import islice

from isg_gym.dataset import make_dataset
from isg_gym.eval.policies import OraclePolicy
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.runner import evaluate


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=200, help="number of episodes to play")
    p.add_argument("--start-repository", type=int, default=0, help="first repository seed")
    p.add_argument("--per-repository", type=int, default=5, help="questions per repository")
    p.add_argument("--concurrency", type=int, default=4, help="envs played at once")
    p.add_argument("--sandbox", default="auto",
                   help='run_python_code backend ("auto", "bwrap", "landlock", "none")')
    p.add_argument("--out", default=None, help="output directory (default: a temporary one)")
    p.add_argument("--verbose", action="store_true", help="print every episode")
    return p.parse_args(argv)


def question_ids(episodes: int, start: int, per_repository: int) -> list[str]:
    """``per_repository`` distinct questions from each repository from ``start`` on."""
    rows = make_dataset(range(start, start + episodes), per_repository)
    return [row["id"] for row in islice(rows, episodes)]


def main(argv: list[str] | None = None) -> float:
    args = parse_args(argv)
    ids = question_ids(args.episodes, args.start_repository, args.per_repository)
    with tempfile.TemporaryDirectory(prefix="isg-oracle-") as tmp:
        out = args.out or tmp
        start = time.perf_counter()
        evaluate(OraclePolicy(), ids, out, concurrency=args.concurrency,
                 env_kwargs={"sandbox": args.sandbox, "max_steps": 10}, report=False)  # fmt: skip
        elapsed = time.perf_counter() - start
        records = read_records(f"{out}/{RECORDS_FILE}")
    for r in sorted(records, key=lambda r: r["index"]):
        if args.verbose:
            print(f"{r['question_id']:40s} {r['outcome']:9s} {str(r['answer'])[:60]!r}")
        if r["outcome"] != "correct":
            print(f"FAIL {r['question_id']} ({r['outcome']}): gave {r['answer']!r}, "
                  f"expected {r['gold']!r}")  # fmt: skip
    correct = sum(r["outcome"] == "correct" for r in records)
    print(f"outcomes: {dict(Counter(r['outcome'] for r in records))}")
    print(f"types: {dict(sorted(Counter(r['type'] for r in records).items()))}")
    print(f"accuracy {correct / len(records):.4f} ({correct}/{len(records)}), "
          f"{len(records) / elapsed:.2f} episodes/s ({elapsed:.1f} s)")  # fmt: skip
    return correct / len(records)


if __name__ == "__main__":
    main()
