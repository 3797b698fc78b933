"""Turning an action (assistant text or structured tool calls) into tool calls or an answer.

Accepted actions:

- text: Hermes-style ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (one or
  several; a missing closing tag at the very end is tolerated), or the whole message being one
  JSON tool call ``{"name": ..., "arguments": ...}`` (optionally in a code fence, or a list of
  them). ``<think>...</think>`` text is ignored (and everything before a lone ``</think>``).
  A message with no tool call is a final answer when it contains one (``{"answer": ...}`` or
  ``\\boxed{...}``), else a format error.
- structured: a dict ``{"name", "arguments"}`` or the OpenAI shape ``{"type": "function",
  "function": {"name", "arguments": "<json>"}}``, or a list of them.

Nothing here raises on bad input: problems become :class:`ParsedCall` errors or a
:class:`Parsed` with ``error`` set.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from isg_gym.rewards import extract

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[\w+-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
MAX_CALLS = 8

FORMAT_HELP = (
    'Call a tool with <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> '
    "(one or several per message), or give the final answer with "
    '<tool_call>{"name": "final_answer", "arguments": {"answer": "..."}}</tool_call> '
    '(a message with {"answer": ...} or \\boxed{...} and no tool call also counts as the '
    "final answer)."
)


@dataclass
class ParsedCall:
    """One tool call: a name and its arguments, or an ``error`` saying why it is unusable."""

    name: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass
class Parsed:
    """What an action amounts to: tool calls, a final answer text, or an error."""

    calls: list[ParsedCall] = field(default_factory=list)
    answer_text: str | None = None
    error: str | None = None
    text: str = ""


def strip_thinking(text: str) -> str:
    """Drop ``<think>...</think>`` blocks (an unclosed one runs to the end) and any text before
    a lone ``</think>``."""
    lower = text.lower()
    close = lower.rfind("</think>")
    if close != -1 and "<think>" not in lower[:close]:
        text = text[close + len("</think>") :]
    return _THINK.sub("", text)


def parse_action(action: Any) -> Parsed:
    """Parse an action of any accepted shape; never raises."""
    try:
        if isinstance(action, str):
            return _parse_text(action)
        if isinstance(action, dict):
            return Parsed(calls=[_structured(action)])
        if isinstance(action, (list, tuple)):
            if not action:
                return Parsed(error="empty list of tool calls. " + FORMAT_HELP)
            return Parsed(calls=_limit([_structured(item) for item in action]))
        return Parsed(
            error=f"unsupported action type {type(action).__name__}; send the assistant text "
            "or tool-call dicts. " + FORMAT_HELP
        )
    except RecursionError:
        return Parsed(error="action nested too deeply. " + FORMAT_HELP)


def _limit(calls: list[ParsedCall]) -> list[ParsedCall]:
    if len(calls) <= MAX_CALLS:
        return calls
    extra = ParsedCall(
        error=f"{len(calls) - MAX_CALLS} tool calls beyond the limit of "
        f"{MAX_CALLS} per message were ignored"
    )
    return [*calls[:MAX_CALLS], extra]


def _parse_text(text: str) -> Parsed:
    visible = strip_thinking(text)
    blocks = _TOOL_CALL.findall(visible)
    if blocks:
        return Parsed(calls=_limit([_from_json_text(b) for b in blocks]), text=visible)
    stripped = visible.strip()
    fence = _FENCE.match(stripped)
    body = fence.group(1).strip() if fence else stripped
    if body.startswith(("{", "[")):
        value = _loads(body)
        if isinstance(value, dict) and ("name" in value or "function" in value):
            return Parsed(calls=[_structured(value)], text=visible)
        if (
            isinstance(value, list)
            and value
            and all(isinstance(v, dict) and ("name" in v or "function" in v) for v in value)
        ):
            return Parsed(calls=_limit([_structured(v) for v in value]), text=visible)
    if extract(stripped).form in ("json", "boxed"):
        return Parsed(answer_text=stripped, text=visible)
    if not stripped:
        return Parsed(error="empty message (after removing <think> text). " + FORMAT_HELP)
    return Parsed(
        error="no tool call or final answer found in the message. " + FORMAT_HELP, text=visible
    )


_NO_VALUE = object()


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NO_VALUE


def _from_json_text(block: str) -> ParsedCall:
    body = block.strip()
    fence = _FENCE.match(body)
    if fence:
        body = fence.group(1).strip()
    value = _loads(body)
    if value is _NO_VALUE:
        return ParsedCall(
            error='malformed JSON inside <tool_call>: expected {"name": "TOOL", "arguments": {...}}'
        )
    return _structured(value)


def _structured(value: Any) -> ParsedCall:
    """A dict in Hermes ``{"name", "arguments"}`` or OpenAI ``{"function": {...}}`` shape."""
    if not isinstance(value, dict):
        return ParsedCall(
            error=f'a tool call must be a JSON object {{"name": ..., "arguments": ...}}, got '
            f"{type(value).__name__}"
        )
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return ParsedCall(error='a tool call needs a "name" (a tool name string)')
    arguments: Any = value.get("arguments", value.get("parameters", {}))
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        decoded = _loads(arguments) if arguments.strip() else {}
        if decoded is _NO_VALUE or not isinstance(decoded, dict):
            return ParsedCall(name=name, error='"arguments" is a string that is not a JSON object')
        arguments = decoded
    if not isinstance(arguments, dict):
        return ParsedCall(name=name, error='"arguments" must be a JSON object of named arguments')
    return ParsedCall(name=name, arguments=arguments)
