"""Metrics, run reports and the leaderboard, on synthetic episode records."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from isg_gym.eval import metrics, report
from isg_gym.eval.records import RECORDS_FILE, SCHEMA_VERSION, RecordWriter

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_record(
    index: int = 0,
    *,
    correct: bool = False,
    answerable: bool | None = True,
    abstained: bool = False,
    type: str = "mean",
    family: str = "univariate",
    outcome: str | None = None,
    tool_calls: int = 0,
    steps: int = 1,
    parse_failures: int = 0,
    evidence: list[str] | None = None,
    evidence_used: bool | None = None,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    model_calls: int = 1,
    wall_s: float = 0.5,
    error: str | None = None,
) -> dict[str, Any]:
    """A record with the fields of ``records.build_record``."""
    if outcome is None:
        outcome = "correct" if correct else "abstained" if abstained else "wrong"
    evidence = list(evidence or [])
    return {
        "schema": SCHEMA_VERSION,
        "index": index,
        "question_id": f"q{index}",
        "repository": index,
        "type": type,
        "family": family,
        "answerable": answerable,
        "reason": None if answerable else "missing_column",
        "gold": "1.0" if answerable else "not possible",
        "question": "What is it?",
        "answer": "not possible" if abstained else "1.0",
        "outcome": outcome,
        "correct": correct,
        "abstained": abstained,
        "reward": float(correct),
        "score": {"correct": correct, "abstained": abstained},
        "steps": steps,
        "tool_calls": [
            {
                "step": 1,
                "name": "list_directory",
                "arguments": {},
                "result_chars": 3,
                "error": False,
            }
            for _ in range(tool_calls)
        ],
        "parse_failures": parse_failures,
        "parse_errors": ["bad"] * parse_failures,
        "files_read": [],
        "evidence": evidence,
        "evidence_used": evidence_used if evidence else None,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "model_calls": model_calls,
        "wall_s": wall_s,
        "error": error,
        "transcript": [],
    }


def write_run(path: Path, records: list[dict[str, Any]], run: dict[str, Any] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with RecordWriter(path / RECORDS_FILE) as writer:
        for record in records:
            writer.write(record)
    if run is not None:
        (path / report.RUN_FILE).write_text(json.dumps(run))
    return path


# ---------------------------------------------------------------- metrics


def test_wilson_interval_hand_values() -> None:
    # 310/500: p=0.62, z=1.959964; center=(0.62+z^2/1000)/(1+z^2/500), half by the closed form.
    low, high = metrics.wilson_interval(310, 500)
    assert low == pytest.approx(0.576692, abs=1e-6)
    assert high == pytest.approx(0.661478, abs=1e-6)
    # 1/1: [z^2/(1+z^2)... ] lower = 1/(1+z^2) = 0.206549, upper exactly 1.
    assert metrics.wilson_interval(1, 1) == (pytest.approx(0.206549, abs=1e-6), 1.0)
    assert metrics.wilson_interval(0, 4) == (0.0, pytest.approx(0.489891, abs=1e-6))
    assert metrics.wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        metrics.wilson_interval(3, 2)


def test_wilson_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for k, n in [(0, 7), (3, 7), (7, 7), (45, 120)]:
        ci = stats.binomtest(k, n).proportion_ci(method="wilson")
        assert metrics.wilson_interval(k, n) == (
            pytest.approx(ci.low, abs=1e-9),
            pytest.approx(ci.high, abs=1e-9),
        )


def test_accuracy_and_groups() -> None:
    records = [
        make_record(0, correct=True, type="mean", family="univariate"),
        make_record(1, correct=True, type="mean", family="univariate"),
        make_record(2, correct=False, type="mean", family="univariate"),
        make_record(3, correct=True, type="correlation", family="bivariate"),
        make_record(4, correct=False, type=None, family=None),
    ]
    s = metrics.summarize(records, {"backend": "fake"})
    assert (s["n"], s["correct"]) == (5, 3)
    assert s["accuracy"] == pytest.approx(0.6)
    assert s["ci"] == list(metrics.wilson_interval(3, 5))
    assert list(s["by_type"]) == ["correlation", "mean", "unknown"]
    assert s["by_type"]["mean"]["n"] == 3
    assert s["by_type"]["mean"]["accuracy"] == pytest.approx(2 / 3)
    assert s["by_family"]["bivariate"] == metrics.proportion(1, 1)
    assert s["by_family"]["unknown"]["accuracy"] == 0.0
    assert s["run"] == {"backend": "fake"}
    assert s["outcomes"] == {"correct": 3, "wrong": 2}
    json.dumps(s)  # JSON-able


def test_unanswerable_confusion_matrix() -> None:
    # tp=3, fp=1, fn=2, tn=4; one record with unknown answerability is left out.
    records = (
        [make_record(answerable=False, abstained=True, correct=True) for _ in range(3)]
        + [make_record(answerable=True, abstained=True)]
        + [make_record(answerable=False) for _ in range(2)]
        + [make_record(answerable=True, correct=True) for _ in range(4)]
        + [make_record(answerable=None, abstained=True)]
    )
    det = metrics.summarize(records)["unanswerable_detection"]
    assert (det["tp"], det["fp"], det["fn"], det["tn"]) == (3, 1, 2, 4)
    assert det["n"] == 10
    assert (det["unanswerable"], det["abstained"]) == (5, 4)
    assert det["precision"] == pytest.approx(0.75)
    assert det["recall"] == pytest.approx(0.6)
    assert det["f1"] == pytest.approx(2 * 0.75 * 0.6 / (0.75 + 0.6))


def test_unanswerable_undefined_denominators() -> None:
    # No abstentions, no unanswerable questions: everything undefined.
    det = metrics.unanswerable_detection([make_record(answerable=True) for _ in range(3)])
    assert (det["precision"], det["recall"], det["f1"]) == (None, None, None)
    assert det["tn"] == 3
    # Unanswerable questions but never abstains: precision undefined, recall and F1 zero.
    det = metrics.unanswerable_detection([make_record(answerable=False)])
    assert (det["precision"], det["recall"], det["f1"]) == (None, 0.0, 0.0)
    # Abstains on answerable questions only: recall undefined, precision and F1 zero.
    det = metrics.unanswerable_detection([make_record(answerable=True, abstained=True)])
    assert (det["precision"], det["recall"], det["f1"]) == (0.0, None, 0.0)
    assert metrics.unanswerable_detection([])["f1"] is None


def test_parse_failures_evidence_and_costs() -> None:
    records = [
        make_record(0, steps=4, parse_failures=2, tool_calls=3, prompt_tokens=100,
                    completion_tokens=10, model_calls=4, wall_s=1.0,
                    evidence=["a.csv"], evidence_used=True),
        make_record(1, steps=6, parse_failures=0, tool_calls=1, prompt_tokens=300,
                    completion_tokens=30, model_calls=6, wall_s=3.0,
                    evidence=["b.csv"], evidence_used=False),
        make_record(2, steps=10, parse_failures=1, tool_calls=0, evidence=[]),
        make_record(3, steps=0, outcome="backend_error", error="boom", model_calls=0,
                    evidence=["c.csv", "d.csv"], evidence_used=True),
    ]  # fmt: skip
    s = metrics.summarize(records)
    # The backend error is an infrastructure failure: counted apart, in no other figure.
    assert (s["n"], s["episodes"], s["infrastructure_failures"]["n"]) == (3, 4, 1)
    parse = s["parse_failures"]
    assert (parse["failures"], parse["steps"], parse["episodes"]) == (3, 20, 2)
    assert parse["step_rate"] == pytest.approx(3 / 20)
    assert parse["episode_rate"] == pytest.approx(2 / 3)
    # Evidence: only the 2 played episodes with evidence count; 1 of them read it.
    assert s["evidence"] == {"n": 2, "used": 1, "rate": pytest.approx(1 / 2)}
    per = s["per_question"]
    assert per["prompt_tokens"] == pytest.approx(400 / 3)
    assert per["completion_tokens"] == pytest.approx(40 / 3)
    assert per["total_tokens"] == pytest.approx(440 / 3)
    assert per["tool_calls"] == pytest.approx(4 / 3)
    assert per["model_calls"] == pytest.approx(11 / 3)
    assert per["steps"] == pytest.approx(20 / 3)
    assert per["wall_s"] == pytest.approx((1.0 + 3.0 + 0.5) / 3)
    assert s["backend_errors"] == 1
    assert s["outcomes"]["backend_error"] == 1  # outcomes cover every episode
    assert s["tool_calls_by_name"] == {"list_directory": 4}
    assert s["tokens_recorded"] is True
    assert [b["label"] for b in s["by_tokens"]] == ["<1k"]
    assert sum(b["n"] for b in s["by_tokens"]) == 3


def test_no_steps_and_no_evidence_are_undefined() -> None:
    s = metrics.summarize([make_record(steps=0, evidence=[])])
    assert s["parse_failures"]["step_rate"] is None
    assert s["evidence"] == {"n": 0, "used": 0, "rate": None}


def test_tool_call_buckets() -> None:
    counts = [0, 0, 1, 2, 3, 4, 5, 8, 9, 40]
    records = [make_record(i, tool_calls=c, correct=c >= 3) for i, c in enumerate(counts)]
    buckets = metrics.summarize(records)["by_tool_calls"]
    assert [(b["label"], b["n"], b["correct"]) for b in buckets] == [
        ("0", 2, 0),
        ("1", 1, 0),
        ("2", 1, 0),
        ("3-4", 2, 2),
        ("5-8", 2, 2),
        ("9-16", 1, 1),
        ("17+", 1, 1),
    ]


def test_token_buckets() -> None:
    totals = [500, 999, 1000, 2500, 9000]
    records = [make_record(i, prompt_tokens=t) for i, t in enumerate(totals)]
    buckets = metrics.summarize(records)["by_tokens"]
    expected = [("<1k", 2), ("1k-2k", 1), ("2k-4k", 1), ("8k-16k", 1)]
    assert [(b["label"], b["n"]) for b in buckets] == expected


def test_missing_fields_are_tolerated() -> None:
    s = metrics.summarize([{"correct": True}, {}])
    assert (s["n"], s["correct"]) == (2, 1)
    assert s["by_type"] == {"unknown": metrics.proportion(1, 2)}
    assert s["unanswerable_detection"]["n"] == 0
    assert s["per_question"]["tool_calls"] == 0.0
    assert s["outcomes"] == {"None": 2}


# ---------------------------------------------------------------- run reports


def _assert_pngs(plots: Path) -> None:
    for name in report.PLOT_FILES:
        data = (plots / name).read_bytes()
        assert data.startswith(PNG_MAGIC), name


def test_write_report_files(tmp_path: Path) -> None:
    records = [
        make_record(i, correct=i % 5 != 0, type=["mean", "median", "ttest"][i % 3],
                    family=["univariate", "group_comparison"][i % 2], tool_calls=i % 7,
                    prompt_tokens=400 * i, completion_tokens=20 * i,
                    answerable=i % 4 != 0, abstained=i % 4 == 0 and i % 8 == 0,
                    evidence=["data/x.csv"], evidence_used=i % 3 != 0)
        for i in range(20)
    ]  # fmt: skip
    run = {"backend": "fake", "model": "m-1", "split": "isg-500", "episodes": 20, "extra": [1]}
    out = write_run(tmp_path / "run-a", records, run)
    summary = report.write_report(out)

    assert summary["n"] == 20 and summary["correct"] == 16
    on_disk = json.loads((out / report.SUMMARY_JSON).read_text())
    assert on_disk == json.loads(json.dumps(summary))
    text = (out / report.SUMMARY_JSON).read_text()
    assert text == json.dumps(on_disk, indent=2, sort_keys=True) + "\n"

    md = (out / report.SUMMARY_MD).read_text()
    low, high = metrics.wilson_interval(16, 20)
    line = f"Accuracy: 80.0% (95% CI {100 * low:.1f}\u2013{100 * high:.1f}%, n=20)"
    assert line in md
    for heading in ("## By type", "## By family", "## Unanswerable detection", "## Outcomes"):
        assert heading in md
    assert "| ttest |" in md and "| group_comparison |" in md
    assert "Evidence rate:" in md and "Parse failures:" in md
    assert "m-1" in md and "isg-500" in md
    _assert_pngs(out / report.PLOTS_DIR)


def test_write_report_zero_records(tmp_path: Path) -> None:
    out = write_run(tmp_path / "empty", [])  # no run.json either
    summary = report.write_report(out)
    assert summary["n"] == 0 and summary["accuracy"] is None and summary["ci"] is None
    assert summary["run"] == {}
    assert json.loads((out / report.SUMMARY_JSON).read_text())["n"] == 0
    md = (out / report.SUMMARY_MD).read_text()
    assert "Accuracy: n/a (n=0)" in md and "No episodes recorded" in md
    _assert_pngs(out / report.PLOTS_DIR)


def test_write_report_one_record_without_tokens(tmp_path: Path) -> None:
    out = write_run(tmp_path / "one", [make_record(correct=True, tool_calls=2)], {"model": "x"})
    summary = report.write_report(out)
    assert summary["accuracy"] == 1.0
    assert summary["tokens_recorded"] is False and summary["by_tokens"] == []
    md = (out / report.SUMMARY_MD).read_text()
    assert "Accuracy: 100.0% (95% CI 20.7\u2013100.0%, n=1)" in md
    assert "No token counts were recorded" in md
    _assert_pngs(out / report.PLOTS_DIR)


def test_torn_run_json_and_records(tmp_path: Path) -> None:
    out = write_run(tmp_path / "torn", [make_record(correct=True)])
    (out / report.RUN_FILE).write_text("{not json")
    with (out / RECORDS_FILE).open("a") as f:
        f.write('{"correct": tr')  # interrupted write
    summary = report.write_report(out)
    assert summary["n"] == 1 and summary["run"] == {}


def test_plots_skipped_without_matplotlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    out = write_run(tmp_path / "noplots", [make_record(correct=True)])
    with pytest.warns(UserWarning, match="matplotlib"):
        summary = report.write_report(out)
    assert summary["n"] == 1
    assert (out / report.SUMMARY_MD).exists()
    assert not (out / report.PLOTS_DIR).exists()


# ---------------------------------------------------------------- leaderboard


def _runs(tmp_path: Path) -> list[Path]:
    def run(name: str, n_correct: int, n: int, model: str) -> Path:
        records = [make_record(i, correct=i < n_correct) for i in range(n)]
        info = {"backend": "fake", "model": model, "split": "repos:0-10"}
        return write_run(tmp_path / name, records, info)

    return [
        run("low", 2, 10, "small"),
        write_run(tmp_path / "empty", [], {"backend": "fake", "model": "none"}),
        run("high", 9, 10, "big"),
        run("mid", 5, 10, "medium"),
    ]


def test_leaderboard_order_and_columns(tmp_path: Path) -> None:
    text = report.leaderboard(_runs(tmp_path))
    lines = text.strip().splitlines()
    assert lines[0].startswith(
        "| # | run | env | backend | model | split | n | accuracy | mean reward |"
    )
    names = [line.split("|")[2].strip() for line in lines[2:]]
    assert names == ["high", "mid", "low", "empty"]
    low, high = metrics.wilson_interval(9, 10)
    assert f"90.0% ({100 * low:.1f}-{100 * high:.1f}%)" in lines[2]  # both ends: not symmetric
    assert "±" not in text
    assert "repos:0-10" in lines[2] and "big" in lines[2]
    assert "| ISG-v0 |" in lines[2]  # a run.json without an env is an ISG-v0 run
    assert "n/a" in lines[5]


def test_write_leaderboard_and_rebuild(tmp_path: Path) -> None:
    dirs = _runs(tmp_path)
    out = tmp_path / "board" / "leaderboard.md"
    text = report.write_leaderboard(dirs, out)
    assert out.read_text() == text
    assert (out.parent / report.LEADERBOARD_PNG).read_bytes().startswith(PNG_MAGIC)
    assert report.write_leaderboard(dirs) == text  # no out: text only

    summaries = report.rebuild(dirs)
    assert [s["n"] for s in summaries] == [10, 0, 10, 10]
    for d in dirs:
        assert (d / report.SUMMARY_JSON).exists() and (d / report.SUMMARY_MD).exists()


def test_final_answer_is_not_an_exploring_tool_call() -> None:
    from isg_gym.eval.metrics import tool_call_count

    calls = [{"name": "list_directory"}, {"name": "run_python_code"}, {"name": "final_answer"}]
    assert tool_call_count({"tool_calls": calls}) == 2
    assert tool_call_count({"tool_calls": calls[-1:]}) == 0
    assert tool_call_count({}) == 0


def test_plots_say_which_run_they_show() -> None:
    record = make_record(0) | {"question_version": 2}
    summary = metrics.summarize([record], {"backend": "openai", "model": "qwen3-8b",
                                           "split": "isg-500"})  # fmt: skip
    assert report.run_label(summary) == "qwen3-8b (openai) on isg-500, question generator v2"
    scripted = metrics.summarize([make_record(0)], {"backend": "oracle", "model": "oracle"})
    assert report.run_label(scripted).startswith("oracle on n/a")
