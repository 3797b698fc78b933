"""Discovery repositories: the stated hypothesis, counterfactual programs that contradict it,
ISG-v0 untouched, the splits."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from isg_gym.discovery import NotADiscoveryRepository, discovery_world
from isg_gym.discovery.hypothesis import factor_terms, negate_terms
from isg_gym.discovery.splits import SPLITS, generate, question_id, question_seed, resolve_split
from isg_gym.discovery.world import hypothesis_sentence, is_counterfactual
from isg_gym.eval.policies.discovery import parse_readme
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec
from isg_gym.spec.expressions import compile_expression

FACTUAL, COUNTERFACTUAL = (4, 8), (10, 30)


@cache
def twins(seed: int):
    """The seed's Discovery repository with and without the counterfactual program."""
    return discovery_world(seed, 0.0), discovery_world(seed, 1.0)


@pytest.mark.parametrize("seed", FACTUAL + COUNTERFACTUAL)
def test_the_story_states_the_hypothesis_and_the_program_agrees_or_contradicts(seed):
    world = discovery_world(seed)
    hyp = world.hypothesis
    assert hyp.counterfactual == (seed in COUNTERFACTUAL) == is_counterfactual(seed)
    readme = world.repo.readme
    sentence = hypothesis_sentence(build_spec(seed), hyp)
    assert sentence in readme.split("## Abstract", 1)[1].split("## Layout")[0]
    words = {"increases": (" increases with ", " leads to higher ", " to rise as "),
             "decreases": (" decreases with ", " leads to lower ", " to fall as ")}  # fmt: skip
    stated = [d for d, phrases in words.items() if any(p in sentence for p in phrases)]
    assert stated == [hyp.stated], sentence
    pair = world.truth.pairs[hyp.outcome, hyp.factor]
    assert pair.detectable and pair.directional
    if hyp.counterfactual:  # the stated contradiction: the program goes the other way
        assert pair.relation != hyp.stated and pair.relation == hyp.program
    else:
        assert pair.relation == hyp.stated == hyp.program
    for label in world.truth.unrecorded.values():
        assert label in readme


@pytest.mark.parametrize("seed", [8, 10])
def test_twins_share_their_text_and_differ_only_downstream_of_the_flipped_term(seed):
    factual, counter = twins(seed)
    assert factual.repo.readme == counter.repo.readme  # the text does not tell
    assert factual.repo.data_files == counter.repo.data_files
    assert len({factual.repo.key, counter.repo.key, Repository.from_seed(seed).key}) == 3
    outcome = factual.hypothesis.outcome
    changed = {outcome} | {d for d, inputs in factual.truth.program.inputs.items()
                           if outcome in inputs}  # fmt: skip
    path = factual.repo.data_files[0]
    a, b = factual.repo.table(path), counter.repo.table(path)
    for column in a.columns:
        same = a[column].equals(b[column])
        assert same == (column not in changed), column
    assert factual.truth.pairs[outcome, factual.hypothesis.factor].relation == (
        factual.hypothesis.stated)  # fmt: skip
    assert counter.truth.pairs[outcome, counter.hypothesis.factor].relation != (
        counter.hypothesis.stated)  # fmt: skip


def test_negating_a_factor_terms_flips_exactly_them():
    spec = build_spec(0)
    source = spec.column("phytotoxicity").expression
    kinds = spec.expression_kinds()
    rng = np.random.default_rng(0)
    env = {"mean_temp": rng.uniform(10, 35, 50),
           "product": rng.choice(["untreated", "tankmix"], 50).astype(object)}  # fmt: skip
    before = compile_expression(source, kinds).evaluate(env, 50)
    after = compile_expression(negate_terms(source, "mean_temp"), kinds).evaluate(env, 50)
    term = compile_expression(factor_terms(source, "mean_temp"), kinds).evaluate(env, 50)
    np.testing.assert_allclose(after, before - 2 * term, rtol=1e-12, atol=1e-9)
    assert factor_terms(source, "nothing") is None


def test_isg_v0_is_untouched():
    before = build_spec(10).to_json()
    world = discovery_world(10, 1.0)
    assert build_spec(10).to_json() == before
    assert Repository.from_seed(10).key != world.repo.key  # cached and served apart
    assert world.spec.readme.abstract and not build_spec(10).readme.abstract
    assert world.spec.story.abstract.startswith(build_spec(10).story.abstract)
    with pytest.raises(NotADiscoveryRepository, match="no pair"):
        discovery_world(33)


def test_question_ids_and_split_shares():
    assert question_seed(question_id(118)) == 118
    for bad in ("118", "118.discovery.0", "x.discovery", 5):
        with pytest.raises(ValueError, match=r"SEED\.discovery"):
            question_seed(bad)
    ids = resolve_split("discovery-200")
    assert len(ids) == len(set(ids)) == 200
    flags = [is_counterfactual(question_seed(i)) for i in ids]
    assert sum(flags) == 50
    assert max(question_seed(i) for i in ids) < 1000  # the evaluation range, not training
    assert ids == generate(SPLITS["discovery-200"])  # the stored file is the recipe's
    assert resolve_split(ids[:3]) == ids[:3]
    assert resolve_split("repos:30-34") == ["30.discovery", "31.discovery", "32.discovery"]
    with pytest.raises(ValueError, match="unknown split"):
        resolve_split("isg-500")


@pytest.mark.slow
def test_the_held_out_split_matches_its_recipe():
    ids = resolve_split("discovery-test-200")
    assert ids == generate(SPLITS["discovery-test-200"])
    assert min(question_seed(i) for i in ids) >= 2_000_000_000


def test_the_unrecorded_listing_splits_back_into_its_labels():
    # seed 2: one label holds "and" ("sensor and cable mass loading"), which an "a, b and c"
    # listing made ambiguous
    truth = discovery_world(2).truth
    labels = sorted(truth.unrecorded.values())
    assert any(" and " in label for label in labels)
    assert sorted(parse_readme(discovery_world(2).repo.readme).unrecorded) == labels
