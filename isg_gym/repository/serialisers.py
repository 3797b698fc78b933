"""Serialisers: one table to the bytes of a csv, json, jsonl, xlsx, txt or log file.

Floats are written as their shortest round-trip text (the table already holds values rounded to
each column's decimals), so pandas parses back exactly the values the ground truth uses.

- csv:   comma-separated, header row, missing values empty. ``pd.read_csv(path)``.
- txt:   tab-separated, header row, missing values ``NA``. ``pd.read_csv(path, sep="\\t")``.
- json:  a JSON array of records, one per line, missing values ``null``.
  ``pd.read_json(path, precise_float=True)`` (without it, pandas' fast float parser may land
  one unit in the last place away from the written decimal; ``json.load`` is exact).
- jsonl: one JSON record per line. ``pd.read_json(path, lines=True, precise_float=True)``.
- xlsx:  one sheet named ``data``, header row, missing values empty. ``pd.read_excel(path)``.
- log:   one record per line, ``name=value`` fields joined by `` | ``, the timestamp field
  first, missing values ``NA``; e.g. ``measured_at=2024-03-01T12:00:00Z | plot_id=P1042 | ...``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile

import numpy as np
import pandas as pd

FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
FIXED_XLSX_TIME = "2020-01-01T00:00:00Z"
LOG_SEPARATOR = " | "


def columns_as_lists(df: pd.DataFrame, missing: object = None) -> list[list]:
    """Each column as a Python list (floats, ints, strs), missing cells replaced by ``missing``.

    Python's ``repr`` of a float (used by ``csv``, ``json`` and ``str``) is the shortest text that
    reads back to the same double.
    """
    out = []
    for name in df.columns:
        values = df[name].to_numpy()
        if values.dtype.kind == "f":
            mask = np.isnan(values)
            cells = values.tolist()
            if mask.any():
                for i in np.flatnonzero(mask).tolist():
                    cells[i] = missing
        elif values.dtype.kind in "iu":
            cells = values.tolist()
        else:
            cells = [missing if v is None or v is pd.NA or v != v else v for v in values.tolist()]
        out.append(cells)
    return out


def _delimited(df: pd.DataFrame, delimiter: str, missing: str) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerow(df.columns)
    writer.writerows(zip(*columns_as_lists(df, missing), strict=True))
    return buf.getvalue().encode("utf-8")


def to_csv(df: pd.DataFrame) -> bytes:
    return _delimited(df, ",", "")


def to_txt(df: pd.DataFrame) -> bytes:
    return _delimited(df, "\t", "NA")


def _records(df: pd.DataFrame) -> list[str]:
    names = list(df.columns)
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    return [
        dumps(dict(zip(names, row, strict=True))) for row in zip(*columns_as_lists(df), strict=True)
    ]


def to_json(df: pd.DataFrame) -> bytes:
    return ("[\n" + ",\n".join(_records(df)) + "\n]\n").encode("utf-8")


def to_jsonl(df: pd.DataFrame) -> bytes:
    return ("\n".join(_records(df)) + "\n").encode("utf-8")


def to_log(df: pd.DataFrame, timestamp: str) -> bytes:
    names = [timestamp, *(c for c in df.columns if c != timestamp)]
    columns = columns_as_lists(df[names], "NA")
    prefixed = [[f"{k}={v}" for v in col] for k, col in zip(names, columns, strict=True)]
    return ("\n".join(map(LOG_SEPARATOR.join, zip(*prefixed, strict=True))) + "\n").encode("utf-8")


def to_xlsx(df: pd.DataFrame) -> bytes:
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("data")
    ws.append(list(df.columns))
    for row in zip(*columns_as_lists(df), strict=True):
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return _normalise_zip(buf.getvalue())


def _normalise_zip(data: bytes) -> bytes:
    """Rewrite an xlsx zip with fixed timestamps so that equal tables give equal bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                content = re.sub(
                    rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:)",
                    rb"\g<1>" + FIXED_XLSX_TIME.encode() + rb"\g<3>",
                    content,
                )
            fixed = zipfile.ZipInfo(info.filename, date_time=FIXED_ZIP_TIME)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, content)
    return out.getvalue()


def _integers_with_missing(values: pd.Series) -> np.ndarray:
    out = values.to_numpy(dtype=object)
    present = values.notna().to_numpy()
    out[present] = values[present].astype(np.int64).tolist()
    out[~present] = None
    return out


def serialise(
    df: pd.DataFrame, file_format: str, timestamp: str, integer_columns: tuple[str, ...] = ()
) -> bytes:
    """The bytes of ``df`` written as ``file_format``; ``timestamp`` names the datetime column.

    ``integer_columns`` with missing values (float in the table) are written without ``.0``.
    """
    floats = [c for c in integer_columns if df[c].dtype.kind == "f"]
    if floats:
        df = df.assign(**{c: _integers_with_missing(df[c]) for c in floats})
    match file_format:
        case "csv":
            return to_csv(df)
        case "txt":
            return to_txt(df)
        case "json":
            return to_json(df)
        case "jsonl":
            return to_jsonl(df)
        case "xlsx":
            return to_xlsx(df)
        case "log":
            return to_log(df, timestamp)
    raise ValueError(f"unknown file format {file_format!r}; known: csv json jsonl xlsx txt log")
