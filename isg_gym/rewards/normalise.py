"""Parsing and normalising answer values: numbers, yes/no, categories, extensions, tokens."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from decimal import Decimal, InvalidOperation

_MAX_EXPONENT = 400  # beyond float range either way; keeps Decimal -> int conversions cheap

_NUM = r"[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_TIMES_TEN = (
    r"\s*(?:\\times|\\cdot|\u00d7|\u00b7|\*|x)\s*10\s*\^\s*(?:\{\s*([+-]?\d+)\s*\}|([+-]?\d+))"
)
_UNIT = r"(?:\s*[^\W\d_]+(?:\s+[^\W\d_]+){0,2})?"
_NUMBER = re.compile(rf"({_NUM})(?:{_TIMES_TEN})?({_UNIT})", re.ASCII)
_FRAC = re.compile(rf"([+-]?)\\[dt]?frac\s*\{{\s*({_NUM})\s*\}}\s*\{{\s*({_NUM})\s*\}}")
_HEDGES = frozenset({"or", "and", "to", "plus", "minus", "times", "divided", "over", "e", "x"})
_LATEX_TEXT = re.compile(r"\\(?:text|textrm|mathrm|operatorname)\s*\{([^{}]*)\}")

YES = frozenset({"yes", "y", "true"})
NO = frozenset({"no", "n", "false"})


def parse_number(text: str) -> Decimal | None:
    """A finite number written in ``text``, exactly, or None.

    Accepts a leading sign (ASCII or Unicode minus), thousands separators (``1,234``; LaTeX
    ``1{,}234`` and ``1\\,234``), decimals, scientific notation (``1.2e-3``, ``1.2 \\times
    10^{-3}``), ``\\frac{a}{b}``, and up to three trailing unit words (``12 files``). Rejects
    percentages, hedges (``12 or 13``), ranges, NaN and infinities.
    """
    text = text.strip().replace("\u2212", "-").replace("{,}", ",").replace("\\,", ",")
    text = _LATEX_TEXT.sub(r" \1", text).strip()
    frac = _FRAC.fullmatch(text)
    if frac:
        num, den = _decimal(frac.group(2)), _decimal(frac.group(3))
        if num is None or den is None or den == 0:
            return None
        value = num / den
        return -value if frac.group(1) == "-" else value
    match = _NUMBER.fullmatch(text)
    if not match:
        return None
    units = match.group(4).split()
    if any(word.casefold() in _HEDGES for word in units):
        return None
    value = _decimal(match.group(1))
    exponent = match.group(2) or match.group(3)
    if value is None:
        return None
    if exponent is not None:
        if abs(int(exponent)) > _MAX_EXPONENT:
            return None
        value = value.scaleb(int(exponent))
    return value if _sane(value) else None


def _decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    return value if _sane(value) else None


def _sane(value: Decimal) -> bool:
    return value.is_finite() and (value == 0 or abs(value.adjusted()) <= _MAX_EXPONENT)


def parse_yes_no(text: str) -> bool | None:
    """True / False for yes, y, true / no, n, false (any case, wrapping punctuation), else None."""
    word = re.sub(r"^[\W_]+|[\W_]+$", "", text.casefold())
    if word in YES:
        return True
    if word in NO:
        return False
    return None


def normalise_category(text: str) -> str:
    """Case-folded, whitespace-collapsed, without wrapping quotes / backticks / trailing period."""
    text = unicodedata.normalize("NFKC", text).strip()
    previous = None
    while text != previous:
        previous = text
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
            text = text[1:-1].strip()
        if text.endswith(".") and not text.endswith(".."):
            text = text[:-1].strip()
    return re.sub(r"\s+", " ", text).casefold()


def normalise_extension(text: str) -> str:
    """``.CSV``, ``*.csv`` and ``csv`` all become ``csv``."""
    text = normalise_category(text).replace(" ", "")
    return text.lstrip("*").lstrip(".")


def tokens(text: str) -> list[str]:
    """Case-folded word tokens (letters and digits; punctuation and underscores split)."""
    return re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold())


def token_f1(prediction: str, gold: str, *, fuzzy: bool = True) -> float:
    """Token-overlap F1 of two texts (multiset counts).

    With ``fuzzy``, tokens left unmatched after exact matching are paired greedily when they are
    one edit apart (two for tokens of 8+ characters) and at least 4 characters long, so that small
    typos count as matches (skipped when more than 2,500 leftover pairs remain: such texts are far
    apart anyway, and it bounds the cost).
    """
    pred, ref = tokens(prediction), tokens(gold)
    if not pred or not ref:
        return 0.0
    common = Counter(pred) & Counter(ref)
    matched = sum(common.values())
    if fuzzy:
        left_pred = list((Counter(pred) - common).elements())
        left_ref = list((Counter(ref) - common).elements())
        if left_pred and left_ref and len(left_pred) * len(left_ref) <= 2_500:
            matched += _fuzzy_matches(left_pred, left_ref)
    if matched == 0:
        return 0.0
    precision, recall = matched / len(pred), matched / len(ref)
    return 2 * precision * recall / (precision + recall)


def _fuzzy_matches(pred: list[str], ref: list[str]) -> int:
    unused = list(ref)
    count = 0
    for token in pred:
        if len(token) < 4:
            continue
        allowed = 2 if len(token) >= 8 else 1
        for i, other in enumerate(unused):
            if len(other) >= 4 and _within_edits(token, other, allowed):
                del unused[i]
                count += 1
                break
    return count


def _within_edits(a: str, b: str, k: int) -> bool:
    """Levenshtein distance of ``a`` and ``b`` is at most ``k`` (adjacent swaps count once)."""
    if abs(len(a) - len(b)) > k:
        return False
    if len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 2:
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]:
            return True
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        best = row[0]
        for j, cb in enumerate(b, 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
            prev, row[j] = row[j], cur
            best = min(best, cur)
        if best > k:
            return False
    return row[-1] <= k
