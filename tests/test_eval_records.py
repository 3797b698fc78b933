"""Records never break: any model text is recorded and read back; corrupt files fail clearly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import ScriptedChatServer, by_conversation

from isg_gym.cli import main
from isg_gym.eval.policy import EpisodeState, StepPolicy, Turn, calls_message
from isg_gym.eval.records import (
    RECORDS_FILE,
    RecordFileError,
    RecordWriter,
    dumps_record,
    read_records,
)
from isg_gym.eval.runner import evaluate

BAD = "\ud800 \udcff \x00 \u00b5 end"  # lone surrogates, NUL, non-ASCII


def strict_loads(line: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(line.decode("ascii"), parse_constant=refuse)


def minimal(index: int = 0, **extra: Any) -> dict[str, Any]:
    return {"index": index, "question_id": f"q{index}", "outcome": "wrong", "correct": False,
            **extra}  # fmt: skip


class Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


# ---------------------------------------------------------------- writing


def test_writer_writes_strict_ascii_json_for_any_content(tmp_path: Path) -> None:
    deep: Any = []
    for _ in range(500):
        deep = [deep]
    records = [
        minimal(0, answer=BAD, transcript=[{"role": "tool", "content": BAD}]),
        minimal(1, score={"value": float("nan")}, reward=float("inf"), x=float("-inf")),
        minimal(2, arguments={1: "a", None: b"bytes", (1, 2): Hostile()}, big=10**5000),
        minimal(3, deep=deep, obj=Hostile(), s={1, 2}),
    ]
    path = tmp_path / RECORDS_FILE
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 4
    parsed = [strict_loads(line) for line in lines]
    assert parsed[0]["answer"] == BAD and parsed[0]["transcript"][0]["content"] == BAD
    assert parsed[1]["score"]["value"] is None and parsed[1]["reward"] is None
    assert parsed[2]["arguments"] == {"1": "a", "null": "<bytes>", "<tuple>": "<Hostile>"}
    assert parsed[2]["big"].startswith("<int of ")
    assert parsed[3]["obj"] == "<Hostile>" and parsed[3]["s"] == "<set>"
    assert "..." in json.dumps(parsed[3]["deep"])
    assert read_records(path)[0]["answer"] == BAD  # read back exactly
    assert dumps_record({"a": BAD}).isascii()


# ---------------------------------------------------------------- an episode end to end


class SurrogatePolicy(StepPolicy):
    """Runs code whose output is a lone surrogate, reads a path with one, answers with one."""

    name = "surrogate"
    model = "surrogate"

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        turns = []
        for episode in episodes:
            step = len(episode.steps)
            code = "raise ValueError(chr(0xd800))"
            calls = [
                [{"name": "run_python_code", "arguments": {"code": code}},
                 {"name": "read_text_file", "arguments": {"path": "/\ud800"}}],
                [{"name": "final_answer", "arguments": {"answer": "The minimum is \ud800 12"}}],
            ][min(step, 1)]  # fmt: skip
            message = calls_message(calls, step + 1)
            episode.messages.append(message)
            turns.append(Turn(action=message["tool_calls"]))
        return turns


class SurrogateSandbox:
    """What the real sandbox reports for ``raise ValueError(chr(0xd800))`` (escaped or not)."""

    def run(self, code: str, files_dir: str) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(stdout="\ud800", stderr="Traceback ...\nValueError: \ud800",
                               value=None, error="ValueError: \ud800", timed_out=False,
                               killed=False, files_read=("\ud800.csv",))  # fmt: skip

    def close(self) -> None:
        pass


def test_episode_with_surrogates_is_recorded_and_read_back(tmp_path: Path) -> None:
    summary = evaluate(SurrogatePolicy(), "repos:0-2", tmp_path, concurrency=2,
                       env_kwargs={"sandbox": SurrogateSandbox(), "max_steps": 4})  # fmt: skip
    assert summary["n"] == 2
    lines = (tmp_path / RECORDS_FILE).read_bytes().splitlines()
    assert len(lines) == 2 and all(strict_loads(line) for line in lines)
    for record in read_records(tmp_path / RECORDS_FILE):
        assert record["answer"] == "The minimum is \ud800 12"
        assert record["outcome"] in ("wrong", "correct", "format_error")
        assert record["files_read"] == []
        tool_texts = [m["content"] for m in record["transcript"] if m.get("role") == "tool"]
        assert any("ValueError: \\ud800" in t for t in tool_texts)  # escaped for the model
        for text in tool_texts:
            text.encode("utf-8")  # raises on a lone surrogate


def test_isg_eval_survives_surrogates_from_a_model(tmp_path: Path, capsys) -> None:
    """A real ``isg eval`` over the OpenAI backend: the model's text holds lone surrogates."""
    pytest.importorskip("openai")

    def script(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        if turn == 0:
            return {"tool_calls": [
                {"name": "run_python_code", "arguments": {"code": "raise ValueError(chr(0xd800))"}},
                {"name": "read_text_file", "arguments": {"path": "/\ud800\x00"}},
            ]}  # fmt: skip
        return {"content": '{"answer": "\ud800 not possible \\u0000"}'}

    out = tmp_path / "run"
    with ScriptedChatServer(by_conversation(script)) as server:
        code = main(["eval", "--backend", "openai", "--model", "scripted", "--base-url",
                     server.url, "--split", "repos:0-2", "--out", str(out), "--concurrency", "2",
                     "--max-steps", "3", "--no-progress"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    records = read_records(out / RECORDS_FILE)
    assert len(records) == 2
    # The model's lone surrogate is escaped (it could not go back to the server); NUL is kept.
    assert all(r["answer"] == '{"answer": "\\ud800 not possible \\u0000"}' for r in records)
    assert all(r["outcome"] != "backend_error" and r["error"] is None for r in records)
    tool_texts = [m["content"] for m in records[0]["transcript"] if m.get("role") == "tool"]
    assert any("ValueError: \\ud800" in t for t in tool_texts) or any(
        "sandbox" in t for t in tool_texts
    )
    assert all(strict_loads(line) for line in (out / RECORDS_FILE).read_bytes().splitlines())
    assert main(["report", str(out)]) == 0


# ---------------------------------------------------------------- reading corrupt files


def write_lines(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / RECORDS_FILE).write_text("\n".join(lines) + end, encoding="utf-8")
    return path


GOOD = json.dumps(minimal(0))


@pytest.mark.parametrize(
    ("lines", "where", "what"),
    [
        ([GOOD, "garbage {", json.dumps(minimal(1))], 2, "not a JSON record line"),
        ([GOOD, "[1, 2]"], 2, "must be a JSON object, got a list"),
        ([GOOD, "", "17"], 3, "must be a JSON object, got an integer"),
        ([GOOD, json.dumps(minimal(1, correct="false"))], 2, "'correct' must be a boolean"),
        ([json.dumps(minimal(0, type=["a"]))], 1, "'type' must be a string or null"),
        ([json.dumps(minimal(0, steps=True))], 1, "'steps' must be an integer or null"),
        ([json.dumps({"index": 0, "question_id": "q"})], 1, "missing field 'outcome'"),
        ([GOOD, "\udcff\udcfe"], 2, "not a JSON record line"),
    ],
)
def test_corrupt_record_file_names_file_and_line(
    tmp_path: Path, capsys, lines: list[str], where: int, what: str
) -> None:
    out = write_lines(tmp_path / "run", [line.encode("utf-8", "surrogateescape").decode(
        "latin-1") if "\udcff" in line else line for line in lines])  # fmt: skip
    if "\udcff" in "".join(lines):  # invalid UTF-8 bytes on that line
        (out / RECORDS_FILE).write_bytes(GOOD.encode() + b"\n\xff\xfe\n")
    with pytest.raises(RecordFileError, match=f"{RECORDS_FILE}:{where}: .*{what}"):
        read_records(out / RECORDS_FILE)
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert f"{RECORDS_FILE}:{where}:" in err and what in err


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path, capsys) -> None:
    out = write_lines(tmp_path / "run", [GOOD, '{"index": 1, "quest'], end="")
    with pytest.warns(RuntimeWarning, match=rf"{RECORDS_FILE}:2: skipped a torn last line"):
        assert [r["index"] for r in read_records(out / RECORDS_FILE)] == [0]
    with pytest.warns(RuntimeWarning, match="torn last line"):
        assert main(["report", str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    with RecordWriter(out / RECORDS_FILE) as writer:  # reopening cuts the torn line
        writer.write(minimal(1))
    assert [r["index"] for r in read_records(out / RECORDS_FILE)] == [0, 1]


def test_transcripts_are_capped_in_records() -> None:
    """A policy's huge message (the env rejects it) is cut in the record, saying how much."""
    from isg_gym.eval.records import MAX_LIST_ITEMS, MAX_TRANSCRIPT_CHARS, capped_transcript

    huge = "x" * (MAX_TRANSCRIPT_CHARS + 5000)
    calls = [{"id": f"c{i}", "function": {"name": "f", "arguments": "{}"}} for i in range(3000)]
    messages = [
        {"role": "assistant", "content": huge},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "user", "content": "short"},
    ]
    out = capped_transcript(messages)
    assert out[0]["content"].startswith("x" * 100)
    assert "5000 more characters cut" in out[0]["content"]
    assert len(out[0]["content"]) < MAX_TRANSCRIPT_CHARS + 100
    assert len(out[1]["tool_calls"]) == MAX_LIST_ITEMS + 1
    assert out[1]["tool_calls"][-1] == f"[{3000 - MAX_LIST_ITEMS} more items cut]"
    assert out[2] == messages[2]


class _OneStepEnv:
    """Ends the episode at the first step."""

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return "done", 1.0, True, False, {}


def test_wall_time_ends_when_the_episode_ends_not_when_it_is_recorded() -> None:
    """Records are written in submission order; an episode that ended while an earlier one was
    still running must not be charged the wait."""
    from isg_gym.eval.records import build_record

    episode = EpisodeState(0, "0.count_files.0", _OneStepEnv(), "obs", {})
    episode.step("final answer")
    assert episode.done and episode.ended is not None
    episode.started = episode.ended - 0.25
    record = build_record(episode)
    assert record["wall_s"] == 0.25
    failed = EpisodeState(1, "0.count_files.1", _OneStepEnv(), "obs", {})
    failed.fail("policy", "boom")
    assert failed.ended is not None
    failed.started = failed.ended - 0.5
    assert build_record(failed)["wall_s"] == 0.5
