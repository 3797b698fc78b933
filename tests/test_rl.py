"""RL glue: the TRL environment_factory class on the real env, the schema export, the examples."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from isg_gym.eval.splits import TRAIN_REPOSITORIES, generate_split, resolve_split
from isg_gym.qa import format_answer
from isg_gym.qa.sampling import question_from_id
from isg_gym.rl import (
    TOOL_METHODS,
    ISGToolEnv,
    export_tools,
    make_dataset_rows,
    openai_tools,
    system_prompt,
)
from isg_gym.rl.schemas import main as schemas_main
from isg_gym.tools.schemas import tool_schemas

ROOT = Path(__file__).resolve().parents[1]
ANSWERABLE = ["1001.count_rows.0", "1004.has_readme.0", "1007.univariate_statistic.0"]
UNANSWERABLE = "1003.group_comparison.0"


def _gold(question_id: str) -> str:
    return format_answer(question_from_id(question_id))


def _trl_tools(env: ISGToolEnv) -> set[str]:
    """The tools TRL's GRPOTrainer (1.16) discovers: the class's functions other than reset and
    get_reward whose name does not start with "_" (older TRL: the instance's bound methods)."""
    found = {name for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)}
    bound = {name for name, _ in inspect.getmembers(env, predicate=inspect.ismethod)}
    assert found == bound
    return {name for name in found if name not in ("reset", "get_reward")
            and not name.startswith("_")}  # fmt: skip


def _args_section(doc: str) -> dict[str, str]:
    """Google-style ``Args:`` entries ``name: description``."""
    match = re.search(r"\n\s*Args:\n(.*?)(?:\n\s*\n|\n\s*Returns:|\Z)", doc, re.DOTALL)
    if not match:
        return {}
    entries = re.findall(r"^ {4}(\w+): (.+)$", match.group(1), re.MULTILINE)
    return dict(entries)


@pytest.mark.parametrize("question_id", [*ANSWERABLE, UNANSWERABLE])
def test_gold_answer_earns_reward_one(question_id: str) -> None:
    env = ISGToolEnv()
    text = env.reset(question_id=question_id, prompt=[{"role": "user", "content": ""}])
    question = question_from_id(question_id)
    assert text.startswith(f"Question: {question.text}")
    assert "not possible" in text  # the answer instructions follow the question
    assert env.question_id == question_id and env.reward == 0.0
    listing = env.list_directory()
    assert listing.startswith("[list_directory]\n/ (depth 1):")
    assert env.reward == 0.0 and env.outcome is None
    assert env.final_answer(_gold(question_id)) == (
        "[final_answer] answer received; the episode is over."
    )
    assert env.reward == 1.0 and env.outcome == "correct" and env.steps == 2
    # after the answer no tool runs and the reward stays
    assert env.list_directory().startswith("[error] the episode is over")
    assert env.reward == 1.0 and env.steps == 2


def test_wrong_answer_earns_zero_and_reset_clears() -> None:
    env = ISGToolEnv()
    env.reset(question_id=ANSWERABLE[0])
    env.final_answer("not possible")
    assert env.reward == 0.0 and env.outcome == "abstained"
    env.reset(question_id=ANSWERABLE[1])
    env.final_answer("maybe")
    assert env.reward == 0.0 and env.outcome in ("wrong", "format_error")
    env.reset(question_id=ANSWERABLE[1])  # a new rollout on the same instance
    assert env.reward == 0.0 and env.outcome is None and env.steps == 0
    env.final_answer(_gold(ANSWERABLE[1]))
    assert env.reward == 1.0


