"""OpenAIBackend against the scripted OpenAI-compatible server: the backend alone, then whole
evaluation runs through ISG-v0 and the runner (records, retries, backend errors, resume)."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import ScriptedChatServer, by_conversation, prompt_tokens

from isg_gym.envs.env import ISGEnv
from isg_gym.eval.backends.base import ChatBackend
from isg_gym.eval.backends.openai_compat import OpenAIBackend, clean_message, is_local_url
from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.metrics import summarize
from isg_gym.eval.policy import ChatPolicy
from isg_gym.eval.records import RECORDS_FILE, latest_records, read_records
from isg_gym.eval.runner import evaluate
from isg_gym.tools.sandbox import bwrap_available

pytest.importorskip("openai")  # the optional extra: pip install 'isg-gym[openai]'

KEY_ENV = "ISG_TEST_OPENAI_KEY"
TOOLS = [{"type": "function", "function": {"name": "list_directory", "parameters": {}}}]


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (KEY_ENV, "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "sys"}, {"role": "user", "content": text}]


def _backend(server: ScriptedChatServer, **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("timeout", 10.0)
    return OpenAIBackend("scripted-model", base_url=server.url, api_key_env=KEY_ENV, **kwargs)


# --- the backend alone -------------------------------------------------------------------------


def test_batch_runs_concurrently_and_keeps_order() -> None:
    barrier = threading.Barrier(4, timeout=10)  # breaks (server 500s) unless 4 are in flight

    def reply(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        barrier.wait()
        number = int(question.split()[-1])
        return {"sleep": 0.05 * (4 - number), "then": {"content": f"answer {number}"}}

    with ScriptedChatServer(by_conversation(reply)) as server:
        backend = _backend(server, concurrency=4, max_retries=0)
        try:
            out = backend.complete([_user(f"question {i}") for i in range(4)], [])
        finally:
            backend.close()
    assert isinstance(backend, ChatBackend)
    assert [c.error for c in out] == [None] * 4
    assert [c.text for c in out] == [f"answer {i}" for i in range(4)]
    assert server.errors == []


def test_tool_calls_text_and_usage_are_parsed() -> None:
    script = [
        {
            "content": "let me look",
            "tool_calls": [
                {"name": "list_directory", "arguments": {"path": "/", "depth": 2}},
                {"name": "read_text_file", "arguments": '{"path": oops'},
            ],
        },
        {"content": '{"answer": "42"}'},
    ]
    with ScriptedChatServer(script) as server:
        backend = _backend(server, concurrency=1)
        try:
            first, second = backend.complete([_user("a"), _user("b")], TOOLS)
        finally:
            backend.close()
    assert first.text == "let me look"
    assert first.finish_reason == "tool_calls"
    assert first.tool_calls == [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "list_directory", "arguments": '{"path": "/", "depth": 2}'},
        },
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "read_text_file", "arguments": '{"path": oops'},
        },
    ]
    assert (second.text, second.tool_calls, second.finish_reason) == (
        '{"answer": "42"}',
        [],
        "stop",
    )
    for completion, (body, response) in zip((first, second), server.exchanges, strict=True):
        assert completion.prompt_tokens == response["usage"]["prompt_tokens"] == prompt_tokens(body)
        assert completion.completion_tokens == response["usage"]["completion_tokens"] >= 1


def test_request_shape_tools_and_options() -> None:
    conversation = [
        *_user("q"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "out", "name": None},
    ]
    with ScriptedChatServer([{"content": "a"}, {"content": "b"}]) as server:
        native = _backend(server, temperature=0.5, max_tokens=77, extra_body={"top_k": 3})
        text_only = _backend(server, native_tools=False, temperature=None, max_tokens=None)
        try:
            native.complete([conversation], TOOLS)
            text_only.complete([_user("q")], TOOLS)
        finally:
            native.close()
            text_only.close()
    first, second = server.requests
    assert first["model"] == "scripted-model"
    assert first["tools"] == TOOLS and first["tool_choice"] == "auto"
    assert (first["temperature"], first["max_tokens"], first["top_k"]) == (0.5, 77, 3)
    assert first["messages"][2]["content"] is None  # assistant turn with tool calls keeps it
    assert first["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "out"}
    assert not {"tools", "tool_choice", "temperature", "max_tokens"} & set(second)
    assert second["messages"] == _user("q")


def test_clean_message() -> None:
    assert clean_message({"role": "user", "content": None, "name": None}) == {
        "role": "user",
        "content": "",
    }
    calls = [{"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}]
    assert clean_message({"role": "assistant", "content": None, "tool_calls": calls}) == {
        "role": "assistant",
        "content": None,
        "tool_calls": calls,
    }


def test_retry_then_success_and_errors_become_completions() -> None:
    script = [
        {"status": 500},  # retried by the SDK ...
        {"content": "recovered"},  # ... and the second attempt succeeds
        {"status": 503},
        {"status": 503},
        {"status": 503},  # max_retries=2: three attempts, then an error completion
        {"status": 400, "body": "bad request"},  # not transient: no retry
    ]
    with ScriptedChatServer(script, retry_after_ms=10) as server:
        backend = _backend(server, max_retries=2, concurrency=1)
        try:
            ok = backend.complete([_user("a")], [])[0]
            assert len(server.requests) == 2
            failed = backend.complete([_user("b")], [])[0]
            assert len(server.requests) == 5
            rejected = backend.complete([_user("c")], [])[0]
            assert len(server.requests) == 6
        finally:
            backend.close()
    assert (ok.text, ok.error) == ("recovered", None)
    assert failed.error is not None and failed.error.startswith("InternalServerError 503:")
    assert (failed.text, failed.tool_calls, failed.prompt_tokens) == ("", [], 0)
    assert (
        rejected.error is not None and "400" in rejected.error and "bad request" in rejected.error
    )


def test_timeout_is_retried_then_reported() -> None:
    script = [
        {"sleep": 30, "then": {"content": "too late"}},
        {"content": "in time"},
        {"sleep": 30, "then": {"content": "too late"}},
    ]
    with ScriptedChatServer(script) as server:
        retrying = _backend(server, timeout=0.5, max_retries=1)
        once = _backend(server, timeout=0.5, max_retries=0)
        try:
            assert retrying.complete([_user("a")], [])[0].text == "in time"
            timed_out = once.complete([_user("b")], [])[0]
        finally:
            retrying.close()
            once.close()
        assert server.wait_idle()  # the sleeping handlers saw their clients hang up
    assert timed_out.error is not None and timed_out.error.startswith("APITimeoutError")
    assert len(server.requests) == 3 and server.abandoned == 2
    assert [r["choices"][0]["message"]["content"] for r in server.responses] == ["in time"]


def test_connection_refused_is_an_error_completion() -> None:
    server = ScriptedChatServer([]).start()
    url = server.url
    server.stop()
    backend = OpenAIBackend("m", base_url=url, api_key_env=KEY_ENV, max_retries=0, timeout=5)
    try:
        out = backend.complete([_user("a")], [])
    finally:
        backend.close()
    assert out[0].error is not None and out[0].error.startswith("APIConnectionError")


def test_empty_batch_sends_nothing() -> None:
    with ScriptedChatServer([]) as server:
        backend = _backend(server)
        try:
            assert backend.complete([], TOOLS) == []
        finally:
            backend.close()
    assert server.requests == []


def test_api_key_comes_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError):
        OpenAIBackend("m", base_url="http://127.0.0.1:1/v1", api_key="sk-arg")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=KEY_ENV):
        OpenAIBackend("m", base_url="https://api.example.com/v1", api_key_env=KEY_ENV)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIBackend("m")  # the OpenAI API itself, no key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one")  # another variable is never read
    with ScriptedChatServer([]) as server:
        placeholder = _backend(server)
        monkeypatch.setenv(KEY_ENV, "sk-from-env")
        keyed = _backend(server)
        try:
            placeholder.complete([_user("a")], [])
            keyed.complete([_user("b")], [])
        finally:
            placeholder.close()
            keyed.close()
    assert [h["authorization"] for h in server.headers] == ["Bearer EMPTY", "Bearer sk-from-env"]
    remote = OpenAIBackend("m", base_url="https://api.example.com/v1", api_key_env=KEY_ENV)
    remote.close()


def test_is_local_url() -> None:
    assert is_local_url("http://127.0.0.1:8000/v1")
    assert is_local_url("http://localhost:8000/v1")
    assert is_local_url("http://[::1]:8000/v1")
    assert not is_local_url("https://api.openai.com/v1")
    assert not is_local_url(None)


def test_scripted_server_protocol() -> None:
    import openai

    seen = []

    def reply(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any] | None:
        seen.append((question, turn))
        return {"content": f"{question} #{turn}"} if turn < 1 else None

    parts = [{"type": "text", "text": "multi"}, {"type": "text", "text": "part"}]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": parts}]
    with ScriptedChatServer(by_conversation(reply)) as server:
        client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
        assert [m.id for m in client.models.list()] == ["scripted-model"]
        first = client.chat.completions.create(model="x", messages=messages)
        later = [*messages, {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]
        stream = client.chat.completions.create(
            model="x", messages=later, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        client.close()
    assert (first.choices[0].message.content, first.model) == ("multipart #0", "x")
    assert seen == [("multipart", 0), ("multipart", 1)]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        '{"answer": "not possible"}'
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == prompt_tokens(
        server.requests[1]
    )
    assert server.exhausted == 1


# --- whole runs through ISG-v0 ---------------------------------------------------------------

MAX_RETRIES = 2
SANDBOX = "bwrap" if bwrap_available() is None else "none"
ENV_KWARGS = {"max_steps": 6, "sandbox": SANDBOX}


@pytest.fixture(scope="module")
def questions() -> dict[str, dict[str, Any]]:
    """Four answerable questions with evidence files (from repositories 0-39), with their
    prompt, gold answer and evidence."""
    from isg_gym.eval.splits import resolve_split

    env = ISGEnv(privileged_info=True, sandbox="none")
    out = {}
    for qid in resolve_split("repos:0-40"):
        _, info = env.reset(options={"question": qid})
        if info["answerable"] and info["evidence"]:
            out[qid] = {"user": info["prompt"]["user"], "gold": info["answer"], "info": info}
        if len(out) == 4:
            break
    env.close()
    return out


class Script:
    """Replies by question and turn. Roles: ``tools`` (structured calls, then the gold answer),
    ``messy`` (a Hermes call as text, bad JSON arguments, an unknown tool, a wrong answer),
    ``flaky`` (a 500 then success, a timeout then success), ``down`` (always 500)."""

    def __init__(self, questions: dict[str, dict[str, Any]]) -> None:
        self.questions = questions
        self.role = dict(zip(sorted(questions), ("down", "tools", "messy", "flaky"), strict=True))
        self.by_user = {q["user"]: qid for qid, q in questions.items()}
        self.attempts: Counter[tuple[str, int]] = Counter()
        self.lock = threading.Lock()

    def __call__(self, user: str, turn: int, body: dict[str, Any]) -> dict[str, Any] | None:
        qid = self.by_user[user]
        with self.lock:
            self.attempts[qid, turn] += 1
            attempt = self.attempts[qid, turn]
        question = self.questions[qid]
        gold = question["gold"]
        match self.role[qid], turn:
            case "down", _:
                return {"status": 500}
            case "tools", 0:
                return {"tool_calls": [{"name": "list_directory", "arguments": {"path": "/"}}]}
            case "tools", 1:
                path = question["info"]["evidence"][0]
                args = {"path": path, "head": 3}
                return {"tool_calls": [{"name": "read_text_file", "arguments": args}]}
            case "tools", 2:
                code = "import os\nprint(sorted(os.listdir('.'))[:3])"
                return {"tool_calls": [{"name": "run_python_code", "arguments": {"code": code}}]}
            case "tools", 3:
                return {"content": json.dumps({"answer": gold})}
            case "messy", 0:
                call = {"name": "list_directory", "arguments": {"path": "/", "depth": 1}}
                return {"content": f"Looking.\n<tool_call>{json.dumps(call)}</tool_call>"}
            case "messy", 1:
                return {"tool_calls": [{"name": "read_text_file", "arguments": '{"path": '}]}
            case "messy", 2:
                return {"tool_calls": [{"name": "teleport", "arguments": {"to": "/"}}]}
            case "messy", 3:
                return {"content": json.dumps({"answer": f"{gold}0"})}
            case "flaky", 0:
                if attempt == 1:
                    return {"status": 500}
                return {"tool_calls": [{"name": "list_directory", "arguments": {}}]}
            case "flaky", 1:
                if attempt == 1:
                    return {"sleep": 3, "then": {"content": "too late"}}
                return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": gold}}]}
        return None  # unexpected turn: the server answers "not possible" and counts it


def _run(
    questions: dict[str, dict[str, Any]], out: Path, resume: bool = False
) -> tuple[ScriptedChatServer, Script, dict[str, Any]]:
    script = Script(questions)
    with ScriptedChatServer(by_conversation(script), retry_after_ms=10) as server:
        backend = _backend(server, concurrency=2, timeout=1.0, max_retries=MAX_RETRIES)
        try:
            summary = evaluate(
                ChatPolicy(backend),
                sorted(questions),
                out,
                concurrency=2,
                resume=resume,
                env_kwargs=ENV_KWARGS,
            )
        finally:
            backend.close()
    assert server.errors == []
    return server, script, summary


def _tokens_by_question(server: ScriptedChatServer, script: Script) -> dict[str, list[int]]:
    sums: dict[str, list[int]] = {}
    for body, response in server.exchanges:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        total = sums.setdefault(script.by_user[user], [0, 0])
        total[0] += response["usage"]["prompt_tokens"]
        total[1] += response["usage"]["completion_tokens"]
    return sums


def _check_transcript(messages: list[dict[str, Any]]) -> None:
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    i = 2
    while i < len(messages):
        message = messages[i]
        assert message["role"] == "assistant"
        calls = message.get("tool_calls") or []
        replies = messages[i + 1 : i + 1 + max(len(calls), 1)]
        if calls:
            assert [m["role"] for m in replies] == ["tool"] * len(calls)
            assert [m["tool_call_id"] for m in replies] == [c["id"] for c in calls]
        elif replies:
            assert replies[0]["role"] == "user"
        i += 1 + len(replies)


@pytest.fixture(scope="module")
def full_run(questions: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("openai_run")
    server, script, summary = _run(questions, out)
    return out, server, script, summary


def test_run_records(full_run, questions: dict[str, dict[str, Any]]) -> None:
    out, server, script, summary = full_run
    records = read_records(out / RECORDS_FILE)
    assert sorted(r["question_id"] for r in records) == sorted(questions)
    by_role = {script.role[r["question_id"]]: r for r in records}
    assert server.exhausted == 0 and server.abandoned == 1

    for record in records:
        _check_transcript(record["transcript"])
        assert record["gold"] == questions[record["question_id"]]["gold"]
    tokens = _tokens_by_question(server, script)
    for qid, (prompt, completion) in tokens.items():
        record = next(r for r in records if r["question_id"] == qid)
        assert (record["prompt_tokens"], record["completion_tokens"]) == (prompt, completion)
    totals = server.usage_totals()
    assert sum(r["prompt_tokens"] for r in records) == totals["prompt_tokens"]
    assert sum(r["completion_tokens"] for r in records) == totals["completion_tokens"]

    tools = by_role["tools"]
    assert (tools["outcome"], tools["correct"]) == ("correct", True)
    assert (tools["steps"], tools["model_calls"]) == (4, 4)
    names = [c["name"] for c in tools["tool_calls"]]
    assert names == ["list_directory", "read_text_file", "run_python_code"]
    assert all(c["result_chars"] > 0 and not c["error"] for c in tools["tool_calls"])
    assert tools["parse_failures"] == 0
    assert tools["evidence_used"] is True
    assert tools["files_read"] == questions[tools["question_id"]]["info"]["evidence"]

    messy = by_role["messy"]
    assert (messy["outcome"], messy["correct"], messy["steps"]) == ("wrong", False, 4)
    assert [c["name"] for c in messy["tool_calls"]] == [
        "list_directory",
        "read_text_file",
        "teleport",
    ]
    assert [c["error"] for c in messy["tool_calls"]] == [False, True, True]
    assert messy["parse_failures"] == 1  # the bad JSON; an unknown tool is a tool error
    assert "JSON" in messy["parse_errors"][0]
    assert messy["transcript"][3]["role"] == "user"  # the Hermes text call got the observation
    teleport = next(m for m in messy["transcript"] if "teleport" in json.dumps(m.get("tool_calls")))
    reply = next(
        m for m in messy["transcript"] if m.get("tool_call_id") == teleport["tool_calls"][0]["id"]
    )
    assert "unknown tool" in reply["content"]

    flaky = by_role["flaky"]
    assert (flaky["outcome"], flaky["correct"], flaky["model_calls"]) == ("correct", True, 2)
    flaky_id = flaky["question_id"]
    assert [script.attempts[flaky_id, turn] for turn in (0, 1)] == [2, 2]  # each retried once

    down = by_role["down"]
    assert down["outcome"] == "backend_error" and not down["correct"]
    assert down["error"].startswith("InternalServerError 500")
    assert (down["steps"], down["model_calls"], down["prompt_tokens"]) == (0, 1, 0)
    assert script.attempts[down["question_id"], 0] == MAX_RETRIES + 1

    # The server that is down is an infrastructure failure: counted apart, not as an answer.
    assert (summary["n"], summary["episodes"]) == (3, 4)
    assert summary["infrastructure_failures"]["by_outcome"] == {"backend_error": 1}
    assert json.loads((out / "summary.json").read_text())["n"] == 3
    assert "INFRASTRUCTURE FAILURES: 1 of 4" in (out / "summary.md").read_text()
    assert (out / "run.json").exists()


def test_resume_of_a_finished_run_retries_only_infrastructure_failures(
    full_run, questions, tmp_path
) -> None:
    out, *_ = full_run
    for name in ("run.json", RECORDS_FILE):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    before = (tmp_path / RECORDS_FILE).read_bytes()
    down = next(q for q, role in Script(questions).role.items() if role == "down")
    # The retried episode fails again: every episode this run played failed, so it stops.
    with pytest.raises(InfrastructureError, match="the first 1 episodes all failed"):
        _run(questions, tmp_path, resume=True)
    after = (tmp_path / RECORDS_FILE).read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    retried = json.loads(after.splitlines()[-1])
    assert retried["question_id"] == down and retried["outcome"] == "backend_error"
    summary = summarize(read_records(tmp_path / RECORDS_FILE))
    assert (summary["n"], summary["episodes"]) == (3, 4)  # one record per episode counts


def test_interrupted_run_resumes_the_missing_episodes(full_run, questions, tmp_path) -> None:
    out, *_ = full_run
    lines = (out / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    kept = 2
    (tmp_path / "run.json").write_bytes((out / "run.json").read_bytes())
    (tmp_path / RECORDS_FILE).write_bytes(b"".join(lines[:kept]) + lines[kept][:40])
    done = {json.loads(line)["question_id"] for line in lines[:kept]}

    server, script, _ = _run(questions, tmp_path, resume=True)

    asked = {script.by_user[m["content"]] for b in server.requests for m in b["messages"][1:2]}
    down = next(q for q, role in script.role.items() if role == "down")
    assert asked == (set(questions) - done) | {down}  # infrastructure failures are retried
    after = (tmp_path / RECORDS_FILE).read_bytes().splitlines(keepends=True)
    assert after[:kept] == lines[:kept]
    records = latest_records(read_records(tmp_path / RECORDS_FILE))
    assert sorted(r["question_id"] for r in records) == sorted(questions)
    original = {json.loads(line)["question_id"]: json.loads(line) for line in lines}
    for record in records:
        same = original[record["question_id"]]
        for key in ("index", "outcome", "prompt_tokens", "completion_tokens", "tool_calls"):
            assert record[key] == same[key], key


def test_a_context_overflow_is_the_models_failure_not_infrastructure(tmp_path: Path) -> None:
    """A 400 "maximum context length" refusal ends the episode as ``context_exceeded``: graded
    as a wrong answer, never dropped from accuracy (else a model could drop hard questions by
    talking until it overflows); other refusals stay infrastructure failures."""
    from isg_gym.eval.splits import resolve_split

    overflow = {"status": 400, "body": "This model's maximum context length is 8192 tokens."}
    ids = resolve_split("repos:0-2")
    with ScriptedChatServer([overflow] * 4) as server:
        backend = _backend(server, max_retries=0)
        (completion,) = backend.complete([[{"role": "user", "content": "hi"}]], [])
        backend.close()
    assert completion.error and completion.error_kind == "model"
    with ScriptedChatServer([{"status": 503}] * 4) as server:
        backend = _backend(server, max_retries=0)
        (completion,) = backend.complete([[{"role": "user", "content": "hi"}]], [])
        backend.close()
    assert completion.error and completion.error_kind == "backend"
    with ScriptedChatServer([overflow] * 8) as server:
        backend = _backend(server, max_retries=0)
        evaluate(ChatPolicy(backend), ids, tmp_path, env_kwargs=ENV_KWARGS, report=False)
        backend.close()
    records = read_records(tmp_path / RECORDS_FILE)
    assert [r["outcome"] for r in records] == ["context_exceeded"] * 2
    summary = summarize(records)
    assert (summary["n"], summary["correct"], summary["infrastructure_failures"]["n"]) == (2, 0, 0)


def test_response_format_keyword_is_accepted() -> None:
    response_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    with ScriptedChatServer([{"content": "{}"}]) as server:
        backend = _backend(server, max_retries=0)
        try:
            (completion,) = backend.complete([_user("q")], [], response_format=response_format)
        finally:
            backend.close()
    assert (completion.error, completion.text) == (None, "{}")


def test_answer_on_last_step_offers_only_final_answer(tmp_path: Path) -> None:
    """With answer_on_last_step the last step's request carries only the final_answer tool;
    the model's answer there is graded like any other."""
    from isg_gym.eval.splits import resolve_split

    def explore_until_told(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        names = [t["function"]["name"] for t in body["tools"]]
        if names == ["final_answer"]:
            return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": "7"}}]}
        return {"tool_calls": [{"name": "list_directory", "arguments": {}}]}

    ids = resolve_split("repos:0-2")
    env = {**ENV_KWARGS, "max_steps": 3}
    with ScriptedChatServer(by_conversation(explore_until_told)) as server:
        backend = _backend(server, max_retries=0, concurrency=2)
        policy = ChatPolicy(backend, answer_on_last_step=True)
        evaluate(policy, ids, tmp_path, concurrency=2, env_kwargs=env, report=False)
        backend.close()
    offered = Counter(tuple(t["function"]["name"] for t in b["tools"]) for b in server.requests)
    assert offered == {("list_directory", "read_text_file", "run_python_code", "final_answer"): 4,
                       ("final_answer",): 2}  # fmt: skip
    records = read_records(tmp_path / RECORDS_FILE)
    assert [r["steps"] for r in records] == [3, 3]
    assert {r["outcome"] for r in records} <= {"correct", "wrong"}
    assert all(r["answer"] == "7" for r in records)
