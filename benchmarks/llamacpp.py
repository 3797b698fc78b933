"""llama.cpp backend benchmark: a real small model (default SmolLM2-135M-Instruct) playing
isg-500 episodes on the CPU through ``evaluate``, decoding under the tool-call grammar.

Prints llama.cpp's own counters: prompt tokens/s (only the tokens evaluated: the rest of each
prompt was already in the context) and generation tokens/s; the share of prompt tokens reused;
seconds per model call (one env step) p50/p90; seconds and steps per episode; the outcomes and
the model's accuracy with its Wilson interval; the machine's load average before and after.

Usage: python benchmarks/llamacpp.py [--episodes 20] [--split isg-500] [--max-steps 8]
       [--concurrency 1] [--threads 1] [--n-ctx 4096] [--max-tokens 256]
       [--max-output-chars 2000] [--no-answer-on-last-step] [--model smollm2] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from isg_gym.eval import evaluate
from isg_gym.eval.backends.llamacpp import LlamaCppBackend
from isg_gym.eval.metrics import wilson_interval
from isg_gym.eval.policy import ChatPolicy
from isg_gym.eval.records import RECORDS_FILE, read_records


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="GGUF path or 'smollm2'")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--split", default="isg-500")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--max-output-chars", type=int, default=2000)
    parser.add_argument("--chat-format", default=None)
    parser.add_argument("--no-answer-on-last-step", action="store_true",
                        help="keep every tool on the last step (episodes may run out)")  # fmt: skip
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--out", default=None, help="keep the run here (default: a temp dir)")
    return parser.parse_args()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    args = parse_args()
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)")
    start = time.perf_counter()
    backend = LlamaCppBackend(
        None if args.model == "smollm2" else args.model,
        n_ctx=args.n_ctx,
        max_tokens=args.max_tokens,
        n_threads=args.threads,
        chat_format=args.chat_format,
    )
    print(f"model {backend.model} loaded in {time.perf_counter() - start:.1f} s "
          f"(chat format {backend.chat_format}, {args.threads} thread(s))")  # fmt: skip
    policy = ChatPolicy(backend, answer_on_last_step=not args.no_answer_on_last_step)
    env_kwargs = {"max_steps": args.max_steps, "max_output_chars": args.max_output_chars,
                  "sandbox": args.sandbox}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        start = time.perf_counter()
        try:
            evaluate(policy, args.split, out, episodes=args.episodes,
                     concurrency=args.concurrency, env_kwargs=env_kwargs, report=False)  # fmt: skip
        finally:
            policy.close()
        elapsed = time.perf_counter() - start
        records = read_records(out / RECORDS_FILE)
    report(args, backend, records, elapsed)


def report(
    args: argparse.Namespace, backend: LlamaCppBackend, records: list, elapsed: float
) -> None:
    calls = backend.calls
    prompt = sum(c.prompt_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    evaluated = sum(c.prompt_eval_tokens for c in calls)
    eval_s = sum(c.prompt_eval_s for c in calls)
    generated = sum(c.generated_tokens for c in calls)
    gen_s = sum(c.generation_s for c in calls)
    walls = [c.wall_s for c in calls]
    episode_s = [r["wall_s"] for r in records]
    steps = [r["steps"] for r in records]
    n = len(records)
    correct = sum(bool(r["correct"]) for r in records)
    low, high = wilson_interval(correct, n) or (0.0, 0.0)
    calls_ok = sum(1 for r in records for c in r["tool_calls"] if not c["error"])
    calls_all = sum(len(r["tool_calls"]) for r in records)
    parse_failures = sum(r["parse_failures"] for r in records)
    print(f"{n} episodes of {args.split}, max {args.max_steps} steps, concurrency "
          f"{args.concurrency}, tool results capped at {args.max_output_chars} chars, "
          f"answer on last step: {not args.no_answer_on_last_step}")  # fmt: skip
    print(f"model calls: {len(calls)}; prompt tokens {prompt}, reused from the context "
          f"{cached} ({cached / max(prompt, 1):.1%}), evaluated {evaluated}")  # fmt: skip
    print(f"prompt eval: {evaluated / max(eval_s, 1e-9):.1f} tokens/s ({eval_s:.1f} s); "
          f"generation: {generated / max(gen_s, 1e-9):.1f} tokens/s "
          f"({generated} tokens, {gen_s:.1f} s)")  # fmt: skip
    print(f"s/step (one model call): p50 {statistics.median(walls):.2f}, "
          f"p90 {percentile(walls, 0.9):.2f}, max {max(walls):.2f}")  # fmt: skip
    print(f"s/episode: mean {statistics.mean(episode_s):.1f}, p50 "
          f"{statistics.median(episode_s):.1f}, max {max(episode_s):.1f}; steps/episode mean "
          f"{statistics.mean(steps):.1f}; whole run {elapsed:.0f} s")  # fmt: skip
    print(f"tool calls: {calls_all} ({calls_ok} ran without error); parse failures: "
          f"{parse_failures}")  # fmt: skip
    print(f"outcomes: {dict(Counter(r['outcome'] for r in records))}")
    print(f"accuracy: {correct}/{n} = {correct / max(n, 1):.1%} (95% CI {low:.1%}-{high:.1%})")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
