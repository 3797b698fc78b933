"""The shared step loop (ToolEnv), the env registry and the runner on a second, toy env.

``ToyEnv`` is the smallest world the framework takes: a secret number per seed, a ``peek`` tool
that compares a guess with it, the sandboxed Python tool over a dictionary of files, and a
final answer graded exactly. Everything it does not write itself (action parsing, errors,
truncation, infra errors, pickling, records, summaries, ``isg eval --env``) is the framework's.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from env_fakes import FakeResult
from gymnasium.utils.env_checker import check_env

from isg_gym.envs.registry import ENVS, EnvEntry, get_env, parse_env_args, register_env
from isg_gym.envs.tool_env import ToolEnv
from isg_gym.eval.policy import StepPolicy, Turn
from isg_gym.eval.runner import evaluate
from isg_gym.rewards import extract
from isg_gym.tools.arguments import ToolError, as_int, check_args

TOY = "Toy-v0"


class ToySandbox:
    """Answers every call with the list of files it was shown (or fails on demand)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def run(self, code: str, files: Any) -> FakeResult:
        self.calls.append((code, files))
        if code == "crash":
            raise RuntimeError("worker died")
        return FakeResult(stdout=f"files: {sorted(files)}", files_read=("secret.txt",))

    def close(self) -> None:
        pass


class ToyEnv(ToolEnv):
    """Guess the seed's secret number (0-9); questions ``toy.SEED``."""

    def __init__(self, limit: int = 10, **kwargs: Any) -> None:
        self.limit = int(limit)
        super().__init__(**{"sandbox": ToySandbox(), **kwargs})

    def _begin(self, options: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
        if set(options) - {"question"}:
            raise ValueError(f"unknown reset options {sorted(options)}")
        seed = (int(options["question"].split(".")[1]) if "question" in options
                else int(self.np_random.integers(1000)))  # fmt: skip
        self.secret = seed % self.limit
        self.seed = seed
        prompt = {
            "system": "Guess the number.",
            "user": f"Question: which number? (0-{self.limit - 1})",
        }
        public = {"question_id": f"toy.{seed}", "repository": seed, "type": "guess",
                  "family": "toy"}  # fmt: skip
        return prompt, public

    def _tools(self) -> dict[str, Any]:
        return {"peek": self._peek,
                "run_python_code": lambda a: self._run_python(a, {"secret.txt": b"?"})}  # fmt: skip

    def _peek(self, arguments: dict[str, Any]) -> str:
        check_args(arguments, ("guess",), ("guess",))
        guess = as_int(arguments["guess"], "guess", optional=False)
        if guess is None or not 0 <= guess < self.limit:
            raise ToolError(f"`guess` must be in 0..{self.limit - 1}")
        return "higher" if guess < self.secret else "lower" if guess > self.secret else "equal"

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": n, "parameters": {}}}
                for n in ("peek", "run_python_code", "final_answer")]  # fmt: skip

    def _answer_message(self, text: str) -> Any:
        return extract(text).value  # the answer inside {"answer": ...} or \\boxed{}

    def _privileged(self) -> dict[str, Any]:
        return {"answer": str(self.secret), "answerable": True, "reason": None}

    def _finish(self, answer: Any) -> tuple[float, dict[str, Any]]:
        correct = str(answer).strip() == str(self.secret)
        score = {"value": float(correct), "parsed": str(answer), "correct": correct,
                 "abstained": False, "explanation": "exact match", "components": {}}  # fmt: skip
        return float(correct), {"outcome": "correct" if correct else "wrong", "score": score,
                                "answer_text": str(answer),
                                "episode_metrics": {"peeks": float(self._steps - 1)}}  # fmt: skip

    def _truncated_info(self) -> dict[str, Any]:
        return {"episode_metrics": {"peeks": float(self._steps)}}


def toy_split(split: Any) -> list[str]:
    if split == "toy-5":
        return [f"toy.{s}" for s in range(5)]
    raise ValueError(f"unknown split {split!r}")


class BisectPolicy(StepPolicy):
    """Finds the number with peek (binary search through the tools only), then answers."""

    name = "bisect"

    def act(self, episodes):
        turns = []
        for ep in episodes:
            lo, hi = ep.memory.setdefault("range", [0, 9])
            last = ep.memory.get("guess")
            if last is not None:
                verdict = ep.observation.split("\n", 1)[-1].strip()
                if verdict == "equal":
                    turns.append(Turn(action={"name": "final_answer",
                                              "arguments": {"answer": str(last)}}))  # fmt: skip
                    continue
                lo, hi = (last + 1, hi) if verdict == "higher" else (lo, last - 1)
                ep.memory["range"] = [lo, hi]
            guess = (lo + hi) // 2
            ep.memory["guess"] = guess
            turns.append(Turn(action={"name": "peek", "arguments": {"guess": guess}}))
        return turns


@pytest.fixture(scope="module", autouse=True)
def toy_registered():
    register_env(EnvEntry(id=TOY, entry_point="test_tool_env:ToyEnv", description="toy",
                          splits="test_tool_env:toy_split", split_names=("toy-5",),
                          policies={"bisect": "test_tool_env:BisectPolicy"},
                          question_version=7))  # fmt: skip
    yield
    ENVS.pop(TOY, None)


