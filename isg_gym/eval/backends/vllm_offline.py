"""Offline vLLM backend: the model runs in-process (``vllm.LLM``), one ``LLM.chat`` call per
round with every live episode's conversation.

The env's tool schemas go to ``LLM.chat(tools=...)`` so the chat template renders them; tool
calls are parsed from each output's text with vLLM's own tool parser (``hermes`` by default,
as ``vllm serve --tool-call-parser``). When the parser cannot be loaded (its module moved
between vLLM versions) or fails on an output, the text is returned as is: the env parses
Hermes ``<tool_call>`` blocks itself.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import logging
from typing import Any

from isg_gym.eval.backends.base import Completion, Message

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'isg-gym[vllm]'"
# ToolParserManager moved from vllm.entrypoints.openai.tool_parsers to vllm.tool_parsers
# (vLLM 0.13); ChatCompletionRequest moved out of vllm.entrypoints.openai.protocol later.
PARSER_MODULES = ("vllm.tool_parsers", "vllm.entrypoints.openai.tool_parsers")
# Structured outputs: StructuredOutputsParams(json=...) as SamplingParams(structured_outputs=)
# since vLLM 0.10.2 (the guided_* fields were removed in 0.12), GuidedDecodingParams before.
STRUCTURED_PARAMS = (
    ("vllm.sampling_params", "StructuredOutputsParams", "structured_outputs"),
    ("vllm.sampling_params", "GuidedDecodingParams", "guided_decoding"),
)
REQUEST_MODULES = (
    "vllm.entrypoints.openai.chat_completion.protocol",
    "vllm.entrypoints.openai.protocol",
)


def _import_vllm() -> Any:
    try:
        return importlib.import_module("vllm")
    except ImportError as exc:
        raise ImportError(
            f"the offline vLLM backend needs vLLM (a GPU machine): {INSTALL_HINT} ({exc})"
        ) from exc


def _first_attr(modules: tuple[str, ...], name: str) -> Any:
    """``name`` from the first of ``modules`` that has it, else None."""
    for module in modules:
        try:
            value = getattr(importlib.import_module(module), name, None)
        except Exception:  # ImportError, or a module that fails while importing
            continue
        if value is not None:
            return value
    return None


def _field(obj: Any, name: str, default: Any = None) -> Any:
    """An attribute of a pydantic/dataclass object, or a key of a dict."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _template_messages(conversation: list[Message]) -> list[Message]:
    """A copy with tool-call arguments as dicts, as Hugging Face chat templates expect."""
    messages = copy.deepcopy(conversation)
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                with contextlib.suppress(ValueError):  # malformed arguments stay text
                    function["arguments"] = json.loads(function["arguments"] or "{}")
    return messages


