"""ISG-v0: API conformance, episodes, tools, actions, outcomes, pickling."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import gymnasium as gym
import pytest
from env_fakes import FakeSandbox
from gymnasium.utils.env_checker import check_env

import isg_gym  # noqa: F401  (registers ISG-v0)
from isg_gym.envs import ISGEnv, ToolCallText, UnicodeText
from isg_gym.qa import format_answer, question_from_id
from isg_gym.tools import TOOL_NAMES, tool_schemas

QID = "118.univariate_statistic.3"


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.fixture
def env():
    e = ISGEnv(sandbox=FakeSandbox(), privileged_info=True, render_mode="ansi")
    yield e
    e.close()


def test_check_env_passes():
    env = gym.make("ISG-v0", sandbox=FakeSandbox())
    check_env(env.unwrapped)
    env.close()


def test_make_without_import():
    code = (
        "import gymnasium as gym; e = gym.make('isg_gym:ISG-v0'); print(type(e.unwrapped).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ISGEnv"


def test_reset_observation_and_info():
    env = ISGEnv(sandbox=FakeSandbox())
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    question = question_from_id(info["question_id"])
    assert question.text in obs and "not possible" in obs
    for name in TOOL_NAMES:
        assert name in obs
    assert info["tools"] == tool_schemas()
    assert {info["type"], info["family"]} == {question.type, question.family}
    assert not {"answer", "answerable", "reason"} & set(info)


def test_seeded_determinism():
    a, b = ISGEnv(sandbox=FakeSandbox()), ISGEnv(sandbox=FakeSandbox())
    for seed in (0, 1, 7):
        assert a.reset(seed=seed) == b.reset(seed=seed)
    ids = {a.reset(seed=s)[1]["question_id"] for s in range(6)}
    assert len(ids) > 1


def test_repository_range():
    env = ISGEnv(start_repository=1000, num_repositories=3, sandbox=FakeSandbox())
    seeds = {env.reset(seed=s)[1]["repository"] for s in range(20)}
    assert seeds <= {1000, 1001, 1002}


def test_question_types_and_ratio():
    env = ISGEnv(question_types=["count_rows"], unanswerable_ratio=0.0, privileged_info=True)
    for s in range(5):
        _, info = env.reset(seed=s)
        assert info["type"] == "count_rows" and info["answerable"]


def test_pinned_options(env):
    _, info = env.reset(options={"question": QID})
    assert info["question_id"] == QID and info["repository"] == 118
    _, info = env.reset(seed=3, options={"repository": 118, "type": "count_rows"})
    assert info["repository"] == 118 and info["type"] == "count_rows"
    _, info = env.reset(options={"repository": 77})
    assert info["repository"] == 77
    with pytest.raises(ValueError):
        env.reset(options={"bogus": 1})


def test_privileged_info():
    env = ISGEnv(privileged_info=True)
    _, info = env.reset(options={"question": QID})
    assert info["answer"] == format_answer(question_from_id(QID))
    assert "answerable" in info and "reason" in info


def test_truncation():
    env = ISGEnv(max_steps=3, sandbox=FakeSandbox())
    env.reset(seed=0)
    for i in range(3):
        obs, reward, terminated, truncated, info = env.step(call("list_directory"))
        assert reward == 0.0 and not terminated
        assert truncated == (i == 2)
    assert info["outcome"] == "truncated" and "step limit" in obs
    obs, reward, terminated, truncated, info = env.step(call("list_directory"))
    assert info["outcome"] == "episode_over"


@pytest.mark.parametrize(
    ("make_answer", "outcome", "value"),
    [
        (lambda gold: call("final_answer", answer=gold), "correct", 1.0),
        (lambda gold: f"So the result is \\boxed{{{gold}}}.", "correct", 1.0),
        (lambda gold: json.dumps({"answer": gold}), "correct", 1.0),
        (lambda gold: call("final_answer", answer="not possible"), "abstained", 0.0),
        (lambda gold: call("final_answer", answer="definitely purple"), "wrong", 0.0),
        (lambda gold: call("final_answer", answer=""), "format_error", 0.0),
    ],
)
def test_outcomes(make_answer, outcome, value):
    env = ISGEnv(privileged_info=True, unanswerable_ratio=0.0, question_types=["count_rows"])
    _, info = env.reset(seed=1)
    assert info["answerable"]
    _obs, reward, terminated, truncated, info = env.step(make_answer(info["answer"]))
    assert terminated and not truncated
    assert reward == value and info["outcome"] == outcome
    assert set(info["score"]) >= {"value", "parsed", "explanation", "components"}


def test_correct_abstention():
    env = ISGEnv(privileged_info=True, unanswerable_ratio=1.0)
    _, info = env.reset(seed=2)
    assert not info["answerable"]
    _, reward, terminated, _, info = env.step(
        {"name": "final_answer", "arguments": {"answer": "not possible"}}
    )
    assert terminated and reward == 1.0 and info["outcome"] == "correct"


def test_numeric_and_bool_final_answers(env):
    env.reset(seed=0)
    _, _, terminated, _, info = env.step({"name": "final_answer", "arguments": {"answer": 3}})
    assert terminated and info["answer_text"] == "3"
    env.reset(seed=0)
    _, _, terminated, _, info = env.step({"name": "final_answer", "arguments": {"answer": True}})
    assert terminated and info["answer_text"] == "true"


def test_reward_config():
    from isg_gym.rewards import RewardConfig

    env = ISGEnv(reward_config=RewardConfig(correctness=1.0, format=0.5))
    env.reset(seed=0)
    _, reward, *_ = env.step(call("final_answer", answer="definitely purple"))
    assert reward == 0.5


def test_action_shapes(env):
    env.reset(options={"question": QID})
    shapes = [
        "<think>call read_text_file</think>" + call("list_directory", path="/"),
        '{"name": "list_directory", "arguments": {"path": "/"}}',
        '```json\n{"name": "list_directory", "arguments": {}}\n```',
        {"name": "list_directory", "arguments": {"path": "/"}},
        {"type": "function", "function": {"name": "list_directory", "arguments": '{"path": "/"}'}},
        [{"name": "list_directory", "arguments": {}}],
        "reasoning...</think>" + call("list_directory"),
    ]
    for action in shapes:
        obs, _reward, _terminated, _truncated, info = env.step(action)
        assert obs.startswith("[list_directory]\n/ (depth 1)"), (action, obs)
        assert info["tool_calls"] == ["list_directory"]
    obs, *_ = env.step(call("list_directory") + "\n" + call("read_text_file", path="README.md"))
    assert "[list_directory]" in obs and "[read_text_file]" in obs


@pytest.mark.parametrize(
    ("action", "needle"),
    [
        ("hello there", "no tool call"),
        ("<think>" + call("final_answer", answer="3"), "empty message"),
        ("<tool_call>{not json}</tool_call>", "malformed JSON"),
        (call("rm_rf", path="/"), "unknown tool"),
        (call("list_directory", depth="deep"), "must be an integer"),
        (call("list_directory", depth=99), "depth must be"),
        (call("list_directory", colour="red"), "unknown arguments"),
        (call("read_text_file"), "missing required"),
        (call("read_text_file", path="../../etc/passwd"), "leaves the repository"),
        (call("read_text_file", path="/etc/passwd"), "no file"),
        (call("read_text_file", path="/"), "is a directory"),
        (call("read_text_file", path=["a"]), "must be a string"),
        (call("read_text_file", path="README.md", head=1, tail=1), "not both"),
        (call("run_python_code", code=5), "must be a string"),
        ({"name": 3}, 'needs a "name"'),
        ({"name": "list_directory", "arguments": "[1]"}, "not a JSON object"),
        ([], "empty list"),
        (42, "unsupported action type"),
        (None, "unsupported action type"),
    ],
)
def test_bad_actions_give_error_observations(env, action, needle):
    env.reset(options={"question": QID})
    obs, reward, terminated, truncated, _info = env.step(action)
    assert needle in obs, obs
    assert "error" in obs and reward == 0.0 and not terminated and not truncated


def test_filesystem_tools(env):
    _, _info = env.reset(options={"question": QID})
    repo = env._repo
    path = repo.data_files[0]
    obs, *_ = env.step(call("read_text_file", path=path))
    assert repo.read_text(path).startswith(obs.split("\n", 1)[1][:200])
    obs, *_ = env.step(call("read_text_file", path="/data/" + path, head=2))
    assert "[lines 1-2 of" in obs
    obs, *_ = env.step(call("list_directory", path="/", depth=10, pattern="*"))
    assert all(f in obs for f in repo.files()[:20])
    small = ISGEnv(max_list_entries=2, max_output_chars=1000)
    small.reset(options={"question": QID})
    obs, *_ = small.step(call("list_directory", depth=5))
    assert "more entries not shown" in obs
    assert max(map(len, repo.read_text(path).splitlines())) < 500  # whole lines fit the cap
    obs, *_ = small.step(call("read_text_file", path=path))
    assert "[truncated: showing lines" in obs and "tail" in obs


def test_run_python_code_materialises_read_only(env):
    fake = env.sandbox_spec
    env.reset(options={"question": QID})
    obs, *_ = env.step(call("run_python_code", code="listing"))
    _code, files_dir = fake.calls[-1]
    assert obs.startswith("[run_python_code]\n[stdout]") and "[value]" in obs
    assert os.path.basename(files_dir).startswith("isg-repo-")
    listed = sorted(
        os.path.relpath(os.path.join(r, f), files_dir)
        for r, _, fs in os.walk(files_dir)
        for f in fs
    )
    assert listed == sorted(env._repo.files())
    assert not os.access(files_dir, os.W_OK) or os.geteuid() == 0
    assert all(not os.stat(os.path.join(files_dir, f)).st_mode & 0o222 for f in listed)
    answer = format_answer(env._question)
    assert all(answer not in f for f in listed)
    env.reset(options={"question": QID})  # same repository: reused
    env.step(call("run_python_code", code="x"))
    assert fake.calls[-1][1] == files_dir
    obs, *_ = env.step(call("run_python_code", code="boom"))
    assert "[error]\nZeroDivisionError" in obs
    obs, *_ = env.step(call("run_python_code", code="raise"))
    assert "sandbox failed" in obs
    env.close()
    assert not os.path.exists(files_dir) and fake.closed == 1
    env.close()
    assert fake.closed == 1


def test_unknown_sandbox_backend_is_an_error_at_construction():
    # issue 10: the operator is told at construction (it was an error observation at run time)
    with pytest.raises(ValueError, match="unknown sandbox backend 'no-such-backend'; accepted"):
        ISGEnv(sandbox="no-such-backend")


def test_real_sandbox_none_backend():
    sandbox_mod = pytest.importorskip("isg_gym.tools.sandbox")
    if not hasattr(sandbox_mod, "get_sandbox"):
        pytest.skip("sandbox not available yet")
    env = ISGEnv(sandbox="none")
    env.reset(options={"question": QID})
    obs, *_ = env.step(
        call("run_python_code", code="import os\nprint(sorted(os.listdir('.')))\n1+1")
    )
    env.close()
    assert "[value]\n2" in obs, obs


def test_render_ansi(env):
    env.reset(options={"question": QID})
    env.step(call("list_directory"))
    text = env.render()
    assert "=== system ===" in text and "=== assistant ===" in text and "[list_directory]" in text
    assert ISGEnv().render() is None


def test_pickle_roundtrip(env):
    env.reset(seed=5)
    env.step(call("list_directory"))
    clone = pickle.loads(pickle.dumps(env))
    assert clone._question == env._question and clone._steps == env._steps
    action = call("read_text_file", path="README.md")
    assert clone.step(action)[0] == env.step(action)[0]
    assert clone.reset(seed=9) == env.reset(seed=9)
    clone.close()


def test_spaces():
    space = ToolCallText(seed=0)
    assert space.contains("prose with ünïcödé ☃ and\nnewlines")
    assert not space.contains(b"bytes") and not space.contains(3)
    assert space == ToolCallText() and space != UnicodeText()
    for _ in range(20):
        sample = space.sample()
        assert space.contains(sample) and sample.startswith("<tool_call>")
        payload = json.loads(sample[len("<tool_call>") : -len("</tool_call>")])
        assert payload["name"] in TOOL_NAMES
    assert UnicodeText(10).contains("x" * 10) and not UnicodeText(10).contains("x" * 11)
    assert pickle.loads(pickle.dumps(space)) == space


def test_step_info_reports_tool_results_parse_errors_and_files_read():
    env = ISGEnv(privileged_info=True)  # the real bwrap sandbox: files_read comes from inside it
    try:
        _, info = env.reset(options={"question": QID})
        assert info["prompt"]["user"].startswith("Question: ")
        assert env.reset(options={"question": QID})[0] == "\n\n".join(info["prompt"].values())
        evidence = info["evidence"]
        code = (
            "import pandas as pd, glob\n"
            f"frames = [pd.read_csv(p) for p in {evidence[:2]!r}]\n"
            "import os\nopen(os.__file__).close()  # outside the repository: not counted\n"
            "len(frames)"
        )
        _, _, _, _, info = env.step(
            [
                {"name": "run_python_code", "arguments": {"code": code}},
                {"name": "read_text_file", "arguments": {"path": "/data/" + evidence[-1]}},
                {"name": "list_directory", "arguments": {"path": "/nowhere"}},
                {"name": "final_answer", "arguments": '{"answer": '},
            ]
        )
        assert info["files_read"] == sorted({*evidence[:2], evidence[-1]})
        assert [(r["name"], r["error"]) for r in info["tool_results"]] == [
            ("run_python_code", False),
            ("read_text_file", False),
            ("list_directory", True),
            ("final_answer", True),
        ]
        assert f"[value]\n{len(evidence[:2])}" in info["tool_results"][0]["output"]
        assert "not a JSON object" in info["parse_error"]
        _, _, _, _, info = env.step("nothing to parse here")
        assert info["tool_results"] == [] and "no tool call" in info["parse_error"]
        assert info["files_read"] == []
    finally:
        env.close()
