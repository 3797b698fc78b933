"""The offline vLLM backend against a fake ``vllm`` module (vLLM itself needs a GPU)."""

from __future__ import annotations

import json
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from env_fakes import FakeSandbox

from isg_gym.envs.env import ISGEnv
from isg_gym.eval.backends.base import ChatBackend
from isg_gym.eval.backends.vllm_offline import PARSER_MODULES, REQUEST_MODULES, VLLMBackend
from isg_gym.eval.policy import ChatPolicy, EpisodeState
from isg_gym.tools.schemas import tool_schemas

LIST_CALL = (
    '<tool_call>{"name": "list_directory", "arguments": {"path": "/", "depth": 1}}</tool_call>'
)
ANSWER_CALL = (
    '<tool_call>{"name": "final_answer", "arguments": {"answer": "not possible"}}</tool_call>'
)
QUESTIONS = ["3.count_files.0", "4.has_readme.0", "5.count_rows.0"]


@dataclass
class FakeSample:  # vllm.CompletionOutput
    text: str
    token_ids: list[int]
    finish_reason: str = "stop"


@dataclass
class FakeRequestOutput:  # vllm.RequestOutput
    prompt_token_ids: list[int]
    outputs: list[FakeSample]


@dataclass
class FakeSamplingParams:
    kwargs: dict[str, Any] = field(default_factory=dict)


class FakeLLM:
    """``vllm.LLM``: the first assistant turn lists "/", the next one answers."""

    last: FakeLLM | None = None
    fail = False

    def __init__(self, model: str, seed: int = 0, **kwargs: Any) -> None:
        self.model, self.seed, self.kwargs = model, seed, kwargs
        self.calls: list[dict[str, Any]] = []
        FakeLLM.last = self

    def get_tokenizer(self) -> object:
        return object()

    def chat(self, messages: list[list[dict[str, Any]]], **kwargs: Any) -> list[FakeRequestOutput]:
        self.calls.append({"messages": messages, **kwargs})
        if FakeLLM.fail:
            raise RuntimeError("CUDA out of memory")
        outputs = []
        for conversation in messages:
            turns = sum(m["role"] == "assistant" for m in conversation)
            text = "Let me look.\n" + LIST_CALL if turns == 0 else ANSWER_CALL
            prompt = list(range(len(conversation) * 10))
            outputs.append(FakeRequestOutput(prompt, [FakeSample(text, list(range(len(text))))]))
        return outputs


class FakeHermesParser:
    """``vllm``'s Hermes tool parser, reduced: ``extract_tool_calls(text, request)``."""

    seen_requests: ClassVar[list[Any]] = []

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer = tokenizer

    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        FakeHermesParser.seen_requests.append(request)
        blocks = re.findall(r"<tool_call>(.*?)</tool_call>", model_output, re.DOTALL)
        if not blocks:
            return types.SimpleNamespace(tools_called=False, tool_calls=[], content=model_output)
        calls = []
        for i, block in enumerate(blocks):
            data = json.loads(block)
            function = types.SimpleNamespace(
                name=data["name"], arguments=json.dumps(data["arguments"])
            )
            calls.append(types.SimpleNamespace(id=f"chatcmpl-tool-{i}", function=function))
        content = model_output[: model_output.find("<tool_call>")]
        return types.SimpleNamespace(tools_called=True, tool_calls=calls, content=content or None)


class BrokenParser(FakeHermesParser):
    def extract_tool_calls(self, model_output: str, request: Any) -> Any:
        raise ValueError("cannot parse")


class FakeManager:
    parser: type = FakeHermesParser

    @classmethod
    def get_tool_parser(cls, name: str) -> type:
        if name != "hermes":
            raise KeyError(name)
        return cls.parser


