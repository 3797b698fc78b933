"""Independent ground-truth checker: read each question from its TEXT, recompute its answer from
the served files.

Nothing here uses the question generators' machinery (``isg_gym.qa`` internals,
``Repository.table`` / ``path_values`` / ``index``). A checker sees what an agent sees: the question
text, the file listing (``Repository.files()``), the served bytes (``Repository.read_bytes``)
parsed with pandas (``conftest.read_served``), and the path template of the Spec, from which
path-variable tokens are parsed out of the path strings with a regular expression.

``tests/question_text.py`` reads the description (scope, path and row conditions, columns,
statistic or test, alpha, Yates' correction, groups, direction, significant figures) from the
text; ``question.params`` is never used to compute, only compared with what the text says (a
difference is a failure). Conditions and statistics are then re-implemented with pandas and
scipy under the v2 conventions (``isg_gym.qa.conventions``), and answerable gold is held to the
robustness rules (expected counts, group sizes, leads, p away from alpha, significant figures).

:func:`recompute` returns a :class:`Recomputed`: the answer, or the set of unanswerability reasons
that apply (within a stage only the first that applies: e.g. zero rows is ``no_matching_rows``,
not also ``too_few_rows``). :func:`check_question` compares it with the question's gold.

Run ``python tests/checker.py [SEEDS] [PER_REPO]`` (SEEDS a count ``60`` or a range ``0-60``)
for a report by type and kind of failure.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import read_served
from question_text import STYLE_PREFIX, CheckError, differences, parse

README = "README.md"
GENERIC_TITLE = "Data repository"
NUMERIC_STATISTICS = ("min", "max", "median", "mean", "std", "var")
REL_TOL = 1e-9
# Robustness rules for answerable gold (docs: the v2 conventions).
MIN_EXPECTED = 5  # chi-square: every expected count
MIN_WELCH_GROUP = 5  # Welch: values per group
MIN_GROUP_VALUES = 5  # group comparison: values in every group that competes
MIN_LEAD = 0.01  # group comparison: winner over runner-up, relative
MIN_MODE_LEAD = 2  # counts of the mode over the second most common value
ALPHA_MARGIN = 0.25  # no p within +/-25% (relative) of alpha
MIN_VALUES_FINE = 10  # 4-5 significant figures only with this many values behind


@dataclass
class Recomputed:
    """The recomputed answer, or the unanswerability reasons that apply (non-empty).

    ``fragile`` lists the robustness rules an answerable answer breaks (empty when robust).
    """

    answer: Any = None
    reasons: set[str] = field(default_factory=set)
    note: str = ""
    fragile: list[str] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return not self.reasons


def unanswerable(*reasons: str, note: str = "") -> Recomputed:
    return Recomputed(reasons=set(reasons), note=note)


# --- the repository as served -------------------------------------------------------------------


def _path_regex(spec) -> tuple[re.Pattern[str], dict[str, str]]:
    """A regex with one named group per path variable (group ``v{j}`` -> variable name)."""
    layout = spec.layout
    by_key = {v.key: (j, v) for j, v in enumerate(spec.path_variables)}
    date = layout.date_format.replace("%Y", r"\d{4}").replace("%m", r"\d{2}")
    date = date.replace("%d", r"\d{2}")
    prefix = STYLE_PREFIX[layout.style]

    def token(key: str) -> str:
        j, var = by_key[key]
        value = {"date": date, "sequence": r"\d+"}.get(var.kind, r"[A-Za-z0-9.]+")
        return re.escape(prefix.format(s=var.short)) + f"(?P<v{j}>{value})"

    groups = [*zip(layout.levels, layout.level_joiners, strict=True),
              (layout.filename, layout.filename_joiner)]  # fmt: skip
    parts = [re.escape(joiner).join(token(k) for k in keys) for keys, joiner in groups]
    pattern = "/".join(parts) + r"\.[A-Za-z0-9]+"
    names = {f"v{j}": v.name for j, v in enumerate(spec.path_variables)}
    return re.compile(f"^{pattern}$"), names


class Served:
    """One repository as an agent sees it, with parsed files cached."""

    def __init__(self, repo) -> None:
        self.repo = repo
        self.spec = repo.spec
        self.files = list(repo.files())
        self.file_set = set(self.files)
        self.data_files = [f for f in self.files if f != README]
        regex, names = _path_regex(self.spec)
        self.tokens: dict[str, dict[str, str]] = {}
        for path in self.data_files:
            m = regex.match(path)
            if m is None:
                raise CheckError(f"served path {path!r} does not match the layout {regex.pattern}")
            self.tokens[path] = {names[g]: v for g, v in m.groupdict().items()}
        self.values: dict[str, set[str]] = {v.name: set() for v in self.spec.path_variables}
        for toks in self.tokens.values():
            for name, tok in toks.items():
                self.values[name].add(tok)
        # directory ('' is the root) -> the names of its entries (files and sub-directories)
        self.entries: dict[str, set[str]] = {"": set()}
        for path in self.files:
            parts = path.split("/")
            for depth in range(len(parts)):
                directory = "/".join(parts[:depth])
                self.entries.setdefault(directory, set()).add(parts[depth])
        self._frames: dict[str, pd.DataFrame] = {}

    def frame(self, path: str) -> pd.DataFrame:
        if path not in self._frames:
            ext = path.rsplit(".", 1)[-1]
            df = read_served(self.repo.read_bytes(path), ext)
            for col in df.columns:  # read_json parses timestamp-like columns: back to the text
                if pd.api.types.is_datetime64_any_dtype(df[col]):
                    df[col] = df[col].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
            self._frames[path] = df
        return self._frames[path]

    def readme(self) -> str | None:
        if README not in self.file_set:
            return None
        return self.repo.read_bytes(README).decode("utf-8")

    # --- scopes ------------------------------------------------------------------------------

    def path_matches(self, path: str, cond: dict[str, Any]) -> bool:
        token = self.tokens[path][cond["variable"]]
        op, value = cond["op"], cond["value"]
        if op == "is":
            return token == value
        if op == "is_one_of":
            return token in list(value)
        x, v = float(token), float(value)
        return {"gt": x > v, "lt": x < v, "ge": x >= v, "le": x <= v}[op]

    def absent_value(self, cond: dict[str, Any]) -> bool:
        """An is / is_one_of condition whose values no served path has for the variable."""
        if cond["variable"] not in self.values:
            raise CheckError(f"path variable {cond['variable']!r} is not in the layout")
        present = self.values[cond["variable"]]
        if cond["op"] == "is":
            return cond["value"] not in present
        if cond["op"] == "is_one_of":  # v2: a path value it names does not exist
            return not all(v in present for v in cond["value"])
        return False

    def matching(self, conds: list[dict[str, Any]]) -> list[str]:
        return [p for p in self.data_files if all(self.path_matches(p, c) for c in conds)]

    def scope(self, params: dict[str, Any]) -> tuple[list[str], set[str]]:
        """The files of a question's scope, or the scope's unanswerability reason."""
        match params.get("scope"):
            case "file":
                path = params["file"]
                if path not in self.file_set or path == README:
                    return [], {"no_such_file"}
                return [path], set()
            case "files":
                conds = list(params["path_conditions"])
                if any(c["variable"] is None for c in conds):
                    return [], {"unrecorded_variable"}
                if any(self.absent_value(c) for c in conds):
                    return [], {"no_such_path_value"}
                files = self.matching(conds)
                return files, (set() if files else {"no_matching_files"})
        raise CheckError(f"bad scope params {params!r}")

    # --- data --------------------------------------------------------------------------------

    def has_column(self, files: list[str], column: str) -> bool:
        present = [column in self.frame(f).columns for f in files]
        if any(present) and not all(present):
            raise CheckError(f"column {column!r} is served in some files of the scope only")
        return all(present)

    def recorded(self, files: list[str], columns: list[str]) -> bool:
        """Every one of ``columns`` (targets and filter columns) is recorded in the scope."""
        return all(self.has_column(files, c) for c in columns)

    def is_numeric(self, files: list[str], column: str) -> bool:
        """Numeric dtype in every file where the column holds any value."""
        for f in files:
            s = self.frame(f)[column]
            if s.notna().any() and (
                not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)
            ):
                return False
        return True

    def gather(
        self, files: list[str], columns: list[str], path_group: str | None = None
    ) -> pd.DataFrame:
        """The scope's rows of ``columns`` (numeric columns as float, others as object)."""
        out: dict[str, Any] = {}
        for col in dict.fromkeys(columns):
            parts = [self.frame(f)[col] for f in files]
            if self.is_numeric(files, col):
                out[col] = np.concatenate([p.to_numpy(dtype=float, na_value=np.nan) for p in parts])
            else:
                out[col] = np.concatenate(
                    [p.astype(object).where(p.notna(), None).to_numpy() for p in parts]
                )
        if path_group is not None:
            out["__group__"] = np.concatenate(
                [
                    np.full(len(self.frame(f)), self.tokens[f][path_group], dtype=object)
                    for f in files
                ]
            )
        return pd.DataFrame(out)


