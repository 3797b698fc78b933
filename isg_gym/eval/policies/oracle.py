"""The scripted oracle: answers every question type through the env's tools only.

It is a *privileged* policy: the reset info tells it WHAT to compute (the question's type, its
structured ``params``: columns, statistic, path and row conditions, and its significant
figures). The answer itself is computed through the tools, like an agent would:
``list_directory`` / ``read_text_file`` for the README questions, and ``run_python_code`` with
pandas / scipy code (the ``sb_*`` functions below, sent to the sandbox as source text, never run
here) that reads the files at ``/data``. Two actions per episode: the tool call, then
``final_answer``; "not possible" is answered only when the oracle's own computation shows the
question cannot be answered. The gold answer and answerability in the info are never read.
"""

from __future__ import annotations

import ast
import inspect
import json
import math
import os
import re
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from isg_gym.eval.policy import EpisodeState, PerEpisodePolicy, Turn, calls_message
from isg_gym.numbers import format_sig
from isg_gym.simulator.procedural import build_spec
from isg_gym.syntax import parse

if TYPE_CHECKING:  # only the sb_* functions use it, in the sandbox, whose cells import it
    from scipy import stats

# --- code that runs in the sandbox (sent as source; cwd is the repository at /data) ----------


def sb_data_files() -> list[str]:
    """Every data file's path relative to the repository root (README.md excluded)."""
    out = []
    for root, _, names in os.walk("."):
        for name in names:
            out.append(os.path.relpath(os.path.join(root, name), "."))
    return sorted(f for f in out if f != "README.md")


def sb_read_log(path: str) -> pd.DataFrame:
    """``name=value`` fields joined by `` | ``, one record per line, missing ``NA``."""
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh.read().splitlines() if ln]
    df = pd.DataFrame([dict(f.split("=", 1) for f in ln.split(" | ")) for ln in lines])
    df = df.replace("NA", np.nan)
    for col in df.columns:
        as_num = pd.to_numeric(df[col], errors="coerce")
        if as_num.notna().sum() == df[col].notna().sum():
            df[col] = as_num
    return df


def sb_read(path: str) -> pd.DataFrame:
    """One data file as a DataFrame, by extension (timestamps kept as their text)."""
    ext = path.rsplit(".", 1)[-1]
    if ext == "csv":
        df = pd.read_csv(path)
    elif ext == "txt":
        df = pd.read_csv(path, sep="\t")
    elif ext in ("json", "jsonl"):
        df = pd.read_json(path, lines=ext == "jsonl", precise_float=True)
    elif ext == "xlsx":
        df = pd.read_excel(path)
    elif ext == "log":
        df = sb_read_log(path)
    else:
        raise ValueError(f"unknown file format {ext!r}")
    for col in df.columns:
        if pd.api.types.is_datetime64_any_dtype(df[col]):
            df[col] = df[col].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return df


def sb_tokens(files: list[str], layout: list[Any]) -> dict[str, dict[str, str]]:
    """Each file's path-variable tokens, parsed with the layout's regex."""
    pattern, names = re.compile(layout[0]), layout[1]
    out = {}
    for f in files:
        m = pattern.match(f)
        if m is None:
            raise ValueError(f"path {f!r} does not match the layout {layout[0]}")
        out[f] = {names[g]: v for g, v in m.groupdict().items()}
    return out


def sb_path_ok(token: str, cond: dict[str, Any]) -> bool:
    op, value = cond["op"], cond["value"]
    if op == "is":
        return token == value
    if op == "is_one_of":
        return token in value
    x = float(token)
    return {"gt": x > value, "lt": x < value, "ge": x >= value, "le": x <= value}[op]


def sb_scope(p: dict[str, Any], layout: list[Any]) -> tuple[list[str], str | None]:
    """The files a question ranges over, or why there are none."""
    files = sb_data_files()
    if p.get("scope") == "file" or "path_conditions" not in p:
        return ([p["file"]], None) if p["file"] in files else ([], "no_such_file")
    tokens = sb_tokens(files, layout)
    conds = p["path_conditions"]
    for c in conds:
        present = {t[c["variable"]] for t in tokens.values()}
        wanted = [c["value"]] if c["op"] == "is" else c["value"]
        if c["op"] in ("is", "is_one_of") and not present.intersection(wanted):
            return [], "no_such_path_value"
    chosen = [f for f in files if all(sb_path_ok(tokens[f][c["variable"]], c) for c in conds)]
    return chosen, None if chosen else "no_matching_files"


