"""``isg eval`` and ``isg report`` end to end: a scripted OpenAI-compatible server, real envs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import ScriptedChatServer, by_conversation

from isg_gym.cli import main
from isg_gym.eval.records import read_records
from isg_gym.eval.report import PLOT_FILES

pytest.importorskip("openai")


def _explore_then_abstain(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
    if turn == 0:
        return {"tool_calls": [{"name": "list_directory", "arguments": {"path": "/"}}]}
    return {"content": '{"answer": "not possible"}'}


def _eval(out: Path, url: str, *extra: str) -> list[str]:
    return ["eval", "--backend", "openai", "--model", "scripted", "--base-url", url,
            "--split", "repos:0-4", "--out", str(out), "--concurrency", "2", "--max-steps", "4",
            "--no-progress", *extra]  # fmt: skip


def test_eval_writes_records_summary_and_plots_then_resumes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    with ScriptedChatServer(by_conversation(_explore_then_abstain)) as server:
        assert main(_eval(out, server.url)) == 0
        assert len(server.requests) == 8  # two turns for each of the four episodes
        assert "Accuracy:" in capsys.readouterr().out
        records = read_records(out / "episodes.jsonl")
        assert len(records) == 4
        assert all(r["outcome"] in ("correct", "abstained") for r in records)
        assert all(r["tool_calls"][0]["name"] == "list_directory" for r in records)
        summary = json.loads((out / "summary.json").read_text())
        unanswerable = sum(r["answerable"] is False for r in records)
        assert summary["n"] == 4 and summary["correct"] == unanswerable
        assert "Accuracy:" in (out / "summary.md").read_text()
        for name in PLOT_FILES:
            assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        assert main(_eval(out, server.url)) == 2  # refuses to mix runs without --resume
        assert "--resume" in capsys.readouterr().err
        assert main(_eval(out, server.url, "--resume")) == 0
        assert len(server.requests) == 8  # nothing left to ask
        assert len(read_records(out / "episodes.jsonl")) == 4


def test_report_rebuilds_and_ranks_runs(tmp_path: Path, capsys) -> None:
    def answer_seven(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"content": '{"answer": "7"}'}

    with ScriptedChatServer(by_conversation(_explore_then_abstain)) as server:
        assert main(_eval(tmp_path / "abstainer", server.url)) == 0
    with ScriptedChatServer(by_conversation(answer_seven)) as server:
        assert main(_eval(tmp_path / "sevens", server.url)) == 0
    (tmp_path / "abstainer" / "summary.json").unlink()
    capsys.readouterr()
    board = tmp_path / "board" / "leaderboard.md"
    assert main(["report", str(tmp_path / "sevens"), str(tmp_path / "abstainer"),
                 "--out", str(board)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert printed.index("abstainer") < printed.index("sevens")  # ranked by accuracy
    assert (tmp_path / "abstainer" / "summary.json").exists()  # rebuilt from episodes.jsonl
    assert board.read_text() in printed
    assert (board.parent / "leaderboard.png").exists()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["eval", "--backend", "scripted", "--model", "genius", "--out", "x"], "oracle"),
        (
            [
                "eval",
                "--backend",
                "scripted",
                "--model",
                "abstain",
                "--split",
                "isg-9",
                "--out",
                "{tmp}/x",
            ],
            "isg-500",
        ),
        (
            [
                "eval",
                "--backend",
                "openai",
                "--model",
                "m",
                "--base-url",
                "https://example.com/v1",
                "--out",
                "{tmp}/x",
                "--api-key-env",
                "ISG_NO_SUCH_KEY",
            ],
            "ISG_NO_SUCH_KEY",
        ),
        (["report", "{tmp}/nothing"], "episodes.jsonl"),
        (
            ["eval", "--backend", "scripted", "--model", "abstain,,random", "--out", "{tmp}/x"],
            "distinct names separated by commas",
        ),
        (
            [
                "eval",
                "--backend",
                "scripted",
                "--model",
                "oracle",
                "--env-arg",
                "colour=red",
                "--out",
                "{tmp}/x",
            ],
            "not an argument of ISG-v0",
        ),
        (
            [
                "eval",
                "--env",
                "ISG-v9",
                "--backend",
                "scripted",
                "--model",
                "oracle",
                "--out",
                "{tmp}/x",
            ],
            "unknown env 'ISG-v9'",
        ),
        (  # a base URL without a scheme: not "no API key"
            ["eval", "--backend", "openai", "--model", "m", "--base-url", "127.0.0.1:8000/v1",
             "--out", "{tmp}/x"],
            "write it in full, e.g. http://127.0.0.1:8000/v1",
        ),
        (
            ["eval", "--backend", "smolagents", "--model", "m", "--base-url",
             "localhost:8000/v1", "--out", "{tmp}/x"],
            "e.g. http://localhost:8000/v1",
        ),
        (["eval", "--backend", "scripted", "--model", "oracle", "--max-output-chars", "50",
          "--out", "{tmp}/x"], "--max-output-chars must be >= 100"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys, argv, needle) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_eval_smolagents_backend(tmp_path: Path, capsys) -> None:
    pytest.importorskip("smolagents")

    def reply(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        if turn == 0:
            return {"tool_calls": [{"name": "list_directory", "arguments": {"path": "/"}}]}
        return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": "not possible"}}]}

    out = tmp_path / "smol"
    with ScriptedChatServer(by_conversation(reply)) as server:
        argv = _eval(out, server.url, "--episodes", "2")
        argv[argv.index("openai")] = "smolagents"
        assert main(argv) == 0
    records = read_records(out / "episodes.jsonl")
    assert [r["outcome"] in ("correct", "abstained") for r in records] == [True, True]
    assert [c["name"] for c in records[0]["tool_calls"]] == ["list_directory", "final_answer"]
    assert json.loads((out / "run.json").read_text())["backend"] == "smolagents"


def test_eval_smolagents_passes_client_options(tmp_path: Path, capsys) -> None:
    """--flatten-messages, --tool-choice, --max-tokens reach smolagents' requests; without
    them smolagents sends lists of content parts and tool_choice "required"."""
    pytest.importorskip("smolagents")

    def reply(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        if turn == 0:
            return {"tool_calls": [{"name": "list_directory", "arguments": {"path": "/"}}]}
        return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": "not possible"}}]}

    bodies = {}
    for name, extra in (("plain", []), ("flat", ["--flatten-messages", "--tool-choice", "auto",
                                                 "--max-tokens", "77"])):  # fmt: skip
        with ScriptedChatServer(by_conversation(reply)) as server:
            argv = _eval(tmp_path / name, server.url, "--episodes", "1", *extra)
            argv[argv.index("openai")] = "smolagents"
            assert main(argv) == 0
        bodies[name] = server.requests
    assert all(b["tool_choice"] == "required" for b in bodies["plain"])
    assert any(isinstance(m["content"], list) for b in bodies["plain"] for m in b["messages"])
    for body in bodies["flat"]:
        assert body["tool_choice"] == "auto" and body["max_tokens"] == 77
        assert all(isinstance(m["content"], str) for m in body["messages"])


def test_eval_max_output_chars_caps_what_the_model_reads(tmp_path: Path, capsys) -> None:
    out = tmp_path / "capped"
    with ScriptedChatServer(by_conversation(_explore_then_abstain)) as server:
        assert main(_eval(out, server.url, "--episodes", "2", "--max-output-chars", "120")) == 0
        sent = server.requests
    assert json.loads((out / "run.json").read_text())["env_kwargs"]["max_output_chars"] == 120
    results = [m["content"] for b in sent for m in b["messages"] if m["role"] == "tool"]
    assert results and all(len(text) <= 120 + len("[list_directory]\n") for text in results)
    assert any("more entries not shown" in text for text in results)  # the tool's own note


def test_paraphrase_then_evaluate_on_the_paraphrases(tmp_path: Path, capsys) -> None:
    def rewrite(question: str, turn: int, body: dict[str, Any]) -> dict[str, Any]:
        original = question.split("Question:\n", 1)[1].split("\n\nProtected tokens", 1)[0]
        original = original.split("\n\nNo protected tokens", 1)[0]
        return {"content": f"<paraphrase>Please answer this: {original}</paraphrase>"}

    cache = tmp_path / "paraphrases"
    with ScriptedChatServer(by_conversation(rewrite)) as server:
        argv = ["paraphrase", "--backend", "openai", "--model", "rewriter", "--base-url",
                server.url, "--split", "repos:0-3", "--cache", str(cache)]  # fmt: skip
        assert main(argv) == 0
        assert len(server.requests) == 3
        assert "accepted 3/3" in capsys.readouterr().out
        assert main(argv) == 0  # cached: the model is not asked again
        assert len(server.requests) == 3
    out = tmp_path / "run"
    assert main(["eval", "--backend", "scripted", "--model", "abstain", "--split", "repos:0-3",
                 "--out", str(out), "--paraphrases", str(cache), "--paraphrase-model",
                 "rewriter", "--no-progress"]) == 0  # fmt: skip
    records = read_records(out / "episodes.jsonl")
    assert len(records) == 3
    assert all(r["question"].startswith("Please answer this: ") for r in records)
    assert all(r["transcript"][1]["content"].startswith("Question: Please answer") for r in records)


def test_isg_eval_against_an_unreachable_server_stops_with_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No server listens on the port: not "Accuracy: 0.0%" with exit 0, but one line and 1."""
    import socket

    with socket.socket() as probe:  # a free local port, closed again: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "run"
    code = main(_eval(out, f"http://127.0.0.1:{port}/v1", "--max-retries", "0", "--timeout", "2"))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and "episodes all failed (backend_error)" in err[0], err
    records = read_records(out / "episodes.jsonl")
    assert records and {r["outcome"] for r in records} == {"backend_error"}
    assert not (out / "summary.md").exists()