# --- row conditions ----------------------------------------------------------------------------


def row_mask(df: pd.DataFrame, conds: list[dict[str, Any]]) -> np.ndarray:
    """Rows satisfying every condition; a missing value never satisfies one."""
    keep = np.ones(len(df), dtype=bool)
    for c in conds:
        s = df[c["column"]]
        present = s.notna().to_numpy()
        v = s.to_numpy()
        op, value = c["op"], c.get("value")
        with np.errstate(invalid="ignore"):
            filled = np.where(present, v, 0 if s.dtype.kind == "f" else "")
            match op:
                case "eq":
                    hit = filled == value
                case "ne":
                    hit = filled != value
                case "in":
                    hit = np.array([x in list(value) for x in filled], dtype=bool)
                case "between":
                    hit = (filled >= value) & (filled <= c["high"])
                case "gt":
                    hit = filled > value
                case "lt":
                    hit = filled < value
                case "ge":
                    hit = filled >= value
                case "le":
                    hit = filled <= value
                case _:
                    raise CheckError(f"unknown row condition op {op!r}")
        keep &= np.asarray(hit, dtype=bool) & present
    return keep


def _filter_columns(params: dict[str, Any]) -> list[str]:
    return [c["column"] for c in params.get("row_conditions", [])]


# --- recomputation per type (from the description read from the text) --------------------------


