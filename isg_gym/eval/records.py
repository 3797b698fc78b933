"""Episode records: one JSON line per finished episode, written as it finishes.

A record holds the question (id, repository, type, family, answerable, reason, gold answer),
what the agent did (the transcript, every tool call with its arguments and result size, parse
failures, the files it read), the outcome and the :class:`~isg_gym.rewards.Score`, token counts
and wall time. :func:`read_records` skips a torn last line (with a warning), so an interrupted run
loses nothing it had written and ``--resume`` picks up after the last complete line; any other
unreadable line (garbage, not an object, a field of the wrong type) is a :class:`RecordFileError`
naming the file and the line.

:class:`RecordWriter` always writes one valid JSON line per record, whatever text the model or
its code produced: the line is ASCII (``ensure_ascii``), so lone surrogates, NUL and invalid
bytes survive as ``\\uXXXX`` escapes and read back unchanged; values JSON cannot hold (NaN,
infinities, objects, non-string keys, nesting too deep) are replaced (null, or a string).
"""

from __future__ import annotations

import json
import math
import os
import time
import warnings
from pathlib import Path
from typing import Any

from isg_gym.eval.policy import EpisodeState
from isg_gym.qa.base import QUESTION_VERSION

SCHEMA_VERSION = 1
RECORDS_FILE = "episodes.jsonl"

# Outcomes: the env's ("correct", "wrong", "abstained", "format_error", "truncated") plus these,
# for episodes that ended without the env ending them.
BACKEND_ERROR = "backend_error"  # the model's server failed (unreachable, refused, timed out)
SANDBOX_ERROR = "sandbox_error"  # the Python sandbox could not start or broke
POLICY_ERROR = "policy_error"  # the policy itself raised
CONTEXT_EXCEEDED = "context_exceeded"  # the model overflowed its context: a wrong answer
NO_ANSWER = "no_answer"
# Infrastructure failures: not answers. They are counted apart from accuracy, shown first in
# summaries, and retried by ``--resume``.
INFRA_OUTCOMES = (BACKEND_ERROR, SANDBOX_ERROR, POLICY_ERROR)
_OUTCOME_OF_KIND = {"backend": BACKEND_ERROR, "sandbox": SANDBOX_ERROR, "policy": POLICY_ERROR,
                    "model": CONTEXT_EXCEEDED}  # fmt: skip


def is_infra_failure(record: dict[str, Any]) -> bool:
    """Whether a record is an infrastructure failure rather than an answer."""
    return record.get("outcome") in INFRA_OUTCOMES


