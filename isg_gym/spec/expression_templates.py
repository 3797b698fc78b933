"""Lift the literals out of an expression, so that expressions of one shape share one parse.

A procedurally built expression such as ``20.5 + 10.7*((x - 1.2)/0.45)`` differs from thousands
of others only in its numbers, variable names and category labels. :func:`lift` replaces each
number by ``_k``, each name by ``_v`` and each string by ``'_s'`` and returns the template with
the values of each kind in source order: ``'_k + _k*((_v - _k)/_k)'``, ``(20.5, 10.7, 1.2,
0.45)``, ``('x',)``, ``()``. The expression compiler parses and compiles a template once and
instantiates it with each expression's values.

Only plain sources are lifted: ASCII names, decimal number literals, quoted strings without
escapes, the operators and brackets of the expression language and spaces. Anything else (a
hexadecimal or imaginary number, an integer with a leading zero, a string prefix, a backslash, a
dot outside a number, a tab, ...) returns None and the expression is parsed as it is, so a
template never changes what an expression means.
Names in ``verbatim`` (the language's functions and constants, Python's keywords) stay as they
are.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import NamedTuple

# A word (a number or a name: letters, digits, underscores and dots, with a sign after the e of
# an exponent) or a string without escapes or newlines.
_LITERAL = re.compile(
    r"([\w.]+(?:(?<=[eE])[-+]\d+)?)|('[^'\\\n]*'|\"[^\"\\\n]*\")", re.ASCII
)
# What may remain of a plain source once its literals are taken out.
_STRUCTURE = re.compile(r"[-+*/()<>=!,\[\] ]*")
# An integer literal with a leading zero (a syntax error in Python, which float() accepts).
_LEADING_ZERO = re.compile(r"(?:^| )0[0-9_]*[1-9][0-9_]*(?= |$)")
_NAMES = re.compile(r"[\w ]*", re.ASCII)  # names joined by spaces: no dots, no signs
_NUMBER_START = frozenset("0123456789.")
NUMBER, NAME, STRING = "_k", "_v", "_s"  # the placeholders (a string's is quoted)


class Lifted(NamedTuple):
    """A template and the values of its placeholders, each kind in source order."""

    template: str
    numbers: tuple[float, ...]
    names: tuple[str, ...]
    strings: tuple[str, ...]


def lift(source: str, verbatim: frozenset[str]) -> Lifted | None:
    """The template of ``source`` with its values, or None when ``source`` is not plain."""
    parts = _LITERAL.split(source)  # text, word, string, text, word, string, ..., text
    between = parts[::3]
    if _STRUCTURE.fullmatch("".join(between)) is None:
        return None
    words = [w for w in parts[1::3] if w is not None]
    numbers = [w for w in words if w[0] in _NUMBER_START]
    names = [w for w in words if w[0] not in _NUMBER_START]
    if _NAMES.fullmatch(" ".join(names)) is None or _LEADING_ZERO.search(" ".join(numbers)):
        return None  # attribute access (x.real), or 007
    try:  # float() reads a decimal literal as Python does (underscores included)
        values = tuple(map(float, numbers))
    except ValueError:  # 2x, 0x1f, 1j, 1.2.3, ...
        return None
    if not all(map(math.isfinite, values)):  # 1e999, or an integer too large for a float
        return None
    marks = [
        (NUMBER if w[0] in _NUMBER_START else w if w in verbatim else NAME)
        if w is not None else "'_s'"
        for w in parts[1::3]
    ]  # fmt: skip
    pairs = zip(between[:-1], marks, strict=True)
    template = "".join(itertools.chain.from_iterable(pairs)) + between[-1]
    return Lifted(
        template,
        values,
        tuple(n for n in names if n not in verbatim),
        tuple(s[1:-1] for s in parts[2::3] if s is not None),
    )
