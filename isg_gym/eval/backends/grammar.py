"""GBNF grammars for llama.cpp's constrained decoding, built with llama-cpp-python's JSON-schema
converter (imported lazily: ``pip install 'isg-gym[llamacpp]'``).

- :func:`tool_call_grammar`: one Hermes tool call ``<tool_call>{"name": ..., "arguments":
  {...}}</tool_call>`` whose arguments fit that tool's JSON schema, or a bare ``{"answer":
  ...}`` (the env reads it as the final answer). Every message decoded under it is a call the
  env parses; string arguments other than code are at most :data:`MAX_STRING_CHARS` long.
- :func:`response_format_grammar`: JSON text for an OpenAI ``response_format``
  (``{"type": "json_schema", "json_schema": {"name", "schema"}}`` or ``{"type":
  "json_object"}``; ``{"type": "text"}`` is unconstrained).

JSON strings in these grammars hold no raw control characters (a newline inside a string is
written ``\\n``), so whatever the model writes is valid JSON for ``json.loads``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

# Any JSON string character but '"', '\\' and control characters, or an escape sequence.
JSON_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": ["string", "number", "boolean"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
RESPONSE_FORMATS = ("json_schema", "json_object", "text")
MAX_STRING_CHARS = 160  # a tool call's string argument (a path, a pattern, an answer)
FREE_STRINGS = frozenset({"code"})  # arguments bounded by max_tokens only


def _converter() -> Any:
    try:
        from llama_cpp.llama_grammar import SchemaConverter
    except ImportError as exc:
        raise ImportError(
            f"grammars need llama-cpp-python ({exc}); run: pip install 'isg-gym[llamacpp]'"
        ) from exc
    return SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)


def _format(converter: Any) -> str:
    """The converter's rules as GBNF, with strict JSON string characters."""
    lines = converter.format_grammar().splitlines()
    return "\n".join(f"char ::= {JSON_CHAR}" if line.startswith("char ::= ") else line
                     for line in lines) + "\n"  # fmt: skip


def _visit(converter: Any, schema: dict[str, Any], name: str) -> None:
    try:
        converter.visit(converter.resolve_refs(schema, "schema"), name)
    except Exception as exc:  # the converter raises bare Exceptions for unsupported schemas
        raise ValueError(f"cannot build a grammar from this JSON schema: {exc}") from exc


def schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF for one JSON value matching ``schema`` (left unchanged: llama.cpp's converter
    resolves ``$ref``s in place, so it gets a copy)."""
    if not isinstance(schema, dict):
        raise ValueError(f"a JSON schema must be an object, got {type(schema).__name__}")
    converter = _converter()
    _visit(converter, copy.deepcopy(schema), "")
    return _format(converter)


def response_format_grammar(response_format: dict[str, Any] | None) -> str | None:
    """GBNF for an OpenAI-style ``response_format``; None when the text is unconstrained.

    Raises ValueError naming what was wrong for any other shape."""
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind not in RESPONSE_FORMATS:
        raise ValueError(
            f"response_format must be a dict with type one of {RESPONSE_FORMATS}, got "
            f"{response_format!r:.200}"
        )
    if kind == "text":
        return None
    if kind == "json_object":
        return schema_grammar({"type": "object"})
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        raise ValueError(
            'response_format of type "json_schema" needs "json_schema": {"name": ..., '
            f'"schema": {{...}}}}, got {spec!r:.200}'
        )
    return schema_grammar(spec["schema"])


def cap_strings(schema: Any, max_chars: int, exempt: frozenset[str] = frozenset()) -> Any:
    """``schema`` with every string-typed property (also in a list of types) limited to
    ``max_chars`` characters unless it has a ``maxLength`` or its name is in ``exempt``."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if "maxLength" not in out and (
        kind == "string" or (isinstance(kind, list) and "string" in kind)
    ):
        if kind == "string":
            out["maxLength"] = max_chars
        else:  # the converter ignores maxLength on a list of types: one schema per type
            rest = {k: v for k, v in out.items() if k not in ("type", "default", "description")}
            out = {"anyOf": [{**rest, "type": t, **({"maxLength": max_chars}
                                                   if t == "string" else {})}
                             for t in kind]}  # fmt: skip
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            name: prop if name in exempt else cap_strings(prop, max_chars, exempt)
            for name, prop in out["properties"].items()
        }
    return out


def tool_call_grammar(
    tools: list[dict[str, Any]],
    *,
    answer: bool = True,
    max_string_chars: int | None = MAX_STRING_CHARS,
    free_strings: frozenset[str] = FREE_STRINGS,
) -> str:
    """GBNF for one ``<tool_call>`` of one of ``tools`` (OpenAI tool schemas), its arguments
    valid for that tool's parameters schema, or (``answer``) a bare ``{"answer": ...}``.

    String arguments are at most ``max_string_chars`` characters (None: unbounded), except
    those named in ``free_strings`` (code), so that a model looping inside a string still
    closes its call."""
    calls = []
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"a tool schema needs function.name, got {tool!r:.200}")
        parameters = function.get("parameters") or {"type": "object"}
        if max_string_chars is not None:
            parameters = cap_strings(parameters, max_string_chars, free_strings)
        calls.append(
            {
                "type": "object",
                "properties": {"name": {"const": function["name"]}, "arguments": parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    if not calls:
        raise ValueError("tool_call_grammar needs at least one tool")
    converter = _converter()
    _visit(converter, {"oneOf": calls} if len(calls) > 1 else calls[0], "call")
    root = '"<tool_call>" call "</tool_call>"'
    if answer:
        schema = ANSWER_SCHEMA
        if max_string_chars is not None:
            schema = cap_strings(schema, max_string_chars)
        _visit(converter, schema, "answer")
        root += " | answer"
    return _format(converter) + f"root ::= {root}\n"


def grammar_key(tools: list[dict[str, Any]]) -> str:
    """A cache key for a tool set."""
    return json.dumps(tools, sort_keys=True, default=str)
