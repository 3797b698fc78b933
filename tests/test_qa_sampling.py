from collections import Counter

import pytest

from isg_gym import make_dataset, score
from isg_gym.qa import QUESTION_TYPES, format_answer, generate_questions, question_from_id
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO, parse_question_id
from isg_gym.repository import Repository

EXPECTED_TYPES = {
    "has_readme", "title", "abstract", "file_extension", "count_prefix", "count_files",
    "count_rows", "count_missing", "univariate_statistic", "bivariate_statistic",
    "hypothesis_test", "group_comparison",
}  # fmt: skip


@pytest.fixture(scope="module")
def sample():
    questions = []
    for seed in range(250):
        questions += generate_questions(Repository.from_seed(seed), 8)
    return questions


def test_all_types_registered():
    assert set(QUESTION_TYPES) == EXPECTED_TYPES


def test_unanswerable_share_is_met_and_reasons_mixed(sample):
    assert len(sample) == 2000
    share = sum(not q.answerable for q in sample) / len(sample)
    assert abs(share - DEFAULT_UNANSWERABLE_RATIO) <= 0.03, share
    reasons = Counter(q.reason for q in sample if not q.answerable)
    print("\nunanswerable share", share, "reasons", dict(reasons))
    assert len(reasons) >= 8
    assert {q.type for q in sample} == EXPECTED_TYPES


@pytest.mark.parametrize("ratio", [0.0, 0.5])
def test_ratio_is_configurable(ratio):
    questions = []
    for seed in range(100):
        questions += generate_questions(Repository.from_seed(seed), 6, unanswerable_ratio=ratio)
    share = sum(not q.answerable for q in questions) / len(questions)
    assert abs(share - ratio) <= 0.06


def test_ids_regenerate_the_same_question(sample):
    for q in sample[::37]:
        assert question_from_id(q.id) == q


def test_bad_ids_and_types_are_clear_errors():
    for bad in ("118", "x.mean.3", "118.no_such_type.3", "118.title.x", 5):
        with pytest.raises(ValueError, match=r"question id|unknown question types"):
            parse_question_id(bad)
    with pytest.raises(ValueError, match="unknown question types"):
        generate_questions(Repository.from_seed(1), 3, types=["bogus"])
    with pytest.raises(ValueError, match="unanswerable_ratio"):
        generate_questions(Repository.from_seed(1), 3, unanswerable_ratio=1.5)


def test_dataset_rows_are_reproducible_and_gold_scores_one():
    rows = list(make_dataset(range(10), per_repository=4))
    again = list(make_dataset(range(10), per_repository=4))
    assert rows == again and len(rows) == 40
    for row in rows:
        assert set(row) == {"id", "question", "answer", "metadata"}
        assert row["id"].split(".")[0] == str(row["metadata"]["repository"])
        assert score(row["answer"], row) == 1.0
        wrong = "not possible" if row["metadata"]["answerable"] else "42"
        assert score(wrong, row) == 0.0


def test_dataset_type_filter_and_validation():
    rows = list(make_dataset(range(5), per_repository=3, types=["count_rows"]))
    assert rows and all(r["metadata"]["type"] == "count_rows" for r in rows)
    with pytest.raises(ValueError, match="per_repository"):
        list(make_dataset(range(2), per_repository=0))


def test_gold_text_of_unanswerable_is_not_possible(sample):
    for q in sample:
        assert (format_answer(q) == "not possible") == (not q.answerable)


def test_type_configs_are_pluggable():
    from isg_gym.qa.types.univariate import UnivariateStatistic

    config = UnivariateStatistic.Config(sig_figs=(5, 5), max_row_conditions=0)
    configs = {"univariate_statistic": config}
    questions = []
    for seed in range(30):
        questions += generate_questions(
            Repository.from_seed(seed), 3, types=["univariate_statistic"], configs=configs
        )
    floats = [q for q in questions if q.answerable and q.answer_kind == "float"]
    assert floats and all(q.sig_figs == 5 for q in floats)
    assert all(not q.params.get("row_conditions") for q in questions if q.answerable)
    rows = list(make_dataset(range(3), 2, types=["univariate_statistic"], configs=configs))
    assert rows
    with pytest.raises(ValueError, match="config for 'univariate_statistic'"):
        generate_questions(Repository.from_seed(1), 2, configs={"univariate_statistic": 3})
