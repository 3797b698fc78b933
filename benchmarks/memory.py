"""Resident memory of one ISG-v0 env with its sandbox worker, in a fresh process that imports
only what the env needs (``gym.make``, one reset, one ``run_python_code``).

Prints RSS and PSS of the env process and of every process of its worker (bubblewrap, the
supervisor, the zygote, and the call leader and child forked ahead of the next call), and the
totals. PSS (proportional set size: each shared page divided among the processes that map it)
is what the tree occupies; a sum of RSS counts the pages the zygote shares with its forks once
per process. Whether pandas imports pyarrow (it does when pyarrow is installed) is printed:
it adds about 40 MB to each of the env and the zygote.

Usage: python benchmarks/memory.py
"""

from __future__ import annotations

import os
import sys
import time

from env import _pss_kb, _status_kb, descendants  # benchmarks/env.py, this script's folder

GOAL_MB = 250


def main() -> None:
    import gymnasium as gym

    import isg_gym  # noqa: F401  (registers the envs)

    env = gym.make("ISG-v0")
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
    print(f"env RSS {rss[me]:.0f} MB, PSS {pss[me]:.0f} MB; worker ({len(workers)} processes) "
          f"PSS {sum(pss[p] for p in workers):.0f} MB, RSS summed {worker_rss:.0f} MB; pandas "
          f"imported pyarrow: {'pyarrow' in sys.modules}")  # fmt: skip
    verdict = "ok" if total_pss <= GOAL_MB else "MISSED"
    print(f"one env + its worker: PSS {total_pss:.0f} MB   goal <= {GOAL_MB} MB: {verdict}")
    env.close()


if __name__ == "__main__":
    main()
