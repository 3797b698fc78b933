"""Repository: the virtual file tree of a Spec, with file contents generated on demand."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import cached_property, lru_cache
from pathlib import Path

import pandas as pd

from isg_gym.repository.index import FileIndex
from isg_gym.repository.paths import RepositoryPathError, canonical_path
from isg_gym.repository.readme import render_readme
from isg_gym.repository.serialisers import serialise, to_txt
from isg_gym.repository.tables import TableGenerator
from isg_gym.spec.models import Spec

README = "README.md"


class Repository:
    """A pure function of its Spec: which files exist and what bytes each holds.

    Tables and serialised bytes are memoised per repository in bounded LRU caches
    (``cache_size`` files each). Returned tables are shared: treat them as read-only. ``key``
    names the repository in process-wide caches (default: its seed); a repository of a
    transformed Spec must pass a key of its own.
    """

    def __init__(self, spec: Spec, cache_size: int = 128, key: int | str | None = None) -> None:
        self.spec = spec
        # what identifies the files in process-wide caches (materialised copies): the seed,
        # unless this Spec is a transformation of the seed's own (then a distinct key)
        self.key: int | str = spec.seed if key is None else key
        self._generator = TableGenerator(spec)
        self._table = lru_cache(maxsize=cache_size)(self._make_table)
        self._bytes = lru_cache(maxsize=cache_size)(self._make_bytes)

    @classmethod
    def from_seed(cls, seed: int, **kwargs) -> Repository:
        from isg_gym.simulator.procedural import build_spec

        return cls(build_spec(seed), **kwargs)

    @property
    def seed(self) -> int:
        return self.spec.seed

    @cached_property
    def index(self) -> FileIndex:
        return FileIndex.build(self.spec)

    @cached_property
    def readme(self) -> str | None:
        return render_readme(self.spec, self.index.paths[0])

    # --- the tree ------------------------------------------------------------------------------

    @property
    def data_files(self) -> tuple[str, ...]:
        return self.index.paths

    def files(self) -> list[str]:
        """Every file path, README.md first when present."""
        return ([README] if self.readme is not None else []) + list(self.index.paths)

    def is_file(self, path: str) -> bool:
        path = canonical_path(path)
        return self.index.row(path) is not None or (path == README and self.readme is not None)

    def is_dir(self, path: str) -> bool:
        return canonical_path(path) in self.index.directories

    def listdir(self, path: str = "") -> list[str]:
        """Children of a directory, sub-directories with a trailing ``/``."""
        path = canonical_path(path)
        entries = self.index.directories.get(path)
        if entries is None:
            raise RepositoryPathError(self._missing(path, "directory"))
        if path == "" and self.readme is not None:
            return sorted([*entries, README])
        return list(entries)

    def _missing(self, path: str, what: str) -> str:
        if self.is_file(path):
            return f"{path!r} is a file, not a directory"
        if path in self.index.directories:
            return f"{path!r} is a directory, not a file"
        return f"no {what} {path!r} in this repository; list the root '/' to see what exists"

    def _data_row(self, path: str) -> int:
        path = canonical_path(path)
        row = self.index.row(path)
        if row is None:
            raise RepositoryPathError(self._missing(path, "data file"))
        return row

    # --- contents ------------------------------------------------------------------------------

    def path_values(self, path: str) -> dict[str, str]:
        """The canonical path-variable values of a data file (from the index, not the name)."""
        return self.index.values(self._data_row(path))

    def table(self, path: str) -> pd.DataFrame:
        """The data file's table exactly as served (read-only, shared)."""
        return self._table(canonical_path(path))

    def _make_table(self, path: str) -> pd.DataFrame:
        return self._generator.table(path, self.index.values(self._data_row(path)))

    def read_bytes(self, path: str) -> bytes:
        """The bytes of any file, README included."""
        path = canonical_path(path)
        if path == README and self.readme is not None:
            return self.readme.encode("utf-8")
        return self._bytes(path)

    def _make_bytes(self, path: str) -> bytes:
        return serialise(self.table(path), self.spec.file_format, self.spec.columns[1].name,
                         self._integer_columns)  # fmt: skip

    @cached_property
    def _integer_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.spec.columns if c.role == "integer")

    def read_text(self, path: str) -> str:
        """A file as text; an xlsx sheet is rendered tab-separated (missing values ``NA``)."""
        path = canonical_path(path)
        if path.endswith(".xlsx") and self.spec.file_format == "xlsx":
            sheet = to_txt(self.table(path)).decode("utf-8")
            return f"[xlsx workbook, sheet 'data', shown tab-separated]\n{sheet}"
        return self.read_bytes(path).decode("utf-8")

    def materialize(
        self, directory: str | os.PathLike, progress: Callable[[int, int], None] | None = None
    ) -> Path:
        """Write every file under ``directory`` (created if needed); returns its path."""
        root = Path(directory)
        files = self.files()
        for done, path in enumerate(files, start=1):
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.read_bytes(path))
            if progress is not None:
                progress(done, len(files))
        return root


def stderr_progress(done: int, total: int) -> None:
    """A one-line progress bar on stderr for long materialisations."""
    if total < 200 or (done % 50 and done != total):
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()
