"""ISG-v0 in vector environments (sampled actions only use the filesystem tools)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from env_fakes import FakeSandbox

import isg_gym  # noqa: F401  (registers ISG-v0)
from isg_gym.envs import ISGEnv


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


def test_vector_infos_stack_when_episodes_of_different_types_end_together():
    """Score fields must keep one type across envs (an int answer and a text answer)."""
    ids = ["1001.count_rows.0", "1002.file_extension.1"]
    envs = gym.vector.SyncVectorEnv(
        [lambda: ISGEnv(sandbox=FakeSandbox(), privileged_info=True) for _ in ids]
    )
    try:
        for env, qid in zip(envs.envs, ids, strict=True):
            env.reset(options={"question": qid})
        answers = ['{"answer": 127}', '{"answer": "log"}']
        _, _, terminated, _, info = envs.step(answers)
        assert terminated.all() and list(info["score"]["parsed"]) == ["127", "log"]
        assert list(info["question_id"]) == ids
    finally:
        envs.close()


def test_async_shared_memory_is_refused_with_the_fix():
    """Gymnasium's shared memory for Text would return one placeholder string on every step."""
    from isg_gym.envs.spaces import SharedMemoryTextError

    with pytest.raises(SharedMemoryTextError, match=r"pass shared_memory=False"):
        gym.vector.AsyncVectorEnv([_make, _make])  # shared_memory=True is Gymnasium's default
    with pytest.raises(ValueError, match=r"vector_kwargs=\{\"shared_memory\": False\}"):
        gym.make_vec("ISG-v0", 2, vectorization_mode="async", sandbox=FakeSandbox())
    envs = gym.make_vec(
        "ISG-v0", 2, vectorization_mode="async", vector_kwargs={"shared_memory": False},
        sandbox=FakeSandbox(),
    )  # fmt: skip
    try:
        obs, _ = envs.reset(seed=0)
        assert all(o.startswith("You are a data analyst") for o in obs)
        obs, *_ = envs.step(['{"name": "list_directory", "arguments": {}}'] * 2)
        assert all(o.startswith("[list_directory]\n/ (depth 1):") for o in obs)
    finally:
        envs.close()
