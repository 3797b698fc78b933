"""Stable, label-derived random generators.

Every random draw in isg_gym comes from a generator derived here from a seed and a tuple of
labels, never from the global ``random`` / ``np.random`` state. Labels are hashed with SHA-256,
so the streams are identical in every process and under any ``PYTHONHASHSEED``, and distinct
label tuples give statistically independent streams (``SeedSequence`` mixes the entropy).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

Label = str | int


def _label_words(label: Label) -> int:
    kind = b"i" if isinstance(label, int) else b"s"
    digest = hashlib.sha256(kind + str(label).encode("utf-8")).digest()
    return int.from_bytes(digest[:16], "little")


def _uint32_words(value: int) -> list[int]:
    """``value`` as 32-bit words, lowest first, exactly as ``SeedSequence`` splits an int."""
    if value == 0:
        return [0]
    words = []
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return words


@lru_cache(maxsize=256)
def _label_uint32(label: Label, kind: type) -> tuple[int, ...]:
    return tuple(_uint32_words(_label_words(label)))


def check_seed(seed: object) -> int:
    """Return ``seed`` as an int, or raise ``ValueError`` naming what is accepted."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return int(seed)


class _SeedSequence(np.random.SeedSequence):
    """``SeedSequence`` without numpy's ``errstate`` around ``generate_state``: it does its
    hashing in C integers, so the errstate changes nothing but costs a context switch of numpy's
    error state on every generator made (the same state words, made faster)."""

    generate_state = getattr(
        np.random.SeedSequence.generate_state, "__wrapped__", np.random.SeedSequence.generate_state
    )


def derive(seed: int, *labels: Label) -> np.random.Generator:
    """Return a generator determined by ``seed`` and ``labels`` alone.

    The entropy is ``[seed, *label words]``; it is handed to ``SeedSequence`` already split into
    the 32-bit words ``SeedSequence`` would split it into (the same stream, made faster).
    """
    if type(seed) is not int or seed < 0 or seed > 0xFFFFFFFF:  # the common case is one word
        seed = check_seed(seed)
    words = [seed] if seed <= 0xFFFFFFFF else _uint32_words(seed)
    for label in labels:
        words.extend(_label_uint32(label, type(label)))
    entropy = np.array(words, dtype=np.uint32)
    return np.random.Generator(np.random.PCG64(_SeedSequence(entropy)))
