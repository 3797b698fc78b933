"""Property test: env.step never raises and always returns a valid observation."""

from __future__ import annotations

import json

import pytest
from env_fakes import FakeSandbox
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isg_gym.envs import ISGEnv

TOOLS = ["list_directory", "read_text_file", "run_python_code", "final_answer", "rm", ""]
PATHS = st.sampled_from(
    [
        "../../etc/passwd",
        "/etc/passwd",
        "/",
        "/data",
        "README.md",
        "a/../../b",
        "\x00",
        "\\x",
        "/data/../..",
        "~",
        "*",
        "." * 300,
        "x" * 20_000,
    ]
) | st.text(max_size=40)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | PATHS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
ARGS = st.dictionaries(
    st.sampled_from(["path", "depth", "pattern", "head", "tail", "code", "answer", "x"]),
    JSONISH | st.integers(min_value=-(2**70), max_value=2**70),
    max_size=4,
)
CALL = st.builds(lambda n, a: {"name": n, "arguments": a}, st.sampled_from(TOOLS), ARGS)


def _as_text(call: dict, style: int) -> str:
    body = json.dumps(call, default=str)
    return [
        f"<tool_call>{body}</tool_call>",
        body,
        f"<think>x</think><tool_call>{body[: len(body) // 2]}</tool_call>",
        f"<tool_call>{body}",
    ][style % 4]


ACTION = st.one_of(
    st.text(max_size=200),
    st.text(alphabet='{}[]":,<>/tool_cal ', max_size=80),
    st.builds(_as_text, CALL, st.integers(0, 3)),
    CALL,
    st.lists(CALL, max_size=10),
    st.builds(
        lambda c: {
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], default=str)},
        },
        CALL,
    ),
    JSONISH,
    st.just("\\boxed{"),
)

STEPS_PER_EXAMPLE = 50
ENV = ISGEnv(sandbox=FakeSandbox(), max_steps=40, max_output_chars=2000)


@pytest.fixture(autouse=True, scope="module")
def _close_env():
    """Release the repositories the shared env materialised (a run_python_code call that
    hypothesis happens to make valid), so later tests start with an empty cache."""
    yield
    ENV.close()


@settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)
@given(
    seed=st.integers(0, 50),
    actions=st.lists(ACTION, min_size=STEPS_PER_EXAMPLE, max_size=STEPS_PER_EXAMPLE),
)
def test_random_actions_never_raise(seed, actions):
    """200 examples x 50 steps = 10,000 random actions."""
    obs, info = ENV.reset(seed=seed)
    assert ENV.observation_space.contains(obs)
    for action in actions:
        obs, reward, terminated, truncated, info = ENV.step(action)
        assert ENV.observation_space.contains(obs) and obs
        assert isinstance(reward, float) and isinstance(terminated, bool)
        assert isinstance(truncated, bool) and isinstance(info, dict)
        if terminated or truncated:
            assert "outcome" in info
            obs, info = ENV.reset(seed=seed)
