"""``isg play``: a person's episode from a pipe and under a pseudo-terminal, recorded like
``isg eval`` and shown on the leaderboard as a human baseline."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from isg_gym.eval.records import read_records
from isg_gym.eval.report import leaderboard
from isg_gym.eval.splits import resolve_split
from isg_gym.play import END_OF_CODE, Command, parse_command

ROOT = Path(__file__).resolve().parents[1]
ISG = [sys.executable, "-m", "isg_gym.cli"]
# is `plate=16.txt` directly inside `date=20210923/dose=50/`? (no)
README_QUESTION = "1001.has_readme.25"


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else ""),
            "TERM": "dumb"}  # fmt: skip


def _play(args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ISG, "play", *args], input=stdin, capture_output=True, text=True,
                          timeout=300, env=_env(), cwd=ROOT)  # fmt: skip


def test_commands_become_tool_calls() -> None:
    assert parse_command("ls") == Command(call={"name": "list_directory",
                                                "arguments": {"path": "/"}})  # fmt: skip
    assert parse_command("  LS a/b 2 *.csv ").call == {
        "name": "list_directory", "arguments": {"path": "a/b", "depth": 2, "pattern": "*.csv"}}
    assert parse_command("cat 'x y/z.csv' 5").call == {
        "name": "read_text_file", "arguments": {"path": "x y/z.csv", "head": 5}}
    assert parse_command("cat z.csv -3").call["arguments"] == {"path": "z.csv", "tail": 3}
    assert parse_command("py print(1 + 1)").call == {
        "name": "run_python_code", "arguments": {"code": "print(1 + 1)"}}
    assert parse_command("py") == Command(read_code=True)
    assert parse_command("answer  The mean is 4.2 g ").call == {
        "name": "final_answer", "arguments": {"answer": "The mean is 4.2 g"}}
    assert parse_command("quit").quit and parse_command("").call is None
    # mistakes are told locally, never sent to the env (they cost no step)
    for line in ("ls / deep", "cat", "cat a.csv 0", "cat a b c", "answer", "frobnicate"):
        command = parse_command(line)
        assert command.call is None and command.message, line
    assert parse_command("ls 'a").call["arguments"] == {"path": "'a"}  # as typed: the env says
    assert "unknown command 'frobnicate'" in parse_command("frobnicate").message
    assert "Conventions:" in parse_command("rules").message
    assert f'"{END_OF_CODE}"' in parse_command("help").message


def test_piped_episodes_are_recorded_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = ["import os", "print(sorted(os.listdir('date=20210923/dose=50')))", END_OF_CODE]
    lines = ["help", "ls / x", "ls date=20210923/dose=50", "py", *code,
             "cat date=20210923/dose=50/plate=02.txt 2", "answer no"]
    done = _play([README_QUESTION, "--out", str(out), "--name", "ada"], "\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Question: Is there a file or folder called `plate=16.txt` directly inside" in text
    assert "isg [0/20]> ls / x\nls: DEPTH must be an integer, got 'x'" in text  # no step spent
    listing = re.search(r"isg \[0/20\]> ls date=20210923/dose=50\n(\[list_directory\]\n.*?)\nisg",
                        text, re.DOTALL).group(1)  # fmt: skip
    assert listing.startswith("[list_directory]\n/date=20210923/dose=50 (depth 1):")
    assert "plate=02.txt" in listing and "plate=16.txt" not in listing  # so the answer is "no"
    assert "[run_python_code]\n[stdout]\n['plate=02.txt', 'plate=05.txt']" in text
    assert "[read_text_file]\n" in text and "[lines 1-2 of " in text
    assert "Outcome: correct   score: 1.0" in text and "Gold answer: no" in text
    first_bytes = (out / "episodes.jsonl").read_bytes()

    # a second episode (the next isg-500 question) appends; end of input: no answer, recorded
    done = _play(["--out", str(out), "--name", "ada"], "ls\n")
    assert done.returncode == 0, done.stderr
    assert "(end of input: the episode ends without an answer)" in done.stdout
    assert "Outcome: no_answer" in done.stdout and "(2 episodes)" in done.stdout
    assert (out / "episodes.jsonl").read_bytes().startswith(first_bytes)

    records = read_records(out / "episodes.jsonl")
    assert [r["question_id"] for r in records] == [README_QUESTION, resolve_split("isg-500")[0]]
    assert [r["index"] for r in records] == [0, 1]
    assert [r["outcome"] for r in records] == ["correct", "no_answer"]
    first = records[0]
    assert first["steps"] == 4 and first["gold"] == "no" and first["answer"] == "no"
    assert [c["name"] for c in first["tool_calls"]] == [
        "list_directory", "run_python_code", "read_text_file", "final_answer"]
    assert first["files_read"] == ["date=20210923/dose=50/plate=02.txt"]
    roles = [m["role"] for m in first["transcript"]]
    assert roles == ["system", "user", *["assistant", "tool"] * 4]
    assert first["transcript"][2]["tool_calls"][0]["function"]["name"] == "list_directory"
    assert first["transcript"][3]["content"] == listing
    run = json.loads((out / "run.json").read_text())
    assert (run["backend"], run["model"], run["episodes"]) == ("human", "ada", 2)

    report = subprocess.run([*ISG, "report", str(out)], capture_output=True, text=True,
                            timeout=300, env=_env())  # fmt: skip
    assert report.returncode == 0, report.stderr
    row = next(line for line in report.stdout.splitlines() if line.startswith("| 1 |"))
    assert "| human | ada | custom | 2 | 50.0% (" in row
    assert "Backend human: episodes played by a person with `isg play`" in report.stdout
    assert leaderboard([out]) in report.stdout


def test_another_player_or_a_bad_question_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _play([README_QUESTION, "--out", str(out), "--name", "ada"], "quit\n").returncode == 0
    done = _play(["--out", str(out), "--name", "bob"], "quit\n")
    assert done.returncode == 2
    assert "not 'bob' playing: choose another --out or --name" in done.stderr
    done = _play(["1.no_such_type.0", "--out", str(tmp_path / "x"), "--name", "bob"], "")
    assert done.returncode == 2 and "unknown question type" in done.stderr.lower()
    assert len(done.stderr.strip().splitlines()) == 1
    assert [r["outcome"] for r in read_records(out / "episodes.jsonl")] == ["no_answer"]


class _Pty:
    """A process on a pseudo-terminal: type lines, wait for text."""

    def __init__(self, argv: list[str]) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     env=_env(), cwd=ROOT, close_fds=True)  # fmt: skip
        os.close(slave)
        self.seen = ""

    def expect(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.seen, re.DOTALL)
            if match:
                self.seen = self.seen[match.end():]
                return match
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} in the terminal; got {self.seen[-2000:]!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"terminal closed before {pattern!r}: {self.seen!r}")
                self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            os.close(self.master)


def test_played_under_a_pseudo_terminal(tmp_path: Path) -> None:
    """The way a person plays: prompts, a multi-line `py`, an answer found from the listing,
    then Ctrl-D in the next episode."""
    out = tmp_path / "run"
    term = _Pty([*ISG, "play", README_QUESTION, "--episodes", "2", "--out", str(out),
                 "--name", "pty"])  # fmt: skip
    try:
        term.expect(r"Question: Is there a file or folder called `plate=16\.txt`.*isg \[0/20\]> ")
        term.type("ls date=20210923/dose=50\n")
        listing = term.expect(r"\[list_directory\]\n(.*?)isg \[1/20\]> ").group(1)
        term.type("py\n")
        term.expect(r"\.\.\. ")
        term.type("total = sum(range(10))\n")
        term.expect(r"\.\.\. ")
        term.type(f"print('total', total)\n{END_OF_CODE}\n")
        term.expect(r"\[run_python_code\]\n\[stdout\]\ntotal 45\n.*isg \[2/20\]> ")
        answer = "yes" if re.search(r"^plate=16\.txt$", listing, re.MULTILINE) else "no"
        term.type(f"answer {answer}\n")
        term.expect(r"Outcome: correct   score: 1\.0")
        term.expect(r"=== episode 2 of 2 ===.*isg \[0/20\]> ")
        term.type("\x04")  # Ctrl-D
        term.expect(r"end of input.*Outcome: no_answer.*\(2 episodes\)")
    finally:
        status = term.close()
    assert status == 0
    records = read_records(out / "episodes.jsonl")
    assert [r["outcome"] for r in records] == ["correct", "no_answer"]
    assert records[0]["tool_calls"][1]["arguments"]["code"] == (
        "total = sum(range(10))\nprint('total', total)"
    )
