"""A process-wide, reference-counted cache of materialised repositories.

The sandbox needs a repository on disk. Writing one costs from milliseconds to seconds, so every
environment in a process shares one read-only copy per repository seed (files ``0444``,
directories ``0555``, in a randomly named ``isg-repo-*`` temporary directory):

- :func:`acquire` writes the repository on first use and adds a reference;
- :func:`release` drops one; the directory is removed when the last reference goes;
- whatever is left at interpreter exit is removed by an :mod:`atexit` hook (a safety net for
  environments that were never closed).

A forked child starts with an empty cache: it never removes its parent's directories, and it
writes its own copy when it needs one. Nothing here is pickled; an environment holds a
:class:`Leases` object, which is runtime state.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass

from isg_gym.repository import Repository

__all__ = ["Leases", "acquire", "cached", "clear", "refcount", "release", "remove_tree"]

FILE_MODE = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH  # 0444
DIR_MODE = 0o555
PREFIX = "isg-repo-"


@dataclass
class _Entry:
    path: str
    refs: int
    key: str = ""  # the Repository.key written there: one seed, one Spec per process at a time


_lock = threading.RLock()
_entries: dict[int, _Entry] = {}
_owner_pid = os.getpid()


def _check_pid() -> None:
    """Forget entries inherited over a fork (they belong to the parent; never remove them)."""
    global _owner_pid
    if os.getpid() != _owner_pid:
        _entries.clear()
        _owner_pid = os.getpid()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.RLock()  # the parent's lock may have been held by another thread
    _check_pid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def remove_tree(path: str) -> None:
    """Remove a (read-only) materialised repository; missing is fine."""
    if not os.path.isdir(path):
        return
    for root, dirs, _ in os.walk(path):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(root, name), stat.S_IRWXU)
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


def _write(repo: Repository) -> str:
    path = tempfile.mkdtemp(prefix=PREFIX)
    try:
        repo.materialize(path)
        for root, dirs, files in os.walk(path):
            for name in files:
                os.chmod(os.path.join(root, name), FILE_MODE)
            for name in dirs:
                os.chmod(os.path.join(root, name), DIR_MODE)
        os.chmod(path, DIR_MODE)
    except BaseException:
        remove_tree(path)
        raise
    return path


def acquire(repo: Repository) -> str:
    """The repository's shared read-only directory, with one more reference to it.

    Raises :class:`OSError` when it cannot be written. Materialisation runs under the cache lock,
    so concurrent threads asking for the same repository write it once.
    """
    seed = repo.seed
    with _lock:
        _check_pid()
        entry = _entries.get(seed)
        if entry is not None and not os.path.isdir(entry.path):
            del _entries[seed]  # removed behind our back: write it again
            entry = None
        if entry is None:
            entry = _Entry(_write(repo), 0, repo.key)
            _entries[seed] = entry
        elif entry.key != repo.key:  # e.g. a cached LLM-built Spec beside the procedural one
            raise OSError(
                f"repository {seed} is materialised in this process from another Spec; two "
                "Specs of one seed (procedural and cached, or two models) cannot be open at once"
            )
        entry.refs += 1
        return entry.path


def release(seed: int, path: str | None = None) -> None:
    """Drop one reference to ``seed``'s directory (``path``, when given, must match: a stale
    reference to a directory that was since replaced is ignored)."""
    with _lock:
        _check_pid()
        entry = _entries.get(seed)
        if entry is None or (path is not None and entry.path != path):
            return
        entry.refs -= 1
        if entry.refs <= 0:
            del _entries[seed]
            remove_tree(entry.path)


def refcount(seed: int) -> int:
    """How many references this process holds to ``seed``'s directory (0 when not cached)."""
    with _lock:
        _check_pid()
        entry = _entries.get(seed)
        return 0 if entry is None else entry.refs


def cached() -> dict[int, str]:
    """``{seed: directory}`` of the repositories materialised in this process."""
    with _lock:
        _check_pid()
        return {seed: e.path for seed, e in _entries.items()}


def clear() -> None:
    """Remove every directory of this process, whoever still references it (used at exit)."""
    with _lock:
        _check_pid()
        entries = list(_entries.values())
        _entries.clear()
    for entry in entries:
        remove_tree(entry.path)


atexit.register(clear)


class Leases:
    """One owner's references (an environment's): at most ``keep`` repositories, least recently
    used released first. Plain runtime state; safe to use from a ``weakref.finalize`` callback
    (it holds no reference to its owner)."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = max(1, int(keep))
        self._held: OrderedDict[int, str] = OrderedDict()

    def get(self, repo: Repository) -> str:
        """The repository's directory, acquiring it on first use by this owner."""
        seed = repo.seed
        path = self._held.get(seed)
        if path is not None and os.path.isdir(path):
            self._held.move_to_end(seed)
            return path
        if path is not None:
            del self._held[seed]
            release(seed, path)
        path = acquire(repo)
        self._held[seed] = path
        while len(self._held) > self.keep:
            old_seed, old_path = self._held.popitem(last=False)
            release(old_seed, old_path)
        return path

    def held(self) -> dict[int, str]:
        return dict(self._held)

    def release_all(self) -> None:
        """Drop every reference (idempotent)."""
        while self._held:
            seed, path = self._held.popitem(last=False)
            release(seed, path)
