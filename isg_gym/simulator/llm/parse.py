"""From a model's reply text to a JSON object, and from validation errors to short feedback."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

MAX_FEEDBACK = 1200
MAX_ERRORS = 8
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)


class StageError(ValueError):
    """A reply that fails a stage's checks. ``kind`` names the check: ``json`` (no JSON object),
    ``truncated`` (cut by the token limit), ``schema`` (structure or values), ``expression``
    (the expression language), ``sanity`` (the simulated data)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (reasoning and code fences around it are ignored)."""
    text = _THINK.sub("", text or "").rstrip()
    start = text.find("{")
    while start != -1:
        try:
            value, end = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            if _unclosed(text, start):  # the text ends inside this object: nothing after helps
                raise StageError("json", "the reply ends before its JSON object does") from None
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", end)
    snippet = " ".join(text.split())[:120]
    raise StageError("json", f"the reply is not a JSON object (it began: {snippet!r})")


def _unclosed(text: str, start: int) -> bool:
    """Whether the braces and brackets opened at ``start`` are still open at the end."""
    depth, in_string, escaped = 0, False, False
    for char in text[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True


def schema_error(err: ValidationError) -> StageError:
    """A pydantic error as one short message: ``path: problem`` for the first few errors."""
    parts = []
    for item in err.errors()[:MAX_ERRORS]:
        where = ".".join(str(x) for x in item["loc"]) or "reply"
        parts.append(f"{where}: {item['msg']}")
    more = len(err.errors()) - MAX_ERRORS
    if more > 0:
        parts.append(f"({more} more)")
    return StageError("schema", clip("; ".join(parts)))


def clip(text: str, limit: int = MAX_FEEDBACK) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
