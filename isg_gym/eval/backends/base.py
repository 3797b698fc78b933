"""The model-backend interface: a batch of chat conversations in, one completion each out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]  # an OpenAI chat message: role, content, tool_calls, tool_call_id


@dataclass
class Completion:
    """One assistant turn.

    ``tool_calls`` are in the OpenAI shape (``{"id", "type": "function", "function": {"name",
    "arguments": "<json>"}}``) when the backend returns structured calls; a backend that only
    returns text leaves them empty and the env parses Hermes ``<tool_call>`` blocks from
    ``text``. ``error`` is set when the backend failed for good (after its retries); the
    episode then ends with outcome ``backend_error`` (an infrastructure failure, not counted as
    an answer), or, when ``error_kind`` is ``"model"`` (the conversation no longer fits the
    model's context: the agent's own doing), ``context_exceeded``, which counts as a wrong
    answer so that no agent can drop a hard question from its score by overflowing.
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    error: str | None = None
    error_kind: str = "backend"  # "backend" (infrastructure) or "model" (context exceeded)


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model. ``complete`` answers every conversation of the batch (same order).

    ``tools`` are the env's OpenAI tool schemas; a backend without native tool calling may
    ignore them (the system prompt already describes the tools and the Hermes call format),
    or use them to constrain decoding (llama.cpp).

    ``response_format`` (keyword only, default None: free text) asks for JSON text, in the
    OpenAI shape: ``{"type": "json_schema", "json_schema": {"name": NAME, "schema": {...}}}``
    for a value matching a JSON schema, ``{"type": "json_object"}`` for any JSON object,
    ``{"type": "text"}`` for free text. It applies to every conversation of the batch and takes
    precedence over ``tools`` (the answer is the JSON, not a tool call). The llama.cpp backend
    enforces it with a grammar; a backend that cannot enforce it ignores it, so callers still
    validate the text they get.

    Implementations must not raise for a failed request: they return a :class:`Completion`
    with ``error`` set. Bad arguments (a malformed ``response_format``) may raise ValueError.
    """

    name: str
    model: str

    def complete(
        self,
        conversations: list[list[Message]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]: ...

    def close(self) -> None: ...
