"""Evaluation on Ray against the local runner: the scripted oracle on the first N episodes of
isg-500 (one question per repository).

1. ``ray.init`` of a new local instance (no dashboard), and the start of one actor (process,
   imports, first env made), in this process.
2. Episodes per second of ``evaluate`` with the local runner (``--concurrency`` envs) and with
   ``ray=`` on 1 and 2 actors of ``--actor-concurrency`` envs each (actor start included:
   the wall time of the whole call), on the same episodes; every run must give the same
   records (checked: ids, answers, outcomes, scores).
3. The per-episode overhead Ray adds: with actor start, (Ray run - local run) / N at the same
   number of live episodes; steady state, on a warm actor, episodes played one at a time: the
   driver's time per episode (submit to record) minus the time the actor itself measured.
4. The per-step overhead of an env on an actor (what a chat model on the driver pays per
   step): ``RemoteEnv.step`` minus a local ``env.step`` of the same cheap action.

Usage: python benchmarks/ray_eval.py [--episodes N] [--concurrency K] [--actor-concurrency M]
       [--warm-episodes W] [--steps S] [--sandbox auto|bwrap|none]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

from isg_gym.envs.registry import get_env
from isg_gym.eval import evaluate
from isg_gym.eval.policies import OraclePolicy
from isg_gym.eval.ray_runner import EpisodeWorker
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.runner import episode_env_kwargs
from isg_gym.eval.splits import resolve_split
from isg_gym.rl.ray_pool import RemoteEnvPool, connect, require_ray

LIST = '<tool_call>{"name": "list_directory", "arguments": {"path": "/"}}</tool_call>'


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40, help="first N of isg-500")
    parser.add_argument("--concurrency", type=int, default=2, help="local runner's envs")
    parser.add_argument("--actor-concurrency", type=int, default=2, help="envs per actor")
    parser.add_argument("--warm-episodes", type=int, default=10, help="steady-state episodes")
    parser.add_argument("--steps", type=int, default=50, help="steps timed per env")
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "landlock", "none"))
    return parser.parse_args()


def timed_run(ids: list[str], env_kwargs: dict[str, Any], **options: Any) -> tuple[float, list]:
    """Seconds of one ``evaluate`` call and its records (sorted by index)."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        evaluate(OraclePolicy(), ids, out, env_kwargs=env_kwargs, report=False, **options)
        elapsed = time.perf_counter() - start
        records = sorted(read_records(os.path.join(out, RECORDS_FILE)), key=lambda r: r["index"])
    return elapsed, records


def same_results(a: list[dict], b: list[dict]) -> bool:
    keys = ("index", "question_id", "answer", "outcome", "score", "steps")
    return [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]


def actor_start(
    ray: Any, env_kwargs: dict[str, Any], slots: int
) -> tuple[Any, float, float, dict[str, Any]]:
    """A new oracle actor; seconds until it answers, and until its first env is made; where
    it runs."""
    entry = get_env("ISG-v0")
    start = time.perf_counter()
    actor = ray.remote(EpisodeWorker).options(num_cpus=1, max_concurrency=slots + 2).remote(
        entry, episode_env_kwargs(env_kwargs), slots, OraclePolicy(), entry.question_version
    )
    where = ray.get(actor.where.remote())
    up = time.perf_counter() - start
    ray.get(actor.spaces.remote())
    return actor, up, time.perf_counter() - start, where


def steady_overhead(ray: Any, actor: Any, ids: list[str]) -> tuple[list[float], list[float]]:
    """Per episode, one at a time on a warm actor: driver seconds and actor-measured seconds."""
    driver, inside = [], []
    for index, qid in enumerate(ids):
        start = time.perf_counter()
        record = ray.get(actor.play.remote(index, qid))
        driver.append(time.perf_counter() - start)
        inside.append(record["wall_s"])
    return driver, inside


