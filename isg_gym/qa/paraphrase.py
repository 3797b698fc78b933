"""LLM paraphrases of questions, accepted only when a mechanical check finds nothing lost or added.

:func:`check_paraphrase` lists what is wrong with a candidate rewrite (an empty list accepts it).
It is built from the question's text and params and from the repository's own text, never from
a particular template's wording:

- **Preserved tokens** (:func:`preserved_tokens`), kept verbatim: every number of the text
  (integers, decimals, negatives, dates), quoted strings (file paths and prefixes in backticks,
  column names and labels in double quotes), the values of path and row conditions, the
  significant-figure instruction, the significance level, whether Yates' correction is used, and
  meaning words (the statistic or test, highest / lowest, the comparison words of conditions).
- **Instruction sentences** (:func:`instruction_sentences`): every sentence of the original
  after its first (the question itself) is a rule on how to answer ("Ignore missing values.",
  "Use only the rows where both ... are present.", "Answer yes if ...", "Give the answer to 3
  significant figures.") and must appear word for word (case and spacing aside). The first
  sentence may be reworded, within the other rules.
- **Meaning words**: negations (not, no, without, except, ...) occur exactly as often as in the
  original; restrictions and quantifiers (only, both, each, every, all, inclusive, ...) at least
  as often; "yes" and "no" are kept.
- **Nothing added that could answer it**: no number (digits or number words) the original does
  not carry; no quoted string, file name, path or identifier-like token (``a_b``, ``x/y``,
  ``k=v``, ``name.ext``) that is not in the original; no name, label or value of the repository
  (column names and labels, category labels, path variable names, labels and values as the
  paths render them, unrecorded variables, the title, file formats) that the original does not
  carry; no run of 5 words from the repository's prose (README, title, abstract, project
  description, variable descriptions) that the original does not carry; not the gold answer
  (text answers) when the original does not carry it.
- **Shape**: the length ratio (characters, rewrite / original) within
  [:data:`MIN_LENGTH_RATIO`, :data:`MAX_LENGTH_RATIO`]; at most one sentence more than the
  original (a lead-in such as "Please answer the following."); at most
  ``max(NEW_WORDS_MIN, NEW_WORDS_SHARE * n)`` new content words (words of neither the original
  nor a short list of function words; ``n``: the original's distinct content words), and only
  :data:`FREE_TEXT_NEW_WORDS` when the answer is free text (a title, an abstract), so that no
  made-up passage fits in; not empty, not identical, and no hint that the question
  may be unanswerable.

Lost items are listed as themselves (a token, or an instruction sentence); other problems as
``<...>`` strings (:data:`EMPTY`, :data:`IDENTICAL`, :data:`ABSTAIN_HINT`, ``<adds ...>``,
``<length ratio ...>``, ...). :func:`paraphrase_questions` asks a
:class:`~isg_gym.eval.backends.base.ChatBackend` for rewrites and caches the accepted ones; the
cache key is the model name exactly as the user typed it (``model``), the question id and
:data:`~isg_gym.qa.base.QUESTION_VERSION`: ``<cache_dir>/<model slug>-<hash of the name>.json``
holds ``{"model": name, "entries": {"v<version>/<question id>": {"text", "original_sha256"}}}``.
An entry whose original text changed, or that no longer passes the check, is ignored.
:func:`apply_paraphrases` swaps accepted rewrites into the questions (answers untouched).
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
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from isg_gym.qa.base import QUESTION_VERSION, Question
from isg_gym.qa.conditions import fmt_num

if TYPE_CHECKING:
    from isg_gym.eval.backends.base import ChatBackend, Completion, Message

# Problems reported by check_paraphrase besides missing tokens (angle brackets never occur in a
# preserved token).
EMPTY = "<empty text>"
IDENTICAL = "<identical to the original>"
ABSTAIN_HINT = "<adds a hint that the question may be unanswerable>"
BACKEND_ERROR = "<backend error>"
MIN_LENGTH_RATIO = 0.5
MAX_LENGTH_RATIO = 2.0
PROSE_NGRAM = 5  # words in a run of repository prose that a rewrite may not add
# New content words (not in the original, not function words) a rewrite may bring: at most
# max(NEW_WORDS_MIN, NEW_WORDS_SHARE * the original's content words).
NEW_WORDS_MIN = 8
NEW_WORDS_SHARE = 0.5
# Questions whose answer is free text (a title, an abstract) may bring only a few: a made-up
# passage would be an answer in the question.
FREE_TEXT_KINDS = frozenset({"string", "text"})
FREE_TEXT_NEW_WORDS = 3

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


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"`(])")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_NEGATIONS = ("not", "no", "never", "without", "except", "excluding", "neither", "nor", "none")
_RESTRICTIONS = ("only", "both", "each", "every", "all", "any", "inclusive", "exclusive",
                 "strictly", "distinct", "missing", "per", "yes")  # fmt: skip


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_NUMBER_WORDS = _word_set(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty "
    "ninety hundred thousand million dozen"
)
_IDENTIFIER = re.compile(
    r"(?<![\w./=-])[A-Za-z0-9][\w.=-]*(?:[_/=][\w.=-]*[A-Za-z0-9]|\.[A-Za-z][A-Za-z0-9]{1,4})"
    r"(?![\w/=])"
)
_FUNCTION_WORDS = _word_set(
    "a an the of to in on at for by with from as into over across within among between than "
    "is are was were be been being do does did has have had can could should would will shall "
    "may might must this that these those it its they them their there here what which who whom "
    "whose how many much and or but if then so such when where while whether please also just "
    "i you we your our me my"
)
# Single words too common in questions to count as "repository terms" when a label equals one.
_GENERIC = _word_set(
    "data file files value values number count date time mean group groups sample samples "
    "name type total rows row column columns yes no none other"
)


def _sentences(text: str) -> list[str]:
    return [t for t in _SENTENCE_END.split(_normalize(text)) if t]


def _fold(text: str) -> str:
    """Case, spacing and quote style aside, for comparing sentences."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    return _normalize(text.replace("\u201d", '"')).casefold()