def _fine_figures(d: dict[str, Any], n: int) -> list[str]:
    """4-5 significant figures need >= MIN_VALUES_FINE values behind the answer."""
    sig = d.get("_sig_figs")
    if sig is not None and sig >= 4 and n < MIN_VALUES_FINE:
        return [f"{sig} significant figures on {n} values (< {MIN_VALUES_FINE})"]
    return []


def _has_readme(s: Served, d: dict[str, Any]) -> Recomputed:
    directory = d["directory"]
    if directory not in s.entries:
        return unanswerable("no_such_path_value", note=f"no directory {directory!r}")
    return Recomputed(d["entry"] in s.entries[directory])


def _title(s: Served, d: dict[str, Any]) -> Recomputed:
    text = s.readme()
    if text is None:
        return unanswerable("readme_missing")
    first = next((ln for ln in text.splitlines() if ln.startswith("# ")), None)
    if first is None or first[2:].strip() == GENERIC_TITLE:
        return unanswerable("readme_missing_title")
    return Recomputed(first[2:].strip())


def _abstract(s: Served, d: dict[str, Any]) -> Recomputed:
    text = s.readme()
    if text is None:
        return unanswerable("readme_missing")
    lines = text.splitlines()
    if "## Abstract" not in lines:
        return unanswerable("readme_missing_abstract")
    body: list[str] = []
    for ln in lines[lines.index("## Abstract") + 1 :]:
        if ln.startswith("## ") or ln.startswith("# "):
            break
        body.append(ln)
    return Recomputed("\n".join(body).strip())


def _file_extension(s: Served, d: dict[str, Any]) -> Recomputed:
    directory = d["directory"]
    if directory not in s.entries:
        return unanswerable("no_such_path_value", note=f"no directory {directory!r}")
    below = [f for f in s.data_files if not directory or f.startswith(directory + "/")]
    exts = {f.rsplit(".", 1)[-1] for f in below}
    if len(exts) != 1:
        raise CheckError(f"data files under {directory!r} with extensions {sorted(exts)}")
    return Recomputed(exts.pop())


def _count_prefix(s: Served, d: dict[str, Any]) -> Recomputed:
    prefix = d["prefix"]
    directory = prefix.rpartition("/")[0]
    if directory not in s.entries:
        return unanswerable("no_such_path_value", note=f"no directory {directory!r}")
    return Recomputed(sum(f.startswith(prefix) for f in s.data_files))


def _count_files(s: Served, d: dict[str, Any]) -> Recomputed:
    conds = list(d["path_conditions"])
    if any(c["variable"] is None for c in conds):
        return unanswerable("unrecorded_variable")
    for c in conds:
        if c["variable"] not in s.values:
            raise CheckError(f"path variable {c['variable']!r} is not in the layout")
    return Recomputed(len(s.matching(conds)))  # 0 too: a value no file has counts no file


