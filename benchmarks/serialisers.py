"""Serialiser speed per table: today's serialisers against the previous ones (kept below, in this
script only, as the baseline), and table generation + csv against a floor.

For files of different repositories it prints, per format, the CPU time per table of the
previous serialiser (openpyxl for xlsx; one ``json`` encode per row), of the current one and
their ratio, and checks that both write the same bytes (xlsx: that pandas reads back the same
values; its bytes changed with spec v3). Then generation + csv (``TableGenerator.columns`` then
``serialise(..., "csv")``, the path ``Repository.read_bytes`` takes) against the floor: one
``rng.random`` call per column plus the ``csv`` module writing the same table's rows (already as
Python lists).

Goals: json and jsonl >= 2x faster, xlsx >= 3x faster than the previous code; generation + csv
<= 3x the floor.

Usage: python benchmarks/serialisers.py [--files 200] [--xlsx-files 40] [--repeat 5]
"""

from __future__ import annotations

import argparse
import csv
import gc
import io
import json
import os
import re
import time
import zipfile
from collections.abc import Callable

import numpy as np
import pandas as pd

from isg_gym.repository import Repository
from isg_gym.repository.serialisers import serialise

GOALS = {"json": 2.0, "jsonl": 2.0, "xlsx": 3.0}
GOAL_FLOOR = 3.0


# --- the previous serialisers (commit c8ebb9e), the baseline --------------------------------


def old_columns_as_lists(df: pd.DataFrame, missing: object = None) -> list[list]:
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


def old_delimited(df: pd.DataFrame, delimiter: str, missing: str) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\n")
    writer.writerow(df.columns)
    writer.writerows(zip(*old_columns_as_lists(df, missing), strict=True))
    return buf.getvalue().encode("utf-8")


def old_records(df: pd.DataFrame) -> list[str]:
    names = list(df.columns)
    dumps = json.JSONEncoder(ensure_ascii=False).encode
    rows = zip(*old_columns_as_lists(df), strict=True)
    return [dumps(dict(zip(names, row, strict=True))) for row in rows]


def old_log(df: pd.DataFrame, timestamp: str) -> bytes:
    names = [timestamp, *(c for c in df.columns if c != timestamp)]
    columns = old_columns_as_lists(df[names], "NA")
    prefixed = [[f"{k}={v}" for v in col] for k, col in zip(names, columns, strict=True)]
    return ("\n".join(map(" | ".join, zip(*prefixed, strict=True))) + "\n").encode("utf-8")


