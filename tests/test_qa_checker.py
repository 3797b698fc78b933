"""Every generated question, read from its TEXT, agrees with an independent recomputation.

``tests/question_text.py`` reads each question's description from its text (never from
``params``); ``tests/checker.py`` recomputes answers (and unanswerability reasons) from what an
agent sees: the served bytes parsed with pandas and path tokens parsed from path strings, under
the v2 conventions, and holds answerable gold to the robustness rules.
``ISG_CHECKER_SEEDS=40 python -m pytest tests/test_qa_checker.py`` is the fast variant;
``python tests/checker.py 0-1000 8`` is a larger sweep with a table by type and failure kind.
"""

import dataclasses
import os
from collections import Counter

import pytest
from checker import KINDS, RECOMPUTE, Served, check_question, check_seeds, summary
from question_text import PARSERS, CheckError, differences, parse

from isg_gym.qa import QUESTION_TYPES, generate_questions
from isg_gym.repository import Repository

SEEDS = range(int(os.environ.get("ISG_CHECKER_SEEDS", "300")))
PER_REPOSITORY = 8


@pytest.fixture(scope="module")
def reports():
    return check_seeds(SEEDS, PER_REPOSITORY)


@pytest.fixture(scope="module")
def sample():
    """(served repository, its questions) for a few repositories."""
    out = []
    for seed in range(12):
        repo = Repository.from_seed(seed)
        out.append((Served(repo), generate_questions(repo, 8)))
    return out


def _listing(findings, limit: int = 40) -> str:
    more = f"\n... and {len(findings) - limit} more" if len(findings) > limit else ""
    return "\n".join(str(f) for f in findings[:limit]) + more


def _of_kind(reports, *kinds: str):
    return [f for r in reports for f in r.findings if f.kind in kinds]


def test_checker_knows_every_registered_type():
    assert QUESTION_TYPES, "no question types are registered"
    for table, what in ((RECOMPUTE, "recompute"), (PARSERS, "read from the text")):
        unknown = sorted(set(QUESTION_TYPES) - set(table))
        assert not unknown, f"question types the checker cannot {what}: {unknown}"


def test_every_question_is_read_from_its_text_and_matches_its_params(reports):
    failures = _of_kind(reports, "parse", "params")
    total = sum(r.questions for r in reports)
    assert total >= 0.9 * len(SEEDS) * PER_REPOSITORY, f"only {total} questions generated"
    assert not failures, (
        f"{len(failures)} of {total} questions unreadable or not what their params say:\n"
        + _listing(failures) + "\n" + summary(reports)
    )


def test_every_gold_answer_is_recomputed_from_served_files(reports):
    failures = _of_kind(reports, "answer", "reason", "crash")
    total = sum(r.questions for r in reports)
    kinds = Counter()
    for r in reports:
        kinds.update(r.kinds)
    assert not failures, (
        f"{len(failures)} of {total} questions disagree with the recomputation:\n"
        + _listing(failures) + "\n" + summary(reports)
    )
    print(f"\n{total} questions agree; by type and reason: {dict(sorted(kinds.items()))}")


def test_every_answerable_gold_is_robust(reports):
    """Expected counts >= 5 (chi-square), >= 5 per Welch group, group winners lead by >= 1%
    with >= 5 values per group, modes lead by >= 2, p not within 25% of alpha, 4-5 significant
    figures only on >= 10 values."""
    failures = _of_kind(reports, "robustness")
    by_type = Counter(f.type for f in failures)
    assert not failures, (
        f"{len(failures)} answerable questions break a robustness rule {dict(by_type)}:\n"
        + _listing(failures)
    )


def test_every_gold_answer_grades_as_correct(reports):
    if any(r.grading is None for r in reports):
        pytest.skip("isg_gym.rewards is not importable yet")
    failures = [f for r in reports for f in r.grading]
    assert not failures, f"{len(failures)} gold answers mis-graded:\n" + _listing(failures)


def _wrong(q):
    """A copy of ``q`` with a wrong gold answer or reason."""
    if not q.answerable:
        other = "no_such_file" if q.reason == "readme_missing_title" else "readme_missing_title"
        return dataclasses.replace(q, reason=other)
    match q.answer_kind:
        case "yes_no":
            answer = not q.answer
        case "integer":
            answer = q.answer + 1
        case "float":
            answer = q.answer * 1.2 + 1.0
        case _:
            answer = q.answer + "x"
    return dataclasses.replace(q, answer=answer)


def _core(findings) -> list:
    return [f for f in findings if f.kind != "robustness"]


def test_the_checker_catches_wrong_gold_answers(sample):
    checked = 0
    for served, questions in sample:
        for q in questions:
            if _core(check_question(served, q)):
                continue  # already failing for another reason: reported by the sweep
            assert _core(check_question(served, _wrong(q))), q.id
            checked += 1
    assert checked >= 60


# Edits of a question's text that change what it asks (params untouched).
_EDITS = (
    (" is at least ", " is at most "),
    (" is greater than ", " is less than "),
    (" is less than ", " is at least "),
    ("highest", "lowest"),
    ("the mean of", "the median of"),
    ("the minimum of", "the maximum of"),
    ("Pearson", "Spearman"),
    ("without Yates'", "with Yates'"),
    ("significance level 0.05", "significance level 0.01"),
)


def test_the_text_is_read_so_a_text_that_disagrees_with_its_params_fails(sample):
    """A text that asks something else than the params fails (params or answer), and the
    recomputation follows the text, not the params."""
    edited = 0
    for served, questions in sample:
        for q in questions:
            if _core(check_question(served, q)):
                continue
            for old, new in _EDITS:
                if old in q.text:
                    bad = dataclasses.replace(q, text=q.text.replace(old, new))
                    found = _core(check_question(served, bad))
                    assert found, f"{q.id}: {old!r} -> {new!r} went unseen"
                    assert {f.kind for f in found} & {"params", "parse"}, (q.id, found)
                    edited += 1
    assert edited >= 20, f"only {edited} texts edited"


