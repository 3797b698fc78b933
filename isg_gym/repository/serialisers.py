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

import io
import json
import re
import zipfile

import numpy as np
import pandas as pd

FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
FIXED_XLSX_TIME = "2020-01-01T00:00:00Z"
LOG_SEPARATOR = " | "
_UNIT_SEP = "\x1f"


def to_csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False, lineterminator="\n").encode("utf-8")


def to_txt(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False, sep="\t", na_rep="NA", lineterminator="\n").encode("utf-8")


def _records(df: pd.DataFrame) -> list[str]:
    clean = df.astype(object).where(df.notna(), None)
    return [json.dumps(dict(zip(df.columns, map(_cell, row), strict=True)), ensure_ascii=False)
            for row in clean.itertuples(index=False, name=None)]  # fmt: skip


def to_json(df: pd.DataFrame) -> bytes:
    return ("[\n" + ",\n".join(_records(df)) + "\n]\n").encode("utf-8")


def to_jsonl(df: pd.DataFrame) -> bytes:
    return ("\n".join(_records(df)) + "\n").encode("utf-8")


def to_log(df: pd.DataFrame, timestamp: str) -> bytes:
    names = [timestamp, *(c for c in df.columns if c != timestamp)]
    body = df[names].to_csv(index=False, header=False, sep=_UNIT_SEP, na_rep="NA",
                            lineterminator="\n", quoting=3)  # fmt: skip
    lines = []
    for line in body.splitlines():
        cells = line.split(_UNIT_SEP)
        lines.append(LOG_SEPARATOR.join(f"{k}={v}" for k, v in zip(names, cells, strict=True)))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _cell(value: object) -> object:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def to_xlsx(df: pd.DataFrame) -> bytes:
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("data")
    ws.append(list(df.columns))
    for row in df.itertuples(index=False, name=None):
        ws.append([_cell(v) for v in row])
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


def serialise(
    df: pd.DataFrame, file_format: str, timestamp: str, integer_columns: tuple[str, ...] = ()
) -> bytes:
    """The bytes of ``df`` written as ``file_format``; ``timestamp`` names the datetime column.

    ``integer_columns`` with missing values (float in the table) are written without ``.0``.
    """
    floats = [c for c in integer_columns if df[c].dtype.kind == "f"]
    if floats:
        df = df.astype({c: "Int64" for c in floats})
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
