"""A scripted "model" for the LLM builder: valid JSON replies for every stage, read off the
prompt (the stage from the response_format name or the "Step k of 7" line, the names from the
``Required names (JSON)`` line), plus scripted faults. Used with
:class:`fake_openai_server.ScriptedChatServer` by the tests and by ``benchmarks/llm_build.py
stub-server``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from typing import Any

STAGE_ORDER = ("titles", "design", "abstract", "paths", "layout", "columns", "dependents")
CONDITIONS = ("temperature", "dose", "pressure", "light_level", "salinity", "flow_rate")
MEASURED = ("mass", "length", "ph", "moisture", "age", "density", "thickness", "volume")
OUTCOMES = ("yield_score", "growth_rate", "efficiency", "response_time", "activity")
CONFOUNDERS = ("ambient_humidity", "operator_skill", "batch_quality")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def stage_of(body: dict[str, Any]) -> str:
    """The stage a request asks for."""
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name", "")
    match = re.match(r"isg_(\w+?)_v\d+$", name)
    if match:
        return match.group(1)
    first = next(_text(m) for m in body["messages"] if m.get("role") == "user")
    step = re.search(r"Step (\d) of 7", first)
    return STAGE_ORDER[int(step.group(1)) - 1] if step else "unknown"


def _line_json(prompt: str, label: str) -> Any:
    match = re.search(rf"^{re.escape(label)} \(JSON\): (.*)$", prompt, re.MULTILINE)
    return json.loads(match.group(1)) if match else None


def _count(prompt: str, group: str) -> int:
    match = re.search(rf"- {group}: (\d+)", prompt)
    return int(match.group(1)) if match else 1


def _variables(pool: tuple[str, ...], count: int, offset: int, unit: str) -> list[dict]:
    names = [pool[(offset + i) % len(pool)] for i in range(count)]
    return [
        {
            "name": n,
            "label": n.replace("_", " "),
            "unit": unit,
            "description": f"The {n.replace('_', ' ')} of each unit, as measured.",
        }
        for n in names
    ]


def valid_reply(stage: str, prompt: str) -> dict[str, Any]:
    """A reply that passes every check of ``stage`` for the project in ``prompt``."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
    sub = re.search(r"Subdomain: ([^(\n]+)", prompt)
    topic = sub.group(1).strip() if sub else "the system"
    names = _line_json(prompt, "Required names") or []
    if stage == "titles":
        return {
            "titles": [
                f"Study {h % 997 + i} of {topic} under controlled variation" for i in range(5)
            ]
        }
    if stage == "design":
        text = f"This project examines {topic} with repeated measurements. " * 2
        return {
            "setting": text,
            "goal": "Estimate how the conditions change the outcomes.",
            "hypothesis": "Higher levels of the conditions raise the outcomes.",
            "setup": "Samples are measured in batches under each condition by trained staff.",
            "file_unit": "batch",
            "row_unit": "one measured sample",
            "conditions": _variables(CONDITIONS, _count(prompt, "conditions"), h, "unit"),
            "measured": _variables(MEASURED, _count(prompt, "measured"), h, "g"),
            "outcomes": _variables(OUTCOMES, _count(prompt, "outcomes"), h, "score"),
            "confounders": _variables(CONFOUNDERS, _count(prompt, "confounders"), h, ""),
        }
    if stage == "abstract":
        sentence = f"We study {topic} and record every sample under each condition carefully. "
        return {"abstract": sentence * 14}
    if stage == "paths":
        return {
            "path_variables": [
                {
                    "name": n,
                    "short": n.replace("_", "")[:6],
                    "kind": "numeric",
                    "values": [10 * (j + 1) for j in range(2 + (h + i) % 3)],
                }
                for i, n in enumerate(names)
            ]
        }
    if stage == "layout":
        dirs, last = names[:-1], names[-1:]
        levels = [[k] for k in dirs] if len(dirs) <= 4 else [dirs[:2], *[[k] for k in dirs[2:]]]
        return {
            "levels": levels,
            "level_joiners": ["_"] * len(levels),
            "filename": last,
            "filename_joiner": "-",
            "style": "{name}={val}",
            "date_format": "%Y-%m-%d",
        }
    if stage == "columns":
        columns = []
        for i, n in enumerate(names):
            if i % 3 == 0:
                columns.append(
                    {
                        "name": n,
                        "role": "continuous",
                        "decimals": 2,
                        "clip": None,
                        "distribution": {"name": "normal", "mean": 50, "sd": 10},
                    }
                )
            elif i % 3 == 1:
                columns.append(
                    {"name": n, "role": "integer", "distribution": {"name": "poisson", "lam": 5}}
                )
            else:
                columns.append(
                    {
                        "name": n,
                        "role": "categorical",
                        "values": ["alpha", "beta", "gamma"],
                        "probabilities": [0.5, 0.3, 0.2],
                    }
                )
        return {
            "identifier": {
                "name": "sample_id",
                "label": "sample identifier",
                "description": "Code of the sample.",
                "prefix": "SM",
            },
            "timestamp": {
                "name": "measured_at",
                "label": "measurement time",
                "description": "When the sample was measured.",
                "interval_seconds": 600,
                "regular": True,
            },
            "columns": columns,
        }
    if stage == "dependents":
        inputs = _line_json(prompt, "Inputs") or {}
        x = next(n for n, k in inputs.items() if k == "numeric")
        return {
            "dependents": [
                {
                    "name": n,
                    "expression": f"{10 + i} + {2 + i}*log(abs({x}) + 1)",
                    "noise_sd": 0.1,
                    "decimals": 3,
                    "clip": None,
                    "typical_range": [5, 60],
                }
                for i, n in enumerate(names)
            ]
        }
    raise ValueError(f"unknown stage {stage!r}")


class ScriptedDesigner:
    """A script for ``ScriptedChatServer``: valid replies, except that the first replies of a
    stage come from ``faults[stage]``, in order, across all seeds: text, a reply dict (e.g.
    ``{"status": 500}``), or ``fault(valid_reply, prompt)`` returning either. ``asked`` counts
    requests per stage."""

    def __init__(self, faults: dict[str, list[Any]] | None = None) -> None:
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.asked: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        stage = stage_of(body)
        with self._lock:
            self.asked[stage] = self.asked.get(stage, 0) + 1
            queue = self.faults.get(stage)
            fault = queue.pop(0) if queue else None
        prompt = next(_text(m) for m in body["messages"] if m.get("role") == "user")
        if callable(fault):
            fault = fault(valid_reply(stage, prompt), prompt)
        if fault is not None:
            return fault if isinstance(fault, dict) else {"content": fault}
        return {"content": json.dumps(valid_reply(stage, prompt))}
