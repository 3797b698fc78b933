"""Shared helpers: read a served file back exactly as an agent would, with pandas."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

LOG_SEPARATOR = " | "


def parse_log(data: bytes) -> pd.DataFrame:
    """The documented recipe for .log files: ``name=value`` fields joined by `` | ``."""
    rows = [
        dict(field.split("=", 1) for field in line.split(LOG_SEPARATOR))
        for line in data.decode("utf-8").splitlines()
    ]
    df = pd.DataFrame(rows).replace("NA", np.nan)
    for col in df.columns:
        converted = pd.to_numeric(df[col], errors="coerce")
        if converted.notna().sum() == df[col].notna().sum():
            df[col] = converted
    return df


def read_served(data: bytes, file_format: str) -> pd.DataFrame:
    """Parse served bytes the way an agent would with pandas.

    JSON is read with ``precise_float=True``: pandas' default fast float parser can be one unit
    in the last place away from the written decimal (tested separately).
    """
    buf = io.BytesIO(data)
    match file_format:
        case "csv":
            return pd.read_csv(buf)
        case "txt":
            return pd.read_csv(buf, sep="\t")
        case "json":
            return pd.read_json(buf, precise_float=True)
        case "jsonl":
            return pd.read_json(buf, lines=True, precise_float=True)
        case "xlsx":
            return pd.read_excel(buf)
        case "log":
            return parse_log(data)
    raise ValueError(file_format)


def assert_same_values(parsed: pd.DataFrame, table: pd.DataFrame) -> None:
    """Same columns, and cell by cell the same value (numbers exactly, missing as missing)."""
    assert sorted(parsed.columns) == sorted(table.columns)
    assert len(parsed) == len(table)
    for col in table.columns:
        want, got = table[col], parsed[col]
        if pd.api.types.is_datetime64_any_dtype(got):  # read_json parses timestamp-like names
            got = got.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        if not pd.api.types.is_numeric_dtype(want):
            w = want.astype(object).where(want.notna(), None).tolist()
            g = got.astype(object).where(got.notna(), None).tolist()
            assert w == g, col
        else:
            w = want.to_numpy(dtype=np.float64)
            g = got.to_numpy(dtype=np.float64)
            np.testing.assert_array_equal(g, w, err_msg=col, strict=False)


def served_rows(repo) -> pd.DataFrame:
    """Every data file of ``repo`` parsed from its served bytes, pooled, with the file's
    path-variable values (canonical, from the index) as columns."""
    frames = []
    for path in repo.data_files:
        frame = read_served(repo.read_bytes(path), repo.spec.file_format)
        for name, value in repo.path_values(path).items():
            frame[name] = value
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
