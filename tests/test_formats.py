import io

import numpy as np
import pandas as pd
import pytest
from conftest import assert_same_values, read_served

from isg_gym.repository import Repository
from isg_gym.repository.serialisers import serialise
from isg_gym.simulator.procedural import build_spec

FORMATS = ["csv", "json", "jsonl", "xlsx", "txt", "log"]


@pytest.mark.parametrize("file_format", FORMATS)
def test_every_format_round_trips_through_pandas(file_format):
    seeds = range(0, 40, 4) if file_format == "xlsx" else range(40)
    for seed in seeds:
        spec = build_spec(seed).model_copy(update={"file_format": file_format})
        repo = Repository(spec)
        for path in repo.data_files[:2]:
            assert path.endswith(f".{file_format}")
            assert_same_values(read_served(repo.read_bytes(path), file_format), repo.table(path))


@pytest.mark.parametrize("file_format", ["json", "jsonl"])
def test_default_read_json_is_within_one_ulp(file_format):
    spec = build_spec(2).model_copy(update={"file_format": file_format})
    repo = Repository(spec)
    table = repo.table(repo.data_files[0])
    parsed = pd.read_json(io.BytesIO(repo.read_bytes(repo.data_files[0])),
                          lines=file_format == "jsonl")  # fmt: skip
    for col in table.columns:
        if pd.api.types.is_float_dtype(table[col]):
            np.testing.assert_array_max_ulp(parsed[col].to_numpy(float),
                                            table[col].to_numpy(float), maxulp=1)  # fmt: skip


def test_xlsx_bytes_are_deterministic():
    spec = build_spec(4).model_copy(update={"file_format": "xlsx"})
    a, b = Repository(spec), Repository(spec)
    path = a.data_files[0]
    assert a.read_bytes(path) == b.read_bytes(path)
    assert a.read_text(path).startswith("[xlsx workbook")


def test_text_renderings():
    table = pd.DataFrame({"t": ["2024-01-01T00:00:00Z"], "x": [1.5], "n": [np.nan], "c": ["a b"]})
    assert (
        serialise(table, "txt", "t").decode() == "t\tx\tn\tc\n2024-01-01T00:00:00Z\t1.5\tNA\ta b\n"
    )
    assert (
        serialise(table, "log", "t").decode() == "t=2024-01-01T00:00:00Z | x=1.5 | n=NA | c=a b\n"
    )
    assert serialise(table, "csv", "t").decode() == "t,x,n,c\n2024-01-01T00:00:00Z,1.5,,a b\n"
    assert serialise(table, "jsonl", "t").decode() == (
        '{"t": "2024-01-01T00:00:00Z", "x": 1.5, "n": null, "c": "a b"}\n'
    )
    ints = pd.DataFrame({"t": ["x", "y"], "k": [3.0, np.nan]})
    assert serialise(ints, "csv", "t", integer_columns=("k",)).decode() == "t,k\nx,3\ny,\n"
    with pytest.raises(ValueError, match="unknown file format 'parquet'"):
        serialise(table, "parquet", "t")
