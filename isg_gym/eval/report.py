"""Run reports: summary.json, summary.md and plots for one run directory, and a leaderboard
comparing several.

A run directory holds ``episodes.jsonl`` (the records) and ``run.json`` (backend, model,
split, ...). Everything here is rebuilt from those two files, so ``isg report DIR...`` can
regenerate summaries after the metrics change. Plots need matplotlib (drawn with the Agg
canvas, no pyplot state); without it they are skipped with a warning.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isg_gym.eval.metrics import summarize
from isg_gym.eval.records import RECORDS_FILE, read_records

RUN_FILE = "run.json"
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
PLOTS_DIR = "plots"
LEADERBOARD_PNG = "leaderboard.png"
EN_DASH = "\u2013"  # between the interval bounds
PLOT_FILES = (
    "accuracy_by_type.png",
    "accuracy_vs_tool_calls.png",
    "accuracy_vs_tokens.png",
    "unanswerable_precision_recall.png",
)

PathLike = str | os.PathLike[str]


# ---------------------------------------------------------------- loading


def load_run(out_dir: PathLike) -> dict[str, Any]:
    """The run.json dict of a run directory ({} when missing or unreadable)."""
    path = Path(out_dir) / RUN_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def summarize_dir(out_dir: PathLike) -> dict[str, Any]:
    """Summary of a run directory, recomputed from its episodes.jsonl and run.json."""
    out_dir = Path(out_dir)
    return summarize(read_records(out_dir / RECORDS_FILE), load_run(out_dir))


# ---------------------------------------------------------------- formatting


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _ci(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"{100 * ci[0]:.1f}{EN_DASH}{100 * ci[1]:.1f}%"


def _num(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: Sequence[str], rows: list[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _split_text(split: Any) -> str:
    if isinstance(split, list):
        return f"{len(split)} question ids"
    return "n/a" if split in (None, "") else str(split)


def infrastructure_line(summary: dict[str, Any]) -> str | None:
    """The warning about infrastructure failures (None when there were none)."""
    infra = summary.get("infrastructure_failures") or {}
    if not infra.get("n"):
        return None
    kinds = ", ".join(f"{k} {v}" for k, v in (infra.get("by_outcome") or {}).items())
    first = (infra.get("errors") or ["?"])[0]
    return (
        f"INFRASTRUCTURE FAILURES: {infra['n']} of {summary.get('episodes', '?')} episodes "
        f"({kinds}) did not run and are not counted; fix the cause, then rerun with --resume "
        f"to retry them. First error: {first}"
    )


def accuracy_line(summary: dict[str, Any]) -> str:
    """``Accuracy: 62.0% (95% CI 57.7-66.1%, n=500)`` (an en dash between the bounds), with the
    count of infrastructure failures when there were any."""
    infra = (summary.get("infrastructure_failures") or {}).get("n", 0)
    extra = f"; {infra} infrastructure failures not counted" if infra else ""
    if not summary.get("n"):
        return f"Accuracy: n/a (n=0{extra})"
    return (
        f"Accuracy: {_pct(summary['accuracy'])} (95% CI {_ci(summary['ci'])}, "
        f"n={summary['n']}{extra})"
    )


def _group_rows(groups: dict[str, dict[str, Any]]) -> list[list[Any]]:
    return [
        [name, g["n"], g["correct"], _pct(g["accuracy"]), _ci(g["ci"])]
        for name, g in groups.items()
    ]


def render_markdown(summary: dict[str, Any], name: str = "run") -> str:
    """The summary.md text of a summary dict."""
    run = summary.get("run") or {}
    lines = [f"# Evaluation report: {name}", ""]
    warning = infrastructure_line(summary)
    if warning:
        lines += [f"**{warning}**", ""]
    meta = [(k, run.get(k)) for k in ("env", "backend", "model", "split", "episodes")]
    meta_lines = [f"- {key}: {_split_text(v)}" for key, v in meta if v not in (None, "")]
    version = summary.get("question_version")
    if version is not None:
        meta_lines.append(f"- question generator: v{version}" if isinstance(version, int)
                          else f"- question generator: MIXED versions {version}")  # fmt: skip
    lines += [*meta_lines, ""] if meta_lines else []
    lines += [f"**{accuracy_line(summary)}**", ""]
    if not summary.get("n"):
        lines += ["No episodes recorded: nothing to summarise.", ""]
        return "\n".join(lines)

    lines += ["## By type", ""]
    lines += _table(["type", "n", "correct", "accuracy", "95% CI"], _group_rows(summary["by_type"]))
    lines += ["", "## By family", ""]
    lines += _table(
        ["family", "n", "correct", "accuracy", "95% CI"], _group_rows(summary["by_family"])
    )

    det = summary["unanswerable_detection"]
    lines += ["", "## Unanswerable detection", ""]
    lines += [
        'Positive class: "not possible" (predicted: the agent abstained; actual: the question '
        f"is unanswerable). {det['unanswerable']} unanswerable of {det['n']} questions, "
        f"{det['abstained']} abstentions.",
        "",
    ]
    lines += _table(
        ["precision", "recall", "F1", "TP", "FP", "FN", "TN"],
        [
            [_ratio(det["precision"]), _ratio(det["recall"]), _ratio(det["f1"])]
            + [det[k] for k in ("tp", "fp", "fn", "tn")]
        ],
    )

    per = summary["per_question"]
    lines += ["", "## Cost per question", ""]
    lines += _table(
        ["metric", "mean"],
        [
            ["prompt tokens", _num(per["prompt_tokens"])],
            ["completion tokens", _num(per["completion_tokens"])],
            ["total tokens", _num(per["total_tokens"])],
            ["tool calls", _num(per["tool_calls"], 2)],
            ["model calls", _num(per["model_calls"], 2)],
            ["env steps", _num(per["steps"], 2)],
            ["wall time (s)", _num(per["wall_s"], 2)],
        ],
    )
    if summary.get("tool_calls_by_name"):
        calls = ", ".join(f"{k} {v}" for k, v in summary["tool_calls_by_name"].items())
        lines += ["", f"Tool calls by name: {calls}."]

    metrics = summary.get("episode_metrics") or {}
    if metrics.get("overall"):
        names = list(metrics["overall"])
        lines += ["", "## Episode metrics (means)", ""]
        rows = [["all", *(_num(metrics["overall"].get(k), 3) for k in names)]]
        rows += [[t, *(_num(m.get(k), 3) for k in names)] for t, m in metrics["by_type"].items()]
        lines += _table(["type", *names], rows)

    parse = summary["parse_failures"]
    evidence = summary["evidence"]
    lines += ["", "## Behaviour", ""]
    lines += [
        f"- Parse failures: {_pct(parse['step_rate'])} of {parse['steps']} env steps "
        f"({parse['failures']}); {_pct(parse['episode_rate'])} of episodes had at least one "
        f"({parse['episodes']}).",
        f"- Evidence rate: {_pct(evidence['rate'])} ({evidence['used']} of {evidence['n']} "
        "episodes that have evidence files read at least one of them).",
        f"- Infrastructure failures (not counted above): "
        f"{(summary.get('infrastructure_failures') or {}).get('n', 0)} "
        f"(backend errors: {summary['backend_errors']}).",
    ]

    lines += ["", "## Outcomes", ""]
    total = summary.get("episodes") or summary["n"]  # infrastructure failures included
    lines += _table(
        ["outcome", "count", "share"],
        [[k, v, _pct(v / total)] for k, v in summary["outcomes"].items()],
    )
    for key, title in (("by_tool_calls", "tool calls"), ("by_tokens", "total tokens")):
        if summary.get(key):
            lines += ["", f"## Accuracy by {title} per episode", ""]
            lines += _table(
                [title, "n", "accuracy", "95% CI"],
                [[b["label"], b["n"], _pct(b["accuracy"]), _ci(b["ci"])] for b in summary[key]],
            )
    if not summary.get("tokens_recorded"):
        lines += ["", "No token counts were recorded for this run."]
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- plots


def _new_figure(n_bars: int) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(5.0, 0.6 * n_bars + 2.0), 4.0), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _bar_plot(
    path: Path,
    labels: list[str],
    values: list[float | None],
    cis: list[Sequence[float] | None],
    notes: list[str],
    title: str,
    ylabel: str = "accuracy",
) -> None:
    """Bars in [0, 1] with Wilson error bars (where given) and a note above each bar."""
    fig = _new_figure(len(labels))
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.12)
    if not labels:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
    else:
        heights = [v or 0.0 for v in values]
        low = [h - ci[0] if ci else 0.0 for h, ci in zip(heights, cis, strict=True)]
        high = [ci[1] - h if ci else 0.0 for h, ci in zip(heights, cis, strict=True)]
        xs = list(range(len(labels)))
        yerr = [low, high] if any(cis) else None
        ax.bar(xs, heights, yerr=yerr, capsize=3, color="#4c72b0", ecolor="#333333")
        for x, h, up, note in zip(xs, heights, high, notes, strict=True):
            ax.text(x, min(h + up + 0.02, 1.06), note, ha="center", va="bottom", fontsize=8)
        rotate = len(labels) > 4 or max(len(s) for s in labels) > 10
        ax.set_xticks(xs, labels, rotation=40 if rotate else 0, ha="right" if rotate else "center")
    fig.savefig(path, dpi=100)


def _accuracy_bars(path: Path, buckets: list[dict[str, Any]], title: str) -> None:
    _bar_plot(
        path,
        [b["label"] for b in buckets],
        [b["accuracy"] for b in buckets],
        [b["ci"] for b in buckets],
        [f"n={b['n']}" for b in buckets],
        title,
    )


def run_label(summary: dict[str, Any]) -> str:
    """``model (backend) on split, question generator vN``: what a plot is of."""
    run = summary.get("run") or {}
    model, backend = run.get("model") or "?", run.get("backend") or "?"
    who = model if model == backend else f"{model} ({backend})"
    version = summary.get("question_version")
    tail = f", question generator v{version}" if isinstance(version, int) else ""
    env = f"{run['env']} " if run.get("env") else ""
    return f"{who} on {env}{_split_text(run.get('split'))}{tail}"


def write_plots(summary: dict[str, Any], plots_dir: Path) -> list[Path]:
    """The four report plots; [] (with a warning) when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401  (lazy: plots are optional)
    except ImportError:
        warnings.warn("matplotlib is not installed: skipping plots", stacklevel=2)
        return []
    plots_dir.mkdir(parents=True, exist_ok=True)
    paths = [plots_dir / name for name in PLOT_FILES]
    by_type = [{"label": k} | v for k, v in summary["by_type"].items()]
    who = run_label(summary)
    _accuracy_bars(paths[0], by_type, f"{who}\nAccuracy by question type (n={summary['n']})")
    _accuracy_bars(paths[1], summary["by_tool_calls"], f"{who}\nAccuracy by tool calls per episode")
    token_title = f"{who}\nAccuracy by total tokens per episode"
    if summary["n"] and not summary["tokens_recorded"]:
        token_title += "\n(all token counts are zero: not recorded)"
    _accuracy_bars(paths[2], summary["by_tokens"], token_title)
    det = summary["unanswerable_detection"]
    metrics = [det["precision"], det["recall"], det["f1"]]
    _bar_plot(
        paths[3],
        ["precision", "recall", "F1"] if det["n"] else [],
        metrics,
        [None, None, None],
        [_ratio(v) for v in metrics],
        f'{who}\nUnanswerable detection ("not possible" is positive)\n'
        f"{det['unanswerable']} unanswerable of {det['n']}, {det['abstained']} abstentions",
        ylabel="score",
    )
    return paths


