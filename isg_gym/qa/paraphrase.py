"""LLM paraphrases of questions, accepted only when a mechanical check finds nothing lost.

A question's *preserved tokens* are what a rewrite must keep verbatim: every number of its text
(integers, decimals, negatives, dates), quoted strings (file paths and prefixes in backticks,
column names and labels in double quotes), the values of its path and row conditions, the
significant-figure instruction, the significance level, whether Yates' correction is used, and a
few meaning words (the statistic or test, highest / lowest, the comparison words of conditions).
:func:`check_paraphrase` lists what a candidate lost; :func:`paraphrase_questions` asks a
:class:`~isg_gym.eval.backends.base.ChatBackend` for rewrites and caches the accepted ones per
model (``<cache_dir>/<model slug>.json``: question id -> ``{"text", "original_sha256"}``), and
:func:`apply_paraphrases` swaps them into the questions (answers untouched).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isg_gym.qa.base import Question
from isg_gym.qa.conditions import fmt_num

if TYPE_CHECKING:
    from isg_gym.eval.backends.base import ChatBackend, Completion, Message

# Problems reported by check_paraphrase besides missing tokens (angle brackets never occur in a
# preserved token).
EMPTY = "<empty text>"
IDENTICAL = "<identical to the original>"
ABSTAIN_HINT = "<adds a hint that the question may be unanswerable>"
BACKEND_ERROR = "<backend error>"

NUMBER = r"-?\d+(?:[.:_/-]\d+)*"  # 12, 0.05, -3.5, 007, 04-24, 2023-01-05, 03_05
_NUMBER_IN_TEXT = re.compile(rf"(?<![\w.]){NUMBER}(?!\w)")
_QUOTED = re.compile(r'`([^`\n]+)`|"([^"\n]+)"')
_SIG_FIGS = re.compile(r"\b(\d+) significant figures?\b")
_COMPARE = {
    "gt": "greater than",
    "lt": "less than",
    "ge": "at least",
    "le": "at most",
    "between": "between",
    "ne": "is not",
    "in": "one of",
    "is_one_of": "one of",
}
_STAT_WORDS = {
    "mode": "most common",
    "min": "minimum",
    "max": "maximum",
    "median": "median",
    "mean": "mean",
    "std": "standard deviation",
    "var": "variance",
    "n_distinct": "distinct",
    "pearson": "Pearson",
    "spearman": "Spearman",
    "ols_slope": "slope",
    "chi_square": "chi-square",
    "welch_t": "Welch",
}
_ABSTAIN_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"not possible",
        r"unanswerable",
        r"impossible",
        r"can ?not be (?:answered|determined|computed|calculated)",
        r"can't be (?:answered|determined|computed|calculated)",
        r"(?:does|do|may|might) not exist",
        r"(?:doesn't|don't) exist",
        r"no such",
        r"if (?:there (?:is|are) no|no (?:such|file|row|data))",
    )
)


def is_numeric(token: str) -> bool:
    """Whether ``token`` is a number (or number-like date) compared by its digits."""
    return re.fullmatch(NUMBER, token) is not None


def _dedup(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(t for t in items if t))


def _show(value: Any) -> str:
    """A condition value as the question text writes it."""
    if isinstance(value, str):
        return value
    return fmt_num(value)


def _condition_tokens(conditions: Iterable[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(values, comparison words) of path or row conditions given as dicts."""
    values: list[str] = []
    words: list[str] = []
    for cond in conditions:
        value, op = cond.get("value"), cond.get("op")
        values += [_show(v) for v in value] if isinstance(value, list | tuple) else [_show(value)]
        if op == "between":
            values.append(_show(cond.get("high")))
            words.append("inclusive")
        if op in _COMPARE:
            words.append(_COMPARE[op])
    return values, words