class FakeChatCompletionRequest:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A fake ``vllm`` with no tool-parser modules (every import of them fails)."""
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM
    module.SamplingParams = lambda **kw: FakeSamplingParams(kw)
    monkeypatch.setitem(sys.modules, "vllm", module)
    for name in (*PARSER_MODULES, *REQUEST_MODULES):
        monkeypatch.setitem(sys.modules, name, None)
    FakeLLM.fail = False
    FakeManager.parser = FakeHermesParser
    FakeHermesParser.seen_requests = []
    return module


def _with_parser(monkeypatch: pytest.MonkeyPatch, parser_module: str) -> None:
    parsers = types.ModuleType(parser_module)
    parsers.ToolParserManager = FakeManager
    monkeypatch.setitem(sys.modules, parser_module, parsers)
    protocol = types.ModuleType(REQUEST_MODULES[0])
    protocol.ChatCompletionRequest = FakeChatCompletionRequest
    monkeypatch.setitem(sys.modules, REQUEST_MODULES[0], protocol)


def _episodes(n: int = 3) -> list[EpisodeState]:
    episodes = []
    for i, qid in enumerate(QUESTIONS[:n]):
        env = ISGEnv(sandbox=FakeSandbox(), max_steps=5)
        observation, info = env.reset(options={"question": qid})
        episodes.append(EpisodeState(i, qid, env, observation, info))
    return episodes


def _play(policy: ChatPolicy, episodes: list[EpisodeState], rounds: int = 10) -> int:
    """Drive the episodes the way the runner does; the number of rounds played."""
    for episode in episodes:
        policy.begin(episode)
    played = 0
    while played < rounds:
        live = [ep for ep in episodes if not ep.done]
        if not live:
            break
        played += 1
        for episode, turn in zip(live, policy.act(live), strict=True):
            if turn.error is not None:
                episode.error = turn.error
                continue
            observation, _, _, _, info = episode.step(turn.action)
            policy.observe(episode, observation, info)
    for episode in episodes:
        episode.env.close()
    return played


def test_import_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'isg-gym[vllm]'")):
        VLLMBackend("Qwen/Qwen2.5-0.5B-Instruct")


def test_constructor_passes_engine_and_sampling_options(fake_vllm: types.ModuleType) -> None:
    backend = VLLMBackend(
        "m", max_tokens=77, temperature=0.5, seed=9, llm_kwargs={"max_model_len": 4096}
    )
    assert isinstance(backend, ChatBackend)
    assert (backend.name, backend.model) == ("vllm", "m")
    llm = FakeLLM.last
    assert llm is not None and (llm.model, llm.seed, llm.kwargs) == (
        "m",
        9,
        {"max_model_len": 4096},
    )
    assert backend._sampling.kwargs == {"max_tokens": 77, "temperature": 0.5}
    assert backend._parser is None  # no parser module in this fake: plain text


def test_text_batches_one_chat_call_per_round(fake_vllm: types.ModuleType) -> None:
    backend = VLLMBackend("m", chat_template_kwargs={"enable_thinking": False})
    episodes = _episodes(3)
    assert _play(ChatPolicy(backend), episodes) == 2
    calls = FakeLLM.last.calls
    assert len(calls) == 2 and all(len(c["messages"]) == 3 for c in calls)
    assert all(c["tools"] == tool_schemas() for c in calls)
    assert all(c["chat_template_kwargs"] == {"enable_thinking": False} for c in calls)
    assert all(c["use_tqdm"] is False for c in calls)
    for episode in episodes:
        first, last = episode.steps
        assert [r["name"] for r in first.tool_results] == ["list_directory"]
        assert first.tool_results[0]["output"].startswith("[list_directory]\n/ (depth 1)")
        assert last.terminated and last.info["answer_text"] == "not possible"
        assert last.info["outcome"] in ("correct", "abstained")
        # prompt tokens: 10 per message sent (2, then 4 messages); completion: len(text)
        assert episode.prompt_tokens == 20 + 40
        assert episode.completion_tokens == len("Let me look.\n" + LIST_CALL) + len(ANSWER_CALL)
        assert episode.model_calls == 2
        # text turns: the env's observation comes back as a user message
        assert [m["role"] for m in episode.messages[:5]] == [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
        ]


@pytest.mark.parametrize("parser_module", PARSER_MODULES)
def test_vllm_tool_parser_gives_structured_calls(
    fake_vllm: types.ModuleType, monkeypatch: pytest.MonkeyPatch, parser_module: str
) -> None:
    _with_parser(monkeypatch, parser_module)
    backend = VLLMBackend("m")
    assert isinstance(backend._parser, FakeHermesParser)
    assert backend._sampling.kwargs["skip_special_tokens"] is False
    episodes = _episodes(2)
    assert _play(ChatPolicy(backend), episodes) == 2
    request = FakeHermesParser.seen_requests[0]
    assert isinstance(request, FakeChatCompletionRequest)
    assert request.kwargs["tools"] == tool_schemas()
    for episode in episodes:
        assistant = episode.messages[2]
        assert assistant["content"] == "Let me look.\n"
        (call,) = assistant["tool_calls"]
        assert call["type"] == "function" and call["id"] == "chatcmpl-tool-0"
        assert call["function"]["name"] == "list_directory"
        assert json.loads(call["function"]["arguments"]) == {"path": "/", "depth": 1}
        assert episode.messages[3]["role"] == "tool"
        assert episode.messages[3]["tool_call_id"] == "chatcmpl-tool-0"
        assert episode.steps[-1].info["answer_text"] == "not possible"
    # the second round's conversations carry tool-call arguments as dicts (chat templates)
    sent = FakeLLM.last.calls[1]["messages"][0][2]["tool_calls"][0]["function"]["arguments"]
    assert sent == {"path": "/", "depth": 1}
    # ... without touching the transcript itself
    assert isinstance(episodes[0].messages[2]["tool_calls"][0]["function"]["arguments"], str)


def test_parser_failure_passes_text_through(
    fake_vllm: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_parser(monkeypatch, PARSER_MODULES[0])
    FakeManager.parser = BrokenParser
    backend = VLLMBackend("m")
    (completion,) = backend.complete([[{"role": "user", "content": "hi"}]], tool_schemas())
    assert completion.text == "Let me look.\n" + LIST_CALL
    assert completion.tool_calls == [] and completion.error is None


def test_unknown_parser_name_falls_back_to_text(
    fake_vllm: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _with_parser(monkeypatch, PARSER_MODULES[0])
    assert VLLMBackend("m", tool_parser="no_such_parser")._parser is None
    assert VLLMBackend("m", tool_parser=None)._parser is None


def test_chat_failure_becomes_errors_not_exceptions(fake_vllm: types.ModuleType) -> None:
    backend = VLLMBackend("m")
    FakeLLM.fail = True
    completions = backend.complete([[{"role": "user", "content": "a"}]] * 2, [])
    assert [c.error for c in completions] == [
        "vLLM chat failed: RuntimeError: CUDA out of memory"
    ] * 2
    assert "tools" not in FakeLLM.last.calls[0]  # no schemas: the template renders none
    assert backend.complete([], []) == []


def test_runner_sends_all_live_episodes_in_one_call(
    fake_vllm: types.ModuleType, tmp_path: Path
) -> None:
    from isg_gym.eval.records import RECORDS_FILE, read_records
    from isg_gym.eval.runner import evaluate

    policy = ChatPolicy(VLLMBackend("m"))
    summary = evaluate(
        policy, QUESTIONS, tmp_path, concurrency=3, env_kwargs={"sandbox": "none"}, report=False
    )
    assert summary == {"n": 3}
    calls = FakeLLM.last.calls
    assert [len(c["messages"]) for c in calls] == [3, 3]
    records = read_records(tmp_path / RECORDS_FILE)
    assert sorted(r["question_id"] for r in records) == sorted(QUESTIONS)
    assert all(r["prompt_tokens"] == 60 for r in records)
