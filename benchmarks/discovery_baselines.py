"""ISG-Discovery-v0 baselines: mean reward and scores with 95% intervals, and the counterfactual
figure, from the runs of ``isg eval --env ISG-Discovery-v0``.

Usage:
  isg eval --env ISG-Discovery-v0 --backend scripted --model oracle,analyst,empty,random \\
      --split discovery-200 --out RUNS
  python benchmarks/discovery_baselines.py RUNS [--export DIR]

``RUNS`` holds one directory per policy with its ``episodes.jsonl`` (or the ``metrics.jsonl``
that ``--export`` writes: one line per episode with its reward and episode metrics, small
enough to commit). Means get a t interval (95%, clipped to [0, 1]); the counterfactual figure
counts, over the counterfactual repositories, the reports whose claim about the stated
hypothesis pair followed the data or the story, with Wilson intervals.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from scipy import stats

from isg_gym.eval.metrics import wilson_interval

METRICS = ("reward", "precision", "recall", "f1", "f1_raw", "evidence", "robustness",
           "unrecorded", "control_testing")  # fmt: skip


def load(run: Path) -> list[dict[str, Any]]:
    """Per-episode ``{"question_id", "reward", **episode_metrics}`` of a run directory."""
    metrics = run / "metrics.jsonl"
    if metrics.exists():
        return [json.loads(line) for line in metrics.read_text().splitlines() if line]
    rows = []
    for line in (run / "episodes.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("error") is None:
            rows.append({"question_id": record["question_id"], "reward": record["reward"],
                         **(record.get("episode_metrics") or {})})  # fmt: skip
    return rows


def mean_interval(values: list[float]) -> str:
    n = len(values)
    if n == 0:
        return "n/a"
    mean = sum(values) / n
    if n == 1:
        return f"{mean:.3f}"
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    low, high = max(0.0, mean - half), min(1.0, mean + half)  # every score lies in [0, 1]
    return f"{mean:.3f} ({low:.3f}-{high:.3f})"


def proportion(k: int, n: int) -> str:
    ci = wilson_interval(k, n)
    return "n/a" if ci is None else f"{k}/{n} = {k / n:.1%} ({ci[0]:.1%}-{ci[1]:.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--export", type=Path, help="write each run's metrics.jsonl here")
    args = parser.parse_args()
    runs = {d.name: load(d) for d in sorted(args.runs.iterdir())
            if (d / "episodes.jsonl").exists() or (d / "metrics.jsonl").exists()}  # fmt: skip
    print("| policy | n | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    for name, rows in runs.items():
        cells = [mean_interval([r[m] for r in rows if m in r]) for m in METRICS]
        print(f"| {name} | {len(rows)} | " + " | ".join(cells) + " |")
    print("\nCounterfactual repositories (the program contradicts the README's hypothesis):\n")
    print("| policy | followed the data | followed the story | neither |\n|---|---|---|---|")
    for name, rows in runs.items():
        cf = [r for r in rows if r.get("counterfactual") == 1.0]
        data = sum(r.get("followed_data") == 1.0 for r in cf)
        story = sum(r.get("followed_story") == 1.0 for r in cf)
        print(f"| {name} | {proportion(data, len(cf))} | {proportion(story, len(cf))} | "
              f"{len(cf) - data - story} |")  # fmt: skip
    if args.export:
        for name, rows in runs.items():
            out = args.export / name / "metrics.jsonl"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


if __name__ == "__main__":
    main()
