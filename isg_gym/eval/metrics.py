"""Evaluation metrics over episode records (see :func:`isg_gym.eval.records.build_record`).

:func:`summarize` turns a run's records into one JSON-able dict: accuracy with a 95% Wilson
score interval (overall, by question type and by family), unanswerable detection with
"not possible" as the positive class (precision, recall, F1 and the confusion counts), cost per
question (tokens, tool calls, model calls, steps, wall time), parse failures, evidence use and
outcome counts. Records missing a field count as if it held its empty value.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from statistics import NormalDist
from typing import Any

from isg_gym.eval.records import BACKEND_ERROR, is_infra_failure, latest_records

CONFIDENCE = 0.95
UNKNOWN = "unknown"

# Buckets of tool calls per episode: [lower, upper) edges; the last is open-ended.
TOOL_CALL_EDGES = (0, 1, 2, 3, 5, 9, 17)
TOKEN_BASE = 1000  # token buckets: <1k, 1k-2k, 2k-4k, ... doubling


def wilson_interval(
    successes: int, n: int, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Wilson score interval of a binomial proportion, or None when ``n`` is 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside 0..{n}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return low, high


def proportion(successes: int, n: int) -> dict[str, Any]:
    """``{"n", "correct", "accuracy", "ci"}``; accuracy and ci are None when ``n`` is 0."""
    ci = wilson_interval(successes, n)
    return {
        "n": n,
        "correct": successes,
        "accuracy": successes / n if n else None,
        "ci": list(ci) if ci else None,
    }


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _float(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def tool_call_count(record: dict[str, Any]) -> int:
    """Number of exploring tool calls the episode made (``final_answer`` not counted)."""
    calls = record.get("tool_calls")
    if not isinstance(calls, list):
        return 0
    return sum(not (isinstance(c, dict) and c.get("name") == "final_answer") for c in calls)


def total_tokens(record: dict[str, Any]) -> int:
    """Prompt plus completion tokens of the episode."""
    return _int(record.get("prompt_tokens")) + _int(record.get("completion_tokens"))


def _grouped(records: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[bool]] = {}
    for record in records:
        groups.setdefault(str(record.get(key) or UNKNOWN), []).append(bool(record.get("correct")))
    return {name: proportion(sum(flags), len(flags)) for name, flags in sorted(groups.items())}


def unanswerable_detection(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Detection of unanswerable questions, "not possible" as the positive class.

    Predicted positive: the agent abstained. Actual positive: ``answerable`` is False.
    Records whose ``answerable`` is unknown (None) are left out. Precision and recall are
    None when their denominator is 0; F1 is ``2tp / (2tp + fp + fn)``, None when that
    denominator is 0 (no positive either way).
    """
    tp = fp = fn = tn = 0
    for record in records:
        answerable = record.get("answerable")
        if answerable is None:
            continue
        predicted = bool(record.get("abstained"))
        actual = answerable is False
        if predicted and actual:
            tp += 1
        elif predicted:
            fp += 1
        elif actual:
            fn += 1
        else:
            tn += 1
    return {
        "n": tp + fp + fn + tn,
        "unanswerable": tp + fn,
        "abstained": tp + fp,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
    }


def _bucket_label(lo: int, hi: int | None, fmt: Callable[[int], str], discrete: bool) -> str:
    if hi is None:
        return f"{fmt(lo)}+"
    if discrete:
        return fmt(lo) if hi - lo == 1 else f"{fmt(lo)}-{fmt(hi - 1)}"
    return f"<{fmt(hi)}" if lo == 0 else f"{fmt(lo)}-{fmt(hi)}"


def bucketed_accuracy(
    values: list[int],
    correct: list[bool],
    edges: list[int] | tuple[int, ...],
    fmt: Callable[[int], str] = str,
    discrete: bool = True,
) -> list[dict[str, Any]]:
    """Accuracy per bucket ``[edges[i], edges[i + 1])`` (last open-ended); empty buckets are
    left out. Each bucket: ``label``, ``lo``, ``hi`` (None when open) and :func:`proportion`.
    ``discrete`` labels by inclusive counts ("3-4"), else by edges ("1k-2k", "<1k")."""
    buckets = []
    for i, lo in enumerate(edges):
        hi = edges[i + 1] if i + 1 < len(edges) else None
        flags = [
            c for v, c in zip(values, correct, strict=True) if v >= lo and (hi is None or v < hi)
        ]
        if flags:
            buckets.append(
                {"label": _bucket_label(lo, hi, fmt, discrete), "lo": lo, "hi": hi}
                | proportion(sum(flags), len(flags))
            )
    return buckets


def token_edges(max_tokens: int, base: int = TOKEN_BASE) -> list[int]:
    """Doubling bucket edges ``0, base, 2 base, 4 base, ...``, the last above ``max_tokens``."""
    edges = [0, base]
    while edges[-1] <= max_tokens:
        edges.append(edges[-1] * 2)
    return edges


def _kilo(value: int) -> str:
    return f"{value // 1000}k" if value % 1000 == 0 and value else str(value)


