"""The directional hypothesis a Discovery story states, and the counterfactual program.

Every Discovery repository's story states one directional hypothesis, "``outcome`` increases
(decreases) with ``factor``", about a pair the program makes monotone: a numeric outcome and a
numeric input (a recorded column or a numeric path variable) that enters the outcome's
expression only through its own additive terms (no interaction, not through another dependent),
whose sum is monotone over the input's range and moves the outcome by at least
:data:`MIN_EFFECT` noise standard deviations. The story's own focus and factor are taken when
they qualify, else the candidate with the largest effect.

In a counterfactual repository the program's terms of that factor are negated (a pure
transformation of the Spec's expression, through its ``ast``), so that the data contradict the
hypothesis the README states; the stated direction is always the original program's, so the
text of a counterfactual story is the text of its factual twin.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from isg_gym.discovery.program import Program
from isg_gym.seeding import derive
from isg_gym.spec.expressions import compile_expression
from isg_gym.spec.models import ContinuousColumn, IntegerColumn, Spec
from isg_gym.syntax import parse as parse_python

MIN_EFFECT = 1.0  # the hypothesis effect spans at least this many noise standard deviations
AGAINST_SHARE = 0.05  # as in :mod:`isg_gym.discovery.truth`
GRID_SAMPLE = 4000
OPPOSITE = {"increases": "decreases", "decreases": "increases"}


@dataclass(frozen=True)
class Hypothesis:
    """What the story states (``stated``) about ``outcome`` and ``factor``; in a
    ``counterfactual`` repository the program does the opposite."""

    outcome: str
    factor: str
    stated: str  # "increases" | "decreases"
    counterfactual: bool
    effect: float  # span of the factor's terms over its range, in noise standard deviations

    @property
    def program(self) -> str:
        """The direction the program gives the pair."""
        return OPPOSITE[self.stated] if self.counterfactual else self.stated


def signed_terms(node: ast.AST, sign: int = 1) -> list[tuple[int, ast.AST]]:
    """The additive terms of an expression, each with its sign (``a - (b + c)`` gives
    ``+a, -b, -c``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        right = sign if isinstance(node.op, ast.Add) else -sign
        return signed_terms(node.left, sign) + signed_terms(node.right, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return signed_terms(node.operand, -sign)
    return [(sign, node)]


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _sum(terms: list[tuple[int, ast.AST]]) -> ast.AST:
    if not terms:
        return ast.Constant(0.0)
    sign, first = terms[0]
    out: ast.AST = first if sign > 0 else ast.UnaryOp(ast.USub(), first)
    for sign, term in terms[1:]:
        out = ast.BinOp(out, ast.Add() if sign > 0 else ast.Sub(), term)
    return out


def negate_terms(expression: str, factor: str) -> str:
    """``expression`` with the sign of every additive term that reads ``factor`` flipped."""
    terms = signed_terms(parse_python(expression.strip(), mode="eval").body)
    flipped = [(-s if factor in _names(t) else s, t) for s, t in terms]
    return ast.unparse(ast.fix_missing_locations(_sum(flipped)))


def factor_terms(expression: str, factor: str) -> str | None:
    """The sum of the additive terms that read ``factor``, when each reads nothing else."""
    terms = signed_terms(parse_python(expression.strip(), mode="eval").body)
    mine = [(s, t) for s, t in terms if factor in _names(t)]
    if not mine or any(_names(t) != {factor} for _, t in mine):
        return None
    return ast.unparse(ast.fix_missing_locations(_sum(mine)))


def _factor_grid(spec: Spec, factor: str) -> np.ndarray | None:
    """Values spanning the factor's range: a numeric path variable's values, or the 1st-99th
    percentiles of a numeric column's distribution (a fixed sample)."""
    for pv in spec.path_variables:
        if pv.name == factor:
            return np.array(sorted(float(v) for v in pv.values)) if pv.kind == "numeric" else None
    col = spec.column(factor)
    if not isinstance(col, IntegerColumn | ContinuousColumn):
        return None
    x = col.distribution.sample(derive(spec.seed, "discovery-hypothesis-grid", factor), GRID_SAMPLE)
    if isinstance(col, ContinuousColumn) and col.clip is not None:
        x = np.clip(x, col.clip[0], col.clip[1])
    return np.unique(np.quantile(x.astype(float), np.linspace(0.01, 0.99, 25)))


def _direction(curve: np.ndarray) -> str | None:
    steps = np.diff(curve)
    rise, fall = float(steps[steps > 0].sum()), float(-steps[steps < 0].sum())
    if not np.isfinite(rise + fall) or rise + fall <= 0:
        return None
    if fall <= AGAINST_SHARE * (rise + fall):
        return "increases"
    if rise <= AGAINST_SHARE * (rise + fall):
        return "decreases"
    return None


def candidates(spec: Spec, program: Program | None = None) -> list[Hypothesis]:
    """Every pair that could carry the hypothesis (module docstring), in column order."""
    program = program or Program(spec)
    kinds = spec.expression_kinds()
    out = []
    for dep in program.dependents:
        if program.expressions[dep.name].kind != "numeric":
            continue
        direct = program.direct_inputs(dep.name)
        via_dependents = set().union(
            *(program.inputs[n] for n in direct if n in program.inputs)
        )  # fmt: skip
        for factor in sorted(direct, key=list(program.variables).index):
            var = program.variables[factor]
            if var.outcome or not var.numeric or factor in via_dependents:
                continue
            source = factor_terms(dep.expression, factor)
            grid = _factor_grid(spec, factor)
            if source is None or grid is None or len(grid) < 2:
                continue
            curve = compile_expression(source, kinds).evaluate({factor: grid}, len(grid))
            stated = _direction(curve)
            span = float(np.nanmax(curve) - np.nanmin(curve))
            effect = span / dep.noise_sd if dep.noise_sd > 0 else float("inf")
            if stated is not None and effect >= MIN_EFFECT:
                out.append(Hypothesis(dep.name, factor, stated, False, effect))
    return out


def choose(spec: Spec) -> Hypothesis | None:
    """The hypothesis pair: among the candidates whose outcome and factor labels both occur in
    the story's description (the story's own focus and factor, when they qualify), else among
    all, the one with the largest effect; None when no pair qualifies."""
    found = candidates(spec)
    if not found:
        return None
    program_vars = Program(spec).variables
    text = spec.story.description.lower()
    told = [h for h in found
            if program_vars[h.outcome].label.lower() in text
            and program_vars[h.factor].label.lower() in text]  # fmt: skip
    return max(told or found, key=lambda h: h.effect)