def latest_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records that count: an infrastructure failure is dropped when a later record of
    the same episode (index, question id) follows it (``--resume`` appends such a retry)."""
    later: set[tuple[Any, Any]] = set()
    keep: list[dict[str, Any]] = []
    for record in reversed(records):
        key = (record.get("index"), record.get("question_id"))
        if not (is_infra_failure(record) and key in later):
            keep.append(record)
        later.add(key)
    return keep[::-1]


def build_record(
    episode: EpisodeState, question_version: int = QUESTION_VERSION
) -> dict[str, Any]:
    """The JSON record of a finished (or failed) episode (``question_version``: the version of
    the env's task generator)."""
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
        outcome = _OUTCOME_OF_KIND.get(episode.error_kind or "backend", BACKEND_ERROR)
    elif "outcome" in final:
        outcome = final["outcome"]
    else:
        outcome = NO_ANSWER
    score = final.get("score")
    return {
        "schema": SCHEMA_VERSION,
        "question_version": question_version,
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
        "wall_s": round((episode.ended or time.perf_counter()) - episode.started, 4),
        "error": episode.error,
        "episode_metrics": _metrics(final.get("episode_metrics")),
        "transcript": capped_transcript(episode.messages),
    }


def _metrics(value: Any) -> dict[str, float] | None:
    """An env's per-episode metrics (name -> number), or None when it reports none."""
    if not isinstance(value, dict):
        return None
    return {str(k): float(v) for k, v in value.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}  # fmt: skip


MAX_TRANSCRIPT_CHARS = 100_000  # per message field: a 22 MB action must not land in the record
MAX_LIST_ITEMS = 1000  # e.g. tool calls of one message


def capped_transcript(messages: list[Any]) -> list[Any]:
    """The policy's messages with every string longer than :data:`MAX_TRANSCRIPT_CHARS` cut,
    saying how much was cut (the env already rejects such actions; the record stays small)."""

    def cap(value: Any, depth: int = 0) -> Any:
        if isinstance(value, str) and len(value) > MAX_TRANSCRIPT_CHARS:
            cut = len(value) - MAX_TRANSCRIPT_CHARS
            return value[:MAX_TRANSCRIPT_CHARS] + f"... [{cut} more characters cut]"
        if depth < 8 and isinstance(value, dict):
            return {k: cap(v, depth + 1) for k, v in value.items()}
        if depth < 8 and isinstance(value, list | tuple):
            kept = [cap(v, depth + 1) for v in value[:MAX_LIST_ITEMS]]
            if len(value) > MAX_LIST_ITEMS:
                kept.append(f"[{len(value) - MAX_LIST_ITEMS} more items cut]")
            return kept
        return value

    return [cap(m) for m in messages]


def _question_text(info: dict[str, Any]) -> str | None:
    user = (info.get("prompt") or {}).get("user", "")
    if user.startswith("Question: "):
        return user[len("Question: ") :].split("\n\n", 1)[0]
    return None


class RecordFileError(ValueError, OSError):
    """A record file that cannot be read: the message names the file, the line and the fault.

    An :class:`OSError` (like :class:`gzip.BadGzipFile`), so that the ``isg`` commands report it
    as one line with exit status 2, and a :class:`ValueError` for callers that catch that.
    """


# Fields a record must have, and the types each may take (None: the field may be null).
_INT = (int,)
_NUMBER = (int, float)
_FIELDS: dict[str, tuple[tuple[type, ...], bool]] = {  # name: (types, may be null)
    "index": (_INT, False),
    "question_id": ((str,), False),
    "outcome": ((str,), False),
    "correct": ((bool,), False),
}
_OPTIONAL: dict[str, tuple[tuple[type, ...], bool]] = {
    "schema": (_INT, False),
    "abstained": ((bool,), False),
    "answerable": ((bool,), True),
    "type": ((str,), True),
    "family": ((str,), True),
    "steps": (_INT, True),
    "parse_failures": (_INT, True),
    "prompt_tokens": (_INT, True),
    "completion_tokens": (_INT, True),
    "model_calls": (_INT, True),
    "reward": (_NUMBER, True),
    "wall_s": (_NUMBER, True),
    "tool_calls": ((list,), True),
    "files_read": ((list,), True),
    "evidence": ((list,), True),
    "evidence_used": ((bool,), True),
    "score": ((dict,), True),
    "error": ((str,), True),
    "episode_metrics": ((dict,), True),
}


def check_record(record: Any) -> str | None:
    """What is wrong with a parsed record line (None when it is a usable record)."""
    if not isinstance(record, dict):
        return f"a record must be a JSON object, got {_json_type(record)}"
    for name, (types, nullable) in (*_FIELDS.items(), *_OPTIONAL.items()):
        if name not in record:
            if name in _FIELDS:
                return f"missing field {name!r}"
            continue
        value = record[name]
        if value is None and nullable:
            continue
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            want = " or ".join(_TYPE_NAMES[t] for t in types) + (" or null" if nullable else "")
            return f"field {name!r} must be {want}, got {_json_type(value)} {_short(value)}"
    return None


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "a boolean",
               list: "a list", dict: "an object"}  # fmt: skip


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"),
                       (str, "a string"), (list, "a list"), (dict, "an object")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every record of a JSONL file, in order.

    A torn last line (no newline after it, not JSON: an interrupted write) is skipped with a
    warning; any other line that is not a usable record raises :class:`RecordFileError`
    (``FILE:LINE: what is wrong``). Blank lines are ignored.
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordFileError(f"{path}: cannot read the record file: {exc.strerror}") from None
    records = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            if number == len(lines):  # no newline after it: the torn last line of a stopped run
                warnings.warn(
                    f"{path}:{number}: skipped a torn last line (an interrupted write)",
                    RuntimeWarning,
                    stacklevel=2,
                )
                break
            raise RecordFileError(f"{path}:{number}: not a JSON record line") from None
        problem = check_record(record)
        if problem is not None:
            raise RecordFileError(f"{path}:{number}: {problem}")
        records.append(record)
    return records


def dumps_record(record: dict[str, Any]) -> str:
    """One JSON line (ASCII, no newline) for ``record``; never raises for its contents.

    Strings are kept exactly (non-ASCII, lone surrogates and NUL as ``\\uXXXX`` escapes).
    Values strict JSON cannot represent are replaced: NaN and infinities by null, other objects
    by their type name (``"<bytes>"``), non-string keys by their text; containers nested deeper
    than 64 levels become ``"..."``.
    """
    try:
        return json.dumps(record, ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(_jsonable(record, 0), ensure_ascii=True, allow_nan=False)


def _jsonable(value: Any, depth: int) -> Any:
    """A copy of ``value`` holding only what strict JSON can encode."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value) if value.bit_length() < 4000 else f"<int of {value.bit_length()} bits>"
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if depth >= 64:
        return "..."
    if isinstance(value, dict):
        return {_key(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    return f"<{type(value).__name__}>"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int, float)):
        return json.dumps(key) if not isinstance(key, float) or math.isfinite(key) else str(key)
    return f"<{type(key).__name__}>"


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
        self._file = self.path.open("a", encoding="ascii")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(dumps_record(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
