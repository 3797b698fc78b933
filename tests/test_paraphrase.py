"""Paraphrases of questions: preserved tokens, the mechanical check, asking a model, the cache."""

from __future__ import annotations

import dataclasses
import json
import re
from functools import cache
from typing import Any

import pytest

from isg_gym.eval.backends.base import ChatBackend, Completion
from isg_gym.qa import QUESTION_TYPES, QUESTION_VERSION, Question
from isg_gym.qa.conditions import fmt_num
from isg_gym.qa.paraphrase import (
    ABSTAIN_HINT,
    BACKEND_ERROR,
    EMPTY,
    IDENTICAL,
    apply_paraphrases,
    cache_path,
    check_paraphrase,
    entry_key,
    extract_paraphrase,
    instruction_sentences,
    load_paraphrases,
    model_slug,
    paraphrase_questions,
    preserved_tokens,
    repository_text,
    summarize,
    text_sha256,
)
from isg_gym.qa.sampling import generate_questions
from isg_gym.repository import Repository

MODEL = "org/Fake-Model-1B"


@cache
def _repo(seed: int) -> Repository:
    return Repository.from_seed(seed)


@cache
def questions_by_type() -> dict[str, list[Question]]:
    """Real questions of every type (answerable and unanswerable) over a few repositories."""
    out: dict[str, list[Question]] = {name: [] for name in QUESTION_TYPES}
    for seed in range(12):
        for name in QUESTION_TYPES:
            for ratio in (0.0, 1.0):
                out[name] += generate_questions(
                    _repo(seed), 2, types=[name], unanswerable_ratio=ratio, max_slots=24
                )
    return out


def _question(text: str, params: dict[str, Any], **kw: Any) -> Question:
    fields = {
        "id": "7.univariate_statistic.0",
        "repository": 7,
        "type": "univariate_statistic",
        "family": "univariate_statistics",
        "answer_kind": "float",
        "answer": 1.25,
    }
    fields |= kw
    return Question(text=text, params=params, **fields)


MEAN_Q = _question(
    'What is the mean of "body_weight" across the data files where collection date (path '
    'component "date") is 04-24, using only rows where "age" is between -2.5 and 12 (inclusive) '
    'and "site" is "north"? Ignore missing values. Give the answer to 3 significant figures.',
    {"scope": "files", "column": "body_weight", "statistic": "mean",
     "path_conditions": [{"variable": "collection_date", "op": "is", "value": "04-24"}],
     "row_conditions": [{"column": "age", "op": "between", "value": -2.5, "high": 12.0},
                        {"column": "site", "op": "eq", "value": "north", "high": None}]},
    sig_figs=3,
)  # fmt: skip


# --- preserved tokens -------------------------------------------------------------------------


def test_tokens_of_a_hand_written_question() -> None:
    tokens = preserved_tokens(MEAN_Q)
    for want in ("body_weight", "date", "04-24", "age", "-2.5", "12", "site", "north",
                 "3 significant figures", "between", "inclusive", "mean"):  # fmt: skip
        assert want in tokens, want
    assert "3" not in tokens  # only as part of the significant-figure instruction
    assert len(tokens) == len(set(tokens))


def test_tokens_of_real_questions_of_every_type() -> None:
    by_type = questions_by_type()
    for name, questions in by_type.items():
        assert questions, f"no {name} question generated"
        for q in questions:
            tokens = preserved_tokens(q)
            assert all(t in q.text for t in tokens), (q.id, tokens)
            p = q.params
            for key in ("file", "prefix", "column", "x", "y", "group_a", "group_b"):
                if p.get(key) is not None:
                    assert str(p[key]) in tokens, (q.id, key)
            for cond in [*p.get("path_conditions", []), *p.get("row_conditions", [])]:
                values = cond["value"] if isinstance(cond["value"], list) else [cond["value"]]
                for v in values:
                    assert (v if isinstance(v, str) else fmt_num(v)) in tokens, (q.id, cond)
            if q.sig_figs is not None:
                assert f"{q.sig_figs} significant figures" in tokens
            if "alpha" in p:
                assert str(p["alpha"]) in tokens
            if "correction" in p:
                assert ("with Yates" if p["correction"] else "without Yates") in tokens
            for path in re.findall(r"`([^`]+)`", q.text):
                assert path in tokens
    assert any("Yates" in " ".join(preserved_tokens(q)) for q in by_type["hypothesis_test"]
               + by_type["bivariate_statistic"])  # fmt: skip


