"""``run_python_code``: model-written Python run in the sandbox over an episode's files.

:class:`PythonTool` is what every env's Python tool is made of: it starts the sandbox lazily
(:func:`isg_gym.tools.sandbox.get_sandbox`, or a sandbox object passed in), replays a persistent
session's earlier cells (:mod:`isg_gym.tools.sandbox.replay`), runs the code over the episode's
files (a directory, or a :class:`~isg_gym.tools.files.FileSource` where the sandbox takes one)
and formats the result within the output cap. A failure of the sandbox itself (it could not
start, it broke) raises :class:`ToolError` and sets :attr:`PythonTool.infra_error`: the
environment's failure, not the agent's, which evaluation counts apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from isg_gym.envs.actions import safe_text
from isg_gym.tools.arguments import ToolError, as_str, check_args
from isg_gym.tools.sandbox.replay import replay_program

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_SESSION_CHARS",
    "PYTHON_SESSIONS",
    "PythonTool",
    "check_sandbox",
    "format_result",
]

MAX_CODE_CHARS = 100_000
MAX_SESSION_CHARS = 1_000_000
PYTHON_SESSIONS = ("fresh", "persistent")


def check_sandbox(sandbox: Any) -> Any:
    """Validate an env's ``sandbox`` argument at construction: a backend name that can run
    here (an unknown name is a ValueError, one that cannot run a ``SandboxUnavailable``), or
    an object with ``run(code, files)``. Returns the name (``None`` means ``"auto"``) or the
    object."""
    if sandbox is None or isinstance(sandbox, str):
        from isg_gym.tools.sandbox import resolve_backend

        sandbox = "auto" if sandbox is None else sandbox
        resolve_backend(sandbox)
        return sandbox
    if not callable(getattr(sandbox, "run", None)):
        raise ValueError(
            "sandbox must be a backend name ('auto', 'bwrap', 'landlock', 'none') or an "
            f"object with run(code, files_dir) and close(), got {sandbox!r}"
        )
    return sandbox


class PythonTool:
    """The sandboxed Python tool of one env (runtime state: not pickled by the env).

    ``session``: ``"fresh"`` (every call starts from an empty namespace) or ``"persistent"``
    (the earlier successful cells of the episode are replayed before each call; see
    :class:`isg_gym.envs.env.ISGEnv` for the caveats). After each :meth:`run`,
    :attr:`files_read` holds the files the code opened (the sandbox's own report),
    :attr:`succeeded` whether the code ran without error, time-out or kill, :attr:`program`
    what ran (the code, after a persistent session's replayed cells) and :attr:`infra_error`
    whether the sandbox itself failed.
    """

    def __init__(
        self,
        sandbox: Any = "auto",
        limits: Any = None,
        session: str = "fresh",
        max_output_chars: int = 8000,
    ) -> None:
        if session not in PYTHON_SESSIONS:
            raise ValueError(f"python_session must be one of {PYTHON_SESSIONS}, got {session!r}")
        self.sandbox_spec = sandbox
        self.limits = limits
        self.session = session
        self.max_output_chars = int(max_output_chars)
        self.cells: list[str] = []  # successful cells of the episode (persistent session)
        self.files_read: tuple[str, ...] = ()
        self.infra_error: str | None = None
        self.succeeded = False  # the last call ran without error, time-out or kill
        self.program = ""  # the last call's program (with a persistent session's replay)
        self._sandbox: Any = None

    def reset(self) -> None:
        """Forget the episode's session (a new episode starts)."""
        self.cells = []

    def __call__(self, arguments: dict[str, Any], files: Any) -> str:
        """The tool handler: check ``{"code": ...}`` and run it over ``files``."""
        self.files_read, self.infra_error = (), None
        check_args(arguments, ("code",), ("code",))
        return self.run(as_str(arguments["code"], "code", MAX_CODE_CHARS), files)

    def run(self, code: str, files: Any) -> str:
        """Run ``code`` over ``files`` (``files`` may be a zero-argument callable giving them,
        called once the sandbox is up); the observation text. Raises :class:`ToolError`."""
        self.files_read, self.infra_error, self.succeeded, self.program = (), None, False, ""
        try:
            sandbox = self.sandbox()
        except Exception as exc:  # the backend may be missing or fail to start
            self.infra_error = f"the Python sandbox is unavailable: {exc}"
            raise ToolError(self.infra_error) from None
        program = code
        if self.session == "persistent" and self.cells:
            size = sum(map(len, self.cells)) + len(code)
            if size > MAX_SESSION_CHARS:
                raise ToolError(
                    f"the persistent Python session is too long ({size} characters of code with "
                    f"the earlier cells; at most {MAX_SESSION_CHARS})"
                )
            program = replay_program(self.cells, code)
        if callable(files):
            files = files()
        self.program = program
        try:
            result = sandbox.run(program, files)
        except Exception as exc:
            self.infra_error = f"the sandbox failed: {type(exc).__name__}: {exc}"
            raise ToolError(self.infra_error) from None
        self.succeeded = _succeeded(result)
        if self.session == "persistent" and self.succeeded:
            self.cells.append(code)
        self.files_read = tuple(getattr(result, "files_read", ()) or ())
        return format_result(result, self.max_output_chars)

    def sandbox(self) -> Any:
        """The sandbox, started on first use."""
        if self._sandbox is not None:
            return self._sandbox
        spec = self.sandbox_spec
        if spec is None or isinstance(spec, str):
            from isg_gym.tools.sandbox import SandboxLimits, get_sandbox

            limits = self.limits
            if limits is None:
                limits = SandboxLimits()
            elif isinstance(limits, Mapping):
                limits = SandboxLimits(**limits)
            self._sandbox = get_sandbox(spec or "auto", limits)
        elif hasattr(spec, "run"):
            self._sandbox = spec
        else:
            raise ToolError(f"sandbox must be a backend name or have run()/close(), got {spec!r}")
        return self._sandbox

    def close(self) -> None:
        """Stop the sandbox worker (idempotent; a later call starts a new one)."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None and hasattr(sandbox, "close"):
            with contextlib.suppress(Exception):
                sandbox.close()


def _succeeded(result: Any) -> bool:
    return not (
        getattr(result, "error", None)
        or getattr(result, "timed_out", False)
        or getattr(result, "killed", False)
    )


def format_result(result: Any, max_chars: int) -> str:
    """The sections of a sandbox result, all of them within ``max_chars``.

    Sections that fit are shown whole; the rest share what is left (short ones first), each
    cut with its own note: stdout, the value and the error keep their start, stderr keeps its
    end (where a traceback says what went wrong).
    """
    sections: list[tuple[str, str, bool]] = []  # (label, text, keep the end)
    for label, attr, keep_end in (
        ("stdout", "stdout", False),
        ("stderr", "stderr", True),
        ("value", "value", False),
        ("error", "error", False),
    ):
        raw = getattr(result, attr, None)
        if raw is None or raw == "":
            continue
        text = raw if isinstance(raw, str) else repr(raw) if attr == "value" else str(raw)
        sections.append((label, safe_text(text), keep_end))
    flags = []
    if getattr(result, "timed_out", False):
        flags.append("[timed out: the code ran past the time limit]")
    if getattr(result, "killed", False):
        flags.append("[killed: the code exceeded a resource limit]")
    if not sections and not flags:
        return "[no output]"
    overhead = sum(len(label) + 3 for label, _, _ in sections) + sum(map(len, flags))
    overhead += len(sections) + len(flags) - 1  # the newlines between the parts
    shares = _shares([len(text) for _, text, _ in sections], max_chars - overhead)
    parts = [
        f"[{label}]\n" + _clip(text, share, label, keep_end)
        for (label, text, keep_end), share in zip(sections, shares, strict=True)
    ]
    return "\n".join([*parts, *flags])


def _shares(sizes: list[int], available: int) -> list[int]:
    """Characters for each section: whole where it fits, an equal share of the rest else."""
    shares = [0] * len(sizes)
    remaining = max(0, available)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for done, i in enumerate(order):
        shares[i] = min(sizes[i], remaining // (len(sizes) - done))
        remaining -= shares[i]
    return shares


def _clip(text: str, limit: int, label: str, keep_end: bool) -> str:
    """``text`` in at most ``limit`` characters, a cut one with a note saying what is shown."""
    if len(text) <= limit:
        return text
    note = f"[{label} cut: the last {'9' * len(str(len(text)))} of {len(text)} characters]"
    room = max(0, limit - len(note) - 1)
    if keep_end:
        note = f"[{label} cut: the last {room} of {len(text)} characters]"
        return note + "\n" + text[len(text) - room :]
    return text[:room] + f"\n[{label} cut: the first {room} of {len(text)} characters]"
