"""Discovery claims, evidence and scores: parsing survives malformed input, evidence credit is
refused for uncited, failed and unrelated calls, the oracle's report scores 1.0."""

from __future__ import annotations

import contextlib
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isg_gym.discovery import (
    ClaimError,
    Resolver,
    discovery_world,
    findings_in_text,
    parse_findings,
    score,
)
from isg_gym.discovery.evidence import CallRecord, check, code_words
from isg_gym.discovery.scoring import WEIGHTS

SEEDS = (4, 8, 10, 30)  # small repositories; 10 and 30 are counterfactual


@cache
def world(seed: int):
    return discovery_world(seed)


def _all_names_code(w) -> str:
    names = sorted(w.truth.variables)
    return f"import json\nNAMES = json.loads({names!r})\nprint(len(NAMES))\n"


def oracle_report(w) -> tuple[list[dict[str, Any]], dict[int, CallRecord]]:
    """The answer key's detectable effects and unrecorded flags, citing one good call."""
    truth = w.truth
    claims = [{"outcome": p.outcome, "factor": p.factor, "relation": p.relation,
               "evidence": [1]} for p in truth.effects(detectable_only=True)]  # fmt: skip
    claims += [{"factor": label, "relation": "untestable"} for label in truth.unrecorded.values()]
    calls = {1: CallRecord(1, _all_names_code(w), True, tuple(w.repo.data_files))}
    return claims, calls


def grade(w, claims, calls):
    resolved = Resolver(w.spec).resolve_all(parse_findings(claims))
    return score(resolved, w.truth, calls, w.files_in, w.hypothesis)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_oracle_report_scores_one_and_an_empty_one_zero(seed):
    w = world(seed)
    result = grade(w, *oracle_report(w))
    assert result.reward == 1.0, result.explanation()
    assert result.precision == result.recall == result.f1_raw == 1.0
    assert result.followed_data and result.counterfactual == w.hypothesis.counterfactual
    assert result.followed_story != w.hypothesis.counterfactual
    empty = grade(w, [], {})
    assert empty.reward == 0.0 and empty.recall == 0.0
    assert "precision" not in empty.metrics()


def test_weights_and_breakdown():
    assert sum(WEIGHTS.values()) == pytest.approx(1.0)
    w = world(8)
    result = grade(w, *oracle_report(w))
    breakdown = result.truthinsight()
    assert breakdown["evidence_auditability"]["value"] == 1.0
    assert breakdown["novelty"]["value"] is None and breakdown["novelty"]["maps_to"] is None
    assert breakdown["cross_dataset_generalisation"]["maps_to"] is None
    assert sum(d["weight"] for d in breakdown.values()) == 100


def test_wrong_direction_no_effect_and_unrecorded_claims():
    w = world(8)
    claims, calls = oracle_report(w)
    effect = next(p for p in w.truth.effects(True) if p.directional and p.relation != "depends on")
    flipped = {"increases": "decreases", "decreases": "increases"}[effect.relation]
    wrong = [dict(c, relation=flipped) if (c.get("outcome"), c["factor"]) == (effect.outcome,
             effect.factor) else c for c in claims]  # fmt: skip
    result = grade(w, wrong, calls)
    assert result.recall < 1.0 and result.precision < 1.0 and result.reward < 1.0
    # a right "no effect" claim is neutral; a wrong one counts against precision
    null = next(p for p in w.truth.pairs.values() if not p.enters)
    right_null = grade(w, [*claims, {"outcome": null.outcome, "factor": null.factor,
                                     "relation": "no effect", "evidence": [1]}], calls)  # fmt: skip
    assert right_null.reward == 1.0 and right_null.precision == 1.0
    wrong_null = grade(w, [*claims, {"outcome": effect.outcome, "factor": effect.factor,
                                     "relation": "no effect", "evidence": [1]}], calls)  # fmt: skip
    assert wrong_null.precision < 1.0
    # asserting an effect of an unrecorded variable is not flagging it
    name, label = next(iter(w.truth.unrecorded.items()))
    asserted = [c for c in claims if c["factor"] != label]
    asserted.append({"outcome": effect.outcome, "factor": name, "relation": "increases"})
    result = grade(w, asserted, calls)
    assert result.components["unrecorded"] < 1.0
    # flagging a recorded variable untestable costs too
    result = grade(w, [*claims, {"factor": effect.factor, "relation": "untestable"}], calls)
    assert result.components["unrecorded"] < 1.0


def test_scoped_claims_are_judged_within_their_scope():
    w = world(8)
    path = next(v for v in w.spec.path_variables if v.kind != "sequence")
    effect = next(p for p in w.truth.effects(True) if p.factor != path.name)
    value = path.values[0]
    within = w.truth.relation(effect.outcome, effect.factor, {path.name: (value,)})
    scoped = {"outcome": effect.outcome, "factor": effect.factor, "relation": within,
              "scope": {path.name: value}, "evidence": [1]}  # fmt: skip
    calls = {1: CallRecord(1, _all_names_code(w), True, tuple(w.files_in({path.name: (value,)})))}
    result = grade(w, [scoped], calls)
    assert result.components["robustness"] == 1.0
    assert result.verdicts[0].credited  # the files in scope were read
    other = {"increases": "decreases", "decreases": "increases", "depends on": "no effect",
             "no effect": "increases"}[within]  # fmt: skip
    result = grade(w, [dict(scoped, relation=other)], calls)
    assert result.components["robustness"] == 0.0