def test_original_text_keeps_every_token_over_200_questions() -> None:
    """Tokens are all found in the original: only the "identical" rule rejects it."""
    questions: list[Question] = []
    seed = 100
    while len(questions) < 200:
        questions += generate_questions(_repo(seed), 10, unanswerable_ratio=0.3)
        seed += 1
    for q in questions[:200]:
        assert check_paraphrase(q, q.text) == [IDENTICAL], q.id
        assert check_paraphrase(q, "Please answer: " + q.text) == [], q.id


# --- the check ----------------------------------------------------------------------------------


def test_check_accepts_a_faithful_rewrite() -> None:
    text = MEAN_Q.text.replace("What is the mean of", "Compute the mean of").replace("?", ".", 1)
    assert check_paraphrase(MEAN_Q, text) == []


@pytest.mark.parametrize(
    ("old", "new", "lost"),
    [
        ("12 (inclusive)", "120 (inclusive)", "12"),
        ("12 (inclusive)", "12.5 (inclusive)", "12"),
        ("-2.5", "2.5", "-2.5"),
        ("04-24", "04-25", "04-24"),
        ('"body_weight"', '"body_weights"', "body_weight"),
        ("3 significant figures", "three significant figures", "3 significant figures"),
        ('"north"', '"northern"', "north"),
    ],
)
def test_check_rejects_a_changed_token(old: str, new: str, lost: str) -> None:
    text = "Please answer: " + MEAN_Q.text.replace(old, new)
    assert lost in check_paraphrase(MEAN_Q, text)


def test_number_inside_a_path_does_not_count() -> None:
    q = _question(
        "How many data files (not counting README.md) are there where cultivation temperature "
        '(path component "temp") is 37? The file `temp=37/a.csv` is one.',
        {"path_conditions": [{"variable": "temperature", "op": "is", "value": "37"}]},
    )
    assert check_paraphrase(q, "Please answer: " + q.text) == []
    lost = check_paraphrase(q, q.text.replace("is 37?", "as given?"))
    assert lost == ["37"]


def test_yates_direction_and_other_problems() -> None:
    text = ('What is the chi-square statistic of "a" and "b" (without Yates\' continuity '
            "correction)? Give the answer to 2 significant figures.")  # fmt: skip
    q = _question(text, {"statistic": "chi_square", "x": "a", "y": "b", "correction": False},
                  sig_figs=2)  # fmt: skip
    assert "without Yates" in preserved_tokens(q)
    assert "without Yates" in check_paraphrase(q, text.replace("without", "with"))
    assert check_paraphrase(q, "  ") == [EMPTY]
    assert check_paraphrase(q, "  " + text.upper().replace(" ", "  "))[0] == IDENTICAL
    hint = "Please answer (or say not possible if it cannot be done): " + text
    assert ABSTAIN_HINT in check_paraphrase(q, hint)


BIVARIATE_Q = _question(
    'What is the Pearson correlation coefficient between "flow_rate" and "retention_time" over '
    "the data files where spike level (path component \"spike\") is 5? Use only the rows where "
    'both "flow_rate" and "retention_time" are present. Give the answer to 3 significant figures.',
    {"x": "flow_rate", "y": "retention_time", "statistic": "pearson",
     "path_conditions": [{"variable": "var1", "op": "is", "value": "5"}]},
    type="bivariate_statistic", family="bivariate_statistics", sig_figs=3, answer=0.42,
)  # fmt: skip


@cache
def _repo_question(kind: str, answerable: bool) -> Question:
    """The first ``kind`` question of that answerability over repositories 0, 1, ..."""
    for seed in range(200):
        found = generate_questions(_repo(seed), 1, types=[kind],
                                   unanswerable_ratio=0.0 if answerable else 1.0, max_slots=16)
        if found:
            return found[0]
    raise AssertionError(f"no {kind} question with answerable={answerable}")


