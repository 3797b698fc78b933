"""The SkyRL-Gym adapter with the real skyrl_gym package: scripted episodes through
``skyrl_gym.make``, as SkyRL's generator drives them."""

from __future__ import annotations

import json
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from isg_gym.envs.env import ISGEnv  # noqa: E402
from isg_gym.eval.policies.oracle import Task, answer_from, first_call  # noqa: E402
from isg_gym.eval.splits import TRAIN_REPOSITORIES  # noqa: E402
from isg_gym.rl.skyrl import POOL, ISGSkyRLEnv, make_skyrl_rows, register_skyrl  # noqa: E402

ROWS = make_skyrl_rows(range(1000, 1004))  # count_prefix, count_rows, file_extension, group_comp.


@pytest.fixture(scope="module")
def env_id() -> str:
    return register_skyrl()


@pytest.fixture(scope="module")
def privileged() -> ISGEnv:
    env = ISGEnv(privileged_info=True)
    yield env
    env.close()


def _make(env_id: str, row: dict[str, Any], max_turns: int = 6) -> Any:
    """What SkyRL's generator does: the row's fields other than prompt and env_class are the
    extras, plus its max_turns."""
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    extras["max_turns"] = max_turns
    return skyrl_gym.make(row["env_class"], env_config={}, extras=extras)


@pytest.mark.parametrize("row", ROWS, ids=[r["question_id"] for r in ROWS])
def test_oracle_actions_score_one(env_id: str, privileged: ISGEnv, row: dict[str, Any]) -> None:
    env = _make(env_id, row)
    assert isinstance(env, ISGSkyRLEnv)
    chat, metadata = env.init(row["prompt"])
    assert [m["role"] for m in chat] == ["system", "user"]
    assert chat[0]["content"].startswith("You are a data analyst") and "<tool_call>" in chat[0][
        "content"]  # fmt: skip
    assert chat[1]["content"].startswith("Question: ")
    assert metadata == {"question_id": row["question_id"], "repository": metadata["repository"],
                        "type": row["question_id"].split(".")[1],
                        "family": metadata["family"]}  # fmt: skip
    assert "answer" not in metadata  # no gold in what the trainer sees
    _, info = privileged.reset(options={"question": row["question_id"]})
    task = Task.from_info(info)
    out = env.step(f"<tool_call>{json.dumps(first_call(task))}</tool_call>")
    assert out["reward"] == 0.0 and out["done"] is False
    [observation] = out["observations"]
    assert observation["role"] == "user" and observation["content"].startswith("[")
    answer = answer_from(task, observation["content"])
    out = env.step(json.dumps({"name": "final_answer", "arguments": {"answer": answer}}))
    assert (out["reward"], out["done"], out["observations"]) == (1.0, True, [])
    assert out["metadata"]["outcome"] == "correct" and out["metadata"]["score"]["correct"]
    assert env.get_metrics() == {"correct": 1.0, "answered": 1.0, "steps": 2, "infra_error": 0.0}
    env.close()


def test_wrong_answer_malformed_action_and_turn_limit(env_id: str) -> None:
    row = ROWS[1]  # count_rows: an integer answer
    env = _make(env_id, row, max_turns=3)
    env.init(row["prompt"])
    out = env.step("<tool_call>{not json</tool_call>")
    assert out["done"] is False and out["reward"] == 0.0
    assert out["observations"][0]["content"].startswith("[tool_call] error: malformed JSON")
    assert out["metadata"]["parse_error"]
    out = env.step('{"answer": -1}')  # an answer-only message: the final answer
    assert (out["reward"], out["done"], out["metadata"]["outcome"]) == (0.0, True, "wrong")
    assert env.step("more").get("done") is True  # after the end: an error, never an exception
    env.close()

    env = _make(env_id, row, max_turns=2)  # SkyRL's max_turns is the step budget
    env.init(row["prompt"])
    assert env.step('<tool_call>{"name": "list_directory", "arguments": {}}</tool_call>')[
        "done"] is False  # fmt: skip
    out = env.step("I am still thinking.")
    assert (out["done"], out["reward"], out["metadata"]["outcome"]) == (True, 0.0, "truncated")
    assert env.get_metrics()["answered"] == 0.0
    env.close()
    from skyrl_gym.metrics import aggregate_for_environment

    metrics = aggregate_for_environment(
        env_id, [{"correct": 1.0, "steps": 2}, {"correct": 0.0, "steps": 4}]
    )
    assert metrics == {"correct": 0.5, "steps": 3.0}


def test_init_keeps_the_prompt_and_pool_reuses_envs(env_id: str) -> None:
    row = ROWS[0]
    env = _make(env_id, row)
    custom = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."}]
    chat, _ = env.init(custom)
    assert chat[:2] == custom and chat[2]["role"] == "user"
    assert chat[2]["content"].startswith("Question: ") and len(chat) == 3
    inner = env._env
    env.close()
    again = _make(env_id, row)
    assert again._env is inner  # the sandbox worker of the first trajectory is reused
    chat, _ = again.init([])
    assert [m["role"] for m in chat] == ["system", "user"]
    again.close()


def test_configuration_and_seeds() -> None:
    env = ISGSkyRLEnv({"max_steps": 3, "sandbox": "auto"}, {"seed": 7})
    _, metadata = env.init([])
    assert metadata["repository"] in TRAIN_REPOSITORIES and env.max_turns == 3
    other = ISGSkyRLEnv({"max_steps": 3, "sandbox": "auto"}, {"extra_info": {"seed": 7}})
    assert other.init([])[1] == metadata  # the seed may sit in extra_info
    env.close()
    other.close()
    with pytest.raises(TypeError, match="unknown ISGEnv arguments"):
        ISGSkyRLEnv({"max_step": 3}, {})
    with pytest.raises(TypeError, match="env_config must be a mapping"):
        ISGSkyRLEnv(3, {})
    POOL.close()
