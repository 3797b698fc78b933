"""A scripted oracle agent for ISG-v0: answers every question type through the tools only.

The env is made with ``privileged_info=True`` only to learn WHAT to compute: the question's type,
its structured ``params`` (columns, statistic, path and row conditions) and its significant
figures. The answer itself is computed through the env's tools, like an agent would:
``list_directory`` / ``read_text_file`` for the README questions, and ``run_python_code`` with
pandas / scipy code (the ``sb_*`` functions below, sent as source) that reads the files at
``/data`` in the sandbox. The result is submitted with ``final_answer``; "not possible" is
answered only when the oracle's own computation shows the question cannot be answered.

The gold answer and the answerability in ``info`` are never read to answer; the test reads them
afterwards to explain a failure.

    python examples/oracle_agent.py --episodes 200
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from isg_gym.envs.env import ISGEnv
from isg_gym.numbers import format_sig
from isg_gym.simulator.procedural import build_spec


@dataclass
class Args:
    episodes: int = 200
    """number of episodes to play"""
    start_repository: int = 0
    """first repository seed"""
    per_repository: int = 5
    """episodes pinned to each repository before moving to the next seed"""
    seed: int = 1
    """seed of the env's random stream (episode i is reset with seed + i)"""
    unanswerable_ratio: float = 0.25
    """share of unanswerable question slots"""
    sandbox: str = "bwrap"
    """sandbox backend of run_python_code ("bwrap" or "none")"""
    cpu_seconds: int = 20
    """CPU limit of one run_python_code call"""
    wall_seconds: float = 30.0
    """wall-clock limit of one run_python_code call"""
    verbose: bool = False
    """print every episode"""


def parse_args(argv: list[str] | None = None) -> Args:
    """Command-line flags generated from the fields of :class:`Args`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = {"int": int, "float": float, "str": str}[str(f.type)]
            parser.add_argument(flag, type=kind, default=f.default)
    return Args(**vars(parser.parse_args(argv)))


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


def sb_file_extension(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    exts = sorted({f.rsplit(".", 1)[-1] for f in sb_data_files()})
    return {"answer": exts[0]} if len(exts) == 1 else {"na": f"several extensions {exts}"}


def sb_count_prefix(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    n = sum(f.startswith(p["prefix"]) for f in sb_data_files())
    return {"answer": n} if n else {"na": "no_such_path_value"}


def sb_count_files(p: dict[str, Any], layout: list[Any]) -> dict[str, Any]:
    files, why = sb_scope({"scope": "files", **p}, layout)
    if why == "no_such_path_value":
        return {"na": why}
    return {"answer": len(files)}


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


SANDBOX_HEADER = (
    "import json, math, os, re\nimport numpy as np\nimport pandas as pd\nfrom scipy import stats\n"
)
SANDBOX_HELPERS = (sb_data_files, sb_read_log, sb_read, sb_tokens, sb_path_ok, sb_scope, sb_gather,
                   sb_rows, sb_load, sb_pair_test, sb_welch)  # fmt: skip
SANDBOX_SOLVERS = {
    "univariate_statistic": sb_univariate,
    "bivariate_statistic": sb_bivariate,
    "hypothesis_test": sb_hypothesis,
    "group_comparison": sb_group_comparison,
    "file_extension": sb_file_extension,
    "count_prefix": sb_count_prefix,
    "count_files": sb_count_files,
    "count_rows": sb_count_rows,
    "count_missing": sb_count_missing,
}
SANDBOX_SOURCE = SANDBOX_HEADER + "\n\n".join(
    inspect.getsource(fn) for fn in (*SANDBOX_HELPERS, *SANDBOX_SOLVERS.values())
)
RESULT_MARK = "@@RESULT@@"


# --- the agent -------------------------------------------------------------------------------

ABSTAIN = "not possible"
GENERIC_TITLE = "Data repository"


@dataclass
class Task:
    """What to compute: the question's type, params, significant figures and path layout."""

    question_id: str
    type: str
    params: dict[str, Any]
    sig_figs: int | None
    layout: tuple[str, dict[str, str]]


@dataclass
class Episode:
    """One played episode: the submitted answer, the outcome, and the tool outputs seen."""

    question_id: str
    type: str
    answer: str
    outcome: str
    reward: float
    expected: str | None = None  # privileged gold, read only after the episode is over
    outputs: list[str] = field(default_factory=list)


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