def test_reported_failure_abstract_question_turned_into_an_abstract() -> None:
    """A rewrite that writes an abstract into the question (made up, or the repository's own)
    is rejected, however the original is worded."""
    for answerable in (True, False):
        q = _repo_question("abstract", answerable)
        spec = _repo(q.repository).spec
        made_up = (
            "The abstract of this project is: We measured how temperature affects the growth "
            "rate of twelve bacterial strains across three laboratories and found strong "
            "effects of incubation time on yield, with replicate plates collected every week."
        )
        assert check_paraphrase(q, made_up), q.id
        first, *rules = [q.text.split("? ")[0] + "?", *instruction_sentences(q)]
        inline = f"{first} It begins: {made_up} {' '.join(rules)}"
        assert check_paraphrase(q, inline), q.id
        real = f"{spec.story.abstract} {' '.join(rules)}"
        assert check_paraphrase(q, real), q.id
        short = f"{first} (It reads: This study measures soil moisture.) {' '.join(rules)}"
        assert check_paraphrase(q, short), q.id


def test_reported_failure_bivariate_question_losing_its_row_rule() -> None:
    rule = next(r for r in instruction_sentences(BIVARIATE_Q) if r.startswith("Use only"))
    dropped = BIVARIATE_Q.text.replace(rule + " ", "").replace("What is", "Compute", 1)
    assert rule in check_paraphrase(BIVARIATE_Q, dropped)
    reworded = BIVARIATE_Q.text.replace(rule, 'Use rows where "flow_rate" and "retention_time" '
                                              "are present.")  # fmt: skip
    assert rule in check_paraphrase(BIVARIATE_Q, reworded)
    faithful = BIVARIATE_Q.text.replace(
        "What is the Pearson correlation coefficient between", "Compute the Pearson correlation "
        "coefficient of", 1,
    ).replace("is 5?", "is 5.", 1)
    assert check_paraphrase(BIVARIATE_Q, faithful) == []


def test_dropping_any_instruction_sentence_of_a_real_question_is_rejected() -> None:
    checked = 0
    for questions in questions_by_type().values():
        for q in questions:
            for rule in instruction_sentences(q):
                assert rule in check_paraphrase(q, "Please answer: " + q.text.replace(rule, ""))
                checked += 1
    assert checked > 20


def test_good_rewrites_are_accepted() -> None:
    mean = MEAN_Q.text.replace("What is the mean of", "Compute the mean of").replace(
        "across the data files", "over the data files", 1
    ).replace("?", ".", 1)
    assert check_paraphrase(MEAN_Q, mean) == []
    for questions in questions_by_type().values():
        for q in questions:
            assert check_paraphrase(q, "Please answer this: " + q.text) == [], q.id


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace("is 5?", "is 5 (the files hold 42 rows)?"), "<adds the number 42>"),
        (lambda t: t.replace("is 5?", "is 5, about a dozen files?"), "number word"),
        (lambda t: t.replace("is 5?", "is 5, in `spike=5/seq_0001.json`?"), "quoted"),
        (lambda t: t.replace("is 5?", "is 5, e.g. spike=5/x.json?"), "<adds the name"),
        (lambda t: t.replace("is 5?", "is 5 (prepared by SPE)?"), "repository's 'SPE'"),
        (lambda t: t.replace("is 5?", "is not 5?"), "'not' 1 times"),
        (lambda t: t.replace("Use only", "Use"), "Use only"),
        (lambda t: t.replace("is 5?", "is 5? " + "Then compute it again carefully. " * 4), "<adds"),
        (lambda t: t[:60], "<length ratio"),
        (lambda t: t.replace("is 5?", "is 5, as " + "very carefully " * 30 + "as you can?"),
         "<length ratio"),
    ],
)
def test_additions_and_losses_are_rejected(edit, problem: str) -> None:
    """Repository 7 (the hand-written questions' repository) has ``extraction_method`` with
    the label ``SPE`` and a path variable rendered ``spike=5`` in its own repository."""
    assert "SPE" in repository_text(7).terms
    text = edit(BIVARIATE_Q.text.replace("What is", "Compute", 1))
    problems = check_paraphrase(BIVARIATE_Q, text)
    assert any(problem in p for p in problems), problems


def test_repository_prose_and_the_answer_may_not_be_added() -> None:
    q = _repo_question("title", True)
    spec = _repo(q.repository).spec
    rules = " ".join(instruction_sentences(q))
    leaked = f"Is the title of the project {spec.story.title}? {rules}".strip()
    problems = check_paraphrase(q, leaked)
    assert any("repository's" in p or p == "<adds the answer>" for p in problems), problems
    words = spec.story.description.split()[:8]
    prose = f"{q.text.split('?')[0]}, a study that {' '.join(words)}? {rules}".strip()
    assert any("repository's" in p for p in check_paraphrase(q, prose)), prose


