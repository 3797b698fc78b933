"""ISG-v0 in vector environments (sampled actions only use the filesystem tools)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from env_fakes import FakeSandbox

import isg_gym  # noqa: F401  (registers ISG-v0)


def _make():
    return gym.make("ISG-v0", sandbox=FakeSandbox(), max_steps=7)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_envs_run_100_steps(kind):
    fns = [_make for _ in range(8)]
    if kind == "sync":
        envs = gym.vector.SyncVectorEnv(fns)
    else:
        envs = gym.vector.AsyncVectorEnv(fns, shared_memory=False)
    try:
        obs, _ = envs.reset(seed=42)
        assert len(obs) == 8 and all(isinstance(o, str) for o in obs)
        envs.action_space.seed(0)
        truncations = 0
        for _ in range(100):
            obs, rewards, terminated, truncated, _info = envs.step(envs.action_space.sample())
            assert len(obs) == 8 and all(isinstance(o, str) and o for o in obs)
            assert rewards.shape == (8,) and not terminated.any()
            truncations += int(truncated.sum())
        assert truncations > 0
    finally:
        envs.close()


def test_sync_and_async_agree():
    results = []
    for cls in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
        kwargs = {"shared_memory": False} if cls is gym.vector.AsyncVectorEnv else {}
        envs = cls([_make for _ in range(2)], **kwargs)
        obs, _info = envs.reset(seed=3)
        envs.action_space.seed(1)
        step = envs.step(envs.action_space.sample())
        results.append((tuple(obs), tuple(step[0])))
        envs.close()
    assert results[0] == results[1]
