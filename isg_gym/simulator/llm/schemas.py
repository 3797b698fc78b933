"""JSON schemas of the stage replies, derived from pydantic models and bounded.

A reply model's ``model_json_schema()`` is cleaned for constrained decoders (titles dropped,
every ``const`` discriminator required) and bounded: a string without ``maxLength`` gets
:data:`MAX_STRING`, an array without ``maxItems`` gets :data:`MAX_ITEMS`, so that no reply of a
small model can run away under a grammar.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import BaseModel

MAX_STRING = 240
MAX_ITEMS = 12


def _walk(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item)
        return
    if not isinstance(node, dict):
        return
    node.pop("title", None)
    kind = node.get("type")
    if kind == "string" and "maxLength" not in node and "enum" not in node and "const" not in node:
        node["maxLength"] = MAX_STRING
    if kind == "array" and "maxItems" not in node:
        node["maxItems"] = MAX_ITEMS
    properties = node.get("properties")
    if isinstance(properties, dict):
        required = list(node.get("required", []))
        for name, prop in properties.items():
            if isinstance(prop, dict) and "const" in prop and name not in required:
                required.append(name)  # a discriminator must be written, never defaulted
        if required:
            node["required"] = required
        for prop in properties.values():
            _walk(prop)
    for key, value in node.items():
        if key != "properties":
            _walk(value)


def reply_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The bounded JSON schema of a reply model (a fresh copy)."""
    schema = copy.deepcopy(model.model_json_schema())
    _walk(schema)
    return schema


def response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI ``response_format`` of a JSON-schema reply."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def compact(schema: dict[str, Any]) -> str:
    """The schema as one line of JSON (for prompts)."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