def test_tools_return_the_env_observations() -> None:
    env = ISGToolEnv()
    assert env.list_directory().startswith("[error] no episode")  # before reset
    env.reset(question_id="1004.has_readme.0")
    listing = env.list_directory("/", depth=3, pattern="*.md")
    assert "README.md" in listing
    text = env.read_text_file("/README.md", head=3)
    assert text.startswith("[read_text_file]\n") and len(text.splitlines()) <= 6
    assert env.read_text_file("/no/such/file.csv").startswith("[read_text_file] error:")
    out = env.run_python_code("import os\nprint(6 * 7, os.path.exists('README.md'))")
    assert out.startswith("[run_python_code]\n") and "42 True" in out
    assert env.steps == 4 and env.reward == 0.0


def test_step_budget_truncates_with_zero_reward() -> None:
    env = ISGToolEnv.configure(max_steps=2)()
    env.reset(question_id=ANSWERABLE[0])
    env.list_directory()
    last = env.list_directory()
    assert "episode truncated" in last
    assert env.outcome == "truncated" and env.reward == 0.0
    assert env.final_answer(_gold(ANSWERABLE[0])).startswith("[error] the episode is over")
    assert env.reward == 0.0


def test_seeded_reset_draws_training_questions() -> None:
    first, second = ISGToolEnv(), ISGToolEnv()
    a = first.reset(seed=5, prompt=[])
    assert a == second.reset(seed=5) and first.question_id == second.question_id
    for seed in range(6):
        first.reset(seed=seed)
        assert first.info["repository"] in TRAIN_REPOSITORIES


def test_configure_returns_a_subclass() -> None:
    small = ISGToolEnv.configure(max_steps=3, sandbox="none")
    smaller = small.configure(max_steps=1)
    assert issubclass(smaller, small) and issubclass(small, ISGToolEnv)
    assert small.env_kwargs["max_steps"] == 3 and smaller.env_kwargs["max_steps"] == 1
    assert smaller.env_kwargs["sandbox"] == "none"
    assert smaller.env_kwargs["start_repository"] == TRAIN_REPOSITORIES.start
    assert "max_steps" not in ISGToolEnv.env_kwargs
    assert smaller()._env.max_steps == 1
    with pytest.raises(TypeError, match="unknown ISGEnv arguments"):
        ISGToolEnv.configure(max_step=3)

    class Custom(ISGToolEnv):
        env_kwargs: typing.ClassVar[dict[str, int]] = {"max_steps": 4}

    assert Custom()._env.max_steps == 4


def test_trl_sees_exactly_the_env_tools() -> None:
    env = ISGToolEnv()
    # configure is on the metaclass: callable on the class, invisible on instances
    assert not hasattr(env, "configure")
    assert _trl_tools(env) == set(TOOL_METHODS)
    # no get_reward: TRL would add it as a second reward source beside isg_reward
    assert not hasattr(env, "get_reward") and isinstance(ISGToolEnv.reward, property)
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas()}
    assert set(TOOL_METHODS) == set(schemas)
    for name in TOOL_METHODS:
        method = getattr(ISGToolEnv, name)
        signature = inspect.signature(method)
        params = [p for p in signature.parameters.values() if p.name != "self"]
        hints = typing.get_type_hints(method)
        assert hints["return"] is str
        assert all(p.name in hints for p in params), name
        doc = inspect.getdoc(method) or ""
        assert doc and "Returns:" in doc, name
        # Google-style Args: one described entry per parameter, as TRL's schema builder needs
        assert set(_args_section("\n" + inspect.getdoc(method))) == {p.name for p in params}
        # the same arguments, required ones and defaults as the env's own tool schema
        assert {p.name for p in params} == set(schemas[name]["properties"])
        required = {p.name for p in params if p.default is inspect.Parameter.empty}
        assert required == set(schemas[name]["required"])
        for p in params:
            if p.default is not inspect.Parameter.empty:
                assert p.default == schemas[name]["properties"][p.name].get("default"), p.name


def test_transformers_builds_tool_schemas_when_installed() -> None:
    utils = pytest.importorskip("transformers.utils")
    env = ISGToolEnv()
    for name in TOOL_METHODS:
        schema = utils.get_json_schema(getattr(env, name))
        assert schema["function"]["name"] == name


