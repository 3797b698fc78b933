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
from collections.abc import Mapping
from json.encoder import encode_basestring

import numpy as np
import pandas as pd

FIXED_ZIP_TIME = (2020, 1, 1, 0, 0, 0)
FIXED_XLSX_TIME = "2020-01-01T00:00:00Z"
LOG_SEPARATOR = " | "

# A table to serialise: a DataFrame, or its columns as numpy arrays by name (missing values NaN
# in float arrays, None or NaN in object arrays), as Repository.columns gives them.
Table = pd.DataFrame | Mapping[str, np.ndarray]


def as_columns(table: Table) -> dict[str, np.ndarray]:
    """The table's columns as numpy arrays, by name, in order."""
    if isinstance(table, pd.DataFrame):
        return {str(name): table[name].to_numpy() for name in table.columns}
    return dict(table)


def _cells(values: np.ndarray, missing: object) -> list:
    """One column as a Python list (floats, ints, strs), missing cells replaced by ``missing``.

    Python's ``repr`` of a float (used by ``csv``, ``json`` and ``str``) is the shortest text that
    reads back to the same double.
    """
    cells = values.tolist()
    kind = values.dtype.kind
    if kind in "iu":
        return cells
    mask = np.isnan(values) if kind == "f" else pd.isna(values)
    if mask.any():
        for i in np.flatnonzero(mask).tolist():
            cells[i] = missing
    return cells


def columns_as_lists(table: Table, missing: object = None) -> list[list]:
    """Each column as a Python list, missing cells replaced by ``missing``."""
    return [_cells(values, missing) for values in as_columns(table).values()]


def _delimited(cols: dict[str, np.ndarray], delimiter: str, missing: str) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerow(cols)
    writer.writerows(zip(*columns_as_lists(cols, missing), strict=True))
    return buf.getvalue().encode("utf-8")


def to_csv(table: Table) -> bytes:
    return _delimited(as_columns(table), ",", "")


def to_txt(table: Table) -> bytes:
    return _delimited(as_columns(table), "\t", "NA")


# --- json and jsonl: one record per row, the text ``json.dumps`` writes, built column-wise ------


def _json_float(x: float) -> str:
    if x != x:
        return "null"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


def _json_value(v: object) -> str:
    """``json.dumps(v, ensure_ascii=False)`` for a cell of an object column (missing: null)."""
    if v is None or v is pd.NA:
        return "null"
    if isinstance(v, str):
        return encode_basestring(v)
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return int.__repr__(v)
    if isinstance(v, float):
        return _json_float(v)
    return json.dumps(v, ensure_ascii=False)


def _json_texts(values: np.ndarray) -> list[str]:
    """Each cell of a column as JSON text."""
    kind = values.dtype.kind
    if kind in "iu":
        return list(map(int.__repr__, values.tolist()))
    if kind == "f":
        texts = list(map(float.__repr__, values.tolist()))
        odd = ~np.isfinite(values)
        if odd.any():
            for i in np.flatnonzero(odd).tolist():
                texts[i] = _json_float(float(values[i]))
        return texts
    return list(map(_json_value, values.tolist()))


def _records(table: Table) -> list[str]:
    """Each row as ``json.dumps(dict(row), ensure_ascii=False)`` would write it, byte for byte
    (keys in column order, ``", "`` and ``": "`` separators), one ``%`` format per row."""
    cols = as_columns(table)
    keys = [encode_basestring(name).replace("%", "%%") for name in cols]
    template = "{" + ", ".join(f"{key}: %s" for key in keys) + "}"
    return [template % row for row in zip(*map(_json_texts, cols.values()), strict=True)]


def to_json(table: Table) -> bytes:
    return ("[\n" + ",\n".join(_records(table)) + "\n]\n").encode("utf-8")


def to_jsonl(table: Table) -> bytes:
    return ("\n".join(_records(table)) + "\n").encode("utf-8")


def to_log(table: Table, timestamp: str) -> bytes:
    cols = as_columns(table)
    names = [timestamp, *(c for c in cols if c != timestamp)]
    prefixed = [[f"{k}={v}" for v in _cells(cols[k], "NA")] for k in names]
    return ("\n".join(map(LOG_SEPARATOR.join, zip(*prefixed, strict=True))) + "\n").encode("utf-8")


def to_xlsx(table: Table) -> bytes:
    from openpyxl import Workbook

    cols = as_columns(table)
    wb = Workbook(write_only=True)
    ws = wb.create_sheet("data")
    ws.append(list(cols))
    for row in zip(*columns_as_lists(cols), strict=True):
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


def _integers_with_missing(values: np.ndarray) -> np.ndarray:
    """A float column of integers with NaN as Python ints with None (written without ``.0``)."""
    out = np.empty(len(values), dtype=object)
    present = ~np.isnan(values)
    out[present] = values[present].astype(np.int64).tolist()
    return out


def serialise(
    table: Table, file_format: str, timestamp: str, integer_columns: tuple[str, ...] = ()
) -> bytes:
    """The bytes of ``table`` written as ``file_format``; ``timestamp`` names the datetime column.

    ``integer_columns`` with missing values (float in the table) are written without ``.0``.
    """
    df = as_columns(table)
    for name in integer_columns:
        if df[name].dtype.kind == "f":
            df[name] = _integers_with_missing(df[name])
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
