"""Filesystem tools over a virtual :class:`~isg_gym.repository.Repository` (no disk access).

Both tools return the text shown to the agent and raise :class:`ToolError` (a message meant
for the agent) for bad paths or arguments. Each caps its own output: the text returned, its
truncation note included, is at most ``max_chars`` characters, and the note says exactly what
was left out and how to read it (``tail=`` for the next lines of a file, a deeper ``path`` for a
listing), so that nothing downstream has to cut it again.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

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


def _number(value: int) -> str:
    """An integer for a message (a huge one by its size: str() refuses over 4,300 digits)."""
    return str(value) if abs(value) < 10**30 else f"an integer of {value.bit_length()} bits"


def existing_files(repo: Repository, paths: Iterable[object]) -> list[str]:
    """The sorted distinct ``paths`` that are files of ``repo`` (a failed open of a missing or
    invalid path, as a sandbox's audit hook reports it, is not a read)."""
    found = set()
    for path in paths:
        if not isinstance(path, str):
            continue
        try:
            if repo.is_file(path):
                found.add(canonical_path(path))
        except (RepositoryPathError, ValueError):
            continue
    return sorted(found)


def _walk(
    repo: Repository, root: str, rel_dir: str, level: int, depth: int, pattern: str | None,
    matched: list[str],
) -> None:  # fmt: skip
    """Append the entries under ``rel_dir`` (depth first, in listing order) that match
    ``pattern`` to ``matched``. A module function, not a closure: a closure that calls itself is
    a reference cycle, which kept the repository alive until the cyclic collector ran."""
    for entry in repo.listdir(f"{root}/{rel_dir}" if root else rel_dir):
        rel = f"{rel_dir}{entry}"
        name = entry.rstrip("/")
        if pattern is None or any(
            fnmatch.fnmatchcase(text, pattern) for text in (name, rel.rstrip("/"))
        ):
            matched.append(rel)
        if entry.endswith("/") and level < depth:
            _walk(repo, root, rel, level + 1, depth, pattern, matched)


def list_directory(
    repo: Repository,
    path: str = "/",
    depth: int = 1,
    pattern: str | None = None,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """Entries under ``path`` to ``depth`` levels, directories with a trailing ``/``.

    With ``pattern`` only entries whose name or relative path matches the glob are listed.
    At most ``max_entries`` entries and ``max_chars`` characters (the note included) are shown;
    a final note says how many entries were left out and which directory to list next. An entry
    is shown whole or not at all.
    """
    root = resolve(repo, path)
    if not repo.is_dir(root):
        if repo.is_file(root):
            raise ToolError(f"{_display(root)} is a file, not a directory; use read_text_file")
        raise ToolError(f"no directory {_display(root)}; list '/' to see what exists")
    if not 1 <= depth <= MAX_DEPTH:
        raise ToolError(f"depth must be between 1 and {MAX_DEPTH}, got {_number(depth)}")
    matched: list[str] = []
    _walk(repo, root, "", 1, depth, pattern, matched)
    total = len(matched)
    shown_pattern = repr(pattern) if pattern is None or len(pattern) <= 80 else \
        repr(pattern[:80]) + "..."  # fmt: skip
    header = f"{_display(root)} (depth {depth}" + (f", pattern {shown_pattern}" if pattern else "")
    header += f"): {total} entr{'y' if total == 1 else 'ies'}"
    shown = matched[:max_entries]
    used = len(header) + sum(len(entry) + 1 for entry in shown)
    while True:
        note = _listing_note(root, matched, len(shown), max_chars) if len(shown) < total else ""
        size = used + (len(note) + 1 if note else 0)
        if size <= max_chars or not shown:
            break
        used -= len(shown.pop()) + 1
    return "\n".join([header, *shown, *([note] if note else [])])


def _listing_note(root: str, matched: list[str], shown: int, max_chars: int) -> str:
    """What a cut listing left out, and the directory to list for the first entry not shown."""
    parent = matched[shown].rstrip("/").rpartition("/")[0]
    where = _display(f"{root}/{parent}" if root and parent else root or parent)
    target = f"path={where!r}" if len(where) <= 200 else "a subdirectory"
    note = (
        f"[{len(matched) - shown} more entries not shown ({shown} of {len(matched)} listed); "
        f"to see the next ones list {target}, or use a smaller depth or a pattern, or "
        "run_python_code with os.walk]"
    )
    if len(note) <= max_chars // 2:
        return note
    short = f"[{len(matched) - shown} more entries not shown; list {target}]"
    return short if len(short) <= max_chars // 2 else f"[{len(matched) - shown} more not shown]"


def read_text_file(
    repo: Repository,
    path: str,
    head: int | None = None,
    tail: int | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The file's text as served (xlsx rendered tab-separated), at most ``max_chars`` characters.

    ``head`` / ``tail`` select the first / last lines. A cut text ends with a note, counted in
    ``max_chars``, that says which lines were shown and gives the ``tail`` value that reads on
    from the first line not shown; only whole lines are shown, except a first line longer than
    the whole budget, whose start is shown.
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
            raise ToolError(f"`{name}` must be a non-negative integer, got {_number(value)}")
    text = repo.read_text(target)
    lines = text.splitlines(keepends=True)
    first, last = 0, len(lines)
    if head is not None:
        last = min(head, len(lines))
    elif tail is not None:
        first = max(0, len(lines) - tail)
    selected = lines[first:last]
    body = "".join(selected)
    if head is not None or tail is not None:
        note = f"[lines {first + 1}-{last} of {len(lines)}]"
        joined = body + ("" if not body or body.endswith("\n") else "\n") + note
        if len(joined) <= max_chars:
            return joined
    elif len(body) <= max_chars:
        return body
    # Cut: fill with whole lines, leaving room for the note, then drop lines until it fits.
    small = max_chars // 2
    reserve = len(_read_note(target, first, last, len(lines), len(text), None, small))
    budget = max_chars - reserve - 8
    out: list[str] = []
    used = 0
    for line in selected:
        if used + len(line) > budget:
            break
        out.append(line)
        used += len(line)
    while out:
        note = _read_note(target, first, first + len(out), len(lines), len(text), None, small)
        if used + len(note) + 1 <= max_chars:
            return "".join(out) + ("" if out[-1].endswith("\n") else "\n") + note
        used -= len(out.pop())
    # Not even the first line fits: show its start.
    line = selected[0].rstrip("\r\n")
    note = _read_note(target, first, first, len(lines), len(text), (len(line), len(line)), small)
    keep = max(0, max_chars - len(note) - 1)
    note = _read_note(target, first, first, len(lines), len(text), (keep, len(line)), small)
    return line[:keep] + "\n" + note


def _read_note(
    target: str,
    first: int,
    shown_to: int,
    n_lines: int,
    n_chars: int,
    partial: tuple[int, int] | None,
    compact_over: int = DEFAULT_MAX_CHARS,
) -> str:
    """The note of a cut file: the lines shown (or the start of one line), and how to read on.

    ``partial``: (characters shown, characters in the line) when only the start of line
    ``first + 1`` is shown. A note longer than ``compact_over`` characters is replaced by a
    short one (small output caps).
    """
    where = f"/data/{target}" if len(target) <= 200 else "the file"
    if partial is not None:
        shown = f"the first {partial[0]} of the {partial[1]} characters of line {first + 1}"
        how = f"read that line whole with run_python_code (open('{where}'))"
    else:
        shown = f"lines {first + 1}-{shown_to}"
        how = f"read on from line {shown_to + 1} with tail={n_lines - shown_to}, or open " \
            f"{where} with run_python_code"  # fmt: skip
    note = f"[truncated: showing {shown} of {n_lines} ({n_chars} characters); {how}]"
    if len(note) <= compact_over:
        return note
    if partial is not None:
        return f"[truncated: showing {partial[0]} characters of line {first + 1} of {n_lines}]"
    rest = n_lines - shown_to
    return f"[truncated: showing lines {first + 1}-{shown_to} of {n_lines}; tail={rest} reads on]"
