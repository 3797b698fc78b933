"""Discovery truth: inputs from the compiler's AST, relations from the program, detectability
recomputed independently from the served files."""

from __future__ import annotations

import ast
from functools import cache

import numpy as np
import pandas as pd
import pytest
from conftest import served_rows
from scipy import stats

from isg_gym.discovery import compute_truth, discovery_world
from isg_gym.discovery.program import Program
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec
from isg_gym.spec.expressions import CONSTANTS, FUNCTIONS
from isg_gym.spec.models import DependentColumn, Spec

SEEDS = (4, 8, 10)  # small repositories (15-18 files); 10 is counterfactual


@cache
def world(seed: int):
    return discovery_world(seed)


def _ast_names(expression: str) -> set[str]:
    """Variable names an expression reads, from its syntax tree (an independent walk)."""
    tree = ast.parse(expression, mode="eval")
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name)}  # fmt: skip
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called - set(CONSTANTS)


@pytest.mark.parametrize("seed", [0, 2, 3, 4])
def test_inputs_are_the_transitive_names_of_the_expressions(seed):
    spec = build_spec(seed)
    program = Program(spec)
    closure: dict[str, set[str]] = {}
    for col in spec.columns:
        if isinstance(col, DependentColumn):
            names = _ast_names(col.expression)
            assert not names & FUNCTIONS
            for name in list(names):
                names |= closure.get(name, set())
            closure[col.name] = names
    assert {k: set(v) for k, v in program.inputs.items()} == closure


def _variant(expressions: dict[str, str]) -> Spec:
    """Seed 0's Spec with the given dependent expressions (known truths)."""
    data = build_spec(0).model_dump()
    for col in data["columns"]:
        if col["name"] in expressions:
            col["expression"] = expressions[col["name"]]
    return Spec.model_validate(data)


@cache
def _known_truth():
    spec = _variant({
        "control_efficacy": "50 + 10*((mean_temp - 22)/5)",
        "phytotoxicity": "10 + 3*((mean_temp - 22)/5)**2 + 0*mulch_biomass",
        "relative_yield": "77 - 2*control_efficacy + 4*(product == 'tankmix')",
        "resistance_status": "cut(0.5 + 0.3*((rain_after_spray - 3)/3)"
                             "*((mulch_biomass - 2.5)/1.3),"
                             " [0.4, 0.6], ['susceptible', 'reduced', 'resistant'])",
    })  # fmt: skip
    return compute_truth(Repository(spec))


@pytest.mark.parametrize(
    ("outcome", "factor", "relation", "enters"),
    [
        ("control_efficacy", "mean_temp", "increases", True),
        ("control_efficacy", "rain_after_spray", "no effect", False),
        ("phytotoxicity", "mean_temp", "depends on", True),  # an optimum inside the range
        ("phytotoxicity", "mulch_biomass", "no effect", True),  # enters, but flat
        ("relative_yield", "control_efficacy", "decreases", True),
        ("relative_yield", "mean_temp", "decreases", True),  # through control_efficacy
        ("relative_yield", "product", "depends on", True),  # categorical: no direction
        ("relative_yield", "phytotoxicity", "no effect", False),
        ("control_efficacy", "relative_yield", "no effect", False),  # a descendant
        ("resistance_status", "rain_after_spray", "depends on", True),  # sign-changing product
        ("resistance_status", "mean_temp", "no effect", False),
    ],
)
def test_relations_of_a_known_program(outcome, factor, relation, enters):
    pair = _known_truth().pairs[outcome, factor]
    assert (pair.relation, pair.enters) == (relation, enters)
    assert pair.directional == (outcome != "resistance_status" and factor != "product")


def test_relation_within_a_scope():
    truth = _known_truth()
    # product is a path variable of seed 0: within one product the level effect is gone, the
    # mean_temp effect stays
    assert truth.relation("relative_yield", "mean_temp", {"product": ("tankmix",)}) == "decreases"
    assert truth.relation("relative_yield", "product", {"product": ("tankmix",)}) is None
    assert truth.relation("relative_yield", "mean_temp", {"product": ("nothing",)}) is None


@pytest.mark.parametrize("seed", SEEDS)
def test_no_effect_where_the_factor_does_not_enter(seed):
    truth = world(seed).truth
    for pair in truth.pairs.values():
        if not pair.enters:
            assert pair.relation == "no effect" and not pair.detectable
        if pair.detectable:
            assert pair.effect and pair.enters
    assert 0 < len(truth.effects(detectable_only=True)) <= len(truth.effects())


def _independent_p(x: pd.Series, y: pd.Series, nx: bool, ny: bool, relation: str):
    """(p, sign) by other tests: Kendall's tau (and one-way ANOVA across quintile bins for a
    non-monotone effect), ANOVA across levels or labels, the G-test."""
    keep = x.notna() & y.notna()
    x, y = x[keep], y[keep]
    if nx and ny:
        a, b = pd.to_numeric(x).to_numpy(float), pd.to_numeric(y).to_numpy(float)
        tau = stats.kendalltau(a, b)
        if relation != "depends on":
            return tau.pvalue, np.sign(tau.statistic)
        bins = pd.qcut(pd.Series(a).rank(method="first"), 5, labels=False).to_numpy()
        anova = stats.f_oneway(*[b[bins == k] for k in range(5)])
        return min(tau.pvalue, anova.pvalue), 0.0
    if ny or nx:
        values, groups = (y, x) if ny else (x, y)
        parts = [pd.to_numeric(g).to_numpy(float) for _, g in values.groupby(groups.astype(str))]
        return stats.f_oneway(*parts).pvalue, 0.0
    table = pd.crosstab(x.astype(str), y.astype(str))
    return stats.chi2_contingency(table, correction=False, lambda_="log-likelihood").pvalue, 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_detectability_agrees_with_an_independent_recomputation(seed):
    w = world(seed)
    truth, rows = w.truth, served_rows(w.repo)
    clear = 0
    for pair in truth.effects():
        fvar, yvar = truth.variables[pair.factor], truth.variables[pair.outcome]
        p, sign = _independent_p(rows[pair.factor], rows[pair.outcome], fvar.numeric,
                                 yvar.numeric, pair.relation)  # fmt: skip
        if pair.directional and pair.relation in ("increases", "decreases"):
            want = 1.0 if pair.relation == "increases" else -1.0
            if p < 1e-6 and sign == want:
                assert pair.detectable, pair
                clear += 1
            elif p > 0.1 or (p < 1e-6 and sign == -want):
                assert not pair.detectable, pair
        elif p < 1e-6:
            assert pair.detectable, pair
            clear += 1
        elif p > 0.1:
            assert not pair.detectable, pair
    assert clear >= 2  # the check is not vacuous
