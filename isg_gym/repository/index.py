"""Which files a repository has: a structured index of path-variable values per file.

If the product P of all path-variable value counts exceeds 15, ``15 + floor(Beta(1.5, 15) *
(min(P, 10000) - 15))`` distinct combinations are sampled; otherwise all P exist. Each file's
values are kept as integer codes (never re-parsed from rendered names), and paths are rendered
once from the Layout.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from isg_gym.seeding import derive
from isg_gym.spec.models import PathVariable, Spec

SMALL_REPOSITORY = 15
MAX_FILES = 10_000


def file_count(total_combinations: int, rng: np.random.Generator) -> int:
    """How many of ``total_combinations`` path-value combinations become files."""
    if total_combinations <= SMALL_REPOSITORY:
        return total_combinations
    span = min(total_combinations, MAX_FILES) - SMALL_REPOSITORY
    return SMALL_REPOSITORY + math.floor(rng.beta(1.5, 15) * span)


def _render_values(spec: Spec, var: PathVariable, values: list[str]) -> list[str]:
    """Values of ``var`` as they appear in a path (before the expansion style)."""
    layout = spec.layout
    if var.kind == "date":
        return [dt.date.fromisoformat(v).strftime(layout.date_format) for v in values]
    if var.kind == "sequence":
        return [v.zfill(layout.seq_width) for v in values]
    return values


def render_value(spec: Spec, var: PathVariable, value: str) -> str:
    """A path variable's value as it appears in a path (before the expansion style)."""
    return _render_values(spec, var, [value])[0]


def render_token(spec: Spec, var: PathVariable, value: str) -> str:
    """``temp=300``, ``temp_300``, ``temp-300``, ``temp300`` or ``300``, per the Layout."""
    return render_tokens(spec, var, [value])[0]


def render_tokens(spec: Spec, var: PathVariable, values: list[str] | None = None) -> list[str]:
    """:func:`render_token` of each of ``values`` (default: every value of ``var``), in order."""
    rendered = _render_values(spec, var, var.values if values is None else values)
    head, _, tail = spec.layout.style.replace("{name}", var.short).partition("{val}")
    return [head + v + tail for v in rendered]  # style.format(name=short, val=v), per value


class PathRenderer:
    """Renders a combination of value indices (one per path variable) as a file path."""

    def __init__(self, spec: Spec) -> None:
        variables = spec.path_variables
        key_pos = {v.key: j for j, v in enumerate(variables)}
        self._tokens = [render_tokens(spec, v) for v in variables]
        layout = spec.layout
        groups = [*zip(layout.levels, layout.level_joiners, strict=True),
                  (layout.filename, layout.filename_joiner)]  # fmt: skip
        self._plan = [(joiner, [key_pos[k] for k in keys]) for keys, joiner in groups]
        self._ext = f".{spec.file_format}"

    def render(self, codes: list[int]) -> str:
        parts = [j.join(self._tokens[p][codes[p]] for p in pos) for j, pos in self._plan]
        return "/".join(parts) + self._ext

    def render_all(self, codes: np.ndarray) -> list[str]:
        """:meth:`render` of every row of ``codes``, column by column."""
        tokens = [np.array(t, dtype=object) for t in self._tokens]
        path = None
        for joiner, positions in self._plan:
            part = None
            for p in positions:
                token = tokens[p][codes[:, p]]
                part = token if part is None else part + joiner + token
            path = part if path is None else path + "/" + part
        assert path is not None
        return (path + self._ext).tolist()


@dataclass(frozen=True)
class FileIndex:
    """Files sorted by path; ``codes[i, j]`` is file i's value index of ``variables[j]``."""

    variables: tuple[PathVariable, ...]
    codes: np.ndarray
    paths: tuple[str, ...]
    total_combinations: int
    _rows: dict[str, int] = field(repr=False, compare=False)

    @classmethod
    def build(cls, spec: Spec) -> FileIndex:
        variables = tuple(spec.path_variables)
        sizes = [len(v.values) for v in variables]
        total = math.prod(sizes)
        rng = derive(spec.seed, "files", spec.spec_version)
        count = file_count(total, rng)
        if count == total:
            flat = np.arange(total, dtype=np.int64)
        else:
            flat = np.sort(rng.choice(total, size=count, replace=False)).astype(np.int64)
        strides = [math.prod(sizes[j + 1 :]) for j in range(len(sizes))]
        codes = (flat[:, None] // np.array(strides)) % np.array(sizes)

        rendered = PathRenderer(spec).render_all(codes)
        order = sorted(range(len(rendered)), key=rendered.__getitem__)
        paths = tuple(map(rendered.__getitem__, order))
        rows = dict(zip(paths, range(len(paths)), strict=True))
        if len(rows) != len(paths):
            raise ValueError(f"repository {spec.seed}: two files render to the same path")
        return cls(variables, codes[order], paths, total, rows)

    def __len__(self) -> int:
        return len(self.paths)

    def row(self, path: str) -> int | None:
        return self._rows.get(path)

    def values(self, row: int) -> dict[str, str]:
        """Canonical path-variable values of file ``row``, keyed by variable name."""
        return {v.name: v.values[c] for v, c in zip(self.variables, self.codes[row], strict=True)}

    @cached_property
    def directories(self) -> dict[str, list[str]]:
        """Directory -> sorted children (sub-directories with a trailing '/'); root is ''."""
        children: dict[str, set[str]] = {"": set()}
        for path in self.paths:
            parts = path.split("/")
            for depth in range(len(parts)):
                parent = "/".join(parts[:depth])
                child = parts[depth] + ("/" if depth < len(parts) - 1 else "")
                children.setdefault(parent, set()).add(child)
        return {d: sorted(c) for d, c in children.items()}
