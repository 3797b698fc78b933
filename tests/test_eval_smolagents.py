"""The smolagents adapter: real ToolCallingAgent / CodeAgent loops against the scripted
OpenAI-compatible server, episodes played through ISG-v0 by the runner."""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("smolagents")
pytest.importorskip("openai")

from fake_openai_server import ScriptedChatServer, message_text
from smolagents import OpenAIServerModel
from smolagents.models import get_tool_json_schema

from isg_gym.envs.env import ISGEnv
from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.policy import EpisodeState
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.runner import evaluate
from isg_gym.eval.smolagents_adapter import FINAL_MARK, EnvSession, SmolagentsPolicy, make_tools
from isg_gym.eval.splits import resolve_split
from isg_gym.qa import format_answer
from isg_gym.qa.sampling import question_from_id
from isg_gym.tools.sandbox import bwrap_available
from isg_gym.tools.schemas import tool_schemas

BWRAP_PROBLEM = bwrap_available()
needs_bwrap = pytest.mark.skipif(
    BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}"
)
ENV = {"max_steps": 12, "sandbox": "bwrap"}
# repos:1-4 = 1.bivariate_statistic.0, 2.count_files.0, 3.count_missing.0 (all answerable)
IDS = resolve_split("repos:1-4")
QUESTIONS = {qid: question_from_id(qid) for qid in IDS}
GOLD = {qid: format_answer(q) for qid, q in QUESTIONS.items()}


def per_question(plans: dict[str, list[dict[str, Any]]]) -> Callable[[dict[str, Any]], Any]:
    """A server script: each episode (found by its question text in the task message) gets its
    own replies in order, whatever the order concurrent requests arrive in."""
    queues = {QUESTIONS[qid].text: list(replies) for qid, replies in plans.items()}
    lock = threading.Lock()

    def script(body: dict[str, Any]) -> Any:
        users = [message_text(m) for m in body["messages"] if m["role"] == "user"]
        for text, replies in queues.items():
            if users and text in users[0]:
                with lock:
                    return replies.pop(0) if replies else None
        raise AssertionError(f"request for an unknown question: {users[:1]}")

    return script


def factory(server: ScriptedChatServer) -> Callable[[], Any]:
    def make() -> Any:
        return OpenAIServerModel(
            model_id="scripted",
            api_base=server.url,
            api_key="EMPTY",
            client_kwargs={"max_retries": 0},
        )

    return make


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def records_by_id(out: Path) -> dict[str, dict[str, Any]]:
    return {r["question_id"]: r for r in read_records(out / RECORDS_FILE)}


def test_tool_schemas_match_the_env() -> None:
    tools = make_tools(lambda action: ("", 0.0, False, False, {}))
    assert [t.name for t in tools] == [s["function"]["name"] for s in tool_schemas()]
    for tool, env_schema in zip(tools, tool_schemas(), strict=True):
        sent = get_tool_json_schema(tool)["function"]
        want = env_schema["function"]
        assert sent["name"] == want["name"] and sent["description"] == want["description"]
        params = want["parameters"]
        assert set(sent["parameters"]["required"]) == set(params["required"])
        assert set(sent["parameters"]["properties"]) == set(params["properties"])
        for name, prop in params["properties"].items():
            optional = name not in params["required"]
            assert sent["parameters"]["properties"][name] == (
                {**prop, "nullable": True} if optional else prop
            )