def test_extract_paraphrase() -> None:
    assert extract_paraphrase("<think>hmm</think>\n<paraphrase> A  b?\n</paraphrase>") == "A b?"
    assert extract_paraphrase('"Quoted question?"') == "Quoted question?"
    assert extract_paraphrase("```\nFenced?\n```") == "Fenced?"
    assert extract_paraphrase('"a" against "b"') == '"a" against "b"'


# --- asking a model -------------------------------------------------------------------------


class FakeBackend:
    """Scripted replies: ``script[original text]`` is the list of replies, one per attempt."""

    name = "fake"
    model = MODEL

    def __init__(self, script: dict[str, list[str]]) -> None:
        self.script = script
        self.calls: list[list[list[dict[str, Any]]]] = []

    def complete(
        self, conversations: list[list[dict[str, Any]]], tools: list[dict[str, Any]], **_: Any
    ):
        self.calls.append(conversations)
        out = []
        for conv in conversations:
            original = next(t for t in self.script if t in conv[1]["content"])
            replies = self.script[original]
            attempt = sum(m["role"] == "assistant" for m in conv)
            if attempt >= len(replies):
                out.append(Completion(error="script exhausted"))
            else:
                out.append(Completion(text=f"<paraphrase>{replies[attempt]}</paraphrase>"))
        return out

    def close(self) -> None:
        pass

    @property
    def asked(self) -> int:
        return sum(len(batch) for batch in self.calls)


def _faithful(q: Question) -> str:
    if q.text.startswith("What is"):
        return q.text.replace("What is", "Compute", 1).rstrip("?") + "."
    return "Please answer the following. " + q.text


def _numeric_question() -> Question:
    for q in questions_by_type()["univariate_statistic"]:
        if any(re.fullmatch(r"\d+\.\d+", t) for t in preserved_tokens(q)):
            return q
    raise AssertionError("no univariate question with a decimal threshold")


def _three_questions() -> tuple[Question, Question, Question]:
    good = questions_by_type()["count_rows"][0]
    numeric = _numeric_question()
    column = questions_by_type()["count_missing"][0]
    return good, numeric, column


def _drop_number(q: Question) -> str:
    number = next(t for t in preserved_tokens(q) if re.fullmatch(r"\d+\.\d+", t))
    return _faithful(q).replace(number, "")


def _rename_column(q: Question) -> str:
    col = q.params["column"]
    return _faithful(q).replace(f'"{col}"', f'"{col}_renamed"')


def test_backend_accepts_faithful_rejects_lost_number_and_renamed_column(tmp_path) -> None:
    good, numeric, column = _three_questions()
    backend = FakeBackend({good.text: [_faithful(good)],
                           numeric.text: [_drop_number(numeric)] * 2,
                           column.text: [_rename_column(column)] * 2})  # fmt: skip
    assert isinstance(backend, ChatBackend)
    results = paraphrase_questions([good, numeric, column], backend, cache_dir=tmp_path)
    assert [r.question_id for r in results] == [good.id, numeric.id, column.id]
    assert len(backend.calls) == 2 and [len(b) for b in backend.calls] == [3, 2]
    assert backend.calls[0][0][1]["content"].count(json.dumps(good.params["file"])) == 1
    ok, lost_number, renamed = results
    assert ok.accepted and ok.paraphrase == _faithful(good) and ok.missing == []
    assert not ok.from_cache and ok.attempts == 1
    assert not lost_number.accepted and lost_number.attempts == 2 and lost_number.missing
    assert all(m in preserved_tokens(numeric) for m in lost_number.missing)
    assert not renamed.accepted and column.params["column"] in renamed.missing
    # a retry carries the previous reply and what it lost
    retry = backend.calls[1][0]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert "rejected" in retry[-1]["content"]
    cached = load_paraphrases(tmp_path, MODEL)
    assert cached == {good.id: {"text": _faithful(good),
                                "original_sha256": text_sha256(good.text)}}  # fmt: skip
    name = cache_path(tmp_path, MODEL).name
    assert name.startswith(f"{model_slug(MODEL)}-") and name.startswith("org_Fake-Model-1B-")
    stored = json.loads(cache_path(tmp_path, MODEL).read_text())
    assert stored["model"] == MODEL and set(stored["entries"]) == {f"v{QUESTION_VERSION}/{good.id}"}
    assert summarize(results)["accepted"] == 1 and summarize(results)["rejected"] == 2


