"""Persistent Python sessions by replay: the program text sent to the sandbox.

The sandbox forks a fresh child per call, so a "persistent" session re-executes the episode's
earlier successful cells (output discarded) before the new one. This module only builds program
text; it runs inside the sandbox worker, never in the env's process.
"""

from __future__ import annotations

from collections.abc import Sequence

# Replays a persistent session's earlier cells in the new call's namespace, output discarded.
# It is sent as the first line of the program (one line, so the new cell keeps its trailing
# expression and is off by exactly one line in tracebacks).
_REPLAY = """\
def __isg_replay__(cells, namespace):
    import contextlib, io, sys
    for number, source in enumerate(cells, 1):
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                exec(compile(source, f"<earlier cell {number}>", "exec"), namespace)
        except BaseException as exc:
            print(f"[persistent session] replaying earlier cell {number} failed: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
"""


def replay_program(history: Sequence[str], code: str) -> str:
    """The program run for ``code`` in a persistent session: one line that re-executes the
    earlier cells ``history`` (stdout/stderr discarded), then ``code`` unchanged."""
    if not history:
        return code
    head = f"exec({_REPLAY!r}); __isg_replay__({list(history)!r}, globals()); del __isg_replay__"
    return f"{head}\n{code}"