@needs_bwrap
def test_tool_calling_episodes_end_to_end(tmp_path: Path) -> None:
    q_bi, q_files, q_missing = IDS
    evidence = QUESTIONS[q_missing].evidence[0]
    code = f"import pandas as pd\ndf = pd.read_json({evidence!r})\nprint(len(df))"
    plans = {
        q_missing: [  # explore, read, compute in the sandbox, answer right
            call("list_directory", path="/", depth=2),
            call("read_text_file", path=evidence, head=3),
            call("run_python_code", code=code),
            call("final_answer", answer=GOLD[q_missing]),
        ],
        q_bi: [call("list_directory"), call("final_answer", answer="12345")],  # wrong
        q_files: [  # malformed calls first, then the right answer
            call("delete_everything", path="/"),
            call("read_text_file", paht="README.md"),
            {"tool_calls": [{"name": "list_directory", "arguments": "{not json"}]},
            call("final_answer", answer=["a", "list"]),
            call("final_answer", answer=GOLD[q_files]),
        ],
    }
    with ScriptedChatServer(per_question(plans)) as server:
        policy = SmolagentsPolicy(factory(server))
        evaluate(policy, IDS, tmp_path, concurrency=2, env_kwargs=ENV, report=False)
    assert policy.name == "smolagents" and policy.model == "scripted"
    assert not server.errors and server.exhausted == 0
    records = records_by_id(tmp_path)
    assert {k: r["outcome"] for k, r in records.items()} == {
        q_missing: "correct",
        q_bi: "wrong",
        q_files: "correct",
    }

    good = records[q_missing]
    assert [c["name"] for c in good["tool_calls"]] == [
        "list_directory", "read_text_file", "run_python_code", "final_answer",
    ]  # fmt: skip
    assert not any(c["error"] for c in good["tool_calls"])
    assert evidence in good["files_read"] and good["evidence_used"] is True
    assert good["answer"] == GOLD[q_missing] and good["error"] is None
    roles = [m["role"] for m in good["transcript"]]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 4
    prompt = ISGEnv(**ENV).reset(options={"question": q_missing})[1]["prompt"]
    assert good["transcript"][0]["content"] == prompt["system"]
    assert good["transcript"][1]["content"] == "New task:\n" + prompt["user"]
    for assistant, tool in zip(good["transcript"][2::2], good["transcript"][3::2], strict=True):
        assert tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "[run_python_code]" in good["transcript"][7]["content"]
    assert good["model_calls"] == 4

    bad = records[q_files]
    names = [c["name"] for c in bad["tool_calls"]]
    assert names == [
        "delete_everything", "read_text_file", "list_directory", "final_answer", "final_answer",
    ]  # fmt: skip
    assert [c["error"] for c in bad["tool_calls"]] == [True, True, True, True, False]
    assert any("unknown tool" in m.get("content") or "" for m in bad["transcript"][3:5])

    # token counts are the server's usage, the model sees the env's tools and prompt
    usage = server.usage_totals()
    assert sum(r["prompt_tokens"] for r in records.values()) == usage["prompt_tokens"]
    assert sum(r["completion_tokens"] for r in records.values()) == usage["completion_tokens"]
    assert sum(r["model_calls"] for r in records.values()) == len(server.requests)
    for body in server.requests:
        sent = {t["function"]["name"]: t["function"] for t in body["tools"]}
        assert sorted(sent) == sorted(s["function"]["name"] for s in tool_schemas())


@needs_bwrap
def test_agent_without_final_answer(tmp_path: Path) -> None:
    q_bi, q_files, q_missing = IDS
    prose = {"content": "Let me think about the data some more."}
    plans = {
        # two prose turns (no tool call: smolagents' parse errors), then its max-steps text
        q_files: [prose, prose, {"content": GOLD[q_files]}],
        q_bi: [prose, prose, {"content": ""}],
        q_missing: [prose, prose, {"status": 500}],
    }
    with ScriptedChatServer(per_question(plans)) as server:
        policy = SmolagentsPolicy(factory(server), max_steps=2)
        evaluate(policy, IDS, tmp_path, concurrency=3, env_kwargs=ENV, report=False)
    records = records_by_id(tmp_path)
    fallback, silent, failed = records[q_files], records[q_bi], records[q_missing]
    # the max-steps fallback text is not an answer, even when it happens to be the gold one
    for r in (fallback, silent):
        assert r["outcome"] == "no_answer" and r["answer"] is None and r["error"] is None
        assert r["steps"] == 0 and r["tool_calls"] == [] and not r["correct"]
        assert r["model_calls"] == 3
        assert [m["role"] for m in r["transcript"]] == [
            "system", "user", "assistant", "user", "assistant", "user", "assistant",
        ]  # fmt: skip
    assert fallback["transcript"][-1]["content"] == GOLD[q_files]  # kept, not graded
    assert failed["outcome"] == "backend_error" and "final LLM output" in failed["error"]


@needs_bwrap
def test_env_step_limit_stops_the_agent(tmp_path: Path) -> None:
    q_bi = IDS[0]
    two_calls = {
        "tool_calls": [
            {"name": "list_directory", "arguments": {}},
            {"name": "read_text_file", "arguments": {"path": "README.md", "head": 2}},
        ]
    }
    plans = {q_bi: [two_calls, call("list_directory")]}
    with ScriptedChatServer(per_question(plans)) as server:
        policy = SmolagentsPolicy(factory(server), max_steps=5)
        evaluate(policy, [q_bi], tmp_path, env_kwargs={**ENV, "max_steps": 2}, report=False)
    (record,) = read_records(tmp_path / RECORDS_FILE)
    assert len(server.requests) == 1  # the env ended the episode: no second model turn
    assert record["outcome"] == "truncated" and record["error"] is None
    assert [c["name"] for c in record["tool_calls"]] == ["list_directory", "read_text_file"]
    transcript = record["transcript"]
    assert [m["role"] for m in transcript] == ["system", "user", "assistant", "tool", "tool"]
    ids = [c["id"] for c in transcript[2]["tool_calls"]]
    assert [m["tool_call_id"] for m in transcript[3:]] == ids
    assert transcript[3]["content"].startswith("[list_directory]")
    assert transcript[4]["content"].startswith("[read_text_file]")


