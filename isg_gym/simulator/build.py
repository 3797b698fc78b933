"""Build many seeds into a spec cache: concurrency, resume, progress and a summary.

``build_seeds(seeds, builder, cache)`` skips the seeds the cache already holds for this
builder (built, or failed unless ``retry_failed``), builds the rest on ``concurrency`` worker
threads, stores each result as it comes and returns a :class:`BuildSummary`. A result with
status ``error`` (the backend failed: infrastructure) is counted apart and not stored, so a
later run retries it; when the first :data:`EARLY_ERRORS` results are all such errors the run
stops with :class:`~isg_gym.eval.errors.InfrastructureError`.

A builder has ``name``, ``model``, ``prompt_version`` and ``build(seed) -> BuildResult``:
:class:`ProceduralBuilder` (the embedded default) or
:class:`isg_gym.simulator.llm.LLMBuilder`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from isg_gym.eval.errors import InfrastructureError
from isg_gym.simulator.cache import CacheKey, SpecCache
from isg_gym.spec.models import Spec

EARLY_ERRORS = 4


@dataclass
class BuildResult:
    """The outcome of one seed: ``status`` is ``built`` (``spec`` set), ``failed`` (``failure``
    names the stage, the kind of check and the reason) or ``error`` (the backend failed:
    infrastructure, never cached). ``stats``: model calls, tokens, seconds, per-stage counts."""

    seed: int
    status: str
    spec: Spec | None = None
    failure: dict[str, Any] | None = None
    stats: dict[str, Any] = field(default_factory=dict)


class Builder(Protocol):
    name: str
    model: str
    prompt_version: int

    def build(self, seed: int) -> BuildResult: ...


class ProceduralBuilder:
    """The embedded default builder, for caching procedural Specs beside LLM ones."""

    name = "procedural"
    model = ""
    prompt_version = 0

    def build(self, seed: int) -> BuildResult:
        from isg_gym.simulator.procedural import build_spec

        return BuildResult(seed, "built", spec=build_spec(seed))


@dataclass
class BuildSummary:
    """Counts of one run, the failures by (stage, kind), and the model figures of the seeds
    built in this run (calls, tokens, seconds of the builds, wall seconds of the run)."""

    requested: int = 0
    built: int = 0
    failed: int = 0
    cached_built: int = 0
    cached_failed: int = 0
    errors: int = 0
    failures: Counter = field(default_factory=Counter)  # (stage, kind) -> seeds
    rejected: Counter = field(default_factory=Counter)  # (stage, kind) -> rejected replies
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    build_seconds: float = 0.0
    wall_seconds: float = 0.0
    error_examples: list[str] = field(default_factory=list)

    def add(self, result: BuildResult) -> None:
        stats = result.stats or {}
        self.calls += int(stats.get("calls", 0))
        self.prompt_tokens += int(stats.get("prompt_tokens", 0))
        self.completion_tokens += int(stats.get("completion_tokens", 0))
        self.build_seconds += float(stats.get("seconds", 0.0))
        for stage, record in (stats.get("stages") or {}).items():
            for kind, n in record.get("rejected", {}).items():
                self.rejected[stage, kind] += n
        if result.status == "built":
            self.built += 1
        elif result.status == "failed":
            self.failed += 1
            failure = result.failure or {}
            self.failures[failure.get("stage", "?"), failure.get("kind", "?")] += 1
        else:
            self.errors += 1
            if len(self.error_examples) < 3:
                self.error_examples.append(f"seed {result.seed}: {result.failure}")

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if not isinstance(v, Counter)}
        out["failures"] = {f"{s}/{k}": n for (s, k), n in sorted(self.failures.items())}
        out["rejected"] = {f"{s}/{k}": n for (s, k), n in sorted(self.rejected.items())}
        return out


class _Progress:
    """A tqdm bar with built/failed counts (plain lines when tqdm is missing)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self.done = enabled, total, 0
        self._bar: Any = None
        if enabled and total:
            with contextlib.suppress(ImportError):
                from tqdm import tqdm

                self._bar = tqdm(total=total, unit="seed", dynamic_ncols=True, file=sys.stderr)

    def update(self, summary: BuildSummary) -> None:
        self.done += 1
        if not self.enabled:
            return
        figures = f"built {summary.built}, failed {summary.failed}, errors {summary.errors}"
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(figures)
        else:
            print(f"{self.done}/{self.total} seeds: {figures}", file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def build_seeds(
    seeds: Iterable[int],
    builder: Builder,
    cache: SpecCache,
    *,
    concurrency: int = 1,
    retry_failed: bool = False,
    progress: bool = False,
) -> BuildSummary:
    """Build the seeds the cache lacks (see the module docstring)."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    seeds = list(dict.fromkeys(seeds))
    summary = BuildSummary(requested=len(seeds))
    todo = []
    for seed in seeds:
        key = CacheKey(seed, builder.name, builder.model, builder.prompt_version)
        entry = cache.lookup(key)
        if entry is not None and entry.status == "built":
            summary.cached_built += 1
        elif entry is not None and not retry_failed:
            summary.cached_failed += 1
        else:
            todo.append(key)
    started = time.perf_counter()
    bar = _Progress(progress, len(todo))

    def run(key: CacheKey) -> BuildResult:
        result = builder.build(key.seed)
        if result.status in ("built", "failed"):
            cache.put(key, result.status, spec=result.spec, failure=result.failure,
                      stats=result.stats)  # fmt: skip
        return result

    try:
        with ThreadPoolExecutor(concurrency, thread_name_prefix="isg-build") as pool:
            if todo and hasattr(builder, "expect"):
                builder.expect(min(concurrency, len(todo)))
            futures = [pool.submit(run, key) for key in todo]
            try:
                for future in futures:
                    summary.add(future.result())
                    bar.update(summary)
                    done = summary.built + summary.failed + summary.errors
                    if done == EARLY_ERRORS and summary.errors == done:
                        raise InfrastructureError(
                            f"the first {done} builds all failed in the backend, e.g. "
                            f"{summary.error_examples[0]}"
                        )
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    finally:
        bar.close()
        summary.wall_seconds = round(time.perf_counter() - started, 3)
    return summary
