"""Independent ground-truth checker: recompute every question's answer from the served files.

Nothing here uses the question generators' machinery (``isg_gym.qa`` internals,
``Repository.table`` / ``path_values`` / ``index``). A checker sees what an agent sees: the file
listing (``Repository.files()``), the served bytes (``Repository.read_bytes``) parsed with pandas
(``conftest.read_served``), and the path template of the Spec, from which path-variable tokens are
parsed out of the path strings with a regular expression. Conditions and statistics are then
re-implemented with pandas and scipy.

:func:`recompute` returns a :class:`Recomputed`: the answer, or the set of unanswerability reasons
that apply (within a stage only the first that applies: e.g. zero rows is ``no_matching_rows``,
not also ``too_few_rows``). :func:`check_question` compares it with the question's gold.

Run ``python tests/checker.py [SEEDS] [PER_REPO]`` for a quick report while developing.
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

README = "README.md"
GENERIC_TITLE = "Data repository"
NUMERIC_STATISTICS = ("min", "max", "median", "mean", "std", "var")
STYLE_PREFIX = {"{name}={val}": "{s}=", "{name}_{val}": "{s}_", "{name}-{val}": "{s}-",
                "{name}{val}": "{s}", "{val}": ""}  # fmt: skip
REL_TOL = 1e-9


@dataclass
class Recomputed:
    """The recomputed answer, or the unanswerability reasons that apply (non-empty)."""

    answer: Any = None
    reasons: set[str] = field(default_factory=set)
    note: str = ""

    @property
    def answerable(self) -> bool:
        return not self.reasons


def unanswerable(*reasons: str, note: str = "") -> Recomputed:
    return Recomputed(reasons=set(reasons), note=note)


class CheckError(Exception):
    """The question cannot be checked as stated (bad params, contract violation)."""


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
            raise CheckError(f"unknown path variable {cond['variable']!r}")
        present = self.values[cond["variable"]]
        if cond["op"] == "is":
            return cond["value"] not in present
        if cond["op"] == "is_one_of":
            return not any(v in present for v in cond["value"])
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


# --- recomputation per type --------------------------------------------------------------------


def _has_readme(s: Served, p: dict[str, Any]) -> Recomputed:
    return Recomputed(README in s.file_set)


def _title(s: Served, p: dict[str, Any]) -> Recomputed:
    text = s.readme()
    if text is None:
        return unanswerable("readme_missing")
    first = next((ln for ln in text.splitlines() if ln.startswith("# ")), None)
    if first is None or first[2:].strip() == GENERIC_TITLE:
        return unanswerable("readme_missing_title")
    return Recomputed(first[2:].strip())


def _abstract(s: Served, p: dict[str, Any]) -> Recomputed:
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


def _file_extension(s: Served, p: dict[str, Any]) -> Recomputed:
    exts = {f.rsplit(".", 1)[-1] for f in s.data_files}
    if len(exts) != 1:
        raise CheckError(f"data files with several extensions {sorted(exts)}")
    return Recomputed(exts.pop())


def _count_prefix(s: Served, p: dict[str, Any]) -> Recomputed:
    n = sum(f.startswith(p["prefix"]) for f in s.data_files)
    return Recomputed(n) if n else unanswerable("no_such_path_value")


def _count_files(s: Served, p: dict[str, Any]) -> Recomputed:
    conds = list(p["path_conditions"])
    if any(s.absent_value(c) for c in conds):
        return unanswerable("no_such_path_value")
    return Recomputed(len(s.matching(conds)))


def _count_rows(s: Served, p: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope({"scope": "file", "file": p["file"]})
    return unanswerable(*reasons) if reasons else Recomputed(len(s.frame(files[0])))


def _count_missing(s: Served, p: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope({"scope": "file", "file": p["file"]})
    if reasons:
        return unanswerable(*reasons)
    df = s.frame(files[0])
    if p["column"] not in df.columns:
        return unanswerable("unrecorded_variable")
    return Recomputed(int(df[p["column"]].isna().sum()))


def _mode(values: pd.Series) -> str:
    counts = values.astype(str).value_counts()
    top = counts.max()
    return min(str(k) for k, n in counts.items() if n == top)


def _univariate(s: Served, p: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope(p)
    if reasons:
        return unanswerable(*reasons)
    col, stat = p["column"], p["statistic"]
    if not s.has_column(files, col):
        return unanswerable("unrecorded_variable")
    df = s.gather(files, [col, *_filter_columns(p)])
    numeric = s.is_numeric(files, col)
    values = df[col][row_mask(df, p.get("row_conditions", []))].dropna()
    reasons = set()
    if stat in NUMERIC_STATISTICS and not numeric:
        reasons.add("categorical_column")
    if stat == "mode" and numeric:
        raise CheckError(f"mode of the numeric column {col!r}")
    if values.empty:
        reasons.add("no_matching_rows")
    elif stat in ("std", "var") and len(values) < 2:
        reasons.add("too_few_rows")
    if reasons:
        return unanswerable(*reasons, note=f"n={len(values)}")
    match stat:
        case "mode":
            return Recomputed(_mode(values))
        case "n_distinct":
            return Recomputed(int(values.nunique()))
    x = values.astype(float)
    fn: dict[str, Callable[[], float]] = {
        "min": x.min, "max": x.max, "median": x.median, "mean": x.mean,
        "std": lambda: x.std(ddof=1), "var": lambda: x.var(ddof=1),
    }  # fmt: skip
    if stat not in fn:
        raise CheckError(f"unknown statistic {stat!r}")
    return Recomputed(float(fn[stat]()), note=f"n={len(x)}")


def _pairs(s: Served, p: dict[str, Any], x: str, y: str) -> tuple[list[str], Any]:
    """Scope files and the complete (x, y) pairs after the row conditions, or a Recomputed."""
    files, reasons = s.scope(p)
    if reasons:
        return files, unanswerable(*reasons)
    if not (s.has_column(files, x) and s.has_column(files, y)):
        return files, unanswerable("unrecorded_variable")
    df = s.gather(files, [x, y, *_filter_columns(p)])
    sub = df[row_mask(df, p.get("row_conditions", []))]
    return files, sub[[x, y]].dropna()


def _correlation_reasons(s: Served, files, pairs, x, y, test: str) -> set[str]:
    reasons: set[str] = set()
    numeric = [s.is_numeric(files, c) for c in (x, y)]
    if test == "chi_square":
        if any(numeric):
            raise CheckError(f"chi-square of a numeric column ({x!r}, {y!r})")
    elif not all(numeric):
        reasons.add("categorical_column")
    if len(pairs) == 0:
        reasons.add("no_matching_rows")
    elif len(pairs) < 3:
        reasons.add("too_few_rows")
    elif pairs[x].nunique() < 2 or pairs[y].nunique() < 2:
        reasons.add("constant_column")
    return reasons


def _pair_statistic(pairs: pd.DataFrame, x: str, y: str, stat: str, correction: Any):
    """(statistic, p-value) of the complete pairs."""
    if stat == "chi_square":
        if correction is None:
            raise CheckError("chi_square without a 'correction' param")
        res = stats.chi2_contingency(pd.crosstab(pairs[x], pairs[y]), correction=bool(correction))
        return float(res.statistic), float(res.pvalue)
    a, b = pairs[x].to_numpy(dtype=float), pairs[y].to_numpy(dtype=float)
    match stat:
        case "pearson":
            res = stats.pearsonr(a, b)
        case "spearman":
            res = stats.spearmanr(a, b)
        case "ols_slope":
            res = stats.linregress(a, b)
            return float(res.slope), float(res.pvalue)
        case _:
            raise CheckError(f"unknown statistic {stat!r}")
    return float(res.statistic), float(res.pvalue)


def _bivariate(s: Served, p: dict[str, Any]) -> Recomputed:
    x, y, stat = p["x"], p["y"], p["statistic"]
    files, pairs = _pairs(s, p, x, y)
    if isinstance(pairs, Recomputed):
        return pairs
    reasons = _correlation_reasons(s, files, pairs, x, y, stat)
    if reasons:
        return unanswerable(*reasons, note=f"n={len(pairs)}")
    value, _ = _pair_statistic(pairs, x, y, stat, p.get("correction"))
    return Recomputed(value, note=f"n={len(pairs)}")


def _welch(s: Served, p: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope(p)
    if reasons:
        return unanswerable(*reasons)
    col, group = p["column"], p["group_column"]
    if not (s.has_column(files, col) and s.has_column(files, group)):
        return unanswerable("unrecorded_variable")
    if s.is_numeric(files, group):
        raise CheckError(f"welch_t grouped by the numeric column {group!r}")
    df = s.gather(files, [col, group, *_filter_columns(p)])
    sub = df[row_mask(df, p.get("row_conditions", []))]
    sub = sub[sub[col].notna() & sub[group].notna()]
    a = sub[col][sub[group] == p["group_a"]].astype(float)
    b = sub[col][sub[group] == p["group_b"]].astype(float)
    note = f"n_a={len(a)} n_b={len(b)}"
    reasons = set() if s.is_numeric(files, col) else {"categorical_column"}
    if len(a) + len(b) == 0:
        reasons.add("no_matching_rows")
    elif min(len(a), len(b)) < 2:
        reasons.add("too_few_rows")
    elif a.nunique() < 2 and b.nunique() < 2:
        reasons.add("constant_column")
    if reasons:
        return unanswerable(*reasons, note=note)
    pvalue = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
    if not math.isfinite(pvalue):
        raise CheckError(f"welch_t p-value {pvalue}")
    return Recomputed(pvalue < p["alpha"], note=f"{note} p={pvalue:.6g}")


def _hypothesis(s: Served, p: dict[str, Any]) -> Recomputed:
    test = p["test"]
    if test == "welch_t":
        return _welch(s, p)
    if test not in ("pearson", "spearman", "chi_square"):
        raise CheckError(f"unknown test {test!r}")
    x, y = p["x"], p["y"]
    files, pairs = _pairs(s, p, x, y)
    if isinstance(pairs, Recomputed):
        return pairs
    reasons = _correlation_reasons(s, files, pairs, x, y, test)
    if reasons:
        return unanswerable(*reasons, note=f"n={len(pairs)}")
    _, pvalue = _pair_statistic(pairs, x, y, test, p.get("correction"))
    if not math.isfinite(pvalue):
        raise CheckError(f"{test} p-value {pvalue}")
    return Recomputed(pvalue < p["alpha"], note=f"n={len(pairs)} p={pvalue:.6g}")


def _group_comparison(s: Served, p: dict[str, Any]) -> Recomputed:
    files, reasons = s.scope(p)
    if reasons:
        return unanswerable(*reasons)
    col, by, kind = p["column"], p["group_by"], p["group_kind"]
    if not s.has_column(files, col):
        return unanswerable("unrecorded_variable")
    if kind == "path":
        if by not in s.values:
            raise CheckError(f"unknown path variable {by!r}")
        df = s.gather(files, [col, *_filter_columns(p)], path_group=by)
        key = "__group__"
    elif kind == "column":
        if not s.has_column(files, by):
            return unanswerable("unrecorded_variable")
        df = s.gather(files, [col, by, *_filter_columns(p)])
        key = by
    else:
        raise CheckError(f"bad group_kind {kind!r}")
    sub = df[row_mask(df, p.get("row_conditions", []))]
    sub = sub[sub[col].notna() & sub[key].notna()]
    reasons = set() if s.is_numeric(files, col) else {"categorical_column"}
    if sub.empty:
        reasons.add("no_matching_rows")
    if reasons:
        return unanswerable(*reasons)
    means = sub.groupby(key)[col].mean().sort_values(ascending=p["direction"] == "lowest")
    note = "means " + ", ".join(f"{k}={v:.6g}" for k, v in means.items())
    if len(means) >= 2 and math.isclose(means.iloc[0], means.iloc[1], rel_tol=REL_TOL):
        return unanswerable("<no unique winner>", note=note)
    return Recomputed(str(means.index[0]), note=note)


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


def recompute(served: Served, question) -> Recomputed:
    if question.type not in RECOMPUTE:
        raise CheckError(f"unknown question type {question.type!r}: teach the checker about it")
    return RECOMPUTE[question.type](served, question.params)


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


def check_question(served: Served, question) -> str | None:
    """None when the gold agrees with the recomputation, else a one-line description."""
    q = question
    head = f"{q.id} [{'answerable' if q.answerable else 'reason ' + str(q.reason)}] {q.params}"
    try:
        got = recompute(served, q)
    except CheckError as err:
        return f"{head}: cannot check: {err}"
    except Exception as err:  # a crash of the recomputation is a disagreement too
        return f"{head}: recomputation failed: {type(err).__name__}: {err}"
    bad_evidence = [f for f in q.evidence if f not in served.file_set]
    if bad_evidence:
        return f"{head}: evidence lists files that are not served: {bad_evidence[:3]}"
    if q.answerable:
        if not got.answerable:
            found = f"unanswerable {sorted(got.reasons)} {got.note}"
            return f"{head}: expected {q.answer!r}, recomputed {found}"
        want_type = ANSWER_TYPES.get(q.answer_kind)
        if (
            want_type is None
            or not isinstance(q.answer, want_type)
            or (want_type is int and isinstance(q.answer, bool))
        ):
            return f"{head}: answer {q.answer!r} is not of kind {q.answer_kind}"
        if q.answer_kind == "float" and not (q.sig_figs and 1 <= q.sig_figs <= 10):
            return f"{head}: float answer without sensible sig_figs ({q.sig_figs})"
        if not same_value(q.answer_kind, q.answer, got.answer, q.sig_figs):
            return f"{head}: expected {q.answer!r}, recomputed {got.answer!r} {got.note}"
        return None
    if q.answer is not None:
        return f"{head}: unanswerable but carries answer {q.answer!r}"
    if got.answerable:
        found = f"answer {got.answer!r} {got.note}"
        return f"{head}: stated unanswerable ({q.reason}), recomputed {found}"
    if q.reason not in got.reasons:
        found = f"reasons {sorted(got.reasons)} {got.note}"
        return f"{head}: stated reason {q.reason}, recomputed {found}"
    return None


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


def check_repository(repo, questions) -> list[str]:
    served = Served(repo)
    return [msg for q in questions if (msg := check_question(served, q)) is not None]


@dataclass
class SeedReport:
    """What checking one repository found."""

    seed: int
    questions: int
    kinds: dict[str, int]
    failures: list[str]
    grading: list[str] | None  # None when isg_gym.rewards is not importable


def check_seed(seed: int, per_repo: int = 8) -> SeedReport:
    """Generate ``per_repo`` questions for repository ``seed`` and check every one."""
    from collections import Counter

    from isg_gym.qa import format_answer, generate_questions
    from isg_gym.repository import Repository

    repo = Repository.from_seed(seed)
    try:
        questions = generate_questions(repo, per_repo)
    except Exception as err:
        return SeedReport(seed, 0, {}, [f"seed {seed}: generation failed: {err!r}"], [])
    try:
        failures = check_repository(repo, questions)
    except CheckError as err:  # e.g. a served path that does not match the layout
        failures = [f"seed {seed}: {err}"]
    grading: list[str] | None
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
                grading.append(msg)
    kinds = Counter(f"{q.type}:{q.reason or 'answerable'}" for q in questions)
    return SeedReport(seed, len(questions), dict(kinds), failures, grading)


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


def main(argv: list[str]) -> int:
    import time
    from collections import Counter

    seeds = int(argv[1]) if len(argv) > 1 else 40
    per = int(argv[2]) if len(argv) > 2 else 8
    start = time.perf_counter()
    reports = check_seeds(range(seeds), per)
    failures = [m for r in reports for m in r.failures]
    grading = [m for r in reports for m in (r.grading or [])]
    kinds: Counter[str] = Counter()
    for r in reports:
        kinds.update(r.kinds)
    print("\n".join(failures + grading))
    print(f"{sum(r.questions for r in reports)} questions, {len(failures)} disagreements, "
          f"{len(grading)} grading failures, {time.perf_counter() - start:.1f} s")  # fmt: skip
    print(dict(sorted(kinds.items())))
    return 1 if failures or grading else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
