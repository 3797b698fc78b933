"""Filesystem tools over a virtual :class:`~isg_gym.repository.Repository` (no disk access).

Both functions return the text shown to the agent and raise :class:`ToolError` (a message meant
for the agent) for bad paths or arguments.
"""

from __future__ import annotations

import fnmatch

from isg_gym.repository import Repository, RepositoryPathError, canonical_path

MOUNT = "data"  # the sandbox sees the repository at /data; accept that spelling here too
DEFAULT_MAX_ENTRIES = 200
DEFAULT_MAX_CHARS = 8000
MAX_DEPTH = 10


class ToolError(ValueError):
    """A tool call that cannot be carried out; the message is shown to the agent."""


def resolve(repo: Repository, path: str) -> str:
    """Canonical repository path of ``path`` ('' is the root); '/data/x' is accepted as 'x'."""
    try:
        canonical = canonical_path(path)
    except RepositoryPathError as exc:
        raise ToolError(str(exc)) from None
    head = canonical.split("/", 1)[0]
    if head == MOUNT and not repo.is_dir(MOUNT) and not repo.is_file(MOUNT):
        canonical = canonical[len(MOUNT) + 1 :]
    return canonical


def _display(path: str) -> str:
    return "/" + path


def list_directory(
    repo: Repository,
    path: str = "/",
    depth: int = 1,
    pattern: str | None = None,
    max_entries: int = DEFAULT_MAX_ENTRIES,
) -> str:
    """Entries under ``path`` to ``depth`` levels, directories with a trailing ``/``.

    With ``pattern`` only entries whose name or relative path matches the glob are listed.
    At most ``max_entries`` are shown; a final note says how many were left out.
    """
    root = resolve(repo, path)
    if not repo.is_dir(root):
        if repo.is_file(root):
            raise ToolError(f"{_display(root)} is a file, not a directory; use read_text_file")
        raise ToolError(f"no directory {_display(root)}; list '/' to see what exists")
    if not 1 <= depth <= MAX_DEPTH:
        raise ToolError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
    shown: list[str] = []
    total = 0

    def walk(rel_dir: str, level: int) -> None:
        nonlocal total
        for entry in repo.listdir(f"{root}/{rel_dir}" if root else rel_dir):
            rel = f"{rel_dir}{entry}"
            name = entry.rstrip("/")
            if pattern is None or any(
                fnmatch.fnmatchcase(text, pattern) for text in (name, rel.rstrip("/"))
            ):
                total += 1
                if len(shown) < max_entries:
                    shown.append(rel)
            if entry.endswith("/") and level < depth:
                walk(rel, level + 1)

    walk("", 1)
    header = f"{_display(root)} (depth {depth}" + (f", pattern {pattern!r}" if pattern else "")
    header += f"): {total} entr{'y' if total == 1 else 'ies'}"
    lines = [header, *shown]
    if total > len(shown):
        lines.append(
            f"[{total - len(shown)} more entries not shown; list a subdirectory, use a smaller "
            "depth or a pattern, or run_python_code with os.walk]"
        )
    return "\n".join(lines)


def read_text_file(
    repo: Repository,
    path: str,
    head: int | None = None,
    tail: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The file's text as served (xlsx rendered tab-separated), cut to ``max_chars``.

    ``head`` / ``tail`` select the first / last lines. A cut text ends with a note that says
    which lines were shown and how to read the rest.
    """
    target = resolve(repo, path)
    if not repo.is_file(target):
        if repo.is_dir(target):
            raise ToolError(f"{_display(target)} is a directory; use list_directory")
        raise ToolError(f"no file {_display(target)}; use list_directory to see what exists")
    if head is not None and tail is not None:
        raise ToolError("give `head` or `tail`, not both")
    for name, value in (("head", head), ("tail", tail)):
        if value is not None and value < 0:
            raise ToolError(f"`{name}` must be a non-negative integer, got {value}")
    text = repo.read_text(target)
    lines = text.splitlines(keepends=True)
    first, last = 0, len(lines)
    if head is not None:
        last = min(head, len(lines))
    elif tail is not None:
        first = max(0, len(lines) - tail)
    selected = lines[first:last]
    out: list[str] = []
    used = 0
    for line in selected:
        if used + len(line) > max_chars:
            break
        out.append(line)
        used += len(line)
    if len(out) < len(selected):
        if not out and selected:  # a single very long line: show its start
            out.append(selected[0][:max_chars] + "\n")
        shown_to = first + len(out)
        body = "".join(out)
        if not body.endswith("\n"):
            body += "\n"
        return body + (
            f"[truncated: showing lines {first + 1}-{shown_to} of {len(lines)} "
            f"({len(text)} characters); read the rest with `tail`/`head`, or with "
            f"run_python_code, e.g. open('{target}').read()]"
        )
    body = "".join(out)
    if head is not None or tail is not None:
        body += f"[lines {first + 1}-{last} of {len(lines)}]"
    return body
