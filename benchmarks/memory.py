"""Resident memory of one ISG-v0 env with its sandbox worker, in a fresh process that imports
only what the env needs (``gym.make``, one reset, one ``run_python_code``).

Prints RSS and PSS of the env process and of every process of its worker (bubblewrap, the
supervisor, the zygote, and the call leader and child forked ahead of the next call), and the
totals. PSS (proportional set size: each shared page divided among the processes that map it)
is what the tree occupies; a sum of RSS counts the pages the zygote shares with its forks once
per process; RSS of the env plus the zygote (the worker's largest process: every call's child is
a fork of it) is an upper bound that counts the pages both map (the libraries' code, about 25
MB) twice. Where page frame numbers are readable (root), the exact figure is printed too: the
resident pages of the env and its worker together, each physical page counted once. Whether
pandas imports pyarrow in the env (it does when pyarrow is installed, about 55 MB) is printed;
the sandbox never loads it.

Last, one call runs ``gc.collect()``: how long the collection takes in a call's child and how
much private memory that child then holds (the zygote freezes the preloaded libraries' objects
out of the collector's reach, so a collection neither walks nor copies them).

``--episodes N`` plays N episodes first (a reset on a new repository, one call reading a file
of it, an answer), to show what the env's caches add over a long run.

Usage: python benchmarks/memory.py [--episodes 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from env import _pss_kb, _status_kb, descendants  # benchmarks/env.py, this script's folder

GOAL_MB = 250


READ_ONE = (
    "import os\nnames = sorted(n for n in os.listdir('.') if not n.startswith('README'))\n"
    "path = names[0]\nwhile os.path.isdir(path):\n"
    "    path = os.path.join(path, sorted(os.listdir(path))[0])\nlen(open(path, 'rb').read())"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=0, help="episodes played first")
    args = parser.parse_args()
    import gymnasium as gym

    import isg_gym  # noqa: F401  (registers the envs)

    env = gym.make("ISG-v0")
    for seed in range(1000, 1000 + args.episodes):
        env.reset(seed=seed)
        env.step([{"name": "run_python_code", "arguments": {"code": READ_ONE}}])
        env.step([{"name": "final_answer", "arguments": {"answer": "not possible"}}])
    env.reset(seed=1)
    code = "import pandas as pd, os\nlen(os.listdir('.'))"
    env.step([{"name": "run_python_code", "arguments": {"code": code}}])
    time.sleep(0.5)  # the call's child has exited; the next call's leader and child are forked
    me = os.getpid()
    rss = {p: _status_kb(p, "VmRSS") / 1024 for p in [me, *descendants(me)]}
    pss = {p: _pss_kb(p) / 1024 for p in rss}
    for pid in rss:
        try:
            with open(f"/proc/{pid}/comm") as fh:
                comm = fh.read().strip()
        except OSError:
            comm = "?"
        role = "env" if pid == me else "worker"
        print(f"  {role:6s} {pid:7d} {comm:12s} RSS {rss[pid]:6.0f} MB  PSS {pss[pid]:6.0f} MB")
    workers = [p for p in rss if p != me]
    total_pss = sum(pss.values())
    worker_rss = sum(rss[p] for p in workers)
    print(f"after {args.episodes} episodes: env RSS {rss[me]:.0f} MB, PSS {pss[me]:.0f} MB; "
          f"worker ({len(workers)} processes) "
          f"PSS {sum(pss[p] for p in workers):.0f} MB, RSS summed {worker_rss:.0f} MB; pandas "
          f"imported pyarrow: {'pyarrow' in sys.modules}")  # fmt: skip
    zygote = max(workers, key=rss.__getitem__)
    strict = rss[me] + rss[zygote]
    verdict = {True: "ok", False: "MISSED"}
    print(f"one env + its worker: PSS {total_pss:.0f} MB, RSS env + zygote {strict:.0f} MB   "
          f"goal <= {GOAL_MB} MB: PSS {verdict[total_pss <= GOAL_MB]}, "
          f"RSS {verdict[strict <= GOAL_MB]}")  # fmt: skip
    tree = resident_once_mb(list(rss))
    pair = resident_once_mb([me, zygote])
    if tree is None or pair is None:
        print("resident pages counted once: not readable here (page frame numbers need root)")
    else:
        print(f"resident pages counted once (each physical page once, from /proc/PID/pagemap): "
              f"env + worker {tree:.0f} MB   goal <= {GOAL_MB} MB: {verdict[tree <= GOAL_MB]}; "
              f"env + zygote {pair:.0f} MB (the RSS sum above counts the {strict - pair:.0f} MB "
              f"of pages both map, mostly the libraries' code, twice)")  # fmt: skip
    full_collection_in_a_call(env, zygote)
    env.close()


def _frames(pid: int) -> np.ndarray:
    """Page frame numbers of ``pid``'s resident pages (0 for each where they are hidden)."""
    ranges = []
    with open(f"/proc/{pid}/smaps") as fh:
        for line in fh:
            first = line.split(maxsplit=1)[0]
            if "-" in first and not first.endswith(":"):
                low, high = (int(x, 16) for x in first.split("-"))
                ranges.append([low, high, 0])
            elif first == "Rss:":
                ranges[-1][2] = int(line.split()[1])
    present, pfn_mask = np.uint64(1 << 63), np.uint64((1 << 55) - 1)
    found = []
    fd = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
    try:
        for low, high, resident in ranges:
            if resident:
                entries = np.frombuffer(
                    os.pread(fd, (high - low) // 4096 * 8, low // 4096 * 8), dtype=np.uint64
                )
                found.append(entries[(entries & present) != 0] & pfn_mask)
    finally:
        os.close(fd)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.uint64)