def _param_tokens(question: Question) -> list[str]:
    """Column names, files, prefixes, labels and condition values from ``question.params``."""
    p = question.params
    out = [str(p[k]) for k in ("file", "prefix", "column", "x", "y", "group_column", "group_a",
                               "group_b") if p.get(k) is not None]  # fmt: skip
    if p.get("group_kind") == "column":
        out.append(str(p["group_by"]))
    for key in ("path_conditions", "row_conditions"):
        conds = p.get(key) or []
        out += [str(c["column"]) for c in conds if "column" in c]
        values, words = _condition_tokens(conds)
        out += values + words
    if p.get("alpha") is not None:
        out.append(str(p["alpha"]))
    if isinstance(p.get("correction"), bool):
        out.append("with Yates" if p["correction"] else "without Yates")
    stat = p.get("statistic") or p.get("test")
    if stat in _STAT_WORDS:
        out.append(_STAT_WORDS[stat])
    if p.get("direction") in ("highest", "lowest"):
        out.append(str(p["direction"]))
    if question.sig_figs is not None:
        out.append(f"{question.sig_figs} significant figures")
    return out


def preserved_tokens(question: Question) -> list[str]:
    """What a rewrite of ``question`` must keep verbatim (first occurrence order, no repeats)."""
    text = question.text
    quoted = [a or b for a, b in _QUOTED.findall(text)]
    sig = [f"{n} significant figures" for n in _SIG_FIGS.findall(text)]
    bare = _SIG_FIGS.sub(" ", _QUOTED.sub(" ", text))
    numbers = _NUMBER_IN_TEXT.findall(bare)
    extra = ["README.md"] if "README.md" in text else []
    if "Yates" in text and not isinstance(question.params.get("correction"), bool):
        extra.append("without Yates" if "without Yates" in text else "with Yates")
    return _dedup([*quoted, *numbers, *sig, *extra, *_param_tokens(question)])


def _pattern(token: str) -> re.Pattern[str]:
    """``token`` as a whole: not glued to a word character (numbers: nor to more digits)."""
    body = re.escape(token)
    if is_numeric(token):
        return re.compile(rf"(?<![\w.])(?<!(?<!\w)-){body}(?!\w|[.:_/-]\d)")
    lead = r"(?<!\w)" if re.match(r"\w", token) else ""
    tail = r"(?!\w)" if re.search(r"\w$", token) else ""
    return re.compile(lead + body + tail)


def _normalize(text: str) -> str:
    return " ".join(text.split())


def missing_tokens(tokens: Sequence[str], text: str) -> list[str]:
    """The tokens not found in ``text``.

    Non-numeric tokens (paths, names, phrases) are looked up first; numbers are then looked up
    in what remains once those are blanked out, so a number inside a path does not count.
    """
    words = sorted((t for t in tokens if not is_numeric(t)), key=len, reverse=True)
    lost = {t for t in words if not _pattern(t).search(text)}
    rest = text
    for token in words:
        rest = _pattern(token).sub(" ", rest)
    lost |= {t for t in tokens if is_numeric(t) and not _pattern(t).search(rest)}
    return [t for t in tokens if t in lost]


def check_paraphrase(question: Question, text: str) -> list[str]:
    """What is wrong with ``text`` as a rewrite of ``question`` (empty list = accepted).

    Missing preserved tokens are listed as themselves; other problems as :data:`EMPTY`,
    :data:`IDENTICAL` or :data:`ABSTAIN_HINT`.
    """
    text = _normalize(text or "")
    if not text:
        return [EMPTY]
    problems: list[str] = []
    if text.casefold() == _normalize(question.text).casefold():
        problems.append(IDENTICAL)
    if any(p.search(text) and not p.search(question.text) for p in _ABSTAIN_PATTERNS):
        problems.append(ABSTAIN_HINT)
    return problems + missing_tokens(preserved_tokens(question), text)


# --- the cache --------------------------------------------------------------------------------