class VLLMBackend:
    """A :class:`~isg_gym.eval.backends.base.ChatBackend` over ``vllm.LLM.chat``.

    ``llm_kwargs`` go to ``vllm.LLM`` (``tensor_parallel_size``, ``max_model_len``,
    ``gpu_memory_utilization``, ...); ``chat_template_kwargs`` to ``LLM.chat`` (e.g.
    ``{"enable_thinking": False}`` for Qwen3). ``tool_parser=None`` skips vLLM's parser and
    returns plain text.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        tool_parser: str | None = "hermes",
        max_tokens: int = 1024,
        temperature: float = 0.0,
        seed: int = 0,
        llm_kwargs: dict[str, Any] | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        vllm = _import_vllm()
        self.model = model
        self.tool_parser_name = tool_parser
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._llm: Any = vllm.LLM(model=model, seed=seed, **(llm_kwargs or {}))
        sampling: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        self._parser = self._load_parser(tool_parser)
        if self._parser is not None:
            # as vllm serve does with tools: keep <tool_call> tokens that a tokenizer marks special
            sampling["skip_special_tokens"] = False
        self._vllm = vllm
        self._sampling_kwargs = sampling
        self._sampling = vllm.SamplingParams(**sampling)
        self._request_cls = _first_attr(REQUEST_MODULES, "ChatCompletionRequest")

    def _load_parser(self, name: str | None) -> Any:
        """vLLM's tool parser ``name`` for this model's tokenizer, or None (plain text)."""
        if not name:
            return None
        manager = _first_attr(PARSER_MODULES, "ToolParserManager")
        if manager is None:
            log.warning("vLLM tool parsers not found; tool calls are parsed by the env")
            return None
        try:
            return manager.get_tool_parser(name)(self._llm.get_tokenizer())
        except Exception as exc:
            log.warning("vLLM tool parser %r unavailable (%s); the env parses the text", name, exc)
            return None

    def _request(self, tools: list[dict[str, Any]]) -> Any:
        """A ``ChatCompletionRequest`` for the parser (some parsers read ``tools``), or None."""
        if self._request_cls is None:
            return None
        try:
            return self._request_cls(
                model=self.model, messages=[{"role": "user", "content": ""}], tools=tools or None
            )
        except Exception:
            return None

    def _structured(self, response_format: dict[str, Any] | None) -> Any:
        """SamplingParams constraining the output to ``response_format`` (an OpenAI
        ``json_schema`` or ``json_object`` format; ``text`` or None: free text) with vLLM's
        structured outputs:
        ``StructuredOutputsParams`` (vLLM >= 0.10.2), else ``GuidedDecodingParams``."""
        kind = None if response_format is None else response_format.get("type")
        if kind in (None, "text"):
            return self._sampling
        if kind == "json_schema":
            constraint: dict[str, Any] = {"json": response_format["json_schema"]["schema"]}
        elif kind == "json_object":
            constraint = {"json_object": True}
        else:
            raise ValueError(f"response_format type {kind!r}: use json_schema or json_object")
        for module, cls_name, keyword in STRUCTURED_PARAMS:
            cls = _first_attr((module,), cls_name)
            if cls is not None:
                return self._vllm.SamplingParams(**self._sampling_kwargs,
                                                  **{keyword: cls(**constraint)})  # fmt: skip
        log.warning("this vLLM has no structured outputs; the reply is not constrained")
        return self._sampling

    def complete(
        self,
        conversations: list[list[Message]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        """Answer every conversation with one ``LLM.chat`` call; never raises.

        ``response_format`` (OpenAI shape, ``{"type": "json_schema", "json_schema": {"name",
        "schema"}}``) constrains every reply of the batch to the schema (guided decoding).
        """
        if not conversations:
            return []
        try:
            sampling = self._structured(response_format)
        except (ValueError, KeyError, TypeError) as exc:
            error = f"vLLM structured output: {type(exc).__name__}: {exc}"
            return [Completion(error=error) for _ in conversations]
        kwargs: dict[str, Any] = {"sampling_params": sampling, "use_tqdm": False}
        if tools:
            kwargs["tools"] = tools
        if self.chat_template_kwargs:
            kwargs["chat_template_kwargs"] = self.chat_template_kwargs
        try:
            outputs = self._llm.chat([_template_messages(c) for c in conversations], **kwargs)
        except Exception as exc:
            error = f"vLLM chat failed: {type(exc).__name__}: {exc}"
            return [Completion(error=error) for _ in conversations]
        if len(outputs) != len(conversations):
            error = f"vLLM returned {len(outputs)} outputs for {len(conversations)} conversations"
            return [Completion(error=error) for _ in conversations]
        request = self._request(tools) if self._parser is not None else None
        return [self._completion(output, request) for output in outputs]

    def _completion(self, output: Any, request: Any) -> Completion:
        sample = output.outputs[0]
        text = sample.text or ""
        completion = Completion(
            text=text,
            prompt_tokens=len(output.prompt_token_ids or ()),
            completion_tokens=len(sample.token_ids or ()),
            finish_reason=getattr(sample, "finish_reason", None),
        )
        if self._parser is not None:
            completion.text, completion.tool_calls = self._parse(text, request)
        return completion

    def _parse(self, text: str, request: Any) -> tuple[str, list[dict[str, Any]]]:
        """(content, OpenAI-shaped tool calls) from vLLM's parser; (text, []) on any failure."""
        try:
            info = self._parser.extract_tool_calls(text, request)
        except Exception as exc:
            log.debug("tool parser failed (%s); passing the text through", exc)
            return text, []
        if not _field(info, "tools_called", False):
            return text, []
        calls = []
        for i, call in enumerate(_field(info, "tool_calls", None) or []):
            function = _field(call, "function")
            name = _field(function, "name")
            if not name:
                return text, []
            arguments = _field(function, "arguments", "{}")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(
                {
                    "id": _field(call, "id") or f"call_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
        if not calls:
            return text, []
        return _field(info, "content", None) or "", calls

    def close(self) -> None:
        """Drop the engine (vLLM frees the GPU memory when it is garbage-collected)."""
        self._llm = None