def old_xlsx(df: pd.DataFrame) -> bytes:
    from openpyxl import Workbook

    wb = Workbook(write_only=True)
    ws = wb.create_sheet("data")
    ws.append(list(df.columns))
    for row in zip(*old_columns_as_lists(df), strict=True):
        ws.append(row)
    raw = io.BytesIO()
    wb.save(raw)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw.getvalue())) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            content = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                content = re.sub(rb"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:)",
                                 rb"\g<1>2020-01-01T00:00:00Z\g<3>", content)  # fmt: skip
            fixed = zipfile.ZipInfo(info.filename, date_time=(2020, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, content)
    return out.getvalue()


def old_serialise(df: pd.DataFrame, fmt: str, timestamp: str, integers: tuple[str, ...]) -> bytes:
    floats = [c for c in integers if df[c].dtype.kind == "f"]
    if floats:
        fixed = {}
        for c in floats:
            out = df[c].to_numpy(dtype=object)
            present = df[c].notna().to_numpy()
            out[present] = df[c][present].astype(np.int64).tolist()
            out[~present] = None
            fixed[c] = out
        df = df.assign(**fixed)
    match fmt:
        case "csv":
            return old_delimited(df, ",", "")
        case "txt":
            return old_delimited(df, "\t", "NA")
        case "json":
            return ("[\n" + ",\n".join(old_records(df)) + "\n]\n").encode("utf-8")
        case "jsonl":
            return ("\n".join(old_records(df)) + "\n").encode("utf-8")
        case "xlsx":
            return old_xlsx(df)
        case "log":
            return old_log(df, timestamp)
    raise ValueError(fmt)


# --- measurement -----------------------------------------------------------------------------


def cpu_per_call(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Best of ``repeat`` runs of each of ``fns`` (CPU seconds), the functions taking turns
    (a slow spell of this VM then slows all of them, not the one that ran during it), with the
    garbage collector off while one runs, as ``timeit`` does."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            gc.collect()
            gc.disable()
            try:
                t0 = time.process_time()
                fn()
                best[k] = min(best[k], time.process_time() - t0)
            finally:
                gc.enable()
    return best


def sample_files(count: int) -> list[tuple[Repository, str]]:
    out = []
    seed = 0
    while len(out) < count:
        repo = Repository.from_seed(seed)
        out.append((repo, repo.data_files[seed % len(repo.data_files)]))
        seed += 1
    return out


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def bench_formats(files: list[tuple[Repository, str]], xlsx_files: int, repeat: int) -> None:
    print(f"per table, CPU ms (best of {repeat}, old and new taking turns; {load()})")
    print(f"  {'format':<6} {'files':>5} {'previous':>9} {'now':>9} {'ratio':>7}   goal")
    for fmt in ("csv", "json", "jsonl", "xlsx", "txt", "log"):
        chosen = files[:xlsx_files] if fmt == "xlsx" else files
        jobs = []
        for repo, path in chosen:
            timestamp, integers = repo.spec.columns[1].name, repo._integer_columns
            cols, table = repo.columns(path), repo.table(path)
            dict(cols)  # format the text columns once, as a served file has them
            old = old_serialise(table, fmt, timestamp, integers)
            new = serialise(cols, fmt, timestamp, integers)
            if fmt == "xlsx":
                pd.testing.assert_frame_equal(pd.read_excel(io.BytesIO(new)),
                                              pd.read_excel(io.BytesIO(old)))  # fmt: skip
            elif old != new:
                raise AssertionError(f"{fmt}: {path} of {repo.seed} differs from the baseline")
            jobs.append((cols, table, timestamp, integers))
        before, after = cpu_per_call([
            lambda f=fmt, js=jobs: [old_serialise(t, f, ts, i) for _, t, ts, i in js],
            lambda f=fmt, js=jobs: [serialise(c, f, ts, i) for c, _, ts, i in js],
        ], repeat)  # fmt: skip
        ratio = before / after
        goal = GOALS.get(fmt)
        verdict = "" if goal is None else f">= {goal:g}x: {'ok' if ratio >= goal else 'MISSED'}"
        print(f"  {fmt:<6} {len(jobs):>5} {before / len(jobs) * 1e3:>9.3f} "
              f"{after / len(jobs) * 1e3:>9.3f} {ratio:>6.2f}x   {verdict}")  # fmt: skip


def floor_job(cols: dict[str, np.ndarray]) -> Callable[[], bytes]:
    """numpy draws (one ``rng.random`` per column) plus the csv module writing the table."""
    n = len(next(iter(cols.values())))
    rows = list(zip(*(c.tolist() for c in cols.values()), strict=True))
    header = list(cols)
    rng = np.random.default_rng(0)

    def job() -> bytes:
        for _ in header:
            rng.random(n)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return buf.getvalue().encode("utf-8")

    return job


def bench_generation(files: list[tuple[Repository, str]], repeat: int) -> None:
    jobs, floors = [], []
    for repo, path in files:
        gen, values = repo._generator, repo.path_values(path)
        timestamp, integers = repo.spec.columns[1].name, repo._integer_columns
        jobs.append(lambda g=gen, p=path, v=values, t=timestamp, i=integers:
                    serialise(g.columns(p, v), "csv", t, i))  # fmt: skip
        floors.append(floor_job(dict(repo.columns(path))))
    generated, floor = cpu_per_call(
        [lambda: [job() for job in jobs], lambda: [job() for job in floors]], repeat
    )
    ratio = generated / floor
    print(f"\ngeneration + csv per table ({len(jobs)} files; {load()})")
    print(f"  generate + serialise csv: {generated / len(jobs) * 1e3:.3f} ms")
    print(f"  floor (numpy draws + csv module): {floor / len(jobs) * 1e3:.3f} ms")
    verdict = "ok" if ratio <= GOAL_FLOOR else "MISSED"
    print(f"  ratio {ratio:.2f}x   goal <= {GOAL_FLOOR:g}x: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--xlsx-files", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    files = sample_files(args.files)
    bench_formats(files, args.xlsx_files, args.repeat)
    bench_generation(files, args.repeat)


if __name__ == "__main__":
    main()
