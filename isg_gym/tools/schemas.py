"""The agent's tools: names, descriptions and JSON-Schema parameters (OpenAI function calling).

The names and schemas are part of the environment's interface (``ISG-v0``) and stay stable;
:func:`tool_schemas` returns a fresh deep copy each call.
"""

from __future__ import annotations

import copy
from typing import Any

LIST_DIRECTORY = "list_directory"
READ_TEXT_FILE = "read_text_file"
RUN_PYTHON_CODE = "run_python_code"
FINAL_ANSWER = "final_answer"
TOOL_NAMES: tuple[str, ...] = (LIST_DIRECTORY, READ_TEXT_FILE, RUN_PYTHON_CODE, FINAL_ANSWER)

_SCHEMAS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": LIST_DIRECTORY,
            "description": (
                "List a directory of the data repository. Directories end with '/'. Paths are "
                "relative to the repository root ('/' is the root, also mounted at /data). "
                "Long listings are cut, with a note saying how many entries were left out."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Directory to list (default '/').",
                        "default": "/",
                    },
                    "depth": {
                        "type": "integer",
                        "description": "How many levels to descend (1 = direct children).",
                        "default": 1,
                        "minimum": 1,
                        "maximum": 10,
                    },
                    "pattern": {
                        "type": ["string", "null"],
                        "description": (
                            "Optional glob such as '*.csv' matched against each entry's name "
                            "and its path relative to `path`."
                        ),
                        "default": None,
                    },
                },
                "required": [],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": READ_TEXT_FILE,
            "description": (
                "Read a file of the repository as text, exactly as the sandbox sees it (an xlsx "
                "workbook is shown as a tab-separated rendering of its sheet). Long files are "
                "cut with a note; use `head` / `tail` or run_python_code to read the rest."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, e.g. 'a/b.csv'."},
                    "head": {
                        "type": ["integer", "null"],
                        "description": "Only the first N lines.",
                        "default": None,
                        "minimum": 0,
                    },
                    "tail": {
                        "type": ["integer", "null"],
                        "description": "Only the last N lines.",
                        "default": None,
                        "minimum": 0,
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": RUN_PYTHON_CODE,
            "description": (
                "Run Python 3 code in a sandbox (numpy, pandas, scipy available; no network). "
                "The repository's files are at /data, read-only, which is also the working "
                "directory. Returns stdout, stderr and the value of a trailing expression. "
                "State does not persist between calls."
            ),
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string", "description": "Python source."}},
                "required": ["code"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": FINAL_ANSWER,
            "description": (
                "Submit the final answer; this ends the episode. Give the value only, or "
                "'not possible' when the question cannot be answered from the data."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "answer": {
                        "type": ["string", "number", "integer", "boolean"],
                        "description": "The answer value.",
                    }
                },
                "required": ["answer"],
                "additionalProperties": False,
            },
        },
    },
)


def tool_schemas() -> list[dict[str, Any]]:
    """The four tools in OpenAI function-calling JSON (a fresh copy)."""
    return copy.deepcopy(list(_SCHEMAS))


def tool_schema(name: str) -> dict[str, Any]:
    """One tool's ``{"type": "function", "function": {...}}`` entry (a fresh copy)."""
    for schema in _SCHEMAS:
        if schema["function"]["name"] == name:
            return copy.deepcopy(schema)
    raise KeyError(name)


def describe_tools(schemas: list[dict[str, Any]] | None = None) -> str:
    """A plain-text description of the tools (default: ISG-v0's four) for a system prompt."""
    lines = []
    for schema in _SCHEMAS if schemas is None else schemas:
        fn = schema["function"]
        props = fn["parameters"]["properties"]
        required = set(fn["parameters"]["required"])
        args = ", ".join(
            name if name in required else f"{name}={props[name].get('default')!r}" for name in props
        )
        lines.append(f"- {fn['name']}({args}): {fn['description']}")
    return "\n".join(lines)