# ---------------------------------------------------------------- run report


def write_report(out_dir: PathLike) -> dict[str, Any]:
    """Write summary.json, summary.md and plots/*.png for a run directory; return the summary."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize_dir(out_dir)
    (out_dir / SUMMARY_JSON).write_text(
        json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )
    name = str(summary["run"].get("name") or out_dir.resolve().name)
    (out_dir / SUMMARY_MD).write_text(render_markdown(summary, name), encoding="utf-8")
    write_plots(summary, out_dir / PLOTS_DIR)
    return summary


def rebuild(dirs: Sequence[PathLike]) -> list[dict[str, Any]]:
    """Rewrite the report of every run directory from its records; the summaries, in order."""
    return [write_report(d) for d in dirs]


# ---------------------------------------------------------------- leaderboard


def _ranked(dirs: Sequence[PathLike]) -> list[tuple[str, dict[str, Any]]]:
    runs = [(Path(d).resolve().name, summarize_dir(d)) for d in dirs]
    return sorted(runs, key=lambda r: (r[1]["accuracy"] is None, -(r[1]["accuracy"] or 0.0), r[0]))


def _with_interval(summary: dict[str, Any]) -> str:
    """``90.0% (80.3-95.4%)``: the 95% Wilson interval is not symmetric, so both ends."""
    if summary["accuracy"] is None:
        return "n/a"
    lo, hi = summary["ci"]
    return f"{100 * summary['accuracy']:.1f}% ({100 * lo:.1f}-{100 * hi:.1f}%)"


def _leaderboard_text(ranked: list[tuple[str, dict[str, Any]]]) -> str:
    header = [
        "#",
        "run",
        "env",
        "backend",
        "model",
        "split",
        "n",
        "accuracy",
        "mean reward",
        "unans. F1",
        "tool calls/q",
        "tokens/q",
        "parse-fail rate",
        "evidence rate",
    ]
    rows = []
    for rank, (name, s) in enumerate(ranked, start=1):
        run = s["run"]
        rows.append(
            [
                rank,
                name,
                run.get("env") or "ISG-v0",
                run.get("backend") or "n/a",
                run.get("model") or "n/a",
                _split_text(run.get("split")),
                s["n"],
                _with_interval(s),
                _num(s["per_question"]["reward"], 3),
                _ratio(s["unanswerable_detection"]["f1"]),
                _num(s["per_question"]["tool_calls"], 2),
                _num(s["per_question"]["total_tokens"], 0),
                _pct(s["parse_failures"]["step_rate"]),
                _pct(s["evidence"]["rate"]),
            ]
        )
    lines = _table(header, rows)
    if any(s["run"].get("backend") == "human" for _, s in ranked):
        lines += ["", "Backend human: episodes played by a person with `isg play` (a human "
                  "baseline; no tokens are counted)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def leaderboard(dirs: Sequence[PathLike]) -> str:
    """A Markdown table comparing run directories, best accuracy first, with each accuracy's
    95% Wilson interval."""
    return _leaderboard_text(_ranked(dirs))


def write_leaderboard(dirs: Sequence[PathLike], out: PathLike | None = None) -> str:
    """The leaderboard text; with ``out`` (a .md path, or a directory for leaderboard.md) also
    write it there with a leaderboard.png accuracy chart beside it."""
    ranked = _ranked(dirs)
    text = _leaderboard_text(ranked)
    if out is None:
        return text
    out = Path(out)
    if out.is_dir():
        out = out / "leaderboard.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        warnings.warn("matplotlib is not installed: skipping leaderboard.png", stacklevel=2)
        return text
    _bar_plot(
        out.parent / LEADERBOARD_PNG,
        [name for name, _ in ranked],
        [s["accuracy"] for _, s in ranked],
        [s["ci"] for _, s in ranked],
        [f"n={s['n']}" for _, s in ranked],
        "Accuracy by run (95% Wilson interval)",
    )
    return text