def test_check_env_and_seeded_reset():
    env = ToyEnv()
    check_env(env, skip_render_check=True)
    a = env.reset(seed=3)
    b = env.reset(seed=3)
    assert a == b and a[1]["question_id"].startswith("toy.")
    assert a[1]["tools"] and "answer" not in a[1]  # not privileged


def test_bad_calls_are_error_observations():
    env = ToyEnv(privileged_info=True)
    env.reset(options={"question": "toy.13"})
    obs, _, term, _, _ = env.step({"name": "nope", "arguments": {}})
    assert "unknown tool 'nope'" in obs and "peek" in obs and not term
    obs, *_ = env.step({"name": "peek", "arguments": {"guess": 99}})
    assert "[peek] error: `guess` must be in 0..9" in obs
    obs, *_ = env.step({"name": "peek", "arguments": {"x": 1}})
    assert "unknown arguments ['x']" in obs
    obs, *_ = env.step("no tool call here")
    assert obs.startswith("[error]")
    obs, *_ = env.step({"name": "peek", "arguments": {"guess": 3}})
    assert obs == "[peek]\nequal"
    _, reward, term, _, info = env.step('{"answer": "3"}')  # an answer-only message
    assert term and reward == 1.0 and info["outcome"] == "correct"
    assert info["episode_metrics"] == {"peeks": 5.0}
    obs, reward, term, *_ = env.step({"name": "peek", "arguments": {"guess": 3}})
    assert "episode is over" in obs and reward == 0.0


def test_truncation_and_metrics():
    env = ToyEnv(max_steps=2)
    env.reset(options={"question": "toy.4"})
    env.step({"name": "peek", "arguments": {"guess": 0}})
    _, reward, term, trunc, info = env.step({"name": "peek", "arguments": {"guess": 0}})
    assert trunc and not term and reward == 0.0 and info["outcome"] == "truncated"
    assert info["episode_metrics"] == {"peeks": 2.0}


def test_python_tool_files_and_infra_error():
    env = ToyEnv()
    env.reset(options={"question": "toy.4"})
    obs, _, _, _, info = env.step({"name": "run_python_code", "arguments": {"code": "1"}})
    assert "files: ['secret.txt']" in obs and info["files_read"] == ["secret.txt"]
    assert "infra_error" not in info
    obs, _, term, _, info = env.step({"name": "run_python_code", "arguments": {"code": "crash"}})
    assert "the sandbox failed" in obs and not term
    assert "worker died" in info["infra_error"]
    obs, _, _, _, info = env.step({"name": "run_python_code", "arguments": {"code": 5}})
    assert "`code` must be a string" in obs and "infra_error" not in info


def test_pickle_keeps_the_episode():
    env = ToyEnv()
    env.reset(options={"question": "toy.17"})
    env.step({"name": "peek", "arguments": {"guess": 1}})
    copy = pickle.loads(pickle.dumps(env))
    assert copy._steps == 1 and copy.secret == 7 and copy._public["question_id"] == "toy.17"
    _, reward, term, _, _ = copy.step({"name": "final_answer", "arguments": {"answer": 7}})
    assert term and reward == 1.0


def test_registry_lookups_and_env_args():
    entry = get_env(TOY)
    assert isinstance(entry.make(), ToyEnv)
    assert entry.resolve_split("toy-5")[0] == "toy.0"
    assert parse_env_args(entry, ["limit=5", "max_steps=3"]) == {"limit": 5, "max_steps": 3}
    with pytest.raises(ValueError, match=r"not an argument of Toy-v0; accepted: limit"):
        parse_env_args(entry, ["colour=red"])
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        parse_env_args(entry, ["limit"])
    with pytest.raises(ValueError, match=r"unknown env .Nope-v0.; known: .*ISG-v0"):
        get_env("Nope-v0")
    with pytest.raises(ValueError, match="unknown scripted policy 'oracle' for Toy-v0"):
        entry.policy("oracle")


def test_runner_records_and_summaries_take_any_env(tmp_path):
    summary = evaluate(BisectPolicy(), "toy-5", tmp_path, concurrency=2, env=TOY)
    assert summary["n"] == 5 and summary["accuracy"] == 1.0
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["env"] == TOY and run["question_version"] == 7
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert {r["question_version"] for r in records} == {7}
    assert all(r["episode_metrics"]["peeks"] >= 1 for r in records)
    means = summary["episode_metrics"]
    assert means["overall"]["peeks"] == pytest.approx(
        sum(r["episode_metrics"]["peeks"] for r in records) / 5
    )
    assert set(means["by_type"]) == {"guess"}
    assert "## Episode metrics (means)" in (tmp_path / "summary.md").read_text()
    with pytest.raises(ValueError, match=r"cannot resume .*: env, question_version"):
        evaluate(BisectPolicy(), "isg-500", tmp_path, episodes=1, resume=True, env="ISG-v0")


def test_isg_eval_cli_on_a_registered_env(tmp_path, capsys):
    from isg_gym.cli import main

    out = tmp_path / "run"
    assert main(["eval", "--env", TOY, "--backend", "scripted", "--model", "bisect", "--out",
                 str(out), "--no-progress", "--env-arg", "limit=10"]) == 0  # fmt: skip
    assert "Accuracy: 100.0%" in capsys.readouterr().out
    assert main(["eval", "--env", TOY, "--backend", "scripted", "--model", "oracle", "--out",
                 str(tmp_path / "x")]) == 2  # fmt: skip
    assert "must be one of bisect" in capsys.readouterr().err
