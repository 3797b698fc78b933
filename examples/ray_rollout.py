"""The rollout loop of ``examples/rl_loop.py`` with its envs on Ray actors.

:class:`isg_gym.rl.ray_pool.RemoteEnvPool` is a Gymnasium vector env, so ``rl_loop``'s
``collect_vector`` (written for ``SyncVectorEnv``) drives it unchanged: ``--num-envs`` envs of
ISG-v0 on the training repositories, spread over ``--actors`` Ray actors (each owning its envs'
sandbox workers), stepped a batch at a time. ``--check`` also rolls out the same seed with a
local ``SyncVectorEnv`` and says whether the trajectories are identical.

    python examples/ray_rollout.py --episodes 8 --num-envs 4 --actors 2 --check
    python examples/ray_rollout.py --address auto ...    # a running cluster (ray start --head)

Needs ``pip install 'isg-gym[ray]'``.
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import asdict

import numpy as np
from rl_loop import POLICIES, collect, collect_vector  # examples/ is on sys.path as a script

from isg_gym.eval.splits import train_env_kwargs
from isg_gym.rl.ray_pool import RemoteEnvPool, connect


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=8, help="episodes to collect")
    parser.add_argument("--num-envs", type=int, default=4, help="envs in the pool")
    parser.add_argument("--actors", type=int, default=2, help="Ray actors holding them")
    parser.add_argument("--address", default="local",
                        help="Ray address: local (a new instance), auto, HOST:PORT, ray://...")
    parser.add_argument("--policy", choices=sorted(POLICIES), default="random")
    parser.add_argument("--max-steps", type=int, default=6, help="the env's step budget")
    parser.add_argument("--sandbox", default="auto", help="Python sandbox backend")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", action="store_true",
                        help="compare with a local SyncVectorEnv rollout of the same seed")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    env_kwargs = {"max_steps": args.max_steps, "sandbox": args.sandbox}
    connect(args.address)
    pool = RemoteEnvPool("ISG-v0", num_envs=args.num_envs, num_actors=args.actors,
                         env_kwargs={**train_env_kwargs(), **env_kwargs})  # fmt: skip
    try:
        rng = np.random.default_rng(args.seed)
        trajectories = collect_vector(pool, POLICIES[args.policy], args.episodes, rng, args.seed)
    finally:
        pool.close()
    rewards = [t.reward for t in trajectories]
    outcomes = dict(Counter(t.outcome for t in trajectories))
    print(f"{len(trajectories)} episodes on {args.num_envs} envs / {args.actors} Ray actors: "
          f"mean reward {np.mean(rewards):.3f}, outcomes {outcomes}")
    if args.check:
        local = collect(POLICIES[args.policy], args.episodes, num_envs=args.num_envs,
                        seed=args.seed, env_kwargs=env_kwargs)  # fmt: skip
        same = [asdict(t) for t in local] == [asdict(t) for t in trajectories]
        print(f"local SyncVectorEnv rollout of seed {args.seed}: "
              f"{'identical trajectories' if same else 'DIFFERENT trajectories'}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
