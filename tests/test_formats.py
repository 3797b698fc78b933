import io
import re

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


# --- serialisers: exact read-back of hard values, the json text, xlsx bytes ---------------------

HARD_FLOATS = [0.1 + 0.2, 1 / 3, 2 / 3 * 1e-300, 1.7976931348623157e308, 2.2250738585072014e-308,
               -2.5e-7, 1e22, 123456789012345678.0, 2.675, -0.0, 3.0, np.nan]  # fmt: skip
HARD_LABELS = ['a "quoted" label', "x,y", "café", "日本", "50%", "<tag>&amp;", "back\\slash",
               "percent %s %d", "x", None, "y", "z"]  # fmt: skip


def hard_table() -> pd.DataFrame:
    """Floats needing all 17 digits, extremes, NaN; text that JSON, CSV and XML must escape."""
    n = len(HARD_FLOATS)
    return pd.DataFrame({
        "stamp": [f"2024-03-{d:02d}T12:00:{d:02d}Z" for d in range(1, n + 1)],
        "value": np.array(HARD_FLOATS),
        "count": np.arange(n, dtype=np.int64) * 1_000_003 - 5,
        "maybe": np.array([1.0, np.nan, 3.0, 4.0, np.nan, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]),
        "label": np.array(HARD_LABELS, dtype=object),
    })  # fmt: skip


@pytest.mark.parametrize("file_format", ["csv", "json", "jsonl", "xlsx"])
def test_hard_values_read_back_exactly(file_format):
    table = hard_table()
    data = serialise(table, file_format, "stamp", integer_columns=("maybe",))
    parsed = read_served(data, file_format)
    assert_same_values(parsed, table)
    if file_format != "xlsx":  # pandas' xlsx reader turns whole floats (-0.0 too) into ints
        np.testing.assert_array_equal(np.signbit(parsed["value"].to_numpy(float)),
                                      np.signbit(table["value"].to_numpy(float)))  # fmt: skip
    if file_format in ("json", "jsonl"):  # integers with missing values: no ".0"
        texts = re.findall(r'"maybe": ([^,}]+)', data.decode())
        assert texts[:3] == ["1", "null", "3"] and len(texts) == len(table)


def test_json_records_are_what_json_dumps_writes():
    """Byte for byte the text of one ``json.dumps`` per row (key order, separators, escapes)."""
    import json

    table = hard_table()
    cells = {c: [None if v is None or v != v else v for v in table[c].tolist()]
             for c in table.columns}  # fmt: skip
    rows = [dict(zip(cells, values, strict=True)) for values in zip(*cells.values(), strict=True)]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    assert serialise(table, "jsonl", "stamp").decode() == "\n".join(lines) + "\n"
    assert serialise(table, "json", "stamp").decode() == "[\n" + ",\n".join(lines) + "\n]\n"


def test_json_records_of_columns_without_missing_values_are_what_json_dumps_writes():
    """Integer and all-finite float columns are formatted inside the row's template (``%d``,
    ``%r``): the same bytes as ``json.dumps`` for extremes, -0.0, 17-digit floats, exponents,
    huge integers and a key holding ``%``."""
    import json

    finite = [x for x in HARD_FLOATS if x == x] + [5e-324, 1e16, 1e-05, -1e-7]
    n = len(finite)
    table = pd.DataFrame({
        "stamp": [f"2024-03-{d:02d}" for d in range(1, n + 1)],
        "x %s %d": np.array(finite),
        "big": np.array([2**62, -(2**63), 0, -1, *range(n - 4)], dtype=np.int64),
        "u": np.arange(n, dtype=np.uint64) * np.uint64(2**60),
    })  # fmt: skip
    cells = [table[c].tolist() for c in table.columns]
    rows = [dict(zip(table.columns, values, strict=True)) for values in zip(*cells, strict=True)]
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    assert serialise(table, "jsonl", "stamp").decode() == "\n".join(lines) + "\n"
    assert serialise(table, "json", "stamp").decode() == "[\n" + ",\n".join(lines) + "\n]\n"


def test_xlsx_numbers_are_shortest_round_trip_text_and_dates_fixed():
    import zipfile

    data = serialise(hard_table(), "xlsx", "stamp", integer_columns=("maybe",))
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        sheet = book.read("xl/worksheets/sheet1.xml").decode()
        core = book.read("docProps/core.xml").decode()
        stamps = {info.date_time for info in book.infolist()}
    assert "<v>0.30000000000000004</v>" in sheet and "<v>2.2250738585072014e-308</v>" in sheet
    assert "<v>1.7976931348623157e+308</v>" in sheet and "<v>3.0</v>" in sheet
    assert core.count("2020-01-01T00:00:00Z") == 2 and len(stamps) == 1
    with pytest.raises(ValueError, match="infinity"):
        serialise(pd.DataFrame({"t": ["a"], "x": [np.inf]}), "xlsx", "t")


@pytest.mark.parametrize("file_format", FORMATS)
def test_served_files_read_back_exactly_over_many_seeds(file_format):
    """One file of each of 100 more repositories (20 for xlsx), re-served in this format: the
    generated tables hold missing values, integers, timestamps, labels and floats of every
    column kind."""
    step = 5 if file_format == "xlsx" else 1
    for seed in range(100, 200, step):
        spec = build_spec(seed).model_copy(update={"file_format": file_format})
        repo = Repository(spec)
        path = repo.data_files[seed % len(repo.data_files)]
        assert_same_values(read_served(repo.read_bytes(path), file_format), repo.table(path))


SHA_SCRIPT = """
import hashlib, sys
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec
digest = hashlib.sha256()
for fmt in ("csv", "json", "jsonl", "xlsx", "txt", "log"):
    for seed in range(4):
        repo = Repository(build_spec(seed).model_copy(update={"file_format": fmt}))
        digest.update(repo.read_bytes(repo.data_files[-1]))
print(digest.hexdigest())
"""


def test_served_bytes_are_the_same_in_other_processes_and_hash_seeds():
    import os
    import subprocess
    import sys

    hashes = set()
    for hash_seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", SHA_SCRIPT], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()  # fmt: skip
        hashes.add(out)
    assert len(hashes) == 1 and len(hashes.pop()) == 64
