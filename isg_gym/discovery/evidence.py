"""Evidence: whether a claim is backed by an analysis that actually ran.

A claim earns evidence credit when one of the ``run_python_code`` calls it cites

- ran without error (no exception, time-out or kill, and the sandbox itself did not fail),
- read the files involved: at least :data:`FILE_SHARE` of the data files within the claim's
  scope (the sandbox reports the files each call opened), and
- used the columns involved: the outcome's name, and the factor's name (a path variable's name
  or its README placeholder), appear in the code as a word of a string constant (``df["x"]``,
  ``"y ~ x"``), an attribute name (``df.x``) or a keyword argument name. The code is parsed with
  ``ast``, never run; in a persistent session the replayed earlier cells count as its code.

A call that is not cited, failed, or read or used other things earns nothing.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from isg_gym.discovery.program import Variable
from isg_gym.syntax import parse as parse_python

FILE_SHARE = 0.5
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class CallRecord:
    """One ``run_python_code`` call of an episode, as evidence sees it."""

    id: int
    code: str
    ok: bool
    files_read: tuple[str, ...]


@lru_cache(maxsize=256)
def code_words(code: str) -> frozenset[str]:
    """Words of string constants, attribute names and keyword names in ``code`` (empty when
    it does not parse)."""
    try:
        tree = parse_python(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.update(_WORD.findall(node.value))
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
    return frozenset(words)


def uses(code: str, variable: Variable) -> bool:
    """Whether ``code`` names ``variable`` (its name, or a path variable's placeholder)."""
    words = code_words(code)
    return variable.name in words or bool(variable.short and variable.short in words)


def check(
    evidence: Iterable[int],
    calls: Mapping[int, CallRecord],
    variables: list[Variable],
    files: list[str],
) -> tuple[bool, str]:
    """Whether a cited call backs a claim about ``variables`` over the data ``files`` in its
    scope; with the reason when none does."""
    cited = [calls[i] for i in dict.fromkeys(evidence) if i in calls]
    if not cited:
        return False, "no cited run_python_code call" if not list(evidence) else "unknown call id"
    needed = max(1, math.ceil(len(files) * FILE_SHARE))
    wanted = set(files)
    why = "the cited calls failed"
    for call in cited:
        if not call.ok:
            continue
        read = len(wanted.intersection(call.files_read))
        if read < needed:
            why = f"the cited calls read {read} of the {len(files)} files in scope (need {needed})"
            continue
        missing = [v.name for v in variables if not uses(call.code, v)]
        if missing:
            why = f"the cited calls do not use {', '.join(missing)}"
            continue
        return True, ""
    return False, why