def test_dataset_rows_follow_trl_prompt_flow() -> None:
    rows = make_dataset_rows("repos:1000-1003", max_steps=12)
    assert [r["question_id"] for r in rows] == generate_split(range(1000, 1003))
    # the tools are left to TRL's chat template (tests/test_rl_trl.py)
    assert rows[0]["prompt"][0] == {"role": "system", "content": system_prompt(12, tools=False)}
    assert "at most 12 times" in rows[0]["prompt"][0]["content"]
    # what TRL does: reset(**row), then append the returned text to the last prompt message
    env = ISGToolEnv()
    row = copy.deepcopy(rows[1])
    row["prompt"][-1]["content"] += env.reset(**row)
    assert row["prompt"][-1]["content"] == env.info["prompt"]["user"]
    assert env.question_id == rows[1]["question_id"]


def test_dataset_rows_from_ranges_splits_and_ids() -> None:
    rows = make_dataset_rows(range(TRAIN_REPOSITORIES.start, TRAIN_REPOSITORIES.stop), n=2)
    ids = [r["question_id"] for r in rows]  # the split recipe over the range's first two
    assert ids == resolve_split("repos:1000-1002")
    assert [i.split(".")[:2] for i in ids] == [["1000", "count_prefix"], ["1001", "count_rows"]]
    with pytest.raises(ValueError, match="pass n"):
        make_dataset_rows(range(TRAIN_REPOSITORIES.start, TRAIN_REPOSITORIES.stop))
    assert len(make_dataset_rows("isg-500", 3)) == 3
    assert [r["question_id"] for r in make_dataset_rows(ANSWERABLE)] == ANSWERABLE
    with pytest.raises(ValueError):
        make_dataset_rows(["not-an-id"])


def test_schema_export_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert openai_tools() == tool_schemas()
    path = export_tools(tmp_path / "sub" / "tools.json")
    assert json.loads(path.read_text(encoding="utf-8")) == tool_schemas()
    assert schemas_main([]) == 0
    assert json.loads(capsys.readouterr().out) == tool_schemas()
    assert schemas_main(["--system-prompt", "--max-steps", "9"]) == 0
    assert capsys.readouterr().out == system_prompt(9) + "\n"
    out = tmp_path / "cli.json"
    done = subprocess.run(
        [sys.executable, "-m", "isg_gym.rl.schemas", "--out", str(out)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(out.read_text(encoding="utf-8")) == tool_schemas()
    assert "wrote" in done.stderr


@pytest.mark.parametrize("extra", [[], ["--num-envs", "2", "--policy", "abstain"]])
def test_rl_loop_example_runs(tmp_path: Path, extra: list[str]) -> None:
    out = tmp_path / "traj.jsonl"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "rl_loop.py"), "--episodes", "2",
         "--out", str(out), *extra],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "episodes 2  mean reward" in done.stdout
    trajectories = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(trajectories) == 2
    for t in trajectories:
        assert t["prompt"].startswith("You are a data analyst")
        assert t["actions"] and len(t["actions"]) == len(t["observations"])
        assert t["reward"] in (0.0, 1.0) and t["outcome"]
        assert int(t["question_id"].split(".")[0]) in TRAIN_REPOSITORIES


def test_trl_grpo_example_help_and_reward() -> None:
    script = ROOT / "examples" / "trl_grpo.py"
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "--max-steps" in done.stdout and "--model" in done.stdout
    spec = importlib.util.spec_from_file_location("trl_grpo_example", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    envs = [ISGToolEnv(), ISGToolEnv()]
    envs[0].reset(question_id=ANSWERABLE[0])
    envs[0].final_answer(_gold(ANSWERABLE[0]))
    envs[1].reset(question_id=ANSWERABLE[1])
    assert module.isg_reward(environments=envs, completions=["", ""]) == [1.0, 0.0]
