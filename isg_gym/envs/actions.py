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
:class:`Parsed` with ``error`` set. Actions are bounded before they are parsed: a text longer
than :data:`MAX_ACTION_CHARS`, or a structured action deeper than :data:`MAX_ACTION_DEPTH`
levels, larger than about :data:`MAX_ACTION_CHARS` characters of JSON, with non-string keys or
with values that are not JSON (bytes, objects), is rejected without walking the rest of it. At
most :data:`MAX_CALLS` calls of a message are parsed; the others are counted and reported.

:func:`describe_action` renders any action for a transcript, capped, without calling the
action's own ``__str__`` / ``__repr__``; :func:`safe_text` makes any ``str`` encodable as UTF-8.
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
MAX_ACTION_CHARS = 1 << 20  # the action space's max_length
MAX_ACTION_DEPTH = 32  # a tool call is 3 levels deep; arguments are flat
MAX_DESCRIPTION_CHARS = 100_000  # an action as stored in the env's transcript
_SURROGATE = re.compile(r"[\ud800-\udfff]")

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
            if len(action) > MAX_ACTION_CHARS:
                return Parsed(
                    error=f"message too long ({len(action)} characters; at most "
                    f"{MAX_ACTION_CHARS}). " + FORMAT_HELP
                )
            return _parse_text(action)
        if isinstance(action, (dict, list, tuple)):
            problem = check_json_value(action)
            if problem is not None:
                return Parsed(error=f"unusable structured action: {problem}. " + FORMAT_HELP)
        if isinstance(action, dict):
            return Parsed(calls=[_structured(action)])
        if isinstance(action, (list, tuple)):
            if not action:
                return Parsed(error="empty list of tool calls. " + FORMAT_HELP)
            return Parsed(calls=_limit([_structured(item) for item in action[:MAX_CALLS]],
                                       len(action)))  # fmt: skip
        return Parsed(
            error=f"unsupported action type {type(action).__name__}; send the assistant text "
            "or tool-call dicts. " + FORMAT_HELP
        )
    except RecursionError:
        return Parsed(error="action nested too deeply. " + FORMAT_HELP)
    except Exception as exc:  # a hostile object (raising __eq__, __len__, ...): still an error
        return Parsed(error=f"unusable action ({type(exc).__name__}). " + FORMAT_HELP)


def check_json_value(
    value: Any, max_depth: int = MAX_ACTION_DEPTH, max_chars: int = MAX_ACTION_CHARS
) -> str | None:
    """Why ``value`` is not a small JSON value (None when it is one).

    Iterative, and stops at the first problem, so a value nested 100,000 deep or holding
    300,000 items costs at most about ``max_chars`` steps. Accepted: None, bool, int, float,
    str, and lists / tuples / dicts with string keys of those, at most ``max_depth`` levels deep
    and about ``max_chars`` characters of JSON in all; integers of at most 256 bits.
    """
    stack: list[tuple[Any, bool]] = [(iter((value,)), False)]  # (iterator, over dict items)
    size = 0
    while stack:
        frame, items = stack[-1]
        item = next(frame, _END)
        if item is _END:
            stack.pop()
            continue
        if items:
            key, item = item
            if not isinstance(key, str):
                return f"keys must be strings, got a key of type {type(key).__name__}"
            size += 4 + len(key)
        if item is None or isinstance(item, bool):
            size += 5
        elif isinstance(item, int):
            if item.bit_length() > 256:
                return f"an integer is too large ({item.bit_length()} bits; at most 256)"
            size += 2 + item.bit_length() // 3
        elif isinstance(item, float):
            size += 24
        elif isinstance(item, str):
            size += 2 + len(item)
        elif isinstance(item, (list, tuple, dict)):
            if len(stack) >= max_depth:
                return f"nested deeper than {max_depth} levels"
            size += 2 + len(item)
            is_dict = isinstance(item, dict)
            stack.append((iter(item.items() if is_dict else item), is_dict))
        else:
            return (
                "values must be JSON (str, number, bool, null, list, object), got "
                f"{type(item).__name__}"
            )
        if size > max_chars:
            return f"larger than {max_chars} characters of JSON"
    return None


