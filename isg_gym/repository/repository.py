"""Repository: the virtual file tree of a Spec, with file contents generated on demand."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import cached_property
from pathlib import Path
from typing import Generic, TypeVar

import pandas as pd

from isg_gym.repository.index import FileIndex
from isg_gym.repository.paths import RepositoryPathError, canonical_path
from isg_gym.repository.readme import render_readme
from isg_gym.repository.serialisers import serialise, to_txt
from isg_gym.repository.tables import Columns, TableGenerator
from isg_gym.spec.models import Spec

README = "README.md"
T = TypeVar("T")


class Memo(Generic[T]):
    """A bounded LRU memo whose values are made by a function passed at each call.

    Unlike ``lru_cache`` on a bound method, it holds no reference to its owner, so a repository
    is freed as soon as it is dropped instead of waiting, as a reference cycle, for a full
    garbage collection (tens of milliseconds with pandas loaded).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()  # threads may share a repository; make() runs unlocked
        self.misses = 0  # values made (a measurement, e.g. of what the lazy view generated)

    def get(self, key: Hashable, make: Callable[[Hashable], T]) -> T:
        items = self._items
        with self._lock:
            if key in items:
                items.move_to_end(key)
                return items[key]
            self.misses += 1
        value = make(key)
        with self._lock:
            items[key] = value
            if len(items) > self.size:
                items.popitem(last=False)
        return value


class Repository:
    """A pure function of its Spec: which files exist and what bytes each holds.

    Column arrays, tables and serialised bytes are memoised per repository in bounded LRU
    caches (``cache_size`` files each). Returned tables and arrays are shared: treat them as
    read-only (the arrays are marked so). A :class:`~isg_gym.tools.files.FileSource` (``key``,
    ``is_dir``, ``is_file``, ``listdir``, ``read_bytes``, ``file_size``): the sandbox serves it
    lazily.
    """

    def __init__(self, spec: Spec, cache_size: int = 128) -> None:
        self.spec = spec
        self._columns: Memo[Columns] = Memo(cache_size)
        self._tables: Memo[pd.DataFrame] = Memo(cache_size)
        self._bytes: Memo[bytes] = Memo(cache_size)

    @classmethod
    def from_seed(cls, seed: int, **kwargs) -> Repository:
        from isg_gym.simulator.procedural import build_spec

        return cls(build_spec(seed), **kwargs)

    @property
    def seed(self) -> int:
        return self.spec.seed

    @cached_property
    def key(self) -> str:
        """Identity of the bytes: the spec version and a hash of the spec's JSON (two specs
        with the same seed but different content, e.g. built by an LLM, never share a key)."""
        digest = hashlib.sha256(self.spec.model_dump_json().encode("utf-8")).hexdigest()
        return f"isg-repository:v{self.spec.spec_version}:{self.seed}:{digest[:32]}"

    @cached_property
    def _generator(self) -> TableGenerator:
        """Compiled on the first table asked for (listing a repository needs none)."""
        return TableGenerator(self.spec)

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

    def columns(self, path: str) -> Columns:
        """The data file's columns by name as numpy arrays, exactly the values of
        :meth:`table` (read-only, shared): floats with NaN for missing values (an integer
        column with missing values is float), text as object arrays with None for missing
        values; ``.rows`` is the number of rows."""
        return self._columns.get(canonical_path(path), self._make_columns)

    def _make_columns(self, path: str) -> Columns:
        return self._generator.columns(path, self.index.values(self._data_row(path)))

    def table(self, path: str) -> pd.DataFrame:
        """The data file's table exactly as served (read-only, shared)."""
        return self._tables.get(canonical_path(path), self._make_table)

    def _make_table(self, path: str) -> pd.DataFrame:
        return pd.DataFrame(dict(self.columns(path)))

    def read_bytes(self, path: str) -> bytes:
        """The bytes of any file, README included."""
        path = canonical_path(path)
        if path == README and self.readme is not None:
            return self.readme.encode("utf-8")
        return self._bytes.get(path, self._make_bytes)

    def file_size(self, path: str) -> int:
        """The size of any file in bytes (generated, and memoised, to measure it)."""
        return len(self.read_bytes(path))

    def _make_bytes(self, path: str) -> bytes:
        return serialise(self.columns(path), self.spec.file_format, self.spec.columns[1].name,
                         self._integer_columns)  # fmt: skip

    @cached_property
    def _integer_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.spec.columns if c.role == "integer")

    def read_text(self, path: str) -> str:
        """A file as text; an xlsx sheet is rendered tab-separated (missing values ``NA``)."""
        path = canonical_path(path)
        if path.endswith(".xlsx") and self.spec.file_format == "xlsx":
            sheet = to_txt(self.columns(path)).decode("utf-8")
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
