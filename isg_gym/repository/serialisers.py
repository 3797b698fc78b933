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
import datetime as dt
import io
import json
import math
from collections.abc import Mapping
from functools import lru_cache
from json.encoder import encode_basestring

import numpy as np
import pandas as pd

FIXED_XLSX_CREATED = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)  # the workbook's document dates
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
    (keys in column order, ``", "`` and ``": "`` separators), one ``%`` format per row.

    Integer columns and float columns without NaN or infinity go into the format as numbers
    (``%d`` and ``%r`` write ``int.__repr__`` and ``float.__repr__``, as ``json.dumps`` does):
    formatted inside the one ``%`` call per row, not by a Python call per cell."""
    parts, values = [], []
    for name, column in as_columns(table).items():
        key = encode_basestring(name).replace("%", "%%")
        kind = column.dtype.kind
        if kind in "iu":
            parts.append(f"{key}: %d")
            values.append(column.tolist())
        elif kind == "f" and np.isfinite(column).all():
            parts.append(f"{key}: %r")
            values.append(column.tolist())
        else:
            parts.append(f"{key}: %s")
            values.append(_json_texts(column))
    template = "{" + ", ".join(parts) + "}"
    return [template % row for row in zip(*values, strict=True)]


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
    """One sheet ``data`` written by XlsxWriter: header row, numbers as numbers (shortest
    round-trip text), text as shared strings, missing values as empty cells; fixed document
    dates and zip timestamps, so equal tables give equal bytes."""
    import xlsxwriter

    cols = as_columns(table)
    buf = io.BytesIO()
    book = xlsxwriter.Workbook(buf, _XLSX_OPTIONS)
    book.set_properties({"created": FIXED_XLSX_CREATED})
    sheet = book.add_worksheet("data", worksheet_class=_exact_worksheet())
    _fill_sheet(sheet, cols)
    book.close()
    # the sheet holds a bound method of the workbook (a reference cycle): break it, so that the
    # workbook, its cells and its XML buffers are freed now, not when the cyclic collector runs
    sheet.workbook_add_format = None
    return buf.getvalue()


def _fill_sheet(sheet, cols: dict[str, np.ndarray]) -> None:
    """The header and the cells, stored as ``write_string``/``write_number`` would store them
    (XlsxWriter's cell records, its shared-string table), without their per-cell checks: the
    sheet's extent is set once, and numbers are checked to be finite per column."""
    from xlsxwriter.worksheet import CellNumberTuple, CellStringTuple

    cells, strings = sheet.table, sheet.str_table._get_shared_string_index
    rows = max((len(v) for v in cols.values()), default=0)
    if sheet._check_dimensions(0, 0) or sheet._check_dimensions(rows, max(len(cols) - 1, 0)):
        raise ValueError(f"a table of {rows} rows and {len(cols)} columns does not fit a sheet")
    for j, name in enumerate(cols):
        cells[0][j] = CellStringTuple(strings(name), None)
    sheet.plain_cells = True
    for j, (name, values) in enumerate(cols.items()):
        if values.dtype.kind in "iuf":
            if values.dtype.kind == "f" and np.isinf(values).any():
                raise ValueError(f"column {name!r} holds an infinity, which xlsx cannot store")
            for i, v in enumerate(_cells(values, None), start=1):
                if v is not None:
                    cells[i][j] = CellNumberTuple(v, None)
            continue
        for i, v in enumerate(_cells(values, None), start=1):
            if v is None:
                continue
            if isinstance(v, str):
                if len(v) > sheet.xls_strmax // 2:
                    raise ValueError(f"column {name!r} holds a string too long for a cell")
                cells[i][j] = CellStringTuple(strings(v), None)
            elif isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                cells[i][j] = CellNumberTuple(v, None)
            else:
                raise TypeError(f"column {name!r}: cannot write {v!r} to an xlsx cell")


# Text is never read as a formula, a URL or a number; NaN and infinities are refused.
_XLSX_OPTIONS = {"in_memory": True, "strings_to_formulas": False, "strings_to_urls": False,
                 "strings_to_numbers": False}  # fmt: skip


def _number_text(number: float | int) -> str:
    """A cell's number as its shortest round-trip text: ``repr`` of a float, ``str`` of an int."""
    return repr(number) if isinstance(number, float) else str(int(number))


@lru_cache(maxsize=1)
def _exact_worksheet() -> type:
    """XlsxWriter's worksheet, writing each number as its shortest round-trip text (XlsxWriter
    writes 16 significant digits, which does not read back as the same double for every
    value); a sheet of plain cells (filled by :func:`_fill_sheet`) has its rows written by a
    shorter path that writes the same XML."""
    from xlsxwriter.utility import xl_col_to_name
    from xlsxwriter.worksheet import Worksheet

    class ExactWorksheet(Worksheet):
        plain_cells = False  # only number and shared-string cells, none with a format

        def _xml_number_element(self, number, attributes=()) -> None:
            attr = "".join(f' {k}="{self._escape_attributes(v)}"' for k, v in attributes)
            self.fh.write(f"<c{attr}><v>{_number_text(number)}</v></c>")

        def _write_rows(self) -> None:
            if not self.plain_cells or self.row_info or self.comments or self.constant_memory:
                super()._write_rows()
                return
            rows = [self.table.get(r) for r in range(self.dim_rowmin, self.dim_rowmax + 1)]
            self.row_spans = _spans(self.dim_rowmin, rows)
            first = self.dim_colmin
            letters = [xl_col_to_name(c) for c in range(first, self.dim_colmax + 1)]
            for row_num, row in enumerate(rows, start=self.dim_rowmin):
                if not row:
                    continue
                self._write_row(row_num, self.row_spans.get(row_num // 16))
                ref = str(row_num + 1)
                self.fh.write("".join(
                    f'<c r="{letters[c - first]}{ref}"><v>{_number_text(cell.number)}</v></c>'
                    if cell.__class__.__name__ == "Number"
                    else f'<c r="{letters[c - first]}{ref}" t="s"><v>{cell.string}</v></c>'
                    for c, cell in sorted(row.items())
                ))  # fmt: skip
                self._xml_end_tag("row")

    return ExactWorksheet


def _spans(first_row: int, rows: list[dict | None]) -> dict[int, str]:
    """XlsxWriter's ``spans`` of each block of 16 rows: the first and last used column
    (1-based) of the block's rows, for blocks with cells (``Worksheet._calculate_spans``)."""
    spans: dict[int, str] = {}
    low = high = None
    last = first_row + len(rows) - 1
    for row_num, row in enumerate(rows, start=first_row):
        if row:
            a, b = min(row), max(row)
            low = a if low is None else min(low, a)
            high = b if high is None else max(high, b)
        if ((row_num + 1) % 16 == 0 or row_num == last) and low is not None:
            spans[row_num // 16] = f"{low + 1}:{high + 1}"
            low = high = None
    return spans


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