_END = object()


def _limit(calls: list[ParsedCall], total: int) -> list[ParsedCall]:
    """The first :data:`MAX_CALLS` calls, and an error entry counting the ``total`` beyond."""
    if total <= MAX_CALLS:
        return calls[:MAX_CALLS]
    extra = ParsedCall(
        error=f"{total - MAX_CALLS} tool calls beyond the limit of "
        f"{MAX_CALLS} per message were ignored"
    )
    return [*calls[:MAX_CALLS], extra]


def _parse_text(text: str) -> Parsed:
    visible = strip_thinking(text)
    blocks = []
    total = 0
    for match in _TOOL_CALL.finditer(visible):
        total += 1
        if len(blocks) < MAX_CALLS:
            blocks.append(match.group(1))
    if blocks:
        return Parsed(calls=_limit([_from_json_text(b) for b in blocks], total), text=visible)
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
            calls = [_structured(v) for v in value[:MAX_CALLS]]
            return Parsed(calls=_limit(calls, len(value)), text=visible)
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
    problem = check_json_value(arguments)
    if problem is not None:
        return ParsedCall(name=name, error=f'unusable "arguments": {problem}')
    return ParsedCall(name=name, arguments=arguments)


def safe_text(text: str) -> str:
    """``text`` with every lone surrogate written as an escape, so that it encodes as UTF-8.

    A surrogate from ``surrogateescape`` decoding (an undecodable byte) becomes ``\\xNN``, any
    other lone surrogate ``\\uNNNN``; all other text (NUL and control characters included) is
    kept as it is.
    """
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(_escape_surrogate, text)


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def describe_action(action: Any, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    """The action as text for a transcript: at most about ``limit`` characters, valid UTF-8.

    Text is kept as sent (cut with a note); a structured action is written as JSON, with
    values that are not JSON shown as ``<TypeName>`` (their own ``__repr__`` is never called),
    and nesting or size beyond the limits replaced by ``...``.
    """
    try:
        if isinstance(action, str):
            text = action
        else:
            parts: list[str] = []
            _render(action, parts, [0], limit, 1)
            text = "".join(parts)
    except Exception as exc:  # a hostile str subclass or container
        text = f"<unprintable action: {type(exc).__name__}>"
    if len(text) > limit:
        text = text[:limit] + f"\n[action cut: {len(text) - limit} more characters not stored]"
    return safe_text(text)


def _render(value: Any, out: list[str], used: list[int], limit: int, depth: int) -> None:
    """Append a bounded JSON rendering of ``value`` to ``out`` (``used``: characters so far)."""
    if used[0] > limit:
        return
    if depth > MAX_ACTION_DEPTH:
        piece = "..."
    elif value is None or isinstance(value, (bool, float)):
        piece = json.dumps(value)
    elif isinstance(value, int):
        bits = value.bit_length()
        piece = int.__repr__(value) if bits < 1000 else f"<int of {bits} bits>"
    elif isinstance(value, str):
        piece = json.dumps(value[: limit - used[0] + 1], ensure_ascii=False)
    elif isinstance(value, (list, tuple, dict)):
        items = value.items() if isinstance(value, dict) else value
        out.append("{" if isinstance(value, dict) else "[")
        used[0] += 1
        for number, item in enumerate(items):
            if used[0] > limit:
                out.append(f"... {len(value) - number} more")
                break
            if number:
                out.append(", ")
                used[0] += 2
            if isinstance(value, dict):
                key = item[0] if isinstance(item[0], str) else f"<{type(item[0]).__name__}>"
                out.append(json.dumps(key[:200], ensure_ascii=False) + ": ")
                used[0] += len(out[-1])
                item = item[1]
            _render(item, out, used, limit, depth + 1)
        out.append("}" if isinstance(value, dict) else "]")
        used[0] += 1
        return
    else:
        piece = f"<{type(value).__name__}>"
    out.append(piece)
    used[0] += len(piece)
