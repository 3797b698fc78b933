"""The env's tool schemas and system prompt for any OpenAI-style trainer (verl, ART, ...).

``python -m isg_gym.rl.schemas [--out FILE]`` prints (or writes) the tool schemas as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from isg_gym.envs.env import SYSTEM_PROMPT
from isg_gym.qa.conventions import CONVENTIONS
from isg_gym.tools.schemas import describe_tools, tool_schemas


def openai_tools() -> list[dict[str, Any]]:
    """The four ISG-v0 tools in OpenAI function-calling JSON (a fresh copy)."""
    return tool_schemas()


def system_prompt(max_steps: int = 30, *, tools: bool = True) -> str:
    """The env's system prompt (tool descriptions, the Hermes call format and the answering
    conventions) for ``max_steps``.

    ``tools=False``: the same task statement and conventions without the tool list and the call
    format, for trainers whose chat template describes the tools itself (TRL renders the tool
    schemas into the prompt; the full prompt would describe every tool twice).
    """
    if tools:
        return SYSTEM_PROMPT.format(
            tools=describe_tools(), max_steps=max_steps, conventions=CONVENTIONS
        )
    return f"{task_statement()} You can call tools at most {max_steps} times.\n\n{CONVENTIONS}"


def task_statement() -> str:
    """The first paragraph of the env's system prompt: what the agent is asked to do."""
    return SYSTEM_PROMPT.split("\n\n", 1)[0]


def tools_json(indent: int | None = 2) -> str:
    """:func:`openai_tools` as JSON text."""
    return json.dumps(openai_tools(), indent=indent, ensure_ascii=False)


def export_tools(path: str | Path) -> Path:
    """Write :func:`openai_tools` as JSON to ``path`` (parents created); the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(tools_json() + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m isg_gym.rl.schemas",
        description="Print or write the ISG-v0 tool schemas (OpenAI function-calling JSON).",
    )
    parser.add_argument("--out", metavar="FILE", help="write the JSON here instead of stdout")
    parser.add_argument(
        "--system-prompt", action="store_true", help="print the system prompt instead"
    )
    parser.add_argument("--max-steps", type=int, default=30, help="step budget in the prompt")
    parser.add_argument(
        "--no-tools", action="store_true", help="no tool list in the prompt (the trainer adds it)"
    )
    args = parser.parse_args(argv)
    if args.system_prompt:
        text = system_prompt(args.max_steps, tools=not args.no_tools)
    else:
        text = tools_json()
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
