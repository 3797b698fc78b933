import re

import numpy as np
import pytest

from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec
from isg_gym.simulator.taxonomy import load_taxonomy
from isg_gym.spec.models import DATE_FORMATS, Spec, column_kind

SEEDS = range(1000)


@pytest.fixture(scope="module")
def specs() -> list[Spec]:
    return [build_spec(seed) for seed in SEEDS]


def test_thousand_seeds_build_with_valid_structure(specs):
    for spec in specs:
        assert 7 <= len(spec.columns) <= 19
        assert [c.role for c in spec.columns[:2]] == ["identifier", "datetime"]
        assert 2 <= len(spec.layout.levels) <= 4
        assert spec.file_format in ("csv", "json", "jsonl", "xlsx", "txt", "log")
        assert spec.layout.date_format in DATE_FORMATS
        assert 150 <= len(spec.story.abstract.split()) <= 250, spec.seed
        assert spec.story.description.count("\n\n") >= 4
        assert spec.unrecorded
        assert "{" not in spec.story.title + spec.story.abstract + spec.story.description


def test_taxonomy_fields_and_formats_all_appear(specs):
    assert {s.taxonomy.field for s in specs} == set(load_taxonomy())
    assert len({s.archetype for s in specs}) > 66
    counts = {f: sum(s.file_format == f for s in specs) for f in ("csv", "xlsx", "log")}
    assert all(100 < c < 240 for c in counts.values()), counts


def test_readme_visibility_rates(specs):
    present = np.mean([s.readme.present for s in specs])
    title = np.mean([s.readme.title for s in specs if s.readme.present])
    abstract = np.mean([s.readme.abstract for s in specs if s.readme.title])
    for rate in (present, title, abstract):
        assert 0.4 < rate < 0.6


def test_spec_json_round_trip(specs):
    for spec in specs[:300]:
        text = spec.to_json()
        again = Spec.from_json(text)
        assert again == spec
        assert again.to_json() == text


def test_every_dependent_is_finite_or_intended_missing(specs):
    for spec in specs:
        repo = Repository(spec)
        path = repo.data_files[0]
        clean = repo._generator.clean_columns(path, repo.path_values(path))
        for col in spec.columns:
            if col.role != "dependent":
                continue
            values = clean[col.name]
            if column_kind(col) == "numeric":
                assert np.isfinite(values).all(), (spec.seed, col.name)
            else:
                assert all(isinstance(v, str) for v in values), (spec.seed, col.name)


def test_path_values_are_path_safe(specs):
    for spec in specs:
        for var in spec.path_variables:
            assert len(var.values) >= 1
            for value in var.values:
                assert re.fullmatch(r"[A-Za-z0-9.\-]+", value)


def test_bad_spec_json_is_a_clear_error():
    spec = build_spec(3)
    data = spec.model_dump(mode="json")
    data["columns"][-1] = dict(data["columns"][-1], role="dependent",
                               expression="__import__('os').system('x')", noise_sd=0.1)  # fmt: skip
    with pytest.raises(ValueError, match=r"column .*: call of attribute access"):
        Spec.model_validate(data)
    with pytest.raises(ValueError, match="file_format"):
        Spec.model_validate({**spec.model_dump(mode="json"), "file_format": "parquet"})