def sb_gather(frames: list[pd.DataFrame], columns: list[str]) -> Any:
    """(rows of ``columns`` over the frames, {column: is numeric}), or None if one is absent."""
    if any(col not in df.columns for df in frames for col in columns):
        return None
    out, numeric = {}, {}
    for col in dict.fromkeys(columns):
        parts = [df[col] for df in frames]
        numeric[col] = all(
            pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
            for s in parts
            if s.notna().any()
        )
        if numeric[col]:
            out[col] = np.concatenate([s.to_numpy(dtype=float, na_value=np.nan) for s in parts])
        else:
            out[col] = np.concatenate(
                [s.astype(object).where(s.notna(), None).to_numpy() for s in parts]
            )
    return pd.DataFrame(out), numeric


def sb_rows(df: pd.DataFrame, conds: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows meeting every row condition (a missing value meets none)."""
    keep = pd.Series(True, index=df.index)
    for c in conds:
        s, op, v = df[c["column"]], c["op"], c["value"]
        if op == "eq":
            hit = s == v
        elif op == "ne":
            hit = s != v
        elif op == "in":
            hit = s.isin(list(v))
        elif op == "between":
            hit = (s >= v) & (s <= c["high"])
        else:
            hit = {"gt": s.gt, "lt": s.lt, "ge": s.ge, "le": s.le}[op](v)
        keep &= hit.fillna(False).astype(bool) & s.notna()
    return df[keep]


def sb_load(p: dict[str, Any], layout: list[Any], columns: list[str], group_var: Any = None):
    """(filtered rows of ``columns`` + row-condition columns, is-numeric map) or (None, why)."""
    files, why = sb_scope(p, layout)
    if why:
        return None, why
    conds = p.get("row_conditions", [])
    frames = [sb_read(f) for f in files]
    got = sb_gather(frames, [*columns, *(c["column"] for c in conds)])
    if got is None:
        return None, "unrecorded_variable"
    df, numeric = got
    if group_var is not None:
        tokens = sb_tokens(files, layout)
        groups = [
            np.full(len(fr), tokens[f][group_var], dtype=object)
            for f, fr in zip(files, frames, strict=True)
        ]
        df["__group__"] = np.concatenate(groups)
    return sb_rows(df, conds), numeric


def sb_univariate(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    col, stat = p["column"], p["statistic"]
    df, numeric = sb_load(p, layout, [col])
    if df is None:
        return {"na": numeric}
    values = df[col].dropna()
    if stat not in ("mode", "n_distinct") and not numeric[col]:
        return {"na": "categorical_column"}
    if values.empty:
        return {"na": "no_matching_rows"}
    if stat in ("std", "var") and len(values) < 2:
        return {"na": "too_few_rows", "n": len(values)}
    if stat == "mode":
        counts = values.astype(str).value_counts()
        return {"answer": min(k for k, n in counts.items() if n == counts.max())}
    if stat == "n_distinct":
        return {"answer": int(values.nunique())}
    x = values.astype(float)
    result = {"min": x.min(), "max": x.max(), "median": x.median(), "mean": x.mean(),
              "std": x.std(ddof=1), "var": x.var(ddof=1)}[stat]  # fmt: skip
    return {"answer": float(result), "n": len(x)}


def sb_pair_test(p: dict[str, Any], layout: list[Any], stat: str) -> dict[str, Any]:
    """Statistic and p-value of x and y over the complete pairs, or why there are none."""
    x, y = p["x"], p["y"]
    df, numeric = sb_load(p, layout, [x, y])
    if df is None:
        return {"na": numeric}
    pairs = df[[x, y]].dropna()
    if stat == "chi_square" and (numeric[x] or numeric[y]):
        return {"na": "numeric column in a chi-square test"}
    if stat != "chi_square" and not (numeric[x] and numeric[y]):
        return {"na": "categorical_column"}
    if pairs.empty:
        return {"na": "no_matching_rows"}
    if len(pairs) < 3:
        return {"na": "too_few_rows", "n": len(pairs)}
    if pairs[x].nunique() < 2 or pairs[y].nunique() < 2:
        return {"na": "constant_column", "n": len(pairs)}
    if stat == "chi_square":
        res = stats.chi2_contingency(pd.crosstab(pairs[x], pairs[y]), correction=p["correction"])
        value, pvalue = res.statistic, res.pvalue
    else:
        a, b = pairs[x].to_numpy(dtype=float), pairs[y].to_numpy(dtype=float)
        if stat == "ols_slope":
            res = stats.linregress(a, b)
            value, pvalue = res.slope, res.pvalue
        else:
            res = (stats.pearsonr if stat == "pearson" else stats.spearmanr)(a, b)
            value, pvalue = res.statistic, res.pvalue
    return {"answer": float(value), "p": float(pvalue), "n": len(pairs)}


def sb_bivariate(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    out = sb_pair_test(p, layout, p["statistic"])
    if "answer" in out and not math.isfinite(out["answer"]):
        return {"na": "non-finite statistic", **out}
    return out


def sb_welch(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    col, group = p["column"], p["group_column"]
    df, numeric = sb_load(p, layout, [col, group])
    if df is None:
        return {"na": numeric}
    if not numeric[col]:
        return {"na": "categorical_column"}
    df = df[df[col].notna() & df[group].notna()]
    a = df[col][df[group] == p["group_a"]].astype(float)
    b = df[col][df[group] == p["group_b"]].astype(float)
    if len(a) + len(b) == 0:
        return {"na": "no_matching_rows"}
    if min(len(a), len(b)) < 2:
        return {"na": "too_few_rows", "n": [len(a), len(b)]}
    if a.nunique() < 2 and b.nunique() < 2:
        return {"na": "constant_column"}
    pvalue = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
    return {"p": pvalue, "n": [len(a), len(b)]}


def sb_hypothesis(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    out = sb_welch(p, layout) if p["test"] == "welch_t" else sb_pair_test(p, layout, p["test"])
    if "na" in out:
        return out
    if not math.isfinite(out["p"]):
        return {"na": "non-finite p-value", **out}
    return {**out, "statistic": out.get("answer"), "answer": out["p"] < p["alpha"]}


def sb_group_comparison(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    col, by = p["column"], p["group_by"]
    if p["group_kind"] == "path":
        df, numeric = sb_load(p, layout, [col], group_var=by)
        key = "__group__"
    else:
        df, numeric = sb_load(p, layout, [col, by])
        key = by
    if df is None:
        return {"na": numeric}
    if not numeric[col]:
        return {"na": "categorical_column"}
    df = df[df[col].notna() & df[key].notna()]
    if df.empty:
        return {"na": "no_matching_rows"}
    means = df.groupby(key)[col].mean().sort_values(ascending=p["direction"] == "lowest")
    shown = {str(k): float(v) for k, v in means.items()}
    if len(means) >= 2 and math.isclose(means.iloc[0], means.iloc[1], rel_tol=1e-9):
        return {"na": "no unique winner", "means": shown}
    return {"answer": str(means.index[0]), "means": shown}


def sb_under(directory: str) -> list[str] | None:
    """The data files under ``directory`` ('' is the root), or None if it does not exist."""
    if directory and not os.path.isdir(directory):
        return None
    return [f for f in sb_data_files() if not directory or f.startswith(directory + "/")]


def sb_has_readme(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    directory = p["directory"] or "."
    if not os.path.isdir(directory):
        return {"na": "no_such_path_value"}
    return {"answer": p["entry"] in os.listdir(directory)}


def sb_file_extension(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    files = sb_under(p["directory"])
    if files is None:
        return {"na": "no_such_path_value"}
    exts = sorted({f.rsplit(".", 1)[-1] for f in files})
    return {"answer": exts[0]} if len(exts) == 1 else {"na": f"several extensions {exts}"}


def sb_count_prefix(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    directory = p["prefix"].rpartition("/")[0]
    if directory and not os.path.isdir(directory):
        return {"na": "no_such_path_value"}
    return {"answer": sum(f.startswith(p["prefix"]) for f in sb_data_files())}


def sb_count_files(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    if any(c.get("variable") is None for c in p["path_conditions"]):
        return {"na": "unrecorded_variable"}
    return {"answer": len(sb_scope({"scope": "files", **p}, layout)[0])}


def sb_count_rows(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    files, why = sb_scope({"scope": "file", **p}, layout)
    return {"na": why} if why else {"answer": len(sb_read(files[0]))}


def sb_count_missing(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    files, why = sb_scope({"scope": "file", **p}, layout)
    if why:
        return {"na": why}
    df = sb_read(files[0])
    if p["column"] not in df.columns:
        return {"na": "unrecorded_variable"}
    return {"answer": int(df[p["column"]].isna().sum())}


def sb_effect_direction(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    """The sign of Spearman's rank correlation of a column or path variable with an outcome
    over every file, as "increases" / "decreases"."""
    factor, outcome = p["factor"], p["outcome"]
    is_path = factor in layout[1].values()
    scope = {"scope": "files", "path_conditions": []}
    df, numeric = sb_load(scope, layout, [outcome] if is_path else [outcome, factor],
                          group_var=factor if is_path else None)  # fmt: skip
    if df is None:
        return {"na": numeric}
    x = pd.to_numeric(df["__group__"]) if is_path else df[factor]
    pairs = pd.DataFrame({"x": x, "y": df[outcome]}).dropna()
    res = stats.spearmanr(pairs["x"].astype(float), pairs["y"].astype(float))
    return {"answer": "increases" if res.statistic > 0 else "decreases", "p": float(res.pvalue)}


SANDBOX_HEADER = (
    "import json, math, os, re\nimport numpy as np\nimport pandas as pd\nfrom scipy import stats\n"
)
SANDBOX_HELPERS = (sb_data_files, sb_read_log, sb_read, sb_tokens, sb_path_ok, sb_scope, sb_gather,
                   sb_rows, sb_load, sb_pair_test, sb_welch, sb_under)  # fmt: skip
SANDBOX_SOLVERS = {
    "univariate_statistic": sb_univariate,
    "bivariate_statistic": sb_bivariate,
    "hypothesis_test": sb_hypothesis,
    "group_comparison": sb_group_comparison,
    "has_readme": sb_has_readme,
    "file_extension": sb_file_extension,
    "count_prefix": sb_count_prefix,
    "count_files": sb_count_files,
    "count_rows": sb_count_rows,
    "count_missing": sb_count_missing,
    "effect_direction": sb_effect_direction,  # opt-in type
}
_SANDBOX_FUNCTIONS = {fn.__name__: fn for fn in (*SANDBOX_HELPERS, *SANDBOX_SOLVERS.values())}


def _uses(name: str) -> list[str]:
    """The ``sb_*`` functions that ``name`` calls, directly or not, and itself, in source order."""
    needed, todo = {name}, [name]
    while todo:
        tree = parse(textwrap.dedent(inspect.getsource(_SANDBOX_FUNCTIONS[todo.pop()])))
        for node in ast.walk(tree):
            called = node.id if isinstance(node, ast.Name) else None
            if called in _SANDBOX_FUNCTIONS and called not in needed:
                needed.add(called)
                todo.append(called)
    return [n for n in _SANDBOX_FUNCTIONS if n in needed]


# per question type: the header and only the functions its solver needs (a smaller cell)
SOLVER_SOURCES = {
    qtype: SANDBOX_HEADER
    + "\n\n".join(inspect.getsource(_SANDBOX_FUNCTIONS[n]) for n in _uses(fn.__name__))
    for qtype, fn in SANDBOX_SOLVERS.items()
}
RESULT_MARK = "@@RESULT@@"

# --- the repository layout (what the README documents) --------------------------------------


def layout_regex(spec: Any) -> tuple[str, dict[str, str]]:
    """A regex over data-file paths with one named group per path variable (the template the
    README's Layout section documents), and the group -> variable-name map."""
    layout = spec.layout
    by_key = {v.key: (j, v) for j, v in enumerate(spec.path_variables)}
    date = re.escape(layout.date_format)
    for code, digits in (("%Y", 4), ("%m", 2), ("%d", 2)):
        date = date.replace(code, rf"\d{{{digits}}}")

    def token(key: str) -> str:
        j, var = by_key[key]
        value = {"date": date, "sequence": r"\d+"}.get(var.kind, r"[A-Za-z0-9.]+")
        return layout.style.format(name=re.escape(var.short), val=f"(?P<g{j}>{value})")

    parts = [re.escape(joiner).join(token(k) for k in keys)
             for keys, joiner in [*zip(layout.levels, layout.level_joiners, strict=True),
                                  (layout.filename, layout.filename_joiner)]]  # fmt: skip
    pattern = "^" + "/".join(parts) + r"\." + re.escape(spec.file_format) + "$"
    return pattern, {f"g{j}": v.name for j, v in enumerate(spec.path_variables)}


@lru_cache(maxsize=256)
def repository_layout(seed: int) -> tuple[str, dict[str, str]]:
    """The path regex and group map of repository ``seed`` (cached)."""
    return layout_regex(build_spec(seed))


# --- the policy ------------------------------------------------------------------------------

ABSTAIN = "not possible"
GENERIC_TITLE = "Data repository"
README_TYPES = ("title", "abstract")


@dataclass
class Task:
    """What to compute: the question's type, params, significant figures and path layout."""

    question_id: str
    type: str
    params: dict[str, Any]
    sig_figs: int | None
    layout: tuple[str, dict[str, str]]

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> Task:
        """The task of a reset info (needs ``privileged_info=True``)."""
        missing = [k for k in ("type", "params", "sig_figs", "repository") if k not in info]
        if missing:
            raise ValueError(f"the oracle needs privileged reset info; missing {missing}")
        return cls(info["question_id"], info["type"], info["params"], info["sig_figs"],
                   repository_layout(int(info["repository"])))  # fmt: skip


def solver_code(task: Task) -> str:
    """The sandbox program that prints the type's result as one marked JSON line."""
    solver = SANDBOX_SOLVERS[task.type].__name__
    return (
        f"{SOLVER_SOURCES[task.type]}\n\nPARAMS = json.loads({json.dumps(task.params)!r})\n"
        f"LAYOUT = json.loads({json.dumps(list(task.layout))!r})\n"
        f"print({RESULT_MARK!r} + json.dumps({solver}(PARAMS, LAYOUT)))\n"
    )


def first_call(task: Task) -> dict[str, Any]:
    """The one tool call that gathers what the answer needs."""
    if task.type in README_TYPES:
        return {"name": "read_text_file", "arguments": {"path": "/README.md"}}
    if task.type not in SANDBOX_SOLVERS:
        raise ValueError(f"the oracle has no solver for question type {task.type!r}")
    return {"name": "run_python_code", "arguments": {"code": solver_code(task)}}


def answer_from(task: Task, observation: str) -> str:
    """The final answer, from the first call's observation."""
    if task.type in README_TYPES:
        return readme_answer(task.type, observation)
    result = None
    for line in observation.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK) :])
            break
    if result is None or "na" in result:
        return ABSTAIN
    return format_value(task, result["answer"])