def test_params_that_disagree_with_the_text_are_reported(sample):
    changed = 0
    for served, questions in sample:
        for q in questions:
            if not q.params or _core(check_question(served, q)):
                continue
            key = sorted(q.params)[0]
            bad = dataclasses.replace(q, params={**q.params, key: "something else"})
            kinds = {f.kind for f in check_question(served, bad)}
            assert "params" in kinds, (q.id, key, kinds)
            changed += 1
    assert changed >= 40


def test_an_unreadable_text_is_a_loud_error_naming_the_question(sample):
    served, questions = sample[0]
    data = [q for q in questions if q.type in ("univariate_statistic", "bivariate_statistic",
                                               "hypothesis_test", "group_comparison")]  # fmt: skip
    assert data
    for q in data:
        bad = dataclasses.replace(q, text="What is the answer? Give it to 3 significant figures.")
        with pytest.raises(CheckError, match=q.id.replace(".", r"\.")):
            parse(bad, served.spec)
        (finding,) = check_question(served, bad)
        assert finding.kind == "parse" and q.id in finding.message and "What is" in finding.message


def test_differences_compare_numbers_exactly_and_name_the_key():
    assert differences({"a": 1, "b": [2.0, "x"]}, {"a": 1.0, "b": [2, "x"]}) == []
    (diff,) = differences({"a": 99.63}, {"a": 99.626})
    assert "params.a" in diff and "99.626" in diff
    assert differences({"a": True}, {"a": 1}) != []
    assert differences({"a": 1}, {}) != [] and differences({}, {"a": 1}) != []


def test_kinds_are_reported_in_the_summary(reports):
    table = summary(reports[:3])
    assert all(k in table for k in KINDS)


# --- the grammar, on crafted texts (seed 0: path variables "protection product" (product),
# "trial number" (trial), "collection date" (date), style name=value) ---------------------------


def _crafted(qtype: str, text: str):
    repo = Repository.from_seed(0)
    served = Served(repo)
    q = next(q for q in generate_questions(repo, 40) if q.type == qtype)
    return served, dataclasses.replace(q, text=text)


def test_the_grammar_of_conditions():
    served, q = _crafted(
        "univariate_statistic",
        'Across the data files where protection product (path component "product") is one of '
        'product=untreated or tankmix and trial number (path component "trial") is at least 3 '
        'and collection date (path component "date") is 01-16, using only rows where '
        '"resistance_status" is not "susceptible" and "mean_temp" is between -2.5 and 30 '
        '(inclusive) and "leaf_wetness" is one of 1, 2.5 or 3, what is the standard deviation '
        '(sample, n - 1 denominator) of "mean_temp"? Give the answer to 3 significant figures.',
    )
    desc, sig = parse(q, served.spec)
    assert sig == 3 and desc["statistic"] == "std" and desc["column"] == "mean_temp"
    assert desc["path_conditions"] == [
        {"variable": "product", "op": "is_one_of", "value": ["untreated", "tankmix"]},
        {"variable": "trial_number", "op": "ge", "value": 3.0},
        {"variable": "collection_date", "op": "is", "value": "01-16"},
    ]
    assert desc["row_conditions"] == [
        {"column": "resistance_status", "op": "ne", "value": "susceptible", "high": None},
        {"column": "mean_temp", "op": "between", "value": -2.5, "high": 30.0},
        {"column": "leaf_wetness", "op": "in", "value": [1.0, 2.5, 3.0], "high": None},
    ]


def test_an_unknown_path_variable_is_read_by_its_label_and_short_name():
    served, q = _crafted(
        "count_files",
        "How many data files (not counting README.md) are there where annual PM2.5 exposure "
        '(path component "pm25") is 5 and trial number (path component "trial") is less than 4?',
    )
    desc, _ = parse(q, served.spec)
    assert desc["path_conditions"] == [
        {"variable": None, "label": "annual PM2.5 exposure", "short": "pm25", "op": "is",
         "value": "5"},
        {"variable": "trial_number", "op": "lt", "value": 4.0},
    ]  # fmt: skip


@pytest.mark.parametrize(
    "qtype, text, complaint",
    [
        ("univariate_statistic", 'What is the mean of "mean_temp" in the file `x.csv` and across '
         "all data files? Give the answer to 3 significant figures.", "exactly one scope"),
        ("univariate_statistic", 'What is the standard deviation of "mean_temp" across all data '
         "files? Give the answer to 3 significant figures.", "statistic phrase"),
        ("univariate_statistic", 'What is the mean of "mean_temp" across all data files?',
         "significant figures"),
        ("univariate_statistic", 'What is the mean of "mean_temp" across all data files, using '
         'only rows where "leaf_wetness" is roughly 3? Give it to 3 significant figures.',
         "unreadable row condition"),
        ("univariate_statistic", 'What is the mean of "mean_temp" across the data files where '
         'trial number (path component "trial") is about 3? Give it to 3 significant figures.',
         "unparsed text after the path conditions"),
        ("hypothesis_test", 'Is there a significant Pearson correlation between "a" and "b" '
         "across all data files? Answer yes or no.", "test method"),
    ],
)  # fmt: skip
def test_unreadable_pieces_raise_naming_what(qtype, text, complaint):
    served, q = _crafted(qtype, text)
    with pytest.raises(CheckError, match=complaint):
        parse(q, served.spec)
