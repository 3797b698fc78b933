"""Pull the final answer out of an agent's reply.

Accepted forms (the one that starts last in the text wins when several occur):

- a JSON object with an ``"answer"`` key (extra keys allowed; the value may be a number, bool,
  string or null), the whole reply or embedded in text / a code fence;
- a LaTeX ``\\boxed{...}`` (or ``\\fbox{...}``) expression, matched by brace counting so that
  ``\\boxed{\\frac{1}{2}}`` works;
- otherwise the whole reply as a plain value (a bare JSON scalar such as ``12`` or ``true`` is
  read as that value; ``null`` is no answer).

The extracted value is cleaned: surrounding whitespace, quotes, backticks, markdown bold,
``$...$`` and a trailing period are stripped, and ``\\text{...}`` wrapping the whole value is
unwrapped, as are LaTeX grouping braces around the whole boxed content (``\\boxed{{a}}``).
Numbers from JSON keep their written digits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

Form = Literal["json", "boxed", "plain"]

_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_FENCE = re.compile(r"^```[\w+-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_LATEX_WRAP = re.compile(r"^\\(?:text|textrm|textbf|mathrm|mathbf|operatorname)\s*\{(.*)\}$", re.S)
_PAIRS = (("**", "**"), ("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_QUOTES = ('"', "'", "`", "\u201c\u201d", "\u2018\u2019")
_DECODER = json.JSONDecoder(parse_float=str, parse_int=str, parse_constant=str)


@dataclass(frozen=True)
class Extraction:
    """The extracted answer text (None: nothing usable) and the form it was given in.

    ``form`` is None when the reply is not in an accepted form (empty, a JSON object without an
    ``"answer"`` key, ``{"answer": null}``, or an unbalanced ``\\boxed{``); ``value`` may then
    still hold the whole stripped reply as a fallback.
    """

    value: str | None
    form: Form | None


def extract_answer(text: str) -> str | None:
    """The final answer in ``text`` as a cleaned string, or None if there is none."""
    return extract(text).value


def extract(text: str) -> Extraction:
    """Extract the answer and say which accepted form it came in."""
    if not isinstance(text, str):
        return Extraction(None, None)
    stripped = text.strip()
    if not stripped:
        return Extraction(None, None)
    whole = _loads(stripped)
    if whole is not _FAIL:
        if isinstance(whole, dict):
            if "answer" in whole:
                return _finish(whole["answer"], "json")
            return Extraction(clean(stripped), None)
        if not isinstance(whole, list):
            return _finish(whole, "plain")
    candidates = _boxed(stripped) + _json_objects(stripped)
    if candidates:
        _, value, form = max(candidates, key=lambda c: c[0])
        return _finish(value, form)
    form: Form | None = None if _BOXED.search(stripped) else "plain"
    return Extraction(clean(stripped), form)


_FAIL = object()


def _loads(text: str) -> Any:
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        return _FAIL
    return value if end == len(text) else _FAIL


def _finish(value: Any, form: Form) -> Extraction:
    """Turn a JSON / boxed value into cleaned text (None for null or empty)."""
    if value is None:
        return Extraction(None, None)
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif not isinstance(value, str):
        value = json.dumps(value)
    cleaned = clean(value)
    return Extraction(cleaned, form if cleaned is not None else None)


def _boxed(text: str) -> list[tuple[int, str, Form]]:
    """Balanced ``\\boxed{...}`` contents with their start positions."""
    found: list[tuple[int, str, Form]] = []
    for match in _BOXED.finditer(text):
        end = _closing_brace(text, match.end() - 1)
        if end is not None:
            found.append((match.start(), _unbrace(text[match.end() : end]), "boxed"))
    return found


def _unbrace(value: str) -> str:
    """``{a}`` -> ``a`` (LaTeX grouping braces around the whole boxed content)."""
    value = value.strip()
    while value.startswith("{") and _closing_brace(value, 0) == len(value) - 1:
        value = value[1:-1].strip()
    return value


def _closing_brace(text: str, open_at: int) -> int | None:
    """Index of the brace closing the one at ``open_at`` (None if unbalanced)."""
    depth = 0
    i = open_at
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2  # an escaped character (\{ or \}) never opens or closes
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _json_objects(text: str) -> list[tuple[int, Any, Form]]:
    """JSON objects with an ``"answer"`` key embedded in ``text``, with their start positions."""
    found: list[tuple[int, Any, Form]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict) and "answer" in value:
            found.append((pos, value["answer"], "json"))
            pos = text.find("{", end)
        else:
            pos = text.find("{", pos + 1)
    return found


def clean(value: str) -> str | None:
    """Strip wrappers (whitespace, quotes, backticks, **, $, \\text{}, trailing period)."""
    previous = None
    value = value.strip()
    while value != previous:
        previous = value
        fence = _FENCE.match(value)
        if fence:
            value = fence.group(1)
        value = _strip_pairs(value.strip())
        latex = _LATEX_WRAP.match(value)
        if latex:
            value = latex.group(1)
        if value.endswith(".") and not value.endswith(".."):
            value = value[:-1]
        value = value.strip()
    return value or None


def _strip_pairs(value: str) -> str:
    for left, right in _PAIRS:
        if (
            len(value) >= len(left) + len(right)
            and value.startswith(left)
            and value.endswith(right)
        ):
            return value[len(left) : -len(right)]
    for pair in _QUOTES:
        left, right = (pair, pair) if len(pair) == 1 else (pair[0], pair[1])
        if len(value) >= 2 and value[0] == left and value[-1] == right:
            return value[1:-1]
    return value