def instruction_sentences(question: Question) -> list[str]:
    """The sentences of the original after its first: rules a rewrite keeps word for word."""
    return _sentences(question.text)[1:]


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _count_word(words: list[str], word: str) -> int:
    if word == "not":
        return sum(w == "not" or w.endswith("n't") for w in words)
    return words.count(word)


def _has_phrase(term: str, text: str) -> bool:
    """Whether ``term`` occurs in ``text`` as whole words (case-insensitive)."""
    pattern = rf"(?<![\w]){re.escape(term)}(?![\w])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def _ngrams(words: list[str], n: int = PROSE_NGRAM) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


@dataclass(frozen=True)
class RepositoryText:
    """What a repository says about itself: its names and labels (``terms``) and the word runs
    of its prose (``prose``), for spotting a rewrite that adds them."""

    terms: frozenset[str]
    prose: frozenset[tuple[str, ...]]

    @classmethod
    def of(cls, repo: Any) -> RepositoryText:
        """Terms and prose of a :class:`~isg_gym.repository.Repository`."""
        from isg_gym.repository.index import render_token
        from isg_gym.spec.models import FILE_FORMATS

        spec = repo.spec
        terms: list[str] = [spec.story.title, *FILE_FORMATS, *(f".{f}" for f in FILE_FORMATS)]
        prose = [spec.story.title, spec.story.abstract, spec.story.description, repo.readme or ""]
        for info in [*spec.columns, *spec.path_variables, *spec.unrecorded]:
            terms += [info.name, info.label]
            prose += [info.label, info.description]
            terms += [str(v) for v in getattr(info, "values", None) or []]
        for var in spec.path_variables:
            terms.append(var.short)
            terms += [render_token(spec, var, v) for v in var.values]
        keep = {
            t.strip() for t in terms
            if len(t.strip()) >= 2 and not is_numeric(t.strip())
            and t.strip().casefold() not in _GENERIC
        }  # fmt: skip
        grams: set[tuple[str, ...]] = set()
        for chunk in prose:
            grams |= _ngrams(_words(chunk))
        return cls(frozenset(keep), frozenset(grams))


@lru_cache(maxsize=256)
def repository_text(seed: int) -> RepositoryText:
    """:class:`RepositoryText` of repository ``seed`` (cached)."""
    from isg_gym.repository import Repository

    return RepositoryText.of(Repository.from_seed(seed))


def _numbers(text: str) -> list[str]:
    return _NUMBER_IN_TEXT.findall(_QUOTED.sub(" ", text))


