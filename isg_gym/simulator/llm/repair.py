"""Mechanical repairs of replies: what any reader would fix without asking the model again.

Names are put in lower_snake_case, over-long text is cut at a word, numbers become path
tokens, category labels lose the characters a path cannot hold, probabilities are normalised,
and reply items are matched to the names that were asked for (by name, then by position).
Nothing here guesses content: a reply that needs more than this is sent back to the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from isg_gym.simulator.llm.parse import StageError
from isg_gym.spec.models import NAME_RE, RESERVED_NAMES


def snake(text: Any, limit: int = 31) -> str:
    """``"Soil Moisture (%)"`` -> ``"soil_moisture"``; reserved words get ``_value``."""
    name = re.sub(r"[^a-z0-9]+", "_", str(text).strip().lower()).strip("_")
    if name and not name[0].isalpha():
        name = f"v_{name}"
    name = name[:limit].rstrip("_") or "variable"
    if name in RESERVED_NAMES:
        name = f"{name}_value"
    return name


def short_name(text: Any, limit: int = 12) -> str:
    """A path name: lowercase letters and digits, starting with a letter."""
    name = re.sub(r"[^a-z0-9]+", "", str(text).lower())
    name = name.lstrip("0123456789")
    return name[:limit]


def cut(text: Any, limit: int) -> Any:
    """A string cut at a word boundary to at most ``limit`` characters (other values as is)."""
    if not isinstance(text, str):
        return text
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit + 1].rsplit(" ", 1)[0]
    return (head if len(head) >= limit // 2 else text[:limit]).rstrip(" ,;:")


def label_token(value: Any) -> str:
    """A category label a path can hold: ``"high dose"`` -> ``"highDose"``."""
    words = re.findall(r"[A-Za-z0-9.]+", str(value))
    return "".join(w if i == 0 else w[:1].upper() + w[1:] for i, w in enumerate(words))[:24]


def number_token(value: Any) -> str | None:
    """A non-negative-or-not number as a canonical path token (``20.0`` -> ``"20"``)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    if not np.isfinite(x):
        return None
    return np.format_float_positional(x, trim="-")


def probabilities(values: Sequence[Any], count: int) -> list[float] | None:
    """Weights normalised to probabilities rounded to 3 decimals (the last takes the rest);
    None if they cannot be (wrong count, a non-positive weight)."""
    try:
        weights = np.array([float(v) for v in values], dtype=float)
    except (TypeError, ValueError):
        return None
    if len(weights) != count or not np.all(np.isfinite(weights)) or weights.min() <= 0:
        return None
    probs = np.maximum(np.round(weights / weights.sum(), 3), 0.001)
    out = [float(p) for p in probs / probs.sum()]
    out[-1] = 1.0 - sum(out[:-1])
    return out if out[-1] > 0 else None


def rename(items: Any, key: str = "name") -> Any:
    """Items (dicts) with their ``key`` in snake case."""
    if isinstance(items, list):
        for item in items:
            name = item.get(key) if isinstance(item, dict) else None
            if isinstance(name, str) and (not NAME_RE.match(name) or name in RESERVED_NAMES):
                item[key] = snake(name)
    return items


def free_name(name: str, taken: set[str], suffix: str) -> str:
    """``name``, or ``name`` with ``suffix`` (then digits) until it is not in ``taken``."""
    base, n = name, 1
    while name in taken:
        stem = base if base.endswith(suffix) else base[: 31 - len(suffix)] + suffix
        name = stem if n == 1 else f"{stem[:29]}{n}"
        n += 1
    return name


def match(expected: Sequence[str], items: Sequence[Any], what: str) -> list[Any]:
    """The reply items for ``expected`` names, in that order: exact names first, then the
    remaining items in order for the remaining names; extra items are dropped."""
    by_name: dict[str, Any] = {}
    rest = []
    for item in items:
        name = getattr(item, "name", None)
        if name in expected and name not in by_name:
            by_name[name] = item
        else:
            rest.append(item)
    missing = [n for n in expected if n not in by_name]
    if len(rest) < len(missing):
        got = [getattr(i, "name", "?") for i in items]
        raise StageError(
            "schema",
            f"give one {what} for each of {list(expected)} (exactly "
            f"these names, in this order); the reply had {got}",
        )
    for name, item in zip(missing, rest, strict=False):
        by_name[name] = item
    return [by_name[n] for n in expected]
