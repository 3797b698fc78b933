"""File sources: the read-only trees the sandbox shows model code at ``/data``.

A :class:`FileSource` names its files with relative ``/``-separated paths (``""`` is the root)
and generates their bytes on demand. :class:`~isg_gym.repository.Repository` is one;
:class:`DictFiles` is an in-memory one. The sandbox serves a source through a lazy read-only
view (:mod:`isg_gym.tools.sandbox.lazyview`) or, where that cannot run, writes it to disk
with :func:`write_source`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Protocol, runtime_checkable

__all__ = ["DictFiles", "FileSource", "file_size", "is_file_source", "walk", "write_source"]

FILE_MODE = 0o444
DIR_MODE = 0o555


@runtime_checkable
class FileSource(Protocol):
    """A read-only tree of files, generated on demand.

    ``key`` is the source's identity: two sources with the same key hold the same bytes (the
    sandbox shows a key once and reuses what it served). Paths are relative and ``/``-separated;
    ``""`` is the root. ``listdir`` gives the names of a directory's children, directories with a
    trailing ``/``. ``file_size`` may generate the file's bytes to measure them.
    """

    @property
    def key(self) -> str: ...

    def is_dir(self, path: str) -> bool: ...

    def is_file(self, path: str) -> bool: ...

    def listdir(self, path: str = "") -> list[str]: ...

    def read_bytes(self, path: str) -> bytes: ...

    def file_size(self, path: str) -> int: ...


def is_file_source(obj: object) -> bool:
    """True for an object with every :class:`FileSource` member (a str or path never is)."""
    return not isinstance(obj, str | bytes | os.PathLike) and isinstance(obj, FileSource)


def file_size(source: FileSource, path: str) -> int:
    """The size of ``path`` in bytes (through ``source.file_size``)."""
    return int(source.file_size(path))


def walk(source: FileSource, top: str = "") -> Iterator[str]:
    """Every file path under ``top`` (depth first, in listing order), without recursion.

    Raises ValueError for a listed name that is not one plain path component."""
    stack = [top]
    while stack:
        directory = stack.pop()
        prefix = f"{directory}/" if directory else ""
        children = source.listdir(directory)
        for name in children:
            bare = name[:-1] if name.endswith("/") else name
            if bare in ("", ".", "..") or "/" in bare or "\x00" in bare:
                raise ValueError(f"{source.key}: bad name {name!r} in directory {directory!r}")
        stack += [prefix + name[:-1] for name in reversed(children) if name.endswith("/")]
        yield from (prefix + name for name in children if not name.endswith("/"))


def write_source(source: FileSource, directory: str | os.PathLike[str]) -> int:
    """Write every file of ``source`` under ``directory`` (which must exist): files ``0444``,
    directories ``0555`` once filled. Returns the number of files written."""
    root = os.fspath(directory)
    made: set[str] = set()
    count = 0
    for path in walk(source):
        parts = path.split("/")
        for depth in range(1, len(parts)):  # parents before children
            sub = "/".join(parts[:depth])
            if sub not in made:
                os.mkdir(os.path.join(root, sub))
                made.add(sub)
        target = os.path.join(root, path)
        with open(target, "xb") as fh:
            fh.write(source.read_bytes(path))
        os.chmod(target, FILE_MODE)
        count += 1
    for sub in sorted(made, key=lambda d: d.count("/"), reverse=True):
        os.chmod(os.path.join(root, sub), DIR_MODE)
    return count


class DictFiles:
    """An in-memory :class:`FileSource`: ``DictFiles(key, {"dir/a.csv": b"...", ...})``.

    Paths must be relative, ``/``-separated, without empty, ``.`` or ``..`` parts, NUL bytes or
    backslashes; a path cannot be both a file and a directory.
    """

    def __init__(self, key: str, files: Mapping[str, bytes]) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError(f"DictFiles key must be a non-empty string, got {key!r}")
        self._key = key
        self._files: dict[str, bytes] = {}
        children: dict[str, set[str]] = {"": set()}
        for path, data in files.items():
            _check_path(path)
            if not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError(f"DictFiles: {path!r} must map to bytes, got {type(data).__name__}")
            self._files[path] = bytes(data)
            parts = path.split("/")
            for depth in range(len(parts)):
                parent = "/".join(parts[:depth])
                child = parts[depth] + ("/" if depth < len(parts) - 1 else "")
                children.setdefault(parent, set()).add(child)
        clash = sorted(set(self._files) & set(children))
        if clash:
            raise ValueError(f"DictFiles: {clash[0]!r} is both a file and a directory")
        self._dirs = {d: sorted(c) for d, c in children.items()}

    @property
    def key(self) -> str:
        return self._key

    def is_dir(self, path: str) -> bool:
        return path in self._dirs

    def is_file(self, path: str) -> bool:
        return path in self._files

    def listdir(self, path: str = "") -> list[str]:
        try:
            return list(self._dirs[path])
        except KeyError:
            raise FileNotFoundError(f"no directory {path!r} in {self._key!r}") from None

    def read_bytes(self, path: str) -> bytes:
        try:
            return self._files[path]
        except KeyError:
            raise FileNotFoundError(f"no file {path!r} in {self._key!r}") from None

    def file_size(self, path: str) -> int:
        return len(self.read_bytes(path))

    def __repr__(self) -> str:
        return f"DictFiles({self._key!r}, {len(self._files)} files)"


def _check_path(path: object) -> None:
    if not isinstance(path, str) or not path:
        raise ValueError(f"DictFiles: a path must be a non-empty string, got {path!r}")
    parts = path.split("/")
    if "\x00" in path or "\\" in path or any(p in ("", ".", "..") for p in parts):
        raise ValueError(
            f"DictFiles: bad path {path!r}; use relative '/'-separated names without empty, "
            "'.' or '..' parts, NUL bytes or backslashes"
        )