def _added(question: Question, text: str, repo_text: RepositoryText) -> list[str]:
    """Problems for what ``text`` adds that the original does not carry."""
    original = _normalize(question.text)
    problems: list[str] = []
    known_numbers = set(_NUMBER_IN_TEXT.findall(original))
    for number in _dedup(_numbers(text)):
        if number not in known_numbers:
            problems.append(f"<adds the number {number}>")
    text_words, original_words = _words(text), _words(original)
    for word in sorted(_NUMBER_WORDS):
        if _count_word(text_words, word) > _count_word(original_words, word):
            problems.append(f"<adds the number word {word!r}>")
    for quoted in _dedup(a or b for a, b in _QUOTED.findall(text)):
        if quoted not in original:
            problems.append(f"<adds the quoted {quoted!r}>")
    for ident in _dedup(_IDENTIFIER.findall(_QUOTED.sub(" ", text))):
        if ident not in original and not is_numeric(ident):
            problems.append(f"<adds the name {ident!r}>")
    for term in sorted(repo_text.terms):
        if _has_phrase(term, text) and not _has_phrase(term, original):
            problems.append(f"<adds the repository's {term!r}>")
    new_grams = _ngrams(text_words) - _ngrams(original_words)
    leaked = sorted(" ".join(g) for g in new_grams & repo_text.prose)
    if leaked:
        problems.append(f"<adds the repository's text {leaked[0]!r}>")
    answer = question.answer
    if (
        isinstance(answer, str) and len(answer) >= 2
        and _has_phrase(answer, text) and not _has_phrase(answer, original)
    ):  # fmt: skip
        problems.append("<adds the answer>")
    return problems


def _meaning(question: Question, text: str) -> list[str]:
    """Problems with negations, restrictions and instruction sentences."""
    problems: list[str] = []
    text_words, original_words = _words(text), _words(question.text)
    for word in _NEGATIONS:
        have, want = _count_word(text_words, word), _count_word(original_words, word)
        if have != want:
            problems.append(f"<{word!r} {have} times, the original {want}>")
    for word in _RESTRICTIONS:
        have, want = _count_word(text_words, word), _count_word(original_words, word)
        if have < want:
            problems.append(f"<drops {word!r}>")
    folded = _fold(text)
    for sentence in instruction_sentences(question):
        if _fold(sentence).rstrip(".?!") not in folded:
            problems.append(sentence)
    return problems


def _shape(question: Question, text: str) -> list[str]:
    ratio = len(text) / max(len(_normalize(question.text)), 1)
    problems = []
    if not MIN_LENGTH_RATIO <= ratio <= MAX_LENGTH_RATIO:
        problems.append(
            f"<length ratio {ratio:.2f}, accepted {MIN_LENGTH_RATIO}-{MAX_LENGTH_RATIO}>"
        )
    extra = len(_sentences(text)) - len(_sentences(question.text))
    if extra > 1:
        problems.append(f"<adds {extra} sentences>")
    original = set(_words(question.text))
    content = [w for w in _words(question.text) if w not in _FUNCTION_WORDS]
    new = _dedup(w for w in _words(text) if w not in original and w not in _FUNCTION_WORDS)
    limit = max(NEW_WORDS_MIN, int(NEW_WORDS_SHARE * len(set(content))))
    if question.answer_kind in FREE_TEXT_KINDS:
        limit = FREE_TEXT_NEW_WORDS
    if len(new) > limit:
        problems.append(f"<adds {len(new)} new words, at most {limit}: {' '.join(new[:6])} ...>")
    return problems


def check_paraphrase(
    question: Question, text: str, repo_text: RepositoryText | None = None
) -> list[str]:
    """What is wrong with ``text`` as a rewrite of ``question`` (empty list = accepted); see the
    module docstring for the rules.

    ``repo_text`` is the repository's :class:`RepositoryText` (default: built from repository
    ``question.repository``). Lost tokens and instruction sentences are listed as themselves;
    other problems as ``<...>`` strings such as :data:`EMPTY`, :data:`IDENTICAL` or
    :data:`ABSTAIN_HINT`.
    """
    text = _normalize(text or "")
    if not text:
        return [EMPTY]
    problems: list[str] = []
    if text.casefold() == _normalize(question.text).casefold():
        problems.append(IDENTICAL)
    if any(p.search(text) and not p.search(question.text) for p in _ABSTAIN_PATTERNS):
        problems.append(ABSTAIN_HINT)
    repo_text = repo_text if repo_text is not None else repository_text(question.repository)
    problems += _shape(question, text)
    problems += _added(question, text, repo_text)
    problems += _meaning(question, text)
    lost = missing_tokens(preserved_tokens(question), text)
    return _dedup(problems + [t for t in lost if t not in problems])