def model_slug(model: str) -> str:
    """A file-name-safe form of a model name (``org/Model-7B`` -> ``org_Model-7B``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"


def cache_path(cache_dir: str | os.PathLike[str], model: str) -> Path:
    return Path(cache_dir) / f"{model_slug(model)}.json"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_paraphrases(cache_dir: str | os.PathLike[str], model: str) -> dict[str, dict[str, str]]:
    """The cached rewrites of ``model``: question id -> ``{"text", "original_sha256"}``."""
    path = cache_path(cache_dir, model)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"paraphrase cache {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"paraphrase cache {path} must hold a JSON object")
    return data


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cached(question: Question, entry: Any) -> str | None:
    """The cached rewrite if it belongs to this original text and still passes the check."""
    if not isinstance(entry, dict) or entry.get("original_sha256") != text_sha256(question.text):
        return None
    text = entry.get("text")
    if not isinstance(text, str) or check_paraphrase(question, text):
        return None
    return text


# --- asking a model ---------------------------------------------------------------------------

SYSTEM_PROMPT = (
    "You rewrite questions about a scientific data repository. Say the same thing in different "
    "words, keeping the exact meaning: every condition, rule and instruction on how to answer "
    "must stay. Copy every protected token verbatim (same spelling, case and digits); do not "
    "reformat numbers, paths or names. Do not add information, hints or remarks (never suggest "
    "the question might be unanswerable), and do not answer the question. Reply with the "
    "rewritten question only, between <paraphrase> and </paraphrase>."
)


def build_prompt(question: Question) -> list[Message]:
    """The chat asking for one rewrite (the protected tokens listed, JSON-quoted)."""
    tokens = "\n".join(f"- {json.dumps(t, ensure_ascii=False)}" for t in preserved_tokens(question))
    user = f"Question:\n{question.text}\n\n"
    user += (
        f"Protected tokens (copy each verbatim):\n{tokens}" if tokens else "No protected tokens."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _retry_message(problems: list[str]) -> Message:
    lost = [p for p in problems if not p.startswith("<")]
    notes = [p.strip("<>") for p in problems if p.startswith("<")]
    parts = []
    if lost:
        parts.append("it lost these protected tokens: " + ", ".join(json.dumps(t) for t in lost))
    if notes:
        parts.append("; ".join(notes))
    return {
        "role": "user",
        "content": "That rewrite was rejected: " + "; ".join(parts) + ". Rewrite the original "
        "question again, copying every protected token verbatim.",
    }


_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
_TAGGED = re.compile(r"<paraphrase>(.*?)(?:</paraphrase>|$)", re.DOTALL)


def extract_paraphrase(completion_text: str) -> str:
    """The rewrite in a model's reply (inside ``<paraphrase>`` tags when present)."""
    text = _THINK.sub("", completion_text or "")
    tagged = _TAGGED.findall(text)
    if tagged:
        text = tagged[-1]
    text = re.sub(r"^```\w*|```$", "", text.strip()).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and text[0] not in text[1:-1]:
        text = text[1:-1]  # a reply wrapped in quotes (not one starting and ending with a name)
    return _normalize(text)


