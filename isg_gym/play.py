"""``isg play``: a person plays an ISG-v0 episode in the terminal, recorded like ``isg eval``.

The person sees what a model sees of the question (the question and the answer instructions;
``rules`` prints the answering conventions of the system prompt) and acts through short
commands that become the env's tool calls; the env's observations are printed as it returns
them. Each episode is appended to ``OUT/episodes.jsonl`` in the record format of ``isg eval``
(backend ``human``, model: the player's name), so ``isg report OUT`` puts the human runs on the
leaderboard beside the models. Reads plain lines from stdin, so it also works without a
terminal; end of input (Ctrl-D) ends the episode as no answer, recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import getpass
import json
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isg_gym.eval.cli import EvalCliError
from isg_gym.eval.policy import EpisodeState, Policy, calls_message
from isg_gym.eval.records import RECORDS_FILE, RecordWriter, build_record, read_records
from isg_gym.eval.runner import PUBLIC_INFO, RUN_FILE
from isg_gym.qa.base import QUESTION_VERSION
from isg_gym.qa.conventions import CONVENTIONS

BACKEND = "human"
END_OF_CODE = "."  # a line holding only this ends the code of `py`
COMMANDS = f"""\
Commands (each one is one step of the episode, except help, rules and quit):
  ls [PATH] [DEPTH] [PATTERN]  list a directory (default /, depth 1; PATTERN a glob, e.g. *.csv)
  cat PATH [N]                 show a file (N: the first N lines; -N: the last N)
  py [CODE]                    run Python in the sandbox (files at /data, the working directory);
                               `py` alone: type the code over several lines, then a line
                               holding only "{END_OF_CODE}"
  answer TEXT                  submit the final answer and end the episode ("not possible"
                               when the data cannot answer the question)
  rules                        the answering conventions (the models see them too)
  help                         this list
  quit                         give up: the episode is recorded as no answer (so does Ctrl-D)"""


@dataclass(frozen=True)
class Command:
    """What one input line asks for: a tool call for the env, text to print, code lines to
    read (``py`` alone), or the end of the episode."""

    call: dict[str, Any] | None = None
    message: str | None = None
    read_code: bool = False
    quit: bool = False


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: take the words as typed
        return text.split()


def _integer(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[+-]?\d{1,9}", text) else None


def parse_command(line: str) -> Command:
    """The :class:`Command` of one input line (never raises)."""
    stripped = line.strip()
    if not stripped:
        return Command()
    head, _, rest = stripped.partition(" ")
    head, rest = head.lower(), rest.strip()
    if head in ("quit", "exit", "q"):
        return Command(quit=True)
    if head in ("help", "?", "h"):
        return Command(message=COMMANDS)
    if head == "rules":
        return Command(message=CONVENTIONS)
    if head == "ls":
        return _ls(_words(rest))
    if head == "cat":
        return _cat(_words(rest))
    if head == "py":
        if not rest:
            return Command(read_code=True)
        return Command(call={"name": "run_python_code", "arguments": {"code": rest}})
    if head == "answer":
        if not rest:
            return Command(message='usage: answer TEXT (e.g. `answer 42`, `answer not possible`)')
        return Command(call={"name": "final_answer", "arguments": {"answer": rest}})
    return Command(message=f"unknown command {head!r}; type `help` for the commands")


def _ls(words: list[str]) -> Command:
    if len(words) > 3:
        return Command(message="usage: ls [PATH] [DEPTH] [PATTERN]")
    arguments: dict[str, Any] = {"path": words[0] if words else "/"}
    if len(words) > 1:
        depth = _integer(words[1])
        if depth is None:
            return Command(message=f"ls: DEPTH must be an integer, got {words[1]!r}")
        arguments["depth"] = depth
    if len(words) > 2:
        arguments["pattern"] = words[2]
    return Command(call={"name": "list_directory", "arguments": arguments})


def _cat(words: list[str]) -> Command:
    if not 1 <= len(words) <= 2:
        return Command(message="usage: cat PATH [N] (N: the first N lines; -N: the last N)")
    arguments: dict[str, Any] = {"path": words[0]}
    if len(words) == 2:
        lines = _integer(words[1])
        if lines is None or lines == 0:
            return Command(message=f"cat: N must be a non-zero integer, got {words[1]!r}")
        arguments["head" if lines > 0 else "tail"] = abs(lines)
    return Command(call={"name": "read_text_file", "arguments": arguments})


class HumanPlayer(Policy):
    """The policy of a person: its name and model are what the records and run.json show."""

    name = BACKEND

    def __init__(self, player: str) -> None:
        self.model = player


@dataclass
class Terminal:
    """Where the episode talks to the person: ``read(prompt)`` returns a line or None at the end
    of input; ``write(text)`` prints a block. ``prompts``: show a prompt before each line.
    Without prompts (input from a file or a pipe) each line read is echoed after the prompt,
    so the output reads as a transcript. ``ended`` becomes True at the end of input."""

    read: Callable[[str], str | None]
    write: Callable[[str], None]
    prompts: bool = True
    ended: bool = False

    @classmethod
    def stdio(cls) -> Terminal:
        interactive = sys.stdin.isatty()
        if interactive:
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (line editing and history for input())

        def read(prompt: str) -> str | None:
            try:
                return input(prompt) if interactive else _readline(prompt)
            except EOFError:
                return None

        def _readline(prompt: str) -> str | None:
            line = sys.stdin.readline()
            return None if line == "" else line.rstrip("\n")

        def write(text: str) -> None:
            print(text, flush=True)

        return cls(read, write, interactive)

    def ask(self, prompt: str) -> str | None:
        line = None if self.ended else self.read(prompt if self.prompts else "")
        self.ended = line is None
        if line is not None and not self.prompts:
            self.write(prompt + line)
        return line


def play_episode(
    env: Any, player: HumanPlayer, index: int, question_id: str, terminal: Terminal
) -> EpisodeState:
    """Play ``question_id`` on ``env`` (made with ``privileged_info=True``, so the record has the
    gold answer; the person sees only the public info) until an answer, the step limit, quit or
    the end of input; the finished episode."""
    observation, info = env.reset(options={"question": question_id})
    public = {k: v for k, v in info.items() if k in PUBLIC_INFO}
    gold = {k: v for k, v in info.items() if k not in PUBLIC_INFO}
    episode = EpisodeState(index, question_id, env, observation, public, gold)
    player.begin(episode)
    terminal.write(f"{public['prompt']['user']}\n\n{_brief(env.max_steps)}")
    while not episode.done:
        try:
            command = _next_command(terminal, f"isg [{len(episode.steps)}/{env.max_steps}]> ")
        except KeyboardInterrupt:  # Ctrl-C cancels the line (or the code) being typed
            terminal.write("^C (cancelled; `quit` ends the episode)")
            continue
        if terminal.ended:
            terminal.write("(end of input: the episode ends without an answer)")
            break
        if command.quit:
            terminal.write("(quit: the episode ends without an answer)")
            break
        if command.message is not None:
            terminal.write(command.message)
        elif command.call is not None:
            _step(episode, command.call, terminal)
    return episode


def _next_command(terminal: Terminal, prompt: str) -> Command:
    """The next command typed, with the code of a multi-line ``py`` read in."""
    line = terminal.ask(prompt)
    if line is None:
        return Command(quit=True)
    command = parse_command(line)
    if not command.read_code:
        return command
    code = _read_code(terminal)
    if code is None:
        return Command(quit=True)
    if not code.strip():
        return Command(message="(no code: nothing run)")
    return Command(call={"name": "run_python_code", "arguments": {"code": code}})


def _brief(max_steps: int) -> str:
    return (
        f"You have {max_steps} steps. Commands: ls [PATH] [DEPTH], cat PATH [N], py (code ending "
        f'with a line holding only "{END_OF_CODE}"), answer TEXT, rules, help, quit.'
    )


def _read_code(terminal: Terminal) -> str | None:
    """Code lines up to a line holding only :data:`END_OF_CODE` (None at the end of input)."""
    lines: list[str] = []
    while True:
        line = terminal.ask("... ")
        if line is None:
            return None
        if line.strip() == END_OF_CODE:
            return "\n".join(lines)
        lines.append(line)


def _step(episode: EpisodeState, call: dict[str, Any], terminal: Terminal) -> None:
    """One env step with the person's call, logged in the transcript as an assistant tool call
    answered by a tool message; the env's observation is printed as it is."""
    episode.model_calls += 1
    message = calls_message([call], len(episode.steps) + 1)
    episode.messages.append(message)
    observation, _, _, _, info = episode.step([call])
    results = info.get("tool_results") or []
    content = results[0]["output"] if results else observation
    episode.messages.append(
        {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": content}
    )
    terminal.write(observation)


def ending(record: dict[str, Any]) -> str:
    """What the person is told when the episode is over: outcome, score, explanation, the gold
    answer and the question id."""
    score = record.get("score") or {}
    value = score.get("value")
    lines = [
        "",
        f"Outcome: {record['outcome']}   score: {'n/a' if value is None else value}",
    ]
    if score.get("explanation"):
        lines.append(f"Explanation: {score['explanation']}")
    if record.get("error"):
        lines.append(f"Infrastructure failure (not counted as an answer): {record['error']}")
    why = f" (unanswerable: {record['reason']})" if record.get("reason") else ""
    lines.append(f"Gold answer: {record.get('gold')}{why}")
    lines.append(
        f"Question {record['question_id']}; {record['steps']} steps, {record['wall_s']:.0f} s."
    )
    return "\n".join(lines)


# ------------------------------------------------------------------ the run directory


def default_player() -> str:
    try:
        return getpass.getuser() or "human"
    except (KeyError, OSError):  # no user name in the environment or the password database
        return "human"


def check_run_dir(out: Path, player: str) -> list[dict[str, Any]]:
    """The records already in ``out``; an error when they are not this player's human run."""
    records = read_records(out / RECORDS_FILE)
    run_file = out / RUN_FILE
    if not records:
        return records
    try:
        run = json.loads(run_file.read_text(encoding="utf-8")) if run_file.exists() else {}
    except ValueError:
        run = {}
    if run.get("backend") != BACKEND or run.get("model") != player:
        raise EvalCliError(
            f"{out} holds {len(records)} episodes of backend {run.get('backend')!r}, model "
            f"{run.get('model')!r}, not {player!r} playing: choose another --out or --name"
        )
    if any(r.get("question_version") not in (None, QUESTION_VERSION) for r in records):
        raise EvalCliError(f"{out} holds episodes of another question generator version")
    return records


def write_run_file(
    out: Path, player: str, split: str, records: list[dict[str, Any]], env_kwargs: dict[str, Any]
) -> None:
    """run.json of a human run: the split when every episode played so far is one of its
    questions, else ``custom``."""
    from isg_gym.eval.splits import resolve_split

    started = None
    if (out / RUN_FILE).exists():
        try:
            started = json.loads((out / RUN_FILE).read_text(encoding="utf-8")).get("started")
        except ValueError:
            started = None
    members = set(resolve_split(split))
    run = {
        "backend": BACKEND,
        "model": player,
        "split": split if all(r["question_id"] in members for r in records) else "custom",
        "episodes": len(records),
        "concurrency": 1,
        "env_kwargs": env_kwargs,
        "question_version": QUESTION_VERSION,
        "started": started or dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    (out / RUN_FILE).write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")


def pick_question(target: str | None, split: str, played: set[str]) -> str:
    """The question to play: ``target`` (a question id, or a repository number: the question
    the split recipe picks there), else the first question of ``split`` not played yet."""
    from isg_gym.eval.splits import resolve_split, split_question
    from isg_gym.qa.sampling import question_from_id

    if target is None:
        for qid in resolve_split(split):
            if qid not in played:
                return qid
        raise EvalCliError(f"every question of {split} is played in this run directory")
    if target.isdigit():
        return split_question(int(target))
    question_from_id(target)  # a ValueError names what is wrong with the id
    return target


def cmd_play(args: argparse.Namespace) -> None:
    from isg_gym.envs.env import ISGEnv

    player = args.name or default_player()
    if not player.strip():
        raise EvalCliError("--name must not be empty")
    if args.max_steps < 1 or args.episodes < 1:
        raise EvalCliError("--max-steps and --episodes must be positive integers")
    out = Path(args.out or f"runs/human-{re.sub(r'[^A-Za-z0-9_.-]+', '_', player)}")
    records = check_run_dir(out, player)
    env_kwargs = {"max_steps": args.max_steps, "sandbox": args.sandbox}
    try:
        env = ISGEnv(**env_kwargs, privileged_info=True)
    except ValueError as exc:
        raise EvalCliError(str(exc)) from None
    terminal = Terminal.stdio()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with RecordWriter(out / RECORDS_FILE) as writer:
            for number in range(args.episodes):
                try:
                    target = args.target if number == 0 else None
                    qid = pick_question(target, args.split, {r["question_id"] for r in records})
                except ValueError as exc:
                    raise EvalCliError(str(exc)) from None
                if args.episodes > 1:
                    terminal.write(f"\n=== episode {number + 1} of {args.episodes} ===")
                try:
                    episode = play_episode(env, HumanPlayer(player), len(records), qid, terminal)
                except KeyboardInterrupt:  # during a tool call: nothing half-done is recorded
                    raise EvalCliError("interrupted; the episode was not recorded") from None
                record = build_record(episode)
                writer.write(record)
                records.append(record)
                write_run_file(out, player, args.split, records, env_kwargs)
                terminal.write(ending(record))
                if terminal.ended:
                    break
        terminal.write(
            f"Recorded in {out / RECORDS_FILE} ({len(records)} episode"
            f"{'' if len(records) == 1 else 's'}); "
            f"`isg report {out}` shows the run on the leaderboard."
        )
    finally:
        env.close()


def add_command(sub: Any) -> None:
    """Register ``isg play`` on the ``isg`` parser's subparsers."""
    s = sub.add_parser(
        "play",
        help="play an episode yourself in the terminal (recorded for the leaderboard)",
        description="Play ISG-v0 episodes with short commands for the tools; each episode is "
        "appended to OUT/episodes.jsonl like `isg eval` (backend human), so `isg report OUT` "
        "shows a human baseline.",
    )
    s.add_argument("target", nargs="?", default=None, metavar="SEED|QUESTION_ID",
                   help="a repository number (its split question) or a question id; default: "
                   "the next question of --split not played in OUT")  # fmt: skip
    s.add_argument("--name", default=None, help="the player's name (default: your user name)")
    s.add_argument("--out", default=None, metavar="DIR",
                   help="run directory to append to (default runs/human-NAME)")  # fmt: skip
    s.add_argument("--split", default="isg-500", metavar="NAME",
                   help="where the next question comes from (default isg-500)")  # fmt: skip
    s.add_argument("--episodes", type=int, default=1, metavar="N", help="episodes to play")
    s.add_argument("--max-steps", type=int, default=20, metavar="N",
                   help="env steps per episode (default 20, as isg eval)")  # fmt: skip
    s.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "landlock", "none"),
                   help="backend of run_python_code (default auto, as isg eval)")  # fmt: skip
    s.set_defaults(run=cmd_play)