# --- the cache --------------------------------------------------------------------------------


def model_slug(model: str) -> str:
    """A file-name-safe form of a model name (``org/Model-7B`` -> ``org_Model-7B``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"


def cache_path(cache_dir: str | os.PathLike[str], model: str) -> Path:
    """The cache file of ``model`` (its name exactly as typed: ``org/M`` and ``org_M`` differ)."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"model must be a non-empty name, got {model!r}")
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:12]
    return Path(cache_dir) / f"{model_slug(model)}-{digest}.json"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_key(question_id: str, version: int = QUESTION_VERSION) -> str:
    """The key of a question's entry in a model's cache: ``"v2/118.univariate_statistic.3"``."""
    return f"v{version}/{question_id}"


def _load_entries(cache_dir: str | os.PathLike[str], model: str) -> dict[str, Any]:
    """All entries of ``model``'s cache file (every question version)."""
    path = cache_path(cache_dir, model)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"paraphrase cache {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise ValueError(f'paraphrase cache {path} must hold {{"model": ..., "entries": {{...}}}}')
    if data.get("model") != model:
        raise ValueError(f"paraphrase cache {path} belongs to model {data.get('model')!r}")
    return data["entries"]


def load_paraphrases(cache_dir: str | os.PathLike[str], model: str) -> dict[str, dict[str, str]]:
    """The cached rewrites of ``model`` under the current :data:`QUESTION_VERSION`: question id
    -> ``{"text", "original_sha256"}``."""
    prefix = entry_key("")
    entries = _load_entries(cache_dir, model)
    return {k[len(prefix) :]: v for k, v in entries.items() if k.startswith(prefix)}


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
    """The chat asking for one rewrite (the protected tokens listed, JSON-quoted, and the
    instruction sentences to keep)."""
    tokens = "\n".join(f"- {json.dumps(t, ensure_ascii=False)}" for t in preserved_tokens(question))
    user = f"Question:\n{question.text}\n\n"
    user += (
        f"Protected tokens (copy each verbatim):\n{tokens}" if tokens else "No protected tokens."
    )
    rules = instruction_sentences(question)
    if rules:
        user += "\n\nSentences to keep word for word (rewrite only the first sentence):\n"
        user += "\n".join(f"- {r}" for r in rules)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _retry_message(problems: list[str]) -> Message:
    lost = [p for p in problems if not p.startswith("<")]
    notes = [p.strip("<>") for p in problems if p.startswith("<")]
    parts = []
    if lost:
        parts.append("it lost these protected tokens or sentences: "
                     + ", ".join(json.dumps(t) for t in lost))  # fmt: skip
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
    model: str | None = None,
) -> list[ParaphraseResult]:
    """Rewrites of ``questions`` (same order), from the cache or from ``backend``.

    Each attempt round makes one batched ``backend.complete`` call for every question still
    without an accepted rewrite; a retry continues the chat with what was wrong. Accepted
    rewrites are cached by (``model``: the model name as the user typed it, default
    ``backend.model``; question id; :data:`QUESTION_VERSION`); an entry whose original text
    changed is ignored and replaced.
    """
    if attempts < 0:
        raise ValueError("attempts must be >= 0")
    model = backend.model if model is None else model
    path = cache_path(cache_dir, model)
    cache = load_paraphrases(cache_dir, model)
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
    _update_cache(path, cache_dir, model, unique, results)
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
    entries = _load_entries(cache_dir, model)
    changed = False
    for qid, result in results.items():
        if result.from_cache:
            continue
        key = entry_key(qid)
        if result.accepted and result.paraphrase is not None:
            entries[key] = {"text": result.paraphrase,
                            "original_sha256": text_sha256(questions[qid].text)}  # fmt: skip
            changed = True
        elif key in entries and _cached(questions[qid], entries[key]) is None:
            del entries[key]
            changed = True
    if changed:
        _write_atomic(path, {"model": model, "entries": entries})


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