def test_retry_can_succeed(tmp_path) -> None:
    q = _numeric_question()
    backend = FakeBackend({q.text: [_drop_number(q), _faithful(q)]})
    (result,) = paraphrase_questions([q], backend, cache_dir=tmp_path, attempts=2)
    assert result.accepted and result.attempts == 2 and result.paraphrase == _faithful(q)
    (once,) = paraphrase_questions([q], FakeBackend({q.text: []}), cache_dir=tmp_path / "x",
                                   attempts=1)  # fmt: skip
    assert not once.accepted and once.missing[0].startswith(BACKEND_ERROR)


def test_cache_is_reused_and_invalidated(tmp_path) -> None:
    good, numeric, column = _three_questions()
    first = FakeBackend({good.text: [_faithful(good)], numeric.text: [_faithful(numeric)],
                         column.text: [_rename_column(column)] * 2})  # fmt: skip
    paraphrase_questions([good, numeric, column], first, cache_dir=tmp_path)
    assert set(load_paraphrases(tmp_path, MODEL)) == {good.id, numeric.id}

    again = FakeBackend({column.text: [_faithful(column)]})
    results = paraphrase_questions([good, numeric, column], again, cache_dir=tmp_path)
    assert again.asked == 1  # only the question without an accepted rewrite
    assert [r.from_cache for r in results] == [True, True, False]
    assert all(r.accepted for r in results)

    silent = FakeBackend({})
    results = paraphrase_questions([good, numeric, column], silent, cache_dir=tmp_path)
    assert silent.calls == [] and all(r.from_cache for r in results)

    changed = dataclasses.replace(good, text=good.text + " Count carefully.")
    fresh = FakeBackend({changed.text: [_faithful(changed)]})
    (result,) = paraphrase_questions([changed], fresh, cache_dir=tmp_path)
    assert fresh.asked == 1 and not result.from_cache and result.accepted
    entry = load_paraphrases(tmp_path, MODEL)[good.id]
    assert entry == {"text": _faithful(changed), "original_sha256": text_sha256(changed.text)}
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporary file


def test_cache_key_is_the_typed_model_name_and_the_question_version(tmp_path) -> None:
    good = _three_questions()[0]
    for model in ("org/M", "org_M", "smollm2"):
        backend = FakeBackend({good.text: [_faithful(good)]})
        paraphrase_questions([good], backend, cache_dir=tmp_path, model=model)
        assert set(load_paraphrases(tmp_path, model)) == {good.id}
    assert load_paraphrases(tmp_path, MODEL) == {}  # backend.model was not the key
    assert len({cache_path(tmp_path, m) for m in ("org/M", "org_M", "smollm2")}) == 3
    path = cache_path(tmp_path, "org/M")
    data = json.loads(path.read_text())
    old = entry_key(good.id, QUESTION_VERSION - 1)
    data["entries"] = {old: data["entries"][entry_key(good.id)]}
    path.write_text(json.dumps(data))
    assert load_paraphrases(tmp_path, "org/M") == {}  # an entry of another version is not used
    assert apply_paraphrases([good], tmp_path, "org/M") == [good]
    path.write_text(json.dumps({"model": "other", "entries": {}}))
    with pytest.raises(ValueError, match="belongs to model"):
        load_paraphrases(tmp_path, "org/M")
    with pytest.raises(ValueError, match="non-empty"):
        cache_path(tmp_path, "")


def test_apply_paraphrases(tmp_path) -> None:
    good, numeric, column = _three_questions()
    backend = FakeBackend({good.text: [_faithful(good)], numeric.text: [_drop_number(numeric)],
                           column.text: [_faithful(column)]})  # fmt: skip
    paraphrase_questions([good, numeric, column], backend, cache_dir=tmp_path, attempts=1)
    out = apply_paraphrases([good, numeric, column], tmp_path, MODEL)
    assert [q.text for q in out] == [_faithful(good), numeric.text, _faithful(column)]
    for before, after in zip([good, numeric, column], out, strict=True):
        assert dataclasses.replace(after, text=before.text) == before
    assert apply_paraphrases([good], tmp_path, "another-model") == [good]
    stale = dataclasses.replace(good, text=good.text + " Again.")
    assert apply_paraphrases([stale], tmp_path, MODEL) == [stale]