def readme_answer(what: str, observation: str) -> str:
    """The README's title or abstract, or "not possible" (no README, generic title, none)."""
    head, _, body = observation.partition("\n")
    if head != "[read_text_file]":  # an error: no README
        return ABSTAIN
    lines = body.splitlines()
    if what == "title":
        title = next((ln[2:].strip() for ln in lines if ln.startswith("# ")), None)
        return ABSTAIN if title in (None, GENERIC_TITLE) else title
    if "## Abstract" not in lines:
        return ABSTAIN
    section = []
    for ln in lines[lines.index("## Abstract") + 1 :]:
        if ln.startswith(("# ", "## ", "[")):
            break
        section.append(ln)
    return "\n".join(section).strip() or ABSTAIN


def format_value(task: Task, value: Any) -> str:
    """A computed value as answer text (booleans yes/no, floats at the question's sig figs)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_sig(value, task.sig_figs or 4)
    return str(value)


class OraclePolicy(PerEpisodePolicy):
    """Scores 100%: one tool call to compute the answer, then ``final_answer``.

    Per-episode state lives in ``episode.memory["oracle"]``.
    """

    name = "scripted-oracle"
    model = "scripted-oracle"
    privileged = True

    def _turn(self, episode: EpisodeState) -> Turn:
        state = episode.memory.setdefault("oracle", {})
        try:
            if "task" not in state:
                state["task"] = Task.from_info(episode.info)
                call = first_call(state["task"])
            else:
                observation = _last_output(episode)
                answer = answer_from(state["task"], observation)
                call = {"name": "final_answer", "arguments": {"answer": answer}}
        except (ValueError, KeyError) as exc:
            return Turn(error=f"oracle: {exc}", error_kind="policy")
        message = calls_message([call], len(episode.steps) + 1)
        episode.messages.append(message)
        return Turn(action=message["tool_calls"])


def _last_output(episode: EpisodeState) -> str:
    """The output of the last step's first tool call (the step's observation otherwise)."""
    if episode.steps and episode.steps[-1].tool_results:
        return str(episode.steps[-1].tool_results[0].get("output", ""))
    return episode.observation
