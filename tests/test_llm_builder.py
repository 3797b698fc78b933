"""The LLM builder end to end against a scripted OpenAI-protocol server: valid replies, invalid
JSON, schema violations, unsafe expressions, constant and undetectable dependents, retries
with the error fed back, failure records, backend errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import ScriptedChatServer
from llm_designer import STAGE_ORDER, ScriptedDesigner

from isg_gym.eval.backends.openai_compat import OpenAIBackend
from isg_gym.qa import generate_questions
from isg_gym.repository import Repository
from isg_gym.seeding import derive
from isg_gym.simulator.llm import STAGE_NAMES, STAGES, LLMBuilder, backend_ask
from isg_gym.simulator.llm.prompts import SYSTEM
from isg_gym.simulator.procedural import build_spec
from isg_gym.spec.models import DependentColumn, Spec


class Harness:
    """A scripted server, an OpenAI backend on it and an LLM builder."""

    def __init__(self, designer: ScriptedDesigner, max_attempts: int = 3) -> None:
        self.designer = designer
        self.server = ScriptedChatServer(designer, retry_after_ms=1).start()
        self.backend = OpenAIBackend(
            "scripted-model", base_url=self.server.url, max_retries=0, concurrency=2, timeout=30
        )
        self.builder = LLMBuilder(backend_ask(self.backend), "scripted-model", max_attempts)

    def requests(self, stage: str) -> list[dict[str, Any]]:
        return [
            b
            for b in self.server.requests
            if b["response_format"]["json_schema"]["name"].startswith(f"isg_{stage}_")
        ]

    def close(self) -> None:
        self.backend.close()
        self.server.stop()


@pytest.fixture
def harness() -> Iterator[Any]:
    made: list[Harness] = []

    def make(faults: dict[str, list[Any]] | None = None, max_attempts: int = 3) -> Harness:
        made.append(Harness(ScriptedDesigner(faults), max_attempts))
        return made[-1]

    yield make
    for h in made:
        h.close()


def _feedback(request: dict[str, Any]) -> str:
    """The last user message of a request (the rejection text on a retry)."""
    return request["messages"][-1]["content"]


def _dependents(**changes: Any) -> Any:
    """A fault: the valid dependents reply with ``changes`` applied to every outcome."""

    def fault(valid: dict[str, Any], prompt: str) -> str:
        return json.dumps({"dependents": [{**d, **changes} for d in valid["dependents"]]})

    return fault


def test_valid_replies_build_a_spec_through_seven_schema_constrained_stages(harness) -> None:
    h = harness()
    result = h.builder.build(0)
    assert result.status == "built", result.failure
    spec = result.spec
    assert Spec.from_json(spec.to_json()) == spec
    # the seed's own taxonomy triple (the procedural builder's stream)
    assert spec.taxonomy == build_spec(0).taxonomy
    assert spec.archetype == "llm" and spec.seed == 0
    repo = Repository(spec)
    assert len(repo.data_files) >= 4 and len(generate_questions(repo, 6)) >= 4
    # one request per stage, in order, each with the stage's JSON schema as response_format
    names = [b["response_format"]["json_schema"]["name"] for b in h.server.requests]
    assert [n.split("_")[1] for n in names] == list(STAGE_ORDER) == list(STAGE_NAMES)
    for body, stage in zip(h.server.requests, STAGES, strict=True):
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == stage.schema
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert spec.taxonomy.subdomain in body["messages"][1]["content"]
    stats = result.stats
    assert stats["calls"] == 7 and stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert all(s == {"attempts": 1, "rejected": {}} for s in stats["stages"].values())


def test_the_title_is_the_seeds_pick_among_the_candidates(harness) -> None:
    h = harness()
    spec = h.builder.build(5).spec
    reply = json.loads(h.server.responses[0]["choices"][0]["message"]["content"])
    candidates = reply["titles"]
    assert spec.story.title == candidates[derive(5, "llm", "title").integers(len(candidates))]


def test_the_schemas_bound_every_string_and_list() -> None:
    def walk(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            yield node
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    for stage in STAGES:
        for node in walk(stage.schema):
            if node.get("type") == "string" and "enum" not in node and "const" not in node:
                assert "maxLength" in node, (stage.name, node)
            if node.get("type") == "array":
                assert "maxItems" in node, (stage.name, node)


def test_invalid_json_is_retried_with_the_error_fed_back(harness) -> None:
    h = harness({"design": ["Sure! Here is the project description you asked for."]})
    result = h.builder.build(1)
    assert result.status == "built"
    first, second = h.requests("design")
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2] == {
        "role": "assistant",
        "content": "Sure! Here is the project description you asked for.",
    }
    assert "rejected" in _feedback(second) and "not a JSON object" in _feedback(second)
    assert result.stats["stages"]["design"] == {"attempts": 2, "rejected": {"json": 1}}


def test_schema_violations_are_retried_with_the_field_named(harness) -> None:
    def bad_distribution(valid: dict[str, Any], prompt: str) -> str:
        for column in valid["columns"]:
            if column["role"] == "continuous":
                column["distribution"]["sd"] = -3
        return json.dumps(valid)

    h = harness({"columns": [bad_distribution], "paths": ['{"path_variables": "temperature"}']})
    result = h.builder.build(2)
    assert result.status == "built"
    assert "path_variables" in _feedback(h.requests("paths")[1])
    feedback = _feedback(h.requests("columns")[1])
    assert "sd" in feedback and "greater than 0" in feedback
    assert result.stats["stages"]["columns"]["rejected"] == {"schema": 1}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('touch {marker}')", "attribute access"),
        ("__import__('os')", "unknown function '__import__'"),
        ("(1).__class__", "attribute access"),
        ("open('{marker}', 'w')", "unknown function 'open'"),
        ("[x for x in range(3)]", "is not allowed"),
        ("lambda: 1", "lambda"),
    ],
)
def test_unsafe_expressions_are_rejected_and_never_run(
    harness, tmp_path: Path, expression: str, message: str
) -> None:
    marker = tmp_path / "pwned"
    h = harness({"dependents": [_dependents(expression=expression.format(marker=marker))]})
    result = h.builder.build(3)
    assert result.status == "built"  # the retry's valid expressions
    assert not marker.exists()
    feedback = _feedback(h.requests("dependents")[1])
    assert message in feedback
    assert result.stats["stages"]["dependents"]["rejected"] == {"expression": 1}
    for col in result.spec.columns:
        assert "__" not in getattr(col, "expression", "")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"expression": "5", "noise_sd": 0}, "is constant"),
        ({"expression": "5", "noise_sd": 0.0001, "decimals": 1}, "is constant"),
        ({"expression": "log(0 - 1)", "noise_sd": 0.1}, "undefined (NaN"),
        ({"noise_sd": 1000.0, "typical_range": [-5000, 5000]}, "no detectable effect"),
        ({"typical_range": [1000, 1001]}, "outside its typical range"),
    ],
)
def test_simulation_sanity_failures_are_retried(harness, changes, message) -> None:
    h = harness({"dependents": [_dependents(**changes)]})
    result = h.builder.build(4)
    assert result.status == "built"
    assert message in _feedback(h.requests("dependents")[1])
    assert result.stats["stages"]["dependents"]["rejected"] == {"sanity": 1}


def test_a_stage_failing_every_attempt_records_the_seed_as_failed(harness) -> None:
    h = harness({"dependents": ["{}", "no json at all", _dependents(expression="5", noise_sd=0)]})
    result = h.builder.build(6)
    assert result.status == "failed" and result.spec is None
    assert result.failure["stage"] == "dependents"
    assert result.failure["kind"] == "sanity" and "constant" in result.failure["reason"]
    assert result.failure["attempts"] == 3
    assert result.stats["stages"]["dependents"]["rejected"] == {"schema": 1, "json": 1, "sanity": 1}
    assert len(h.server.requests) == 6 + 3


def test_max_attempts_bounds_the_replies_per_stage(harness) -> None:
    h = harness({"titles": ["x"] * 5}, max_attempts=2)
    result = h.builder.build(7)
    assert result.failure == {
        "stage": "titles",
        "kind": "json",
        "attempts": 2,
        "reason": result.failure["reason"],
    }
    assert len(h.server.requests) == 2


def test_a_reply_cut_at_the_token_limit_is_reported_as_truncated(harness) -> None:
    cut = {"content": '{"abstract": "We study', "finish_reason": "length"}
    h = harness({"abstract": [cut]})
    result = h.builder.build(8)
    assert result.status == "built"
    assert result.stats["stages"]["abstract"]["rejected"] == {"truncated": 1}
    assert "token limit" in _feedback(h.requests("abstract")[1])


def test_a_backend_failure_is_an_error_not_a_failed_seed(harness) -> None:
    h = harness({"titles": [{"status": 500, "body": "server on fire"}]})
    result = h.builder.build(9)
    assert result.status == "error"
    assert result.failure["kind"] == "backend" and "500" in result.failure["reason"]


def test_categorical_outcomes_with_cut_and_outcomes_using_later_ones(harness) -> None:
    def fault(valid: dict[str, Any], prompt: str) -> str:
        inputs = json.loads(prompt.split("Inputs (JSON): ")[1].split("\n")[0])
        x = next(n for n, k in inputs.items() if k == "numeric")
        deps = valid["dependents"]
        first, second = deps[0]["name"], deps[1]["name"]
        deps[0]["expression"] = f"2*{second} + 1"  # uses the outcome listed after it
        deps[1]["expression"] = f"cut(log(abs({x}) + 1), [2.5, 3.5], ['low', 'mid', 'high'])"
        deps[0]["typical_range"] = [0, 20]
        del first
        return json.dumps(valid)

    h = harness({"dependents": [fault]})
    result = h.builder.build(10)
    # 2*<a categorical outcome> is a type error, fed back; the retry is valid
    assert result.status == "built"
    assert "categorical variable" in _feedback(h.requests("dependents")[1])

    def fixed(valid: dict[str, Any], prompt: str) -> str:
        inputs = json.loads(prompt.split("Inputs (JSON): ")[1].split("\n")[0])
        x = next(n for n, k in inputs.items() if k == "numeric")
        deps = valid["dependents"]
        deps[0]["expression"] = f"2*{deps[1]['name']} + 1"
        deps[1]["expression"] = f"3 + log(abs({x}) + 1)"
        deps[0]["typical_range"] = [0, 20]
        return json.dumps(valid)

    h = harness({"dependents": [fixed]})
    spec = h.builder.build(10).spec
    deps = [c for c in spec.columns if isinstance(c, DependentColumn)]
    # reordered so that the outcome used comes first
    assert "2*" in deps[1].expression and deps[0].expression.startswith("3 + log")


def test_the_cut_outcome_is_categorical(harness) -> None:
    def fault(valid: dict[str, Any], prompt: str) -> str:
        inputs = json.loads(prompt.split("Inputs (JSON): ")[1].split("\n")[0])
        x = next(n for n, k in inputs.items() if k == "numeric")
        scores = f"log(abs({x}) + 1)"
        valid["dependents"][0]["expression"] = f"cut({scores}, [2.5, 3.9], ['low', 'mid', 'high'])"
        return json.dumps(valid)

    h = harness({"dependents": [fault]})
    result = h.builder.build(11)
    assert result.status == "built", result.failure
    dep = next(c for c in result.spec.columns if isinstance(c, DependentColumn))
    table = Repository(result.spec).table(Repository(result.spec).data_files[0])
    assert set(table[dep.name].dropna()) <= {"low", "mid", "high"} and dep.unit == ""


def test_mechanical_repairs_need_no_retry(harness) -> None:
    def design(valid: dict[str, Any], prompt: str) -> str:
        valid["measured"][0]["name"] = "Leaf Mass (g)"
        return json.dumps(valid)

    def paths(valid: dict[str, Any], prompt: str) -> str:
        for var in valid["path_variables"]:
            var["values"] = [float(v) for v in var["values"]]  # 10.0 -> "10"
        return "Here you go:\n```json\n" + json.dumps(valid) + "\n```"

    def layout(valid: dict[str, Any], prompt: str) -> str:
        valid["levels"] = valid["levels"][:1]  # placeholders left out: put back mechanically
        return json.dumps(valid)

    def columns(valid: dict[str, Any], prompt: str) -> str:
        for col in valid["columns"]:
            if col["role"] == "categorical":
                col["values"] = ["high dose", "low dose", "untreated"]
                col["probabilities"] = [2, 1, 1]
        return json.dumps(valid)

    h = harness({"design": [design], "paths": [paths], "layout": [layout], "columns": [columns]})
    result = h.builder.build(12)
    assert result.status == "built"
    assert all(s["attempts"] == 1 for s in result.stats["stages"].values()), result.stats
    spec = result.spec
    names = [c.name for c in spec.columns] + [u.name for u in spec.unrecorded]
    assert "leaf_mass_g" in names
    assert all("." not in v for p in spec.path_variables if p.kind == "numeric" for v in p.values)
    for col in spec.columns:
        if col.role == "categorical":
            assert col.values == ["highDose", "lowDose", "untreated"]
            assert col.probabilities == [0.5, 0.25, 0.25]


def test_recorded_and_unrecorded_follow_the_seed_and_the_description_names_them(harness) -> None:
    h = harness()
    for seed in (13, 14, 15):
        spec = h.builder.build(seed).spec
        assert spec.unrecorded, "every repository describes something it did not record"
        for var in spec.unrecorded:
            assert var.label in spec.story.description
        assert 7 <= len(spec.columns) <= 19
