"""A content-addressed cache of built Specs: JSON files with a manifest, checked on read.

Layout of a cache directory::

    manifest.jsonl            one line per stored record (later lines supersede earlier ones)
    specs/<seed>-<key>.json   one record: its key, status, the Spec or the failure, statistics

A record's address is the SHA-256 of its key: (seed, builder, model, prompt version, spec
version); a cache may hold several builders and models side by side. A manifest line names the
record file and the SHA-256 of its bytes: every read recomputes it, so an edited or corrupted
file is an error (:class:`SpecCacheError`), never a silently different repository. Failed
builds are records too (status ``failed``, with the stage and reason), so the failure rate
of a build is kept with its specs. Writes are atomic (temporary file, then rename) and the
manifest is appended under a lock; a torn last manifest line (an interrupted run) is ignored
and cut off at the next write.

:class:`SpecSource` is the read-only view the env and the ``isg`` commands use: the built
Specs of one (builder, model, prompt version) in a directory, by seed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from isg_gym.spec.models import SPEC_VERSION, Spec

CACHE_FORMAT = 1
MANIFEST = "manifest.jsonl"
SPECS = "specs"
STATUSES = ("built", "failed")


class SpecCacheError(ValueError):
    """A cache that cannot be read as it claims (missing, edited, corrupted, ambiguous), or a
    seed it does not hold."""


@dataclass(frozen=True)
class CacheKey:
    """What a record is the answer to."""

    seed: int
    builder: str
    model: str
    prompt_version: int
    spec_version: int = SPEC_VERSION

    @property
    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def file(self) -> str:
        return f"{SPECS}/{self.seed}-{self.digest[:16]}.json"

    @property
    def build(self) -> tuple[str, str, int]:
        """(builder, model, prompt version): which build a record belongs to."""
        return self.builder, self.model, self.prompt_version


@dataclass(frozen=True)
class Entry:
    """A manifest line: a record's key, status, file and the SHA-256 of the file's bytes."""

    key: CacheKey
    status: str
    file: str
    sha256: str

    def to_line(self) -> str:
        data = {"digest": self.key.digest, **asdict(self.key), "status": self.status,
                "file": self.file, "sha256": self.sha256}  # fmt: skip
        return json.dumps(data, sort_keys=True, ensure_ascii=True) + "\n"


def _entry(line: str, where: str) -> Entry:
    try:
        data = json.loads(line)
        key = CacheKey(**{k: data[k] for k in ("seed", "builder", "model", "prompt_version",
                                               "spec_version")})  # fmt: skip
        entry = Entry(key, data["status"], data["file"], data["sha256"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SpecCacheError(f"{where} is not a manifest entry ({exc})") from None
    if data.get("digest") != key.digest or entry.status not in STATUSES:
        raise SpecCacheError(f"{where}: its digest or status does not match its key")
    return entry


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SpecCache:
    """A cache directory (see the module docstring). ``create`` makes it when missing."""

    def __init__(self, directory: str | os.PathLike[str], create: bool = False) -> None:
        self.dir = Path(directory)
        if create:
            (self.dir / SPECS).mkdir(parents=True, exist_ok=True)
        elif not (self.dir / MANIFEST).is_file():
            raise SpecCacheError(
                f"no spec cache at {self.dir} (no {MANIFEST}); build one with "
                f"`isg build --cache {self.dir} ...`"
            )
        self._lock = threading.Lock()
        self._entries = self._read_manifest()

    # -- the manifest -------------------------------------------------------------------------

    def _read_manifest(self) -> dict[str, Entry]:
        path = self.dir / MANIFEST
        if not path.exists():
            return {}
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        complete, torn = lines[:-1], lines[-1]  # torn: text after the last newline
        entries: dict[str, Entry] = {}
        for number, line in enumerate(complete, start=1):
            if line.strip():
                entry = _entry(line, f"{path} line {number}")
                entries[entry.key.digest] = entry
        del torn  # an interrupted append: ignored here, cut off by the next write
        return entries

    def entries(self) -> list[Entry]:
        """The current entry of every key, in seed order."""
        return sorted(self._entries.values(), key=lambda e: (e.key.seed, e.key.build))

    def lookup(self, key: CacheKey) -> Entry | None:
        return self._entries.get(key.digest)

    @contextlib.contextmanager
    def _locked_manifest(self) -> Iterator[Any]:
        with self._lock, open(self.dir / MANIFEST, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield f
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # -- records ------------------------------------------------------------------------------

    def read(self, entry: Entry) -> dict[str, Any]:
        """The record of ``entry``, after checking its bytes against the manifest."""
        path = self.dir / entry.file
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SpecCacheError(f"cache record {path} is missing or unreadable ({exc}); "
                                 "run isg build again to rebuild it") from None  # fmt: skip
        if _sha256(data) != entry.sha256:
            raise SpecCacheError(
                f"cache record {path} does not match its manifest entry (sha256 "
                f"{_sha256(data)[:12]}..., expected {entry.sha256[:12]}...): the file was edited "
                "or corrupted; delete it and run isg build again"
            )
        try:
            record = json.loads(data)
        except ValueError as exc:
            raise SpecCacheError(f"cache record {path} is not JSON ({exc})") from None
        if not isinstance(record, dict) or record.get("key") != asdict(entry.key):
            raise SpecCacheError(f"cache record {path} holds another key than its manifest entry")
        return record

    def spec(self, entry: Entry) -> Spec:
        """The Spec of a ``built`` entry (checked, then validated)."""
        if entry.status != "built":
            raise SpecCacheError(f"seed {entry.key.seed} failed to build; it has no Spec")
        record = self.read(entry)
        try:
            spec = Spec.model_validate(record.get("spec"))
        except ValidationError as exc:
            raise SpecCacheError(f"cache record {self.dir / entry.file} holds an invalid "
                                 f"Spec: {exc.errors()[0]['msg']}") from None  # fmt: skip
        if spec.seed != entry.key.seed:
            raise SpecCacheError(f"cache record {self.dir / entry.file} holds seed {spec.seed}")
        return spec

    def put(
        self,
        key: CacheKey,
        status: str,
        *,
        spec: Spec | None = None,
        failure: dict[str, Any] | None = None,
        stats: dict[str, Any] | None = None,
    ) -> Entry:
        """Store a record (replacing any earlier one of the same key) and return its entry."""
        if status not in STATUSES or (status == "built") != (spec is not None):
            raise ValueError(f"status must be one of {STATUSES}, with a spec exactly if built")
        record = {
            "format": CACHE_FORMAT,
            "key": asdict(key),
            "status": status,
            "spec": None if spec is None else json.loads(spec.to_json(indent=None)),
            "failure": failure,
            "stats": stats or {},
        }
        data = (json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
        entry = Entry(key, status, key.file, _sha256(data))
        path = self.dir / key.file
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            with self._locked_manifest() as manifest:
                os.replace(tmp, path)
                _cut_torn_line(manifest)
                manifest.write(entry.to_line().encode("ascii"))
                manifest.flush()
                os.fsync(manifest.fileno())
                self._entries[key.digest] = entry
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return entry


def _cut_torn_line(manifest: Any) -> None:
    """Drop text after the last newline of the manifest (an interrupted append)."""
    size = manifest.seek(0, os.SEEK_END)
    if not size:
        return
    manifest.seek(size - 1)
    if manifest.read(1) != b"\n":
        manifest.seek(0)
        manifest.truncate(manifest.read().rfind(b"\n") + 1)


def _ranges(seeds: list[int]) -> str:
    """``0-4, 7, 9-10`` (at most 6 ranges shown)."""
    out: list[str] = []
    start = prev = None
    for s in [*seeds, None]:
        if start is not None and s == prev + 1:  # type: ignore[operator]
            prev = s
            continue
        if start is not None:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = s
    return ", ".join(out[:6]) + (f", ... ({len(out) - 6} more ranges)" if len(out) > 6 else "")


class SpecSource:
    """The built Specs of one build (builder, model, prompt version) in a cache directory.

    With ``model`` (and ``builder``, ``prompt_version``) None, the directory must hold one
    build only; else pass them to choose. ``seeds`` are the built seeds, sorted; ``spec(seed)``
    reads, checks and returns one (a seed not built is a :class:`SpecCacheError`).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        model: str | None = None,
        builder: str | None = None,
        prompt_version: int | None = None,
    ) -> None:
        self.cache = SpecCache(directory)
        chosen = [
            e for e in self.cache.entries()
            if e.key.spec_version == SPEC_VERSION
            and (model is None or e.key.model == model)
            and (builder is None or e.key.builder == builder)
            and (prompt_version is None or e.key.prompt_version == prompt_version)
        ]  # fmt: skip
        builds = sorted({e.key.build for e in chosen})
        if not builds:
            raise SpecCacheError(f"no specs of spec version {SPEC_VERSION} in {directory} match "
                                 f"model={model!r} builder={builder!r}")  # fmt: skip
        if len(builds) > 1:
            shown = "; ".join(f"builder {b}, model {m!r}, prompt v{v}" for b, m, v in builds)
            raise SpecCacheError(f"{directory} holds several builds ({shown}): choose one with "
                                 "model= / builder= (isg: --model, --builder)")  # fmt: skip
        self.builder, self.model, self.prompt_version = builds[0]
        self._entries = {e.key.seed: e for e in chosen}
        self.seeds: tuple[int, ...] = tuple(sorted(s for s, e in self._entries.items()
                                                   if e.status == "built"))  # fmt: skip
        self.failed: tuple[int, ...] = tuple(sorted(s for s, e in self._entries.items()
                                                    if e.status == "failed"))  # fmt: skip
        self._spec = lru_cache(maxsize=256)(self._load)

    def __contains__(self, seed: object) -> bool:
        return seed in self._entries and self._entries[seed].status == "built"  # type: ignore[index]

    def __len__(self) -> int:
        return len(self.seeds)

    def spec(self, seed: int) -> Spec:
        if seed not in self:
            why = "it failed to build" if seed in self.failed else "it was not built"
            raise SpecCacheError(
                f"seed {seed} is not in the spec cache {self.cache.dir} ({why}; built seeds: "
                f"{_ranges(list(self.seeds)) or 'none'})"
            )
        return self._spec(seed)

    def _load(self, seed: int) -> Spec:
        return self.cache.spec(self._entries[seed])


def load_spec(seed: int, specs_dir: str | os.PathLike[str], model: str | None = None) -> Spec:
    """The cached Spec of ``seed`` in ``specs_dir`` (see :class:`SpecSource`)."""
    return SpecSource(specs_dir, model=model).spec(seed)
