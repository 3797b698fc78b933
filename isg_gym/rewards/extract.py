"""Pull the final answer out of an agent's reply.

Accepted forms (the one that starts last in the text wins when several occur):

- a JSON object with an ``"answer"`` key (extra keys allowed; the value may be a number, bool,
  string or null), the whole reply or embedded in text / a code fence;
- a LaTeX ``\\boxed{...}`` (or ``\\fbox{...}``) expression, matched by brace counting so that
  ``\\boxed{\\frac{1}{2}}`` works;
- otherwise the whole reply as a plain value (a bare JSON scalar such as ``12`` or ``true`` is
  read as that value; ``null`` is no answer);
- except that a short plain sentence that states one number is read as that number
  (:func:`stated_number`): "The minimum is 19.30 g." gives ``19.30``.

The extracted value is cleaned: surrounding whitespace, quotes, backticks, markdown bold,
``$...$`` and a trailing period are stripped, and ``\\text{...}`` wrapping the whole value is
unwrapped, as are LaTeX grouping braces around the whole boxed content (``\\boxed{{a}}``).
Numbers from JSON keep their written digits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

Form = Literal["json", "boxed", "plain"]

# A written number (as :func:`isg_gym.rewards.normalise.parse_number` reads it), not inside a word.
_NUM = (
    r"(?<![\w.])[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
    r"(?![.,]?\d)"
)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_FENCE = re.compile(r"^```[\w+-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_LATEX_WRAP = re.compile(r"^\\(?:text|textrm|textbf|mathrm|mathbf|operatorname)\s*\{(.*)\}$", re.S)
_PAIRS = (("**", "**"), ("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_QUOTES = ('"', "'", "`", "\u201c\u201d", "\u2018\u2019")
_DECODER = json.JSONDecoder(parse_float=str, parse_int=str, parse_constant=str)
_OBJECT_START = re.compile(r'\{\s*"')
_MAX_JSON_TRIES = 200


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
    value = clean(stripped)
    if form == "plain" and value is not None:
        number = stated_number(value)
        if number is not None:
            return Extraction(number, "plain")
    return Extraction(value, form)


_FAIL = object()

MAX_SENTENCE_CHARS = 200
_CUE = (
    r"(?:(?<![^\s])(?:is|was|are|were|equals|equal\s+to|has|have|had|contains|contain"
    r"|holds|hold|totals?|=|\u2248)|:)"
    r"\s+(?:(?:approximately|approx\.|about|around|roughly|exactly|~)\s*)?"
)
_STATED = re.compile(rf"{_CUE}({_NUM})", re.IGNORECASE)
_HEDGED = re.compile(  # after a stated number (and up to three unit words): not one value
    r"\s*(?:[^\W\d_]+\s+){0,3}?(?:%|percent\b|\u00b1|\+/-"
    r"|[-\u2013\u2014/,;]\s*[+-]?\.?\d"
    r"|\(?(?:or|to|and|plus|minus|times|x|vs\.?|versus)\s*[+-]?\.?\d"
    r"|\(?or\s+(?:more|less|fewer|so|above|below|higher|lower)\b)",
    re.IGNORECASE,
)


def stated_number(text: str) -> str | None:
    """The number a short plain-text answer states, or None.

    The rule (deliberately narrow, so that prose listing candidates is never graded by luck):
    the text is at most :data:`MAX_SENTENCE_CHARS` characters; a number is *stated* when it
    follows a copula, a verb of having or an equals sign ("is", "was", "are", "were", "equals",
    "equal to", "has", "have", "contains", "holds", "totals", "=", "≈", or a colon; optionally
    then "approximately", "about", ...), e.g. "The minimum is 19.30 g.", "The file has 168 data
    rows." or "Answer: 12" (a bare "168 rows" needs no rule: the numeric rubric reads up to
    three unit words after a number). Exactly one distinct value must be stated, and no stated
    number may be hedged (followed, after at most three unit words, by "%", "±", a range "-"/"to",
    a list ", 2", "or"/"and" and another number, or "or more"/"or so"). Numbers that are not
    stated (file names, a campaign number, "at 37 C") are ignored. The number is returned as
    written. Answers in JSON or ``\\boxed{}`` never reach this rule.
    """
    text = text.replace("\u2212", "-")
    if len(text) > MAX_SENTENCE_CHARS:
        return None
    stated: dict[str, str] = {}
    for match in _STATED.finditer(text):
        written = match.group(1)
        if _HEDGED.match(text, match.end(1)):
            return None
        stated.setdefault(_value_key(written), written)
    if len(stated) != 1:
        return None
    return next(iter(stated.values()))


def _value_key(written: str) -> str:
    """Equal numbers written differently ("19.3", "19.30") share a key."""
    try:
        return str(Decimal(written.replace(",", "")).normalize())
    except InvalidOperation:
        return written


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
    """Balanced ``\\boxed{...}`` contents with their start positions (one pass over the text)."""
    found: list[tuple[int, str, Form]] = []
    closing: dict[int, int] | None = None
    for match in _BOXED.finditer(text):
        if closing is None:
            closing = _brace_pairs(text)
        open_at = match.end() - 1
        end = closing.get(open_at)
        if end is not None:
            found.append((match.start(), _unbrace(text, open_at + 1, end, closing), "boxed"))
    return found


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each balanced ``{`` -> index of the ``}`` closing it (``\\{``, ``\\}`` skipped)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2  # an escaped character (\{ or \}) never opens or closes
            continue
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def _unbrace(text: str, start: int, end: int, closing: dict[int, int]) -> str:
    """``text[start:end]`` without LaTeX grouping braces around all of it (``{a}`` -> ``a``)."""
    while True:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end and text[start] == "{" and closing.get(start) == end - 1:
            start, end = start + 1, end - 1
        else:
            return text[start:end]


def _json_objects(text: str) -> list[tuple[int, Any, Form]]:
    """JSON objects with an ``"answer"`` key embedded in ``text``, with their start positions.

    Decoding is tried only at a ``{`` that opens an object with a string key before the last
    ``"answer"`` key of the text, and at most :data:`_MAX_JSON_TRIES` tries that find nothing
    (undecodable, or objects without the key) are made, so that hostile text (a megabyte of
    ``{"``) costs linear time.
    """
    found: list[tuple[int, Any, Form]] = []
    last_key = text.rfind('"answer"')
    if last_key == -1:
        return found
    misses = 0
    for match in _OBJECT_START.finditer(text, 0, last_key + 1):
        pos = match.start()
        if found and pos < found[-1][0] + found[-1][3]:
            continue  # inside an object already found
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            value = end = None
        if isinstance(value, dict) and "answer" in value and end is not None:
            found.append((pos, value["answer"], "json", end - pos))
            continue
        misses += 1
        if misses >= _MAX_JSON_TRIES:
            break
    return [(pos, value, form) for pos, value, form, _ in found]


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
