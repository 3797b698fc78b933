"""Structured output in the chat backends: ``complete(..., response_format=...)`` reaches the
OpenAI-compatible server as is, and becomes vLLM structured outputs (a fake ``vllm``), and the
builder batches concurrent builds for a batch backend."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

import pytest
from fake_openai_server import ScriptedChatServer
from llm_designer import ScriptedDesigner, stage_of, valid_reply

from isg_gym.eval.backends.base import Completion
from isg_gym.eval.backends.openai_compat import OpenAIBackend
from isg_gym.eval.backends.vllm_offline import PARSER_MODULES, REQUEST_MODULES, VLLMBackend
from isg_gym.simulator.build import build_seeds
from isg_gym.simulator.cache import SpecCache
from isg_gym.simulator.llm import STAGES, BatchedAsk, LLMBuilder, backend_ask

FORMAT = {"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "object"}}}


def test_openai_backend_sends_response_format() -> None:
    with ScriptedChatServer([{"content": "{}"}, {"content": "hi"}]) as server:
        backend = OpenAIBackend("m", base_url=server.url, max_retries=0)
        try:
            (done,) = backend.complete(
                [[{"role": "user", "content": "x"}]], [], response_format=FORMAT
            )
            backend.complete([[{"role": "user", "content": "y"}]], [])
        finally:
            backend.close()
    assert done.text == "{}"
    assert server.requests[0]["response_format"] == FORMAT
    assert "response_format" not in server.requests[1]


@dataclass
class Sample:
    text: str
    token_ids: list[int]
    finish_reason: str = "stop"


@dataclass
class Output:
    prompt_token_ids: list[int]
    outputs: list[Sample]


class FakeLLM:
    """``vllm.LLM``: answers each conversation as the scripted designer would."""

    last: FakeLLM | None = None

    def __init__(self, model: str, seed: int = 0, **kwargs: Any) -> None:
        self.calls: list[dict[str, Any]] = []
        FakeLLM.last = self

    def get_tokenizer(self) -> object:
        return object()

    def chat(self, messages: list[list[dict[str, Any]]], **kwargs: Any) -> list[Output]:
        import json

        self.calls.append({"n": len(messages), **kwargs})
        params = kwargs["sampling_params"]
        name = params.kwargs.get("structured_outputs").kwargs["json"]
        out = []
        for conversation in messages:
            body = {
                "messages": conversation,
                "response_format": {"json_schema": {"name": _name_of(name)}},
            }
            text = json.dumps(valid_reply(stage_of(body), conversation[1]["content"]))
            out.append(Output([1, 2, 3], [Sample(text, [1] * 10)]))
        return out


def _name_of(schema: dict[str, Any]) -> str:
    stage = next(s for s in STAGES if s.schema == schema)
    return stage.response_format["json_schema"]["name"]


class Params:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Any:
    module = types.ModuleType("vllm")
    module.__path__ = []  # a package, so vllm.sampling_params resolves to the fake below
    module.LLM = FakeLLM
    module.SamplingParams = Params
    sampling = types.ModuleType("vllm.sampling_params")
    sampling.StructuredOutputsParams = Params
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
    for name in (*PARSER_MODULES, *REQUEST_MODULES):
        monkeypatch.setitem(sys.modules, name, None)
    return sampling


def test_vllm_backend_turns_response_format_into_structured_outputs(fake_vllm) -> None:
    backend = VLLMBackend("m", max_tokens=64)
    stage = STAGES[0]
    conv = [{"role": "system", "content": "s"}, {"role": "user", "content": "Subdomain: X"}]
    (done,) = backend.complete([conv], [], response_format=stage.response_format)
    assert done.error is None and '"titles"' in done.text
    params = FakeLLM.last.calls[0]["sampling_params"]
    assert params.kwargs["max_tokens"] == 64
    assert params.kwargs["structured_outputs"].kwargs == {"json": stage.schema}
    object_only = backend._structured({"type": "json_object"})
    assert object_only.kwargs["structured_outputs"].kwargs == {"json_object": True}
    assert backend._structured(None) is backend._sampling
    assert backend._structured({"type": "text"}) is backend._sampling
    (bad,) = backend.complete([conv], [], response_format={"type": "xml"})
    assert bad.error and "json_schema" in bad.error


def test_vllm_backend_falls_back_to_guided_decoding(fake_vllm, monkeypatch) -> None:
    del fake_vllm.StructuredOutputsParams
    fake_vllm.GuidedDecodingParams = Params
    backend = VLLMBackend("m")
    params = backend._structured(FORMAT)
    assert params.kwargs["guided_decoding"].kwargs == {"json": {"type": "object"}}


def test_batched_builds_share_complete_calls_per_stage(fake_vllm, tmp_path) -> None:
    backend = VLLMBackend("m")
    ask = BatchedAsk(backend)
    builder = LLMBuilder(ask, "m")
    summary = build_seeds(range(4), builder, SpecCache(tmp_path, create=True), concurrency=4)
    assert summary.built == 4, summary.to_dict()
    # 4 builds in step: 7 stages, one call each carrying all four conversations
    assert sum(ask.batches) == 28 and max(ask.batches) == 4
    assert len(FakeLLM.last.calls) == len(ask.batches) < 28


def test_a_backend_without_response_format_is_prompted_and_parsed() -> None:
    class PlainBackend:  # the llama.cpp signature before structured output
        name, model = "plain", "p"

        def __init__(self) -> None:
            self.seen: list[Any] = []

        def complete(self, conversations: list[Any], tools: list[Any]) -> list[Completion]:
            import json

            self.seen.append(conversations)
            conv = conversations[0]
            body = {"messages": conv}
            return [Completion(text=json.dumps(valid_reply(stage_of(body), conv[1]["content"])))]

    backend = PlainBackend()
    ask = backend_ask(backend)
    assert ask.structured is False
    result = LLMBuilder(ask, "p").build(3)
    assert result.status == "built", result.failure
    assert len(backend.seen) == 7


def test_designer_faults_are_consumed_in_order() -> None:
    designer = ScriptedDesigner({"titles": ["a", {"status": 500}]})
    body = {"messages": [{"role": "user", "content": "Step 1 of 7"}]}
    assert designer(body) == {"content": "a"} and designer(body) == {"status": 500}
    assert "titles" in designer(body)["content"] and designer.asked == {"titles": 3}


def test_a_backend_that_rewrites_the_schema_cannot_change_the_next_request() -> None:
    """llama.cpp's converter rewrites ``$ref``s in place: each call gets its own copy."""
    schemas: list[str] = []

    class Rewriting:
        name, model = "rewriting", "r"

        def complete(
            self,
            conversations: list[Any],
            tools: list[Any],
            *,
            response_format: dict[str, Any] | None = None,
        ) -> list[Completion]:
            import json

            schemas.append(json.dumps(response_format, sort_keys=True))
            response_format["json_schema"]["schema"]["$defs"] = "rewritten"
            conv = conversations[0]
            body = {
                "messages": conv,
                "response_format": {
                    "json_schema": {"name": response_format["json_schema"]["name"]}
                },
            }
            return [Completion(text=json.dumps(valid_reply(stage_of(body), conv[1]["content"])))]

    builder = LLMBuilder(backend_ask(Rewriting()), "r")
    assert builder.build(1).status == "built" and builder.build(2).status == "built"
    assert all("rewritten" not in s for s in schemas)
    assert all("rewritten" not in str(stage.response_format) for stage in STAGES)


def test_a_backend_raising_is_a_backend_error_not_a_crash() -> None:
    class Raising:
        name, model = "raising", "x"

        def complete(
            self,
            conversations: list[Any],
            tools: list[Any],
            *,
            response_format: dict[str, Any] | None = None,
        ) -> list[Completion]:
            raise ValueError("cannot build a grammar from this JSON schema")

    result = LLMBuilder(backend_ask(Raising()), "x").build(0)
    assert result.status == "error" and result.failure["kind"] == "backend"
    assert "ValueError: cannot build a grammar" in result.failure["reason"]