class OracleAgent:
    """Plays ISG-v0 episodes (the env must have ``privileged_info=True``)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self._layouts: dict[int, tuple[str, dict[str, str]]] = {}

    def task(self, info: dict[str, Any]) -> Task:
        """The question's type, params and sig figs (privileged) plus the repository layout."""
        seed = info["repository"]
        if seed not in self._layouts:
            self._layouts[seed] = layout_regex(build_spec(seed))
        return Task(info["question_id"], info["type"], info["params"], info["sig_figs"],
                    self._layouts[seed])  # fmt: skip

    def play(self, options: dict[str, Any], seed: int | None = None) -> Episode:
        _, info = self.env.reset(seed=seed, options=options)
        task = self.task(info)
        outputs: list[str] = []
        answer = self.solve(task, outputs)
        _, reward, _, _, final = self.step("final_answer", answer=answer)
        return Episode(task.question_id, task.type, answer, final.get("outcome", "?"),
                       float(reward), final.get("answer"), outputs)  # fmt: skip

    def step(self, tool: str, **arguments: Any) -> tuple[Any, ...]:
        return self.env.step({"name": tool, "arguments": arguments})

    def tool(self, tool: str, outputs: list[str], **arguments: Any) -> str:
        observation = self.step(tool, **arguments)[0]
        outputs.append(observation)
        return observation

    def solve(self, task: Task, outputs: list[str]) -> str:
        match task.type:
            case "has_readme":
                listing = self.tool("list_directory", outputs, path="/", depth=1)
                return "yes" if "README.md" in listing.splitlines()[2:] else "no"
            case "title" | "abstract":
                return self.readme_answer(task.type, outputs)
        result = self.run_code(task, outputs)
        if result is None or "na" in result:
            return ABSTAIN
        return self.format(task, result["answer"])

    def readme_answer(self, what: str, outputs: list[str]) -> str:
        text = self.tool("read_text_file", outputs, path="/README.md")
        head, _, body = text.partition("\n")
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

    def run_code(self, task: Task, outputs: list[str]) -> dict[str, Any] | None:
        """Run the type's pandas code in the sandbox; the printed result, or None on failure."""
        solver = SANDBOX_SOLVERS[task.type].__name__
        code = (
            f"{SANDBOX_SOURCE}\n\nPARAMS = json.loads({json.dumps(task.params)!r})\n"
            f"LAYOUT = json.loads({json.dumps(list(task.layout))!r})\n"
            f"print({RESULT_MARK!r} + json.dumps({solver}(PARAMS, LAYOUT)))\n"
        )
        observation = self.tool("run_python_code", outputs, code=code)
        for line in observation.splitlines():
            if line.startswith(RESULT_MARK):
                return json.loads(line[len(RESULT_MARK) :])
        return None

    @staticmethod
    def format(task: Task, value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            return format_sig(value, task.sig_figs or 4)
        return str(value)


def make_env(args: Args) -> ISGEnv:
    return ISGEnv(
        unanswerable_ratio=args.unanswerable_ratio,
        sandbox=args.sandbox,
        sandbox_limits={"cpu_seconds": args.cpu_seconds, "wall_seconds": args.wall_seconds},
        privileged_info=True,
        max_steps=10,
    )


def run(args: Args) -> list[Episode]:
    """Play ``args.episodes`` episodes, ``per_repository`` on each seed from the start."""
    env = make_env(args)
    agent = OracleAgent(env)
    episodes = []
    try:
        for i in range(args.episodes):
            repo = args.start_repository + i // args.per_repository
            episode = agent.play({"repository": repo}, seed=args.seed + i)
            episodes.append(episode)
            if args.verbose:
                print(f"{episode.question_id:40s} {episode.outcome:9s} {episode.answer[:60]!r}")
    finally:
        env.close()
    return episodes


def main() -> None:
    args = parse_args()
    start = time.perf_counter()
    episodes = run(args)
    elapsed = time.perf_counter() - start
    correct = sum(e.outcome == "correct" for e in episodes)
    for e in episodes:
        if e.outcome != "correct":
            print(f"FAIL {e.question_id} ({e.outcome}): gave {e.answer!r}, expected {e.expected!r}")
    print(f"outcomes: {dict(Counter(e.outcome for e in episodes))}")
    print(f"types: {dict(sorted(Counter(e.type for e in episodes).items()))}")
    print(f"accuracy {correct / len(episodes):.4f} ({correct}/{len(episodes)}), "
          f"{len(episodes) / elapsed:.2f} episodes/s ({elapsed:.1f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
