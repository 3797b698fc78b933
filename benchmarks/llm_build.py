"""Figures of an LLM build, and a stub server to check the build pipeline without a GPU.

    python benchmarks/llm_build.py report DIR [--model M]
        built / failed (by stage and check), model calls, tokens and seconds per seed, and
        diversity (distinct titles, subdomains, variable names, expression forms) of the
        built Specs, beside the procedural builder's on the same seeds.
    python benchmarks/llm_build.py stub-server [--port 8000] [--faults N]
        a scripted OpenAI-compatible server (tests/fake_openai_server.py) answering every
        stage validly (tests/llm_designer.py), the first N design and dependents replies
        faulty (invalid JSON, a constant outcome) so retries show; runs until killed.

``benchmarks/vllm_build.sh`` runs both around ``isg build``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = (
    "exp",
    "log",
    "sqrt",
    "abs",
    "tanh",
    "sin",
    "cos",
    "min",
    "max",
    "clip",
    "where",
    "cut",
)


def _records(directory: str, model: str | None) -> list[dict[str, Any]]:
    from isg_gym.simulator.cache import SpecCache, SpecCacheError

    cache = SpecCache(directory)
    entries = [
        e
        for e in cache.entries()
        if e.key.builder.startswith("llm") and (model is None or e.key.model == model)
    ]
    builds = {e.key.build for e in entries}
    if len(builds) > 1:
        raise SpecCacheError(f"{directory} holds several LLM builds {sorted(builds)}: --model")
    return [cache.read(e) for e in entries]


def _diversity(specs: list[Any]) -> dict[str, Any]:
    titles = [s.story.title.strip().lower() for s in specs]
    variables = {c.name for s in specs for c in s.columns[2:]}
    variables |= {p.name for s in specs for p in s.path_variables}
    deps = [c for s in specs for c in s.columns if c.role == "dependent"]
    forms = Counter(f for c in deps for f in FUNCTIONS if re.search(rf"\b{f}\(", c.expression))
    return {
        "repositories": len(specs),
        "distinct_titles": len(set(titles)),
        "distinct_title_share": round(len(set(titles)) / max(len(titles), 1), 3),
        "distinct_subdomains": len({s.taxonomy.subdomain for s in specs}),
        "distinct_variable_names": len(variables),
        "columns_per_repository": round(mean(len(s.columns) for s in specs), 2) if specs else 0,
        "dependents_per_repository": round(len(deps) / max(len(specs), 1), 2),
        "dependents_using": {f: round(n / max(len(deps), 1), 3) for f, n in forms.most_common()},
        "linear_only_dependents": round(
            sum(not any(re.search(rf"\b{f}\(", c.expression) for f in FUNCTIONS) for c in deps)
            / max(len(deps), 1),
            3,
        ),
    }


def report(directory: str, model: str | None) -> dict[str, Any]:
    from isg_gym.simulator.procedural import build_spec
    from isg_gym.spec.models import Spec

    records = _records(directory, model)
    built = [r for r in records if r["status"] == "built"]
    failed = [r for r in records if r["status"] == "failed"]
    failures = Counter(f"{r['failure']['stage']}/{r['failure']['kind']}" for r in failed)
    rejected: Counter = Counter()
    for r in records:
        for stage, rec in (r["stats"].get("stages") or {}).items():
            for kind, n in rec.get("rejected", {}).items():
                rejected[f"{stage}/{kind}"] += n
    stats = [r["stats"] for r in records]
    per_seed = {
        key: round(mean(s.get(key, 0) for s in stats), 1) if stats else 0
        for key in ("calls", "prompt_tokens", "completion_tokens", "seconds")
    }
    specs = [Spec.model_validate(r["spec"]) for r in built]
    seeds = [r["key"]["seed"] for r in records]
    return {
        "cache": directory,
        "model": records[0]["key"]["model"] if records else model,
        "seeds": len(records),
        "built": len(built),
        "failed": len(failed),
        "failure_rate": round(len(failed) / max(len(records), 1), 4),
        "failures": dict(failures.most_common()),
        "rejected_replies": dict(rejected.most_common()),
        "per_seed_mean": per_seed,
        "llm": _diversity(specs),
        "procedural_same_seeds": _diversity([build_spec(s) for s in seeds]),
    }


def stub_server(port: int, faults: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from fake_openai_server import ScriptedChatServer
    from llm_designer import ScriptedDesigner

    def constant(valid: dict[str, Any], prompt: str) -> str:
        return json.dumps(
            {"dependents": [{**d, "expression": "5", "noise_sd": 0} for d in valid["dependents"]]}
        )

    designer = ScriptedDesigner(
        {"design": ["not JSON"] * faults, "dependents": [constant] * faults}
    )
    server = ScriptedChatServer(designer, port=port).start()
    print(f"stub server at {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="figures of an LLM build in a spec cache")
    r.add_argument("cache", metavar="DIR")
    r.add_argument("--model", default=None)
    r.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    s = sub.add_parser("stub-server", help="a scripted OpenAI server for --stub runs")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--faults", type=int, default=0, metavar="N")
    args = p.parse_args()
    if args.command == "stub-server":
        stub_server(args.port, args.faults)
        return
    figures = report(args.cache, args.model)
    if args.json:
        print(json.dumps(figures, sort_keys=True))
        return
    for key, value in figures.items():
        print(f"{key:<22} {json.dumps(value) if isinstance(value, dict) else value}")


if __name__ == "__main__":
    main()
