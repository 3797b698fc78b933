"""Evaluation runner benchmark: what the runner costs on top of the env, and scripted
throughput.

1. Runner overhead: the always-abstain policy played through ``evaluate`` (records built, one
   fsynced JSONL line per episode) against the same episodes played by a bare loop over
   ``env.reset`` / ``env.step`` in the same process: episodes per second of each and their ratio.
2. Oracle throughput: the scripted oracle (one sandboxed pandas call per episode) through
   ``evaluate`` at each concurrency, on questions ``--per-repository`` to a repository, and on
   one question per repository (``repos:A-B``, every episode on a new repository).
3. Repository switch: the first ``run_python_code`` on a new repository, with the worker's view
   swapped in place against a worker restart (the behaviour before views), in the same process.

Usage: python benchmarks/eval.py [--episodes N] [--per-repository K] [--concurrency 1,2]
       [--switches N] [--sandbox bwrap|none]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass, fields

from isg_gym.dataset import make_dataset
from isg_gym.envs import ISGEnv
from isg_gym.eval import evaluate
from isg_gym.eval.policies import AbstainPolicy, OraclePolicy
from isg_gym.repository import Repository
from isg_gym.tools.sandbox import get_sandbox


@dataclass
class Args:
    episodes: int = 200
    per_repository: int = 5
    concurrency: str = "1,2"
    switches: int = 20
    sandbox: str = "auto"


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default),
                            default=f.default)  # fmt: skip
    return Args(**vars(parser.parse_args()))


def question_ids(episodes: int, per_repository: int) -> list[str]:
    rows = make_dataset(range(episodes // per_repository + 1), per_repository)
    return [row["id"] for row in rows][:episodes]


def bare_loop(ids: list[str], env_kwargs: dict) -> float:
    """Episodes per second of reset + one final answer, no runner."""
    env = ISGEnv(**env_kwargs, privileged_info=True)
    start = time.perf_counter()
    for qid in ids:
        env.reset(options={"question": qid})
        env.step({"name": "final_answer", "arguments": {"answer": "not possible"}})
    elapsed = time.perf_counter() - start
    env.close()
    return len(ids) / elapsed


def through_runner(policy, ids: list[str] | str, env_kwargs: dict, concurrency: int) -> float:
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = evaluate(policy, ids, out, concurrency=concurrency, env_kwargs=env_kwargs,
                           report=False)  # fmt: skip
        elapsed = time.perf_counter() - start
    return summary["n"] / elapsed


def switch_times(args: Args) -> tuple[list[float], list[float]]:
    """Seconds of a first call on a new repository: view swap vs worker restart."""
    from isg_gym.envs import materialize

    dirs = [materialize.acquire(Repository.from_seed(s)) for s in range(args.switches + 1)]
    swap, restart = [], []
    with get_sandbox(args.sandbox) as sandbox:
        sandbox.run("1", dirs[0])
        for d in dirs[1:]:
            t = time.perf_counter()
            sandbox.run("1", d)
            swap.append(time.perf_counter() - t)
        for d in dirs[:-1]:
            sandbox.close()  # the worker must start again, as it did for every repository
            t = time.perf_counter()
            sandbox.run("1", d)
            restart.append(time.perf_counter() - t)
    for s, d in enumerate(dirs):
        materialize.release(s, d)
    return swap, restart


def main() -> None:
    args = parse_args()
    env_kwargs = {"sandbox": args.sandbox, "max_steps": 6}
    ids = question_ids(args.episodes, args.per_repository)
    print(f"{len(ids)} questions, {args.per_repository} per repository, sandbox {args.sandbox}")

    bare_loop(ids[:20], env_kwargs)  # warm the repository caches for both measurements
    bare = bare_loop(ids, env_kwargs)
    runner = through_runner(AbstainPolicy(), ids, env_kwargs, 1)
    print(f"abstain, bare env loop: {bare:8.1f} episodes/s")
    print(f"abstain, evaluate():    {runner:8.1f} episodes/s  (ratio {runner / bare:.2f})")

    for k in (int(c) for c in args.concurrency.split(",")):
        rate = through_runner(OraclePolicy(), ids, env_kwargs, k)
        fresh = through_runner(OraclePolicy(), f"repos:5000-{5000 + args.episodes // 4}",
                               env_kwargs, k)  # fmt: skip
        print(f"oracle, concurrency {k}: {rate:6.2f} episodes/s ({args.per_repository} per "
              f"repository), {fresh:6.2f} episodes/s (a new repository each)")  # fmt: skip

    swap, restart = switch_times(args)
    med_swap, med_restart = statistics.median(swap), statistics.median(restart)
    ratio = med_restart / med_swap
    print(f"first call on a new repository: view swap p50 {1000 * med_swap:.1f} ms, worker "
          f"restart p50 {1000 * med_restart:.1f} ms (ratio {ratio:.0f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
