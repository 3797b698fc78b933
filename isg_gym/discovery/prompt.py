"""The texts of a Discovery episode: the goal, the final tool's schema, how call ids appear."""

from __future__ import annotations

from typing import Any

from isg_gym.discovery.claims import CLAIM_RELATIONS, EXAMPLES_TEXT, SCHEMA_TEXT

SUBMIT_FINDINGS = "submit_findings"
CALL_ID = "call id: "  # the first line of every run_python_code output: "call id: 3"
GOAL = (
    "Find out which of the recorded conditions and variables affect the measured outcomes of "
    "this project, in which direction, and report what the data support."
)

SYSTEM_PROMPT = """\
You are a scientific data analyst. A data repository is mounted read-only at /data (its \
README.md describes the project, the directory layout and the columns). Explore it with the \
tools, analyse the data, and report your findings with {final}.

Tools:
{tools}

To call a tool, write one or more blocks like
<tool_call>{{"name": "list_directory", "arguments": {{"path": "/", "depth": 2}}}}</tool_call>
Tool results come back in the next message. You have at most {max_steps} messages. Every \
run_python_code output starts with "{call_id}N": cite N as evidence for the findings that call \
supports.

{schema}

{examples}

End the episode with {final}(findings=[...]), or with a final message holding the JSON list of \
findings."""

USER_PROMPT = """\
Goal: {goal}

Measured outcomes: {outcomes}."""


def findings_schema() -> dict[str, Any]:
    """The OpenAI function schema of ``submit_findings``."""
    claim = {
        "type": "object",
        "properties": {
            "outcome": {"type": "string", "description": "a measured outcome (column name)"},
            "factor": {
                "type": "string",
                "description": "a recorded column or path variable, "
                "or a variable the project names but did not record",
            },
            "relation": {"type": "string", "enum": list(CLAIM_RELATIONS)},
            "scope": {
                "type": "object",
                "description": "optional path conditions: {variable: value or [values]}",
            },
            "evidence": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "ids of the run_python_code calls that support the finding",
            },
        },
        "required": ["factor", "relation"],
    }
    return {
        "type": "function",
        "function": {
            "name": SUBMIT_FINDINGS,
            "description": "Submit the findings and end the episode. " + SCHEMA_TEXT,
            "parameters": {
                "type": "object",
                "properties": {"findings": {"type": "array", "items": claim}},
                "required": ["findings"],
            },
        },
    }


def system_prompt(tools: str, max_steps: int) -> str:
    return SYSTEM_PROMPT.format(
        final=SUBMIT_FINDINGS,
        tools=tools,
        max_steps=max_steps,
        call_id=CALL_ID,
        schema=SCHEMA_TEXT,
        examples=EXAMPLES_TEXT,
    )


def user_prompt(outcomes: list[str]) -> str:
    return USER_PROMPT.format(goal=GOAL, outcomes=", ".join(outcomes))
