"""Canonical repository paths: ``a/./b.csv``, ``/a/b.csv`` and ``a//b.csv`` are one file."""

from __future__ import annotations


class RepositoryPathError(ValueError):
    """A path that is malformed, escapes the repository, or names nothing in it."""


def canonical_path(path: str) -> str:
    """``'a/b.csv'`` for any spelling of it; ``''`` for the root. Rejects ``..`` and odd bytes."""
    if not isinstance(path, str):
        raise RepositoryPathError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path or "\\" in path:
        raise RepositoryPathError(f"path {path!r} contains a NUL byte or a backslash")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise RepositoryPathError(
            f"path {path!r} leaves the repository: '..' is not allowed; use paths relative to "
            "the repository root, like 'dir/file.csv'"
        )
    return "/".join(parts)
