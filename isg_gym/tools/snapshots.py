"""Episode files that change during an episode (an observation table), shown to the sandbox
as whole snapshots.

The sandbox links the files of a directory into its view when the directory changes, so a
table that grows is never rewritten in place: every :meth:`Snapshots.write` makes a fresh,
read-only directory holding complete files (a half-written table is never visible) and
removes the older ones. The directories live under one private root per owner
(``mkdtemp``: mode 0700), removed by :meth:`Snapshots.close` or at garbage collection.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Mapping

from isg_gym.envs.materialize import DIR_MODE, FILE_MODE, remove_tree

PREFIX = "isg-snapshots-"


class Snapshots:
    """Fresh read-only directories of ``{relative name: bytes}`` files, newest last."""

    def __init__(self) -> None:
        self._root: str | None = None
        self._count = 0
        self._current: str | None = None
        self._finalizer: weakref.finalize | None = None

    def write(self, files: Mapping[str, bytes]) -> str:
        """A new directory holding exactly ``files``; older snapshots are removed."""
        if self._root is None:
            self._root = tempfile.mkdtemp(prefix=PREFIX)
            self._finalizer = weakref.finalize(self, remove_tree, self._root)
        self._count += 1
        path = os.path.join(self._root, f"{self._count:08d}")
        os.mkdir(path)
        for name, data in files.items():
            if os.path.basename(name) != name or name in ("", ".", ".."):
                raise ValueError(f"snapshot file names must be plain names, got {name!r}")
            target = os.path.join(path, name)
            with open(target, "xb") as fh:
                fh.write(data)
            os.chmod(target, FILE_MODE)
        os.chmod(path, DIR_MODE)
        previous, self._current = self._current, path
        if previous is not None:
            remove_tree(previous)
        return path

    @property
    def current(self) -> str | None:
        """The newest snapshot directory (None before the first write)."""
        return self._current

    def close(self) -> None:
        """Remove every snapshot (idempotent; a later write starts a new root)."""
        if self._finalizer is not None:
            self._finalizer()
        self._root, self._current, self._finalizer = None, None, None
