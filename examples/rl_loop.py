"""A plain Gymnasium RL loop over ISG-v0: roll out a policy, collect (prompt, actions, reward).

There is no trainer and no learning here. The script shows the rollout and reward plumbing
that a trainer plugs into: ``gym.make("ISG-v0")`` on the training repositories (one env, or a
``SyncVectorEnv`` with ``--num-envs``), a policy that maps an observation to an action text,
and one trajectory per episode with its final reward. The built-in policies are the scripted
floor baselines (``abstain``: answer "not possible" at once; ``random``: a listing, maybe a
README read, then a random answer); replace them with a callable of your own (an LLM sampler),
see :func:`collect`.

    python examples/rl_loop.py --episodes 4
    python examples/rl_loop.py --episodes 8 --num-envs 4 --policy random --out traj.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import isg_gym  # noqa: F401  (registers ISG-v0)
from isg_gym.eval.splits import train_env_kwargs

# A policy maps (observation text, turn index in the episode, rng) to an action: the assistant
# text, here with Hermes <tool_call> blocks, exactly what a chat model would write.
Policy = Callable[[str, int, np.random.Generator], str]


def tool_call(name: str, **arguments: Any) -> str:
    """One Hermes tool-call block."""
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def abstain_policy(observation: str, turn: int, rng: np.random.Generator) -> str:
    """Answer "not possible" at once (right exactly on the unanswerable questions)."""
    return tool_call("final_answer", answer="not possible")


def random_policy(observation: str, turn: int, rng: np.random.Generator) -> str:
    """List the repository, maybe read the README, then give a random answer."""
    if turn == 0:
        return tool_call("list_directory", path="/", depth=int(rng.integers(1, 4)))
    if turn == 1 and rng.random() < 0.5:
        return tool_call("read_text_file", path="/README.md", head=20)
    answers = ["not possible", "yes", "no", str(int(rng.integers(101))), f"{rng.normal():.3g}"]
    return tool_call("final_answer", answer=answers[int(rng.integers(len(answers)))])


POLICIES: dict[str, Policy] = {"abstain": abstain_policy, "random": random_policy}


@dataclass
class Trajectory:
    """One episode: the first observation (the prompt), the actions, what came back, and the
    final reward and outcome."""

    question_id: str
    prompt: str
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    reward: float = 0.0
    outcome: str = ""


def _add_step(
    traj: Trajectory, action: str, obs: str, reward: float, info: dict[str, Any], done: bool
) -> None:
    traj.actions.append(action)
    traj.observations.append(obs)
    if done:
        traj.reward = float(reward)
        traj.outcome = str(info.get("outcome", "truncated"))


def collect_single(
    env: gym.Env, policy: Policy, episodes: int, rng: np.random.Generator, seed: int
) -> list[Trajectory]:
    """Roll out ``episodes`` episodes one after the other in one env."""
    trajectories = []
    for i in range(episodes):
        obs, info = env.reset(seed=seed if i == 0 else None)
        traj = Trajectory(info["question_id"], obs)
        done = False
        while not done:
            action = policy(obs, len(traj.actions), rng)
            obs, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            _add_step(traj, action, obs, reward, info, done)
        trajectories.append(traj)
    return trajectories


def _at(info: dict[str, Any], key: str, i: int) -> Any:
    """Sub-env ``i``'s value of ``key`` in a vector env's info dict (None when absent)."""
    if key not in info or not info.get(f"_{key}", np.ones(i + 1, bool))[i]:
        return None
    return info[key][i]


def collect_vector(
    envs: gym.vector.VectorEnv, policy: Policy, episodes: int, rng: np.random.Generator, seed: int
) -> list[Trajectory]:
    """Roll out at least ``episodes`` episodes in a vector env, all sub-envs stepping together.

    Gymnasium's default autoreset is "next step": the step after an episode ends resets that
    sub-env (its action is ignored) and returns the new episode's first observation.
    """
    obs, info = envs.reset(seed=seed)
    n = envs.num_envs
    live = [Trajectory(_at(info, "question_id", i), obs[i]) for i in range(n)]
    resetting = [False] * n
    finished: list[Trajectory] = []
    while len(finished) < episodes:
        actions = [policy(obs[i], len(live[i].actions), rng) for i in range(n)]
        obs, rewards, terminated, truncated, info = envs.step(actions)
        for i in range(n):
            if resetting[i]:  # this sub-env was reset; obs[i] is a new episode's prompt
                live[i] = Trajectory(_at(info, "question_id", i), obs[i])
                resetting[i] = False
                continue
            done = bool(terminated[i] or truncated[i])
            step_info = {"outcome": _at(info, "outcome", i)} if done else {}
            _add_step(live[i], actions[i], obs[i], rewards[i], step_info, done)
            if done:
                finished.append(live[i])
                resetting[i] = True
    return finished[:episodes]


def collect(
    policy: Policy,
    episodes: int,
    *,
    num_envs: int = 1,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> list[Trajectory]:
    """Trajectories of ``policy`` on ISG-v0's training repositories."""
    kwargs = {**train_env_kwargs(), **(env_kwargs or {})}
    rng = np.random.default_rng(seed)
    if num_envs <= 1:
        env = gym.make("ISG-v0", **kwargs)
        try:
            return collect_single(env, policy, episodes, rng, seed)
        finally:
            env.close()
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("ISG-v0", **kwargs)] * num_envs)
    try:
        return collect_vector(envs, policy, episodes, rng, seed)
    finally:
        envs.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=4, help="episodes to collect")
    parser.add_argument("--num-envs", type=int, default=1, help=">1: a SyncVectorEnv")
    parser.add_argument("--policy", choices=sorted(POLICIES), default="random")
    parser.add_argument("--max-steps", type=int, default=6, help="the env's step budget")
    parser.add_argument("--sandbox", default="auto", help="Python sandbox backend")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the trajectories here as JSONL")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    trajectories = collect(
        POLICIES[args.policy],
        args.episodes,
        num_envs=args.num_envs,
        seed=args.seed,
        env_kwargs={"max_steps": args.max_steps, "sandbox": args.sandbox},
    )
    for t in trajectories:
        print(f"{t.question_id:42s} {len(t.actions)} steps  reward {t.reward:.1f}  {t.outcome}")
    rewards = [t.reward for t in trajectories]
    print(f"episodes {len(trajectories)}  mean reward {np.mean(rewards):.3f}")
    print(f"outcomes {dict(Counter(t.outcome for t in trajectories))}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8") as f:
            for t in trajectories:
                f.write(json.dumps(asdict(t), ensure_ascii=False) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