def _versions(records: list[dict[str, Any]]) -> int | list[int] | None:
    """The question generator version of the records (a sorted list when they mix versions)."""
    found = sorted({int(r["question_version"]) for r in records if "question_version" in r})
    return found[0] if len(found) == 1 else (found or None)


def infrastructure_failures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Episodes that ended by an infrastructure failure (not answers): count, by outcome, and
    the first few distinct errors."""
    failed = [r for r in records if is_infra_failure(r)]
    errors: list[str] = []
    for r in failed:
        text = str(r.get("error") or r.get("outcome"))[:300]
        if text not in errors and len(errors) < 3:
            errors.append(text)
    return {
        "n": len(failed),
        "by_outcome": dict(sorted(Counter(str(r.get("outcome")) for r in failed).items())),
        "errors": errors,
    }


def episode_metrics(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Means of the envs' per-episode metrics (``episode_metrics`` of the records), overall
    and by question type: ``{"overall": {name: mean}, "by_type": {type: {name: mean}}}``
    (empty when no record has any)."""

    def means(group: list[dict[str, Any]]) -> dict[str, float]:
        values: dict[str, list[float]] = {}
        for r in group:
            for name, value in (r.get("episode_metrics") or {}).items():
                if isinstance(value, int | float) and math.isfinite(value):
                    values.setdefault(name, []).append(float(value))
        return {name: sum(v) / len(v) for name, v in sorted(values.items())}

    if not any(r.get("episode_metrics") for r in records):
        return {}
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_type.setdefault(str(r.get("type") or UNKNOWN), []).append(r)
    return {"overall": means(records),
            "by_type": {t: means(g) for t, g in sorted(by_type.items())}}  # fmt: skip


def summarize(records: list[dict[str, Any]], run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-able summary of a run's records (``run``, the run.json dict, echoed).

    One record per episode counts (the last written: a resumed run retries infrastructure
    failures). Infrastructure failures (``backend_error``, ``sandbox_error``, ``policy_error``)
    are not answers: they are counted apart (``infrastructure_failures``) and every other
    figure, accuracy included, is over the episodes that were played (``n``); ``episodes`` is
    both together.
    """
    records = latest_records(records)
    infra = infrastructure_failures(records)
    episodes = len(records)
    outcomes = dict(sorted(Counter(str(r.get("outcome")) for r in records).items()))
    records = [r for r in records if not is_infra_failure(r)]
    n = len(records)
    correct = [bool(r.get("correct")) for r in records]
    tool_calls = [tool_call_count(r) for r in records]
    tokens = [total_tokens(r) for r in records]
    steps = [_int(r.get("steps")) for r in records]
    failures = [_int(r.get("parse_failures")) for r in records]
    with_evidence = [r for r in records if r.get("evidence")]
    evidence_used = sum(1 for r in with_evidence if r.get("evidence_used") is True)
    calls_by_name = Counter(
        str(call.get("name"))
        for r in records
        for call in (r.get("tool_calls") or [])
        if isinstance(call, dict)
    )
    return {
        **proportion(sum(correct), n),
        "episodes": episodes,
        "infrastructure_failures": infra,
        "confidence": CONFIDENCE,
        "question_version": _versions(records),
        "by_type": _grouped(records, "type"),
        "by_family": _grouped(records, "family"),
        "unanswerable_detection": unanswerable_detection(records),
        "per_question": {
            "prompt_tokens": _mean([_int(r.get("prompt_tokens")) for r in records]),
            "completion_tokens": _mean([_int(r.get("completion_tokens")) for r in records]),
            "total_tokens": _mean(tokens),
            "tool_calls": _mean(tool_calls),
            "model_calls": _mean([_int(r.get("model_calls")) for r in records]),
            "steps": _mean(steps),
            "wall_s": _mean([_float(r.get("wall_s")) for r in records]),
            "reward": _mean([_float(r.get("reward")) for r in records]),
        },
        "tool_calls_by_name": dict(sorted(calls_by_name.items())),
        "episode_metrics": episode_metrics(records),
        "parse_failures": {
            "failures": sum(failures),
            "steps": sum(steps),
            "step_rate": _ratio(sum(failures), sum(steps)),
            "episodes": sum(1 for f in failures if f > 0),
            "episode_rate": _ratio(sum(1 for f in failures if f > 0), n),
        },
        "evidence": {
            "n": len(with_evidence),
            "used": evidence_used,
            "rate": _ratio(evidence_used, len(with_evidence)),
        },
        "outcomes": outcomes,  # over all episodes, infrastructure failures included
        "backend_errors": infra["by_outcome"].get(BACKEND_ERROR, 0),
        "by_tool_calls": bucketed_accuracy(tool_calls, correct, TOOL_CALL_EDGES),
        "tokens_recorded": any(tokens),
        "by_tokens": (
            bucketed_accuracy(tokens, correct, token_edges(max(tokens)), _kilo, discrete=False)
            if any(tokens)
            else []
        ),
        "run": dict(run or {}),
    }