def test_evidence_credit_is_refused_for_uncited_failed_and_unrelated_calls():
    w = world(8)
    effect = w.truth.effects(True)[0]
    variables = [w.truth.variables[effect.outcome], w.truth.variables[effect.factor]]
    files = w.files_in({})
    code = f"df[{effect.outcome!r}].corr(df[{effect.factor!r}])"
    good = CallRecord(1, code, True, tuple(files))
    assert check([1], {1: good}, variables, files) == (True, "")
    assert not check([], {1: good}, variables, files)[0]  # uncited
    assert not check([7], {1: good}, variables, files)[0]  # no such call
    failed = CallRecord(1, code, False, tuple(files))
    assert not check([1], {1: failed}, variables, files)[0]
    unread = CallRecord(1, code, True, tuple(files[:1]))
    assert "read 1 of" in check([1], {1: unread}, variables, files)[1]
    unrelated = CallRecord(1, "print(df.describe())", True, tuple(files))
    assert "do not use" in check([1], {1: unrelated}, variables, files)[1]
    # a name in a comment or a variable name is not a use; a string constant or attribute is
    assert effect.outcome not in code_words(f"# {effect.outcome}\n{effect.outcome} = 1")
    assert effect.outcome in code_words(f"df.{effect.outcome}.mean()")
    assert effect.outcome in code_words(f"smf.ols('{effect.outcome} ~ x', df)")
    assert code_words("this is not python (") == frozenset()


@pytest.mark.parametrize(
    ("findings", "message"),
    [
        ("nonsense", "not JSON"),
        (42, "must be a list"),
        ([1, 2], "must be an object"),
        ([{"factor": "x"}], "relation"),
        ([{"outcome": "a", "factor": "b", "relation": "bigger"}], "not one of"),
        ([{"outcome": "a", "factor": "b", "relation": "increases", "extra": 1}], "extra"),
        ([{"outcome": "a", "factor": "b", "relation": "increases", "evidence": "x"}], "evidence"),
        ([{"outcome": "a", "factor": "b", "relation": "increases", "scope": 3}], "scope"),
        ([{}] * 400, "too many"),
    ],
)
def test_malformed_findings_are_claim_errors(findings, message):
    with pytest.raises(ClaimError, match=message) as info:
        parse_findings(findings)
    assert '"relation": "increases"' in str(info.value)  # the schema is restated


def test_names_values_and_scopes_resolve_or_fail_clearly():
    w = world(8)
    resolver = Resolver(w.spec)
    outcome = w.outcomes[0]
    path = w.spec.path_variables[0]
    label = w.truth.variables[outcome].label
    ok = resolver.resolve_all(parse_findings([
        {"outcome": label.upper(), "factor": path.short, "relation": "Depends_On",
         "scope": {}, "evidence": ["1"]},
    ]))  # fmt: skip
    assert (ok[0].outcome, ok[0].factor, ok[0].relation, ok[0].evidence) == (
        outcome, path.name, "depends on", [1])  # fmt: skip
    bad = [
        ({"outcome": "nope", "factor": path.name, "relation": "increases"}, "unknown outcome"),
        ({"outcome": outcome, "factor": "nope", "relation": "increases"}, "unknown factor"),
        ({"factor": path.name, "relation": "increases"}, "outcome"),
        ({"outcome": outcome, "factor": outcome, "relation": "increases"}, "same variable"),
        (
            {
                "outcome": outcome,
                "factor": path.name,
                "relation": "increases",
                "scope": {"nope": "1"},
            },
            "not a path variable",
        ),
        (
            {
                "outcome": outcome,
                "factor": path.name,
                "relation": "increases",
                "scope": {path.name: path.values[0]},
            },
            "cannot fix",
        ),
    ]
    other = w.spec.path_variables[1]
    bad.append(({"outcome": outcome, "factor": path.name, "relation": "increases",
                 "scope": {other.name: "no-such-value"}}, "has no value"))  # fmt: skip
    for claim, message in bad:
        with pytest.raises(ClaimError, match=message):
            resolver.resolve_all(parse_findings([claim]))


def test_findings_in_a_final_message():
    text = 'Done.\n```json\n[{"outcome": "a", "factor": "b", "relation": "increases"}]\n```'
    assert findings_in_text(text)[0]["factor"] == "b"
    assert findings_in_text('{"findings": []}') == {"findings": []}
    with pytest.raises(ClaimError):
        findings_in_text("I found that a increases with b.")


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_parsing_never_raises_anything_but_claim_errors(value):
    resolver = Resolver(world(8).spec)
    for candidate in (value, [value], {"findings": value}):
        with contextlib.suppress(ClaimError):
            resolver.resolve_all(parse_findings(candidate))