def test_isg_eval_where_no_sandbox_can_run_stops_with_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a sandbox the oracle would score about 50% (its Python calls failing): the run
    refuses to start instead, naming the fix."""
    import isg_gym.tools.sandbox as sandbox_module
    from isg_gym.tools.sandbox import SANDBOX_FIX, SandboxUnavailable

    def unavailable(name):
        raise SandboxUnavailable(f"no isolating sandbox can run on this machine; {SANDBOX_FIX}")

    monkeypatch.setattr(sandbox_module, "resolve_backend", unavailable)
    out = tmp_path / "run"
    code = main(["eval", "--backend", "scripted", "--model", "oracle", "--split", "repos:0-4",
                 "--out", str(out), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert "no isolating sandbox" in err[0] and "apt-get install bubblewrap" in err[0]
    assert not (out / "summary.md").exists()


def test_several_scripted_models_give_one_run_each_and_a_leaderboard(tmp_path: Path, capsys):
    out = tmp_path / "quick"
    argv = [
        "eval",
        "--backend",
        "scripted",
        "--model",
        "abstain,random",
        "--episodes",
        "4",
        "--concurrency",
        "2",
        "--sandbox",
        "none",
        "--out",
        str(out),
        "--no-progress",
    ]
    with pytest.warns(RuntimeWarning, match="NOT a security boundary"):
        assert main(argv) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert text.startswith("abstain: Accuracy:") and "\nrandom: Accuracy:" in text
    board = (out / "leaderboard.md").read_text()
    assert board in text and (out / "leaderboard.png").exists()
    for name in ("abstain", "random"):
        assert len(read_records(out / name / "episodes.jsonl")) == 4
        assert f"| {name} | ISG-v0 | scripted-{name} |" in board
