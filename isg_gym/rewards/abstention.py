"""Recognising an abstention ("not possible").

The canonical abstention is :data:`isg_gym.qa.ABSTAIN` (``"not possible"``). After extraction
(JSON ``{"answer": ...}``, ``\\boxed{}`` or plain text) the answer is normalised: case-folded,
typographic apostrophes made plain, wrappers and trailing ``. ! ;`` stripped, whitespace
collapsed. It is an abstention exactly when it is then one of :data:`ABSTENTIONS`:

- "not possible", "not possible to determine / answer / compute / tell / say / know"
- "impossible", "impossible to determine / answer / compute / tell / say / know"
- "cannot be determined / answered / computed / known", with "can not" and "can't" spellings
- "unanswerable", "not answerable", "undeterminable", "not determinable",
  "indeterminable"
- "insufficient data", "insufficient information", "not enough data",
  "not enough information"
- each of the above optionally followed by "from the data" / "from the repository" / "from the
  available data" / "with the available data" / "with the given data"

The set is deliberately conservative. Answers that are ordinary values are never abstentions:
"no", "0", "none", "null", "unknown", "N/A", "NA", "nan", empty text and None. "N/A" and "NA"
are excluded because they are also how missing values and empty results are written, so they
do not unambiguously say that the question cannot be answered. Sentences that merely contain
an abstention phrase ("I think it is not possible, but maybe 3") are not abstentions either.
"""

from __future__ import annotations

import re

from isg_gym.rewards.extract import extract_answer

_VERBS = ("determine", "answer", "compute", "tell", "say", "know")
_PARTICIPLES = ("determined", "answered", "computed", "known")
_SUFFIXES = (
    "",
    " from the data",
    " from the repository",
    " from the available data",
    " with the available data",
    " with the given data",
)


def _phrases() -> frozenset[str]:
    base = {
        "not possible",
        "impossible",
        "unanswerable",
        "not answerable",
        "undeterminable",
        "not determinable",
        "indeterminable",
        "insufficient data",
        "insufficient information",
        "not enough data",
        "not enough information",
    }
    base |= {f"{head} to {verb}" for head in ("not possible", "impossible") for verb in _VERBS}
    base |= {f"{neg} be {part}" for neg in ("cannot", "can not", "can't") for part in _PARTICIPLES}
    return frozenset(f"{phrase}{suffix}" for phrase in base for suffix in _SUFFIXES)


ABSTENTIONS: frozenset[str] = _phrases()


def normalise_abstention(text: str) -> str:
    """Lower-case, plain apostrophes, collapsed whitespace, no trailing ``. ! ;``."""
    text = text.casefold().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(".!; ").strip()


def is_abstention(text: object) -> bool:
    """True when ``text`` (a raw reply or an extracted answer) abstains; see module docs."""
    if not isinstance(text, str):
        return False
    value = extract_answer(text)
    return value is not None and normalise_abstention(value) in ABSTENTIONS