def _count_rows(s: Served, d: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope({"scope": "file", "file": d["file"]})
    return unanswerable(*reasons) if reasons else Recomputed(len(s.frame(files[0])))


def _count_missing(s: Served, d: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope({"scope": "file", "file": d["file"]})
    if reasons:
        return unanswerable(*reasons)
    df = s.frame(files[0])
    if d["column"] not in df.columns:
        return unanswerable("unrecorded_variable")
    return Recomputed(int(df[d["column"]].isna().sum()))


def _non_numeric_role(s: Served, column: str) -> bool:
    """An identifier or timestamp column (numeric statistics of it are not possible)."""
    roles = {c.name: c.role for c in s.spec.columns}
    return roles.get(column) in ("identifier", "datetime")


def _numeric(s: Served, files: list[str], column: str) -> bool:
    return s.is_numeric(files, column) and not _non_numeric_role(s, column)


def _univariate(s: Served, d: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope(d)
    if reasons:
        return unanswerable(*reasons)
    col, stat = d["column"], d["statistic"]
    if not s.recorded(files, [col, *_filter_columns(d)]):
        return unanswerable("unrecorded_variable")
    df = s.gather(files, [col, *_filter_columns(d)])
    numeric = _numeric(s, files, col)
    values = df[col][row_mask(df, d.get("row_conditions", []))].dropna()
    reasons = set()
    if stat in NUMERIC_STATISTICS and not numeric:
        reasons.add("categorical_column")
    if stat == "mode" and s.is_numeric(files, col):
        raise CheckError(f"mode of the numeric column {col!r}")
    if values.empty:
        reasons.add("no_matching_rows")
    elif stat in ("std", "var") and len(values) < 2:
        reasons.add("too_few_rows")
    if reasons:
        return unanswerable(*reasons, note=f"n={len(values)}")
    note = f"n={len(values)}"
    match stat:
        case "mode":
            counts = values.astype(str).value_counts()
            top = counts.max()
            tied = sorted(str(k) for k, n in counts.items() if n == top)
            second = max((int(n) for n in counts if n < top), default=0) if len(tied) == 1 else top
            fragile = []
            if int(top) - second < MIN_MODE_LEAD:
                fragile.append(f"mode leads by {int(top) - second} counts (< {MIN_MODE_LEAD})")
            if len(tied) > 1 and d.get("_ties") != "alphabetical":
                return unanswerable("<tied mode, no tie rule in the text>", note=f"{tied}")
            return Recomputed(tied[0], note=f"{note} counts {dict(counts.head(3))}",
                              fragile=fragile)  # fmt: skip
        case "n_distinct":
            return Recomputed(int(values.nunique()), note=note)
    x = values.astype(float)
    fn: dict[str, Callable[[], float]] = {
        "min": x.min, "max": x.max, "median": x.median, "mean": x.mean,
        "std": lambda: x.std(ddof=1), "var": lambda: x.var(ddof=1),
    }  # fmt: skip
    if stat not in fn:
        raise CheckError(f"unknown statistic {stat!r}")
    return Recomputed(float(fn[stat]()), note=note, fragile=_fine_figures(d, len(x)))


def _pairs(s: Served, d: dict[str, Any], x: str, y: str) -> tuple[list[str], Any]:
    """Scope files and the complete (x, y) pairs after the row conditions, or a Recomputed."""
    files, reasons = s.scope(d)
    if reasons:
        return files, unanswerable(*reasons)
    if not s.recorded(files, [x, y, *_filter_columns(d)]):
        return files, unanswerable("unrecorded_variable")
    df = s.gather(files, [x, y, *_filter_columns(d)])
    sub = df[row_mask(df, d.get("row_conditions", []))]
    return files, sub[[x, y]].dropna()


def _correlation_reasons(s: Served, files, pairs, x, y, test: str) -> set[str]:
    """v2: 3 complete rows, each column with >= 2 distinct values there; numeric columns
    (labels, identifiers and timestamps are not) except for chi-square."""
    reasons: set[str] = set()
    if test == "chi_square":
        if any(s.is_numeric(files, c) for c in (x, y)):
            raise CheckError(f"chi-square of a numeric column ({x!r}, {y!r})")
    elif not all(_numeric(s, files, c) for c in (x, y)):
        reasons.add("categorical_column")
    if len(pairs) == 0:
        reasons.add("no_matching_rows")
    elif len(pairs) < 3:
        reasons.add("too_few_rows")
    elif pairs[x].nunique() < 2 or pairs[y].nunique() < 2:
        reasons.add("constant_column")
    return reasons


def _pair_statistic(pairs: pd.DataFrame, x: str, y: str, stat: str, correction: Any):
    """(statistic, p-value, robustness violations) of the complete pairs."""
    if stat == "chi_square":
        if correction is None:
            raise CheckError("chi_square without a stated Yates' correction")
        table = pd.crosstab(pairs[x], pairs[y])
        res = stats.chi2_contingency(table, correction=bool(correction))
        low = float(np.min(res.expected_freq))
        fragile = [] if low >= MIN_EXPECTED else [
            f"chi-square expected count {low:.3g} (< {MIN_EXPECTED}), table {table.shape}"]
        return float(res.statistic), float(res.pvalue), fragile
    a, b = pairs[x].to_numpy(dtype=float), pairs[y].to_numpy(dtype=float)
    match stat:
        case "pearson":
            res = stats.pearsonr(a, b)
        case "spearman":
            res = stats.spearmanr(a, b)
        case "ols_slope":
            res = stats.linregress(a, b)
            return float(res.slope), float(res.pvalue), []
        case _:
            raise CheckError(f"unknown statistic {stat!r}")
    return float(res.statistic), float(res.pvalue), []


def _bivariate(s: Served, d: dict[str, Any]) -> Recomputed:
    x, y, stat = d["x"], d["y"], d["statistic"]
    files, pairs = _pairs(s, d, x, y)
    if isinstance(pairs, Recomputed):
        return pairs
    reasons = _correlation_reasons(s, files, pairs, x, y, stat)
    if reasons:
        return unanswerable(*reasons, note=f"n={len(pairs)}")
    value, _, fragile = _pair_statistic(pairs, x, y, stat, d.get("correction"))
    fragile += _fine_figures(d, len(pairs))
    return Recomputed(value, note=f"n={len(pairs)}", fragile=fragile)


def _near_alpha(pvalue: float, alpha: float) -> list[str]:
    if abs(pvalue - alpha) <= ALPHA_MARGIN * alpha:
        return [f"p = {pvalue:.4g} within {ALPHA_MARGIN:.0%} of alpha {alpha}"]
    return []


def _welch(s: Served, d: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope(d)
    if reasons:
        return unanswerable(*reasons)
    col, group = d["column"], d["group_column"]
    if not s.recorded(files, [col, group, *_filter_columns(d)]):
        return unanswerable("unrecorded_variable")
    if s.is_numeric(files, group):
        raise CheckError(f"welch_t grouped by the numeric column {group!r}")
    df = s.gather(files, [col, group, *_filter_columns(d)])
    sub = df[row_mask(df, d.get("row_conditions", []))]
    sub = sub[sub[col].notna() & sub[group].notna()]
    a = sub[col][sub[group] == d["group_a"]]
    b = sub[col][sub[group] == d["group_b"]]
    note = f"n_a={len(a)} n_b={len(b)}"
    reasons = set() if _numeric(s, files, col) else {"categorical_column"}
    if len(a) + len(b) == 0:
        reasons.add("no_matching_rows")
    elif min(len(a), len(b)) < 2:
        reasons.add("too_few_rows")
    elif a.nunique() < 2 and b.nunique() < 2:
        reasons.add("constant_column")
    if reasons:
        return unanswerable(*reasons, note=note)
    pvalue = float(stats.ttest_ind(a.astype(float), b.astype(float), equal_var=False).pvalue)
    if not math.isfinite(pvalue):
        raise CheckError(f"welch_t p-value {pvalue}")
    fragile = _near_alpha(pvalue, d["alpha"])
    if min(len(a), len(b)) < MIN_WELCH_GROUP:
        fragile.append(f"Welch group sizes {len(a)}, {len(b)} (< {MIN_WELCH_GROUP})")
    return Recomputed(pvalue < d["alpha"], note=f"{note} p={pvalue:.6g}", fragile=fragile)


def _hypothesis(s: Served, d: dict[str, Any]) -> Recomputed:
    test = d["test"]
    if test == "welch_t":
        return _welch(s, d)
    if test not in ("pearson", "spearman", "chi_square"):
        raise CheckError(f"unknown test {test!r}")
    x, y = d["x"], d["y"]
    files, pairs = _pairs(s, d, x, y)
    if isinstance(pairs, Recomputed):
        return pairs
    reasons = _correlation_reasons(s, files, pairs, x, y, test)
    if reasons:
        return unanswerable(*reasons, note=f"n={len(pairs)}")
    _, pvalue, fragile = _pair_statistic(pairs, x, y, test, d.get("correction"))
    if not math.isfinite(pvalue):
        raise CheckError(f"{test} p-value {pvalue}")
    fragile += _near_alpha(pvalue, d["alpha"])
    return Recomputed(pvalue < d["alpha"], note=f"n={len(pairs)} p={pvalue:.6g}",
                      fragile=fragile)  # fmt: skip


def _group_comparison(s: Served, d: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope(d)
    if reasons:
        return unanswerable(*reasons)
    col, by, kind = d["column"], d["group_by"], d["group_kind"]
    if not s.recorded(files, [col, *_filter_columns(d)]):
        return unanswerable("unrecorded_variable")
    if kind == "path":
        if by not in s.values:
            raise CheckError(f"unknown path variable {by!r}")
        df = s.gather(files, [col, *_filter_columns(d)], path_group=by)
        key = "__group__"
    elif kind == "column":
        if not s.has_column(files, by):
            return unanswerable("unrecorded_variable")
        df = s.gather(files, [col, by, *_filter_columns(d)])
        key = by
    else:
        raise CheckError(f"bad group_kind {kind!r}")
    sub = df[row_mask(df, d.get("row_conditions", []))]
    sub = sub[sub[col].notna() & sub[key].notna()]
    reasons = set() if _numeric(s, files, col) else {"categorical_column"}
    if sub.empty:
        reasons.add("no_matching_rows")
    if reasons:
        return unanswerable(*reasons)
    grouped = sub.groupby(key)[col]
    means = grouped.mean().sort_values(ascending=d["direction"] == "lowest", kind="stable")
    sizes = grouped.size()
    note = "means " + ", ".join(f"{k}={v:.6g} (n={sizes[k]})" for k, v in means.items())
    if len(means) >= 2 and math.isclose(means.iloc[0], means.iloc[1], rel_tol=REL_TOL):
        return unanswerable("<no unique winner>", note=note)
    fragile = []
    small = sorted(str(k) for k, n in sizes.items() if n < MIN_GROUP_VALUES)
    if small:
        fragile.append(f"groups with < {MIN_GROUP_VALUES} values: {small[:5]}")
    if len(means) < 2:
        fragile.append("a single group competes")
    else:
        best, second = float(means.iloc[0]), float(means.iloc[1])
        lead = abs(best - second) / max(abs(best), abs(second))
        if lead < MIN_LEAD:
            fragile.append(f"winner leads the runner-up by {lead:.3%} (< {MIN_LEAD:.0%})")
    return Recomputed(str(means.index[0]), note=note, fragile=fragile)


RECOMPUTE: dict[str, Callable[[Served, dict[str, Any]], Recomputed]] = {
    "has_readme": _has_readme,
    "title": _title,
    "abstract": _abstract,
    "file_extension": _file_extension,
    "count_prefix": _count_prefix,
    "count_files": _count_files,
    "count_rows": _count_rows,
    "count_missing": _count_missing,
    "univariate_statistic": _univariate,
    "bivariate_statistic": _bivariate,
    "hypothesis_test": _hypothesis,
    "group_comparison": _group_comparison,
}
ANSWER_TYPES = {"yes_no": bool, "integer": int, "float": float, "category": str, "string": str,
                "extension": str, "text": str}  # fmt: skip


def describe(served: Served, question) -> dict[str, Any]:
    """The question's description read from its text (``_sig_figs`` added); never its params."""
    desc, sig_figs = parse(question, served.spec)
    return {**desc, "_sig_figs": sig_figs}


def recompute(served: Served, question) -> Recomputed:
    """The answer recomputed from the description in the question's TEXT."""
    if question.type not in RECOMPUTE:
        raise CheckError(f"unknown question type {question.type!r}: teach the checker about it")
    return RECOMPUTE[question.type](served, describe(served, question))


# --- comparison --------------------------------------------------------------------------------


def _round_sig(x: float, sig: int) -> float:
    return x if x == 0 or not math.isfinite(x) else float(f"{x:.{sig - 1}e}")


def same_value(kind: str, gold: Any, got: Any, sig_figs: int | None) -> bool:
    if kind == "float":
        g, r = float(gold), float(got)
        if not (math.isfinite(g) and math.isfinite(r)):
            return False
        return math.isclose(g, r, rel_tol=REL_TOL, abs_tol=0.0) or (
            sig_figs is not None and _round_sig(g, sig_figs) == _round_sig(r, sig_figs)
        )
    if kind == "integer":
        return not isinstance(got, bool) and int(gold) == int(got) == got
    if kind == "yes_no":
        return bool(gold) is bool(got)
    return gold == got


KINDS = ("parse", "params", "answer", "reason", "robustness", "crash", "grading")


@dataclass(frozen=True)
class Finding:
    """One failure: the question, its type, the kind of failure (one of KINDS), a message."""

    qid: str
    type: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


def check_question(served: Served, question) -> list[Finding]:
    """Every failure of one question ([] when text, params, gold and data all agree)."""
    q = question
    head = f"{q.id} [{'answerable' if q.answerable else 'reason ' + str(q.reason)}]"

    def found(kind: str, msg: str) -> list[Finding]:
        return [Finding(q.id, q.type, kind, f"{head}: {msg}")]

    try:
        desc = describe(served, q)
    except CheckError as err:
        return found("parse", f"cannot read the text: {err}")
    out: list[Finding] = []
    params = dict(q.params)
    if "answer_prefix" in params:  # the grader's name part of a path value (from the layout)
        desc = {**desc, "answer_prefix": desc.get("_answer_prefix")}
    diffs = differences({k: v for k, v in desc.items() if not k.startswith("_")}, params)
    if diffs:
        out += found("params", "text and params disagree: " + "; ".join(diffs))
    if desc["_sig_figs"] != q.sig_figs:
        out += found("params", f"the text asks {desc['_sig_figs']} significant figures, "
                               f"sig_figs is {q.sig_figs}")  # fmt: skip
    try:
        got = RECOMPUTE[q.type](served, desc)
    except CheckError as err:
        return out + found("crash", f"cannot check: {err} (text {q.text!r})")
    except Exception as err:  # a crash of the recomputation is a disagreement too
        return out + found("crash", f"recomputation failed: {type(err).__name__}: {err}")
    bad_evidence = [f for f in q.evidence if f not in served.file_set]
    if bad_evidence:
        out += found("answer", f"evidence lists files that are not served: {bad_evidence[:3]}")
    if q.answerable:
        if not got.answerable:
            return out + found(
                "answer", f"expected {q.answer!r}, recomputed unanswerable {sorted(got.reasons)} "
                f"{got.note} (text {q.text!r})")  # fmt: skip
        want_type = ANSWER_TYPES.get(q.answer_kind)
        if (
            want_type is None
            or not isinstance(q.answer, want_type)
            or (want_type is int and isinstance(q.answer, bool))
        ):
            return out + found("answer", f"answer {q.answer!r} is not of kind {q.answer_kind}")
        if q.answer_kind == "float" and not (q.sig_figs and 1 <= q.sig_figs <= 10):
            return out + found("answer", f"float answer without sensible sig_figs ({q.sig_figs})")
        if not same_value(q.answer_kind, q.answer, got.answer, desc["_sig_figs"]):
            return out + found("answer", f"expected {q.answer!r}, recomputed {got.answer!r} "
                                         f"{got.note} (text {q.text!r})")  # fmt: skip
        if got.fragile:
            out += found("robustness", "; ".join(got.fragile) + f" ({got.note})")
        return out
    if q.answer is not None:
        return out + found("reason", f"unanswerable but carries answer {q.answer!r}")
    if got.answerable:
        return out + found("reason", f"stated unanswerable ({q.reason}), recomputed answer "
                                     f"{got.answer!r} {got.note} (text {q.text!r})")  # fmt: skip
    if q.reason not in got.reasons:
        found_ = f"recomputed reasons {sorted(got.reasons)} {got.note} (text {q.text!r})"
        return out + found("reason", f"stated reason {q.reason}, {found_}")
    return out


def check_grading(question, grade, format_answer) -> str | None:
    """The gold answer grades 1.0; "not possible" grades 1.0 exactly when unanswerable."""
    gold = format_answer(question)
    value = grade(question, gold).value
    if value != 1.0:
        return f"{question.id}: gold {gold!r} grades {value}"
    value = grade(question, "not possible").value
    want = 0.0 if question.answerable else 1.0
    if value != want:
        return f"{question.id}: 'not possible' grades {value}, want {want}"
    return None


def check_repository(repo, questions) -> list[Finding]:
    served = Served(repo)
    return [f for q in questions for f in check_question(served, q)]


@dataclass
class SeedReport:
    """What checking one repository found."""

    seed: int
    questions: int
    kinds: dict[str, int]  # "type:reason or answerable" -> questions
    findings: list[Finding]  # everything but grading
    grading: list[Finding] | None  # None when isg_gym.rewards is not importable

    def of_kind(self, *kinds: str) -> list[Finding]:
        return [f for f in self.findings if f.kind in kinds]


def check_seed(seed: int, per_repo: int = 8) -> SeedReport:
    """Generate ``per_repo`` questions for repository ``seed`` and check every one."""
    from collections import Counter

    from isg_gym.qa import format_answer, generate_questions
    from isg_gym.repository import Repository

    repo = Repository.from_seed(seed)
    try:
        questions = generate_questions(repo, per_repo)
    except Exception as err:
        return SeedReport(seed, 0, {}, [Finding(f"{seed}", "-", "crash",
                                                f"seed {seed}: generation failed: {err!r}")], [])
    try:
        findings = check_repository(repo, questions)
    except CheckError as err:  # e.g. a served path that does not match the layout
        findings = [Finding(f"{seed}", "-", "crash", f"seed {seed}: {err}")]
    grading: list[Finding] | None
    try:
        from isg_gym.rewards import grade
    except ImportError:
        grading = None
    else:
        grading = []
        for q in questions:
            try:
                msg = check_grading(q, grade, format_answer)
            except Exception as err:
                msg = f"{q.id}: grading failed: {type(err).__name__}: {err}"
            if msg is not None:
                grading.append(Finding(q.id, q.type, "grading", msg))
    kinds = Counter(f"{q.type}:{q.reason or 'answerable'}" for q in questions)
    return SeedReport(seed, len(questions), dict(kinds), findings, grading)


def check_seeds(seeds: range | list[int], per_repo: int = 8, workers: int | None = None):
    """:func:`check_seed` over ``seeds``, in worker processes when several CPUs are there."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    workers = workers or min(len(os.sched_getaffinity(0)), 8)
    if workers <= 1:
        return [check_seed(s, per_repo) for s in seeds]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(partial(check_seed, per_repo=per_repo), seeds, chunksize=4))


def summary(reports: list[SeedReport]) -> str:
    """Questions checked, repositories, and failures by type and kind (a table)."""
    from collections import Counter

    questions = Counter()
    for r in reports:
        for key, n in r.kinds.items():
            questions[key.split(":")[0]] += n
    findings = [f for r in reports for f in [*r.findings, *(r.grading or [])]]
    failed = Counter((f.type, f.kind) for f in findings)
    failed_questions = len({f.qid for f in findings if f.kind != "robustness"})
    lines = [f"{sum(questions.values())} questions over {len(reports)} repositories; "
             f"{failed_questions} disagree (robustness aside), "
             f"{len({f.qid for f in findings if f.kind == 'robustness'})} break a robustness "
             "rule"]  # fmt: skip
    lines.append(f"{'type':<22}{'questions':>10}" + "".join(f"{k:>11}" for k in KINDS))
    for qtype in sorted(set(questions) | {t for t, _ in failed}):
        lines.append(f"{qtype:<22}{questions[qtype]:>10}"
                     + "".join(f"{failed[qtype, k]:>11}" for k in KINDS))  # fmt: skip
    return "\n".join(lines)


def _seeds(arg: str) -> range:
    """``40`` (seeds 0-39) or ``100-400`` (seeds 100-399)."""
    if re.fullmatch(r"\d+", arg):
        return range(int(arg))
    m = re.fullmatch(r"(\d+)-(\d+)", arg)
    if m is None or int(m.group(1)) >= int(m.group(2)):
        raise SystemExit(f"bad SEEDS {arg!r}: give a count (40) or a range START-STOP (0-60)")
    return range(int(m.group(1)), int(m.group(2)))


def main(argv: list[str]) -> int:
    """``python tests/checker.py [SEEDS] [PER_REPO] [KIND...]``: every failure, then the table
    (KIND limits the listing to some of: parse params answer reason robustness crash grading)."""
    import time

    seeds = _seeds(argv[1]) if len(argv) > 1 else range(40)
    per = int(argv[2]) if len(argv) > 2 else 8
    show = set(argv[3:]) or set(KINDS)
    if not show <= set(KINDS):
        raise SystemExit(f"unknown kinds {sorted(show - set(KINDS))}: choose from {KINDS}")
    start = time.perf_counter()
    reports = check_seeds(seeds, per)
    findings = [f for r in reports for f in [*r.findings, *(r.grading or [])]]
    print("\n".join(str(f) for f in findings if f.kind in show))
    print(summary(reports))
    print(f"{time.perf_counter() - start:.1f} s")
    return 1 if findings else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