@dataclass
class ParaphraseResult:
    """The outcome for one question.

    ``paraphrase`` is the accepted rewrite, or the last rejected candidate (``accepted`` False,
    ``missing`` says why), or None when no candidate came back.
    """

    question_id: str
    original: str
    paraphrase: str | None
    accepted: bool
    missing: list[str] = field(default_factory=list)
    from_cache: bool = False
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def paraphrase_questions(
    questions: Sequence[Question],
    backend: ChatBackend,
    *,
    cache_dir: str | os.PathLike[str],
    attempts: int = 2,
) -> list[ParaphraseResult]:
    """Rewrites of ``questions`` (same order), from the cache or from ``backend``.

    Each attempt round makes one batched ``backend.complete`` call for every question still
    without an accepted rewrite; a retry continues the chat with what was wrong. Accepted
    rewrites are cached by (question id, ``backend.model``); an entry whose original text
    changed is ignored and replaced.
    """
    if attempts < 0:
        raise ValueError("attempts must be >= 0")
    path = cache_path(cache_dir, backend.model)
    cache = load_paraphrases(cache_dir, backend.model)
    unique: dict[str, Question] = {}
    for question in questions:
        unique.setdefault(question.id, question)  # the first of repeated ids wins
    results: dict[str, ParaphraseResult] = {}
    chats: dict[str, list[Message]] = {}
    for qid, question in unique.items():
        text = _cached(question, cache.get(qid))
        if text is not None:
            results[qid] = ParaphraseResult(qid, question.text, text, True, from_cache=True)
        else:
            results[qid] = ParaphraseResult(qid, question.text, None, False)
            chats[qid] = build_prompt(question)
    for _ in range(attempts):
        if not chats:
            break
        ids = list(chats)
        completions: list[Completion] = backend.complete([chats[i] for i in ids], [])
        if len(completions) != len(ids):
            raise RuntimeError(f"backend returned {len(completions)} completions for {len(ids)}")
        for qid, completion in zip(ids, completions, strict=True):
            result = results[qid]
            result.attempts += 1
            if completion.error:
                result.missing = [f"{BACKEND_ERROR} {completion.error}"]
                continue
            candidate = extract_paraphrase(completion.text)
            result.paraphrase = candidate or None
            result.missing = check_paraphrase(unique[qid], candidate)
            if not result.missing:
                result.accepted = True
                del chats[qid]
            else:
                retry = _retry_message(result.missing)
                chats[qid] = [*chats[qid], {"role": "assistant", "content": completion.text}, retry]
    _update_cache(path, cache_dir, backend.model, unique, results)
    return [results[q.id] for q in questions]


def _update_cache(
    path: Path,
    cache_dir: str | os.PathLike[str],
    model: str,
    questions: dict[str, Question],
    results: dict[str, ParaphraseResult],
) -> None:
    """Store new accepted rewrites and drop stale entries of these questions (re-read first, so
    that entries written meanwhile by another run are kept)."""
    cache = load_paraphrases(cache_dir, model)
    changed = False
    for qid, result in results.items():
        if result.from_cache:
            continue
        if result.accepted and result.paraphrase is not None:
            cache[qid] = {"text": result.paraphrase,
                          "original_sha256": text_sha256(questions[qid].text)}  # fmt: skip
            changed = True
        elif qid in cache and _cached(questions[qid], cache[qid]) is None:
            del cache[qid]
            changed = True
    if changed:
        _write_atomic(path, cache)


def apply_paraphrases(
    questions: Sequence[Question], cache_dir: str | os.PathLike[str], model: str
) -> list[Question]:
    """``questions`` with their text replaced by ``model``'s accepted, up-to-date rewrite where
    the cache has one (everything else, the answer included, unchanged)."""
    cache = load_paraphrases(cache_dir, model)
    out = []
    for question in questions:
        text = _cached(question, cache.get(question.id))
        out.append(question if text is None else dataclasses.replace(question, text=text))
    return out


def summarize(results: Sequence[ParaphraseResult]) -> dict[str, Any]:
    """Counts for a CLI line: total, accepted, from_cache, rejected, and the most often lost
    tokens or problems."""
    lost: dict[str, int] = {}
    for r in results:
        if not r.accepted:
            for item in r.missing:
                key = BACKEND_ERROR if item.startswith(BACKEND_ERROR) else item
                lost[key] = lost.get(key, 0) + 1
    top = sorted(lost.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    return {
        "total": len(results),
        "accepted": sum(r.accepted for r in results),
        "from_cache": sum(r.from_cache for r in results),
        "rejected": sum(not r.accepted for r in results),
        "most_lost": dict(top),
    }
