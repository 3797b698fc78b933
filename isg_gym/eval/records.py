"""Episode records: one JSON line per finished episode, written as it finishes.

A record holds the question (id, repository, type, family, answerable, reason, gold answer),
what the agent did (the transcript, every tool call with its arguments and result size, parse
failures, the files it read), the outcome and the :class:`~isg_gym.rewards.Score`, token counts
and wall time. :func:`read_records` skips a torn last line, so an interrupted run loses nothing it
had written and ``--resume`` picks up after the last complete line.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from isg_gym.eval.policy import EpisodeState
from isg_gym.qa.base import QUESTION_VERSION

SCHEMA_VERSION = 1
RECORDS_FILE = "episodes.jsonl"

# Outcomes: the env's ("correct", "wrong", "abstained", "format_error", "truncated") plus these,
# for episodes that ended without the env ending them.
BACKEND_ERROR = "backend_error"
NO_ANSWER = "no_answer"


def build_record(episode: EpisodeState) -> dict[str, Any]:
    """The JSON record of a finished (or failed) episode."""
    info0 = {**episode.info, **episode.gold}
    final = episode.final_info
    tool_calls = []
    files: set[str] = set()
    for number, step in enumerate(episode.steps, start=1):
        files.update(step.files_read)
        for result in step.tool_results:
            tool_calls.append(
                {
                    "step": number,
                    "name": result.get("name"),
                    "arguments": result.get("arguments", {}),
                    "result_chars": len(result.get("output", "")),
                    "error": bool(result.get("error")),
                }
            )
    parse_errors = [s.parse_error for s in episode.steps if s.parse_error]
    evidence = list(info0.get("evidence", []))
    if episode.error is not None:
        outcome = BACKEND_ERROR
    elif "outcome" in final:
        outcome = final["outcome"]
    else:
        outcome = NO_ANSWER
    score = final.get("score")
    return {
        "schema": SCHEMA_VERSION,
        "question_version": QUESTION_VERSION,
        "index": episode.index,
        "question_id": episode.question_id,
        "repository": info0.get("repository"),
        "type": info0.get("type"),
        "family": info0.get("family"),
        "answerable": info0.get("answerable"),
        "reason": info0.get("reason"),
        "gold": info0.get("answer"),
        "question": _question_text(info0),
        "answer": final.get("answer_text"),
        "outcome": outcome,
        "correct": bool(score and score.get("correct")),
        "abstained": bool(score and score.get("abstained")),
        "reward": sum(s.reward for s in episode.steps),
        "score": score,
        "steps": len(episode.steps),
        "tool_calls": tool_calls,
        "parse_failures": len(parse_errors),
        "parse_errors": parse_errors,
        "files_read": sorted(files),
        "evidence": evidence,
        "evidence_used": bool(files & set(evidence)) if evidence else None,
        "prompt_tokens": episode.prompt_tokens,
        "completion_tokens": episode.completion_tokens,
        "model_calls": episode.model_calls,
        "wall_s": round(time.perf_counter() - episode.started, 4),
        "error": episode.error,
        "transcript": episode.messages,
    }


def _question_text(info: dict[str, Any]) -> str | None:
    user = (info.get("prompt") or {}).get("user", "")
    if user.startswith("Question: "):
        return user[len("Question: ") :].split("\n\n", 1)[0]
    return None


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete record of a JSONL file (a torn or unparsable last line is ignored)."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    lines = path.read_bytes().split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            if number == len(lines):  # torn last line of an interrupted run
                break
            raise ValueError(f"{path}:{number}: not a JSON record") from None
    return records


class RecordWriter:
    """Appends records to a JSONL file, one flushed and fsynced line each.

    Opening cuts a torn last line left by an interrupted run, so appending stays valid JSONL.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                self.path.write_bytes(data[: data.rfind(b"\n") + 1])
        self._file = self.path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