def step_overhead(env_kwargs: dict[str, Any], steps: int) -> tuple[float, float]:
    """Median seconds of a list_directory step: local env, and through a RemoteEnv handle."""
    kwargs = {**env_kwargs, "max_steps": steps + 1}
    qid = resolve_split("isg-500")[0]
    local = get_env("ISG-v0").make(**kwargs)
    pool = RemoteEnvPool("ISG-v0", num_envs=1, num_actors=1, env_kwargs=kwargs)
    times: dict[str, list[float]] = {"local": [], "remote": []}
    try:
        for name, env in (("local", local), ("remote", pool.envs[0])):
            env.reset(options={"question": qid})
            for _ in range(steps):
                start = time.perf_counter()
                env.step(LIST)
                times[name].append(time.perf_counter() - start)
    finally:
        local.close()
        pool.close()
    return statistics.median(times["local"]), statistics.median(times["remote"])


def main() -> None:
    args = parse_args()
    ray = require_ray()
    env_kwargs = {"max_steps": 4, "sandbox": args.sandbox}
    ids = resolve_split("isg-500")[: args.episodes]
    load = os.getloadavg()
    print(f"{len(ids)} oracle episodes of isg-500, {os.cpu_count()} CPUs, load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at start")  # fmt: skip

    start = time.perf_counter()
    connect("local")
    print(f"ray.init (new local instance, no dashboard): {time.perf_counter() - start:.1f} s")
    actor, up, ready, where = actor_start(ray, env_kwargs, 1)
    print(f"actor start: {up:.1f} s to answer, {ready:.1f} s to its first env; actors run at "
          f"nice {where['nice']} (this process: {os.nice(0)}; RAY_worker_niceness sets it)")
    ray.kill(actor)

    rows = []
    local_s, reference = timed_run(ids, env_kwargs, concurrency=args.concurrency)
    rows.append((f"local runner, concurrency {args.concurrency}", args.concurrency, local_s))
    wide = 2 * args.actor_concurrency
    if wide != args.concurrency:
        wide_s, records = timed_run(ids, env_kwargs, concurrency=wide)
        assert same_results(records, reference), "local runs differ"
        rows.append((f"local runner, concurrency {wide}", wide, wide_s))
    local_by_width = {width: s for _, width, s in rows}
    for actors in (1, 2):
        seconds, records = timed_run(ids, env_kwargs, ray=True, ray_actors=actors,
                                     ray_actor_concurrency=args.actor_concurrency)  # fmt: skip
        assert same_results(records, reference), f"the Ray run on {actors} actors differs"
        width = actors * args.actor_concurrency
        rows.append((f"ray, {actors} actor(s) x {args.actor_concurrency}", width, seconds))
    print(f"\n{'run':<30} {'live':>5} {'seconds':>8} {'episodes/s':>11} {'vs local':>9}")
    for name, width, seconds in rows:
        local = local_by_width.get(width)
        ratio = f"{local / seconds:.2f}x" if local and name.startswith("ray") else ""
        print(f"{name:<30} {width:>5} {seconds:>8.1f} {len(ids) / seconds:>11.2f} {ratio:>9}")
    for name, width, seconds in rows:
        if name.startswith("ray") and width in local_by_width:
            extra = (seconds - local_by_width[width]) / len(ids)
            print(f"{name}: {extra * 1000:+.0f} ms per episode vs local at {width} live "
                  "(actor start included)")  # fmt: skip

    actor, *_ = actor_start(ray, env_kwargs, 1)
    warm = ids[: args.warm_episodes]
    steady_overhead(ray, actor, warm)  # warm the actor: imports, caches, the sandbox worker
    driver, inside = steady_overhead(ray, actor, warm)
    ray.kill(actor)
    gaps = [d - i for d, i in zip(driver, inside, strict=True)]
    print(f"\nsteady state, {len(warm)} episodes one at a time on a warm actor: driver "
          f"{statistics.mean(driver) * 1000:.0f} ms, actor {statistics.mean(inside) * 1000:.0f} "
          f"ms per episode; Ray adds {statistics.median(gaps) * 1000:.1f} ms (median; mean "
          f"{statistics.mean(gaps) * 1000:.1f} ms)")  # fmt: skip

    local_step, remote_step = step_overhead(env_kwargs, args.steps)
    print(f"list_directory step, median of {args.steps}: local {local_step * 1000:.2f} ms, "
          f"on an actor {remote_step * 1000:.2f} ms (+{(remote_step - local_step) * 1000:.2f} "
          "ms per step)")  # fmt: skip
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