def resident_once_mb(pids: list[int]) -> float | None:
    """Resident memory of the processes ``pids`` together, each physical page counted once
    (the union of their page frames, from ``/proc/PID/pagemap``); None where the frame numbers
    are hidden (they need CAP_SYS_ADMIN). Pages shared with processes outside ``pids``
    count in full, so this is at least what PSS gives."""
    frames = []
    for pid in pids:
        try:
            frames.append(_frames(pid))
        except (OSError, IndexError):  # a process that exited meanwhile
            continue
    every = np.unique(np.concatenate(frames)) if frames else np.zeros(0, dtype=np.uint64)
    if len(every) and every[0] == 0:
        return None
    return len(every) * 4096 / 2**20


FULL_COLLECTION = (
    "import gc, time\nstart = time.perf_counter()\ngc.collect()\n"
    "print(f'{(time.perf_counter() - start) * 1000:.1f}')\ntime.sleep(1.0)"
)


def _private_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return sum(int(line.split()[1]) for line in fh if line.startswith("Private_"))
    except OSError:
        return 0


def full_collection_in_a_call(env, zygote: int) -> None:
    """A call whose cell runs ``gc.collect()``: how long the collection took and the private
    memory of the call's processes while the cell still runs (a fork of the zygote shares its
    pages until it writes to them)."""
    import threading

    out: list = []
    call = {"name": "run_python_code", "arguments": {"code": FULL_COLLECTION}}
    thread = threading.Thread(target=lambda: out.append(env.step([call])[0]))
    thread.start()
    time.sleep(0.6)  # the cell has collected and sleeps
    private = max((_private_kb(p) for p in descendants(zygote)), default=0) / 1024
    thread.join()
    text = str(out[0]) if out else ""
    took = text.split("[stdout]")[-1].split()[0] if "[stdout]" in text else "?"
    print(f"a call running gc.collect(): the collection took {took} ms; the call's process "
          f"held {private:.1f} MB of private memory (the rest it shares with the zygote)")


if __name__ == "__main__":
    main()