def test_model_failure_is_a_backend_error(tmp_path: Path) -> None:
    with ScriptedChatServer([{"status": 500}] * 4) as server:
        policy = SmolagentsPolicy(factory(server), model_id="given-id")
        with pytest.raises(InfrastructureError):  # its only episode failed: the run stops
            evaluate(policy, IDS[:1], tmp_path, env_kwargs=ENV, report=False)
    (record,) = read_records(tmp_path / RECORDS_FILE)
    assert policy.model == "given-id"
    assert record["outcome"] == "backend_error" and "500" in record["error"]
    assert record["steps"] == 0 and record["model_calls"] == 1


def test_context_overflow_is_the_models_failure(tmp_path: Path) -> None:
    """A 400 "maximum context length" refusal (wrapped by smolagents) ends the episode as
    context_exceeded, graded wrong, like ChatPolicy's; other failures stay backend errors."""
    overflow = {"status": 400, "body": "This model's maximum context length is 4096 tokens."}
    with ScriptedChatServer([overflow]) as server:
        policy = SmolagentsPolicy(factory(server), model_id="m")
        evaluate(policy, IDS[:1], tmp_path, env_kwargs=ENV, report=False)
    (record,) = read_records(tmp_path / RECORDS_FILE)
    assert record["outcome"] == "context_exceeded" and not record["correct"]
    assert "maximum context length" in record["error"]


@needs_bwrap
def test_code_agent_runs_code_only_in_the_sandbox(tmp_path: Path) -> None:
    q_bi, _, q_missing = IDS
    evidence = QUESTIONS[q_missing].evidence[0]
    sentinel = Path("/tmp") / f"isg-smolagents-{uuid.uuid4().hex}"
    first = (
        f"Thought: look at the file.\n<code>\nimport os\nopen({str(sentinel)!r}, 'w').write('x')\n"
        f"text = open({evidence!r}).read()\nprint(len(text), sorted(os.listdir('.'))[:3])\n</code>"
    )
    plans = {
        q_missing: [
            {"content": first},
            {"content": "Thought: oops.\n<code>\n1 / 0\n</code>"},
            {"content": f"Thought: done.\n<code>\nfinal_answer({GOLD[q_missing]!r})\n</code>"},
        ],
        q_bi: [{"content": "<code>\nimport math\nfinal_answer(math.pi)\n</code>"}],
    }
    with ScriptedChatServer(per_question(plans)) as server:
        policy = SmolagentsPolicy(factory(server), agent="code")
        evaluate(policy, [q_missing, q_bi], tmp_path, env_kwargs=ENV, report=False)
    assert not sentinel.exists()  # the model's code never ran in this process
    records = records_by_id(tmp_path)
    good, wrong = records[q_missing], records[q_bi]
    assert good["outcome"] == "correct" and wrong["outcome"] == "wrong"
    assert wrong["answer"] == "3.141592653589793"
    assert [c["name"] for c in good["tool_calls"]] == [
        "run_python_code", "run_python_code", "run_python_code", "final_answer",
    ]  # fmt: skip
    assert evidence in good["files_read"]
    tool_texts = [m["content"] for m in good["transcript"] if m["role"] == "tool"]
    assert "ZeroDivisionError" in tool_texts[1] and FINAL_MARK not in tool_texts[0]
    system = server.requests[0]["messages"][0]
    assert "/data" in message_text(system)


def test_refuses_unknown_agent_and_reports_missing_smolagents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="agent must be one of"):
        SmolagentsPolicy(lambda: None, agent="react", model_id="x")
    monkeypatch.setitem(sys.modules, "smolagents", None)
    with pytest.raises(ImportError, match=r"isg-gym\[smolagents\]"):
        SmolagentsPolicy(lambda: None, model_id="x")


def test_system_prompt_modes() -> None:
    env = ISGEnv(**ENV)
    observation, info = env.reset(options={"question": IDS[0]})
    episode = EpisodeState(0, IDS[0], env, observation, info)
    model = OpenAIServerModel(model_id="m", api_base="http://127.0.0.1:9/v1", api_key="EMPTY")
    system = info["prompt"]["system"]

    def prompt(**kwargs: Any) -> str:
        policy = SmolagentsPolicy(lambda: model, **kwargs)
        return policy.build_agent(episode, EnvSession(episode.step), model).system_prompt

    assert SmolagentsPolicy(lambda: model).model == "m"  # the model id, from a first model
    assert prompt() == system
    own = prompt(system_prompt="smolagents")
    assert "You are an expert assistant" in own and system.split("\n\nTools:")[0] in own
    assert "<tool_call>" not in own and "list_directory" in own
    code = prompt(agent="code")
    assert "/data" in code and "do NOT persist" in code
    env.close()
