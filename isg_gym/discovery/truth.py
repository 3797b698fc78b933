"""Ground truth of a discovery episode, computed from the data-generating program.

For every outcome (dependent column) and every other recorded variable (a column or a path
variable), :func:`compute_truth` says:

- whether the factor **enters** the outcome's program: its expression reads it, directly or
  through other dependents (:attr:`Program.inputs`, from the compiler's AST);
- the **relation** over the observed range, from the program without noise, never from the
  data: the factor is swept over a grid (the 1st-99th percentiles of its observed values in 25
  quantiles; a path variable's or categorical variable's observed values) in each of
  :data:`CONTEXTS` contexts (rows drawn from the served rows, the other inputs at their observed
  values; a dependent factor is pinned and everything downstream recomputed). Summed over the
  contexts, the outcome's rises ``R`` and falls ``F`` along the grid give "increases" when
  ``F <= 5% of R + F``, "decreases" when ``R <= 5% of R + F``, "no effect" when both are nil
  (a factor that does not enter, or one whose effect is flat over the observed range), and
  "depends on" otherwise (non-monotonic, or an interaction whose sign changes across
  contexts). A categorical factor or outcome has no direction: its relation is "depends on"
  when the outcome moves at all (a categorical outcome is judged on the score it is cut from);
- whether the effect is **detectable** in the served rows (:mod:`.detectability`, alpha 0.01):
  only detectable effects count for recall, so a perfect analyst can reach full recall.

Unrecorded variables are those the story names (:attr:`Spec.unrecorded`); they are absent from
the data, and a claim about them is untestable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from isg_gym.discovery.data import pooled_rows
from isg_gym.discovery.detectability import ALPHA, Association, associations, detectable
from isg_gym.discovery.program import Program, Variable
from isg_gym.repository import Repository
from isg_gym.seeding import derive

Relation = Literal["increases", "decreases", "no effect", "depends on"]
RELATIONS: tuple[Relation, ...] = ("increases", "decreases", "no effect", "depends on")
EFFECT_RELATIONS: tuple[Relation, ...] = ("increases", "decreases", "depends on")
CONTEXTS = 64
GRID = 25
QUANTILES = (0.01, 0.99)
AGAINST_SHARE = 0.05  # the most the movement against the direction may be of all movement
Scope = Mapping[str, tuple[str, ...]]  # path variable -> canonical values


@dataclass(frozen=True)
class PairTruth:
    """The truth of one (outcome, factor) pair."""

    outcome: str
    factor: str
    relation: Relation
    directional: bool  # both numeric: the direction of an effect is graded
    enters: bool
    detectable: bool
    tests: tuple[Association, ...] = ()

    @property
    def effect(self) -> bool:
        return self.relation != "no effect"

    def accepts(self, relation: str) -> bool:
        """Whether a claimed relation is right (any effect relation for a pair without a
        direction)."""
        if not self.directional and self.effect:
            return relation in EFFECT_RELATIONS
        return relation == self.relation


@dataclass
class Truth:
    """The answer key of one repository (see the module docstring)."""

    seed: int
    program: Program
    rows: pd.DataFrame = field(repr=False)
    pairs: dict[tuple[str, str], PairTruth]
    unrecorded: dict[str, str]  # name -> label

    @property
    def variables(self) -> dict[str, Variable]:
        return self.program.variables

    @property
    def outcomes(self) -> list[str]:
        return self.program.outcomes

    def effects(self, detectable_only: bool = False) -> list[PairTruth]:
        return [p for p in self.pairs.values()
                if p.effect and (p.detectable or not detectable_only)]  # fmt: skip

    def relation(self, outcome: str, factor: str, scope: Scope | None = None) -> Relation | None:
        """The program's relation within a scope of path conditions; None when no served row
        meets the scope, or the scope fixes the factor to one value."""
        if not scope:
            return self.pairs[outcome, factor].relation
        return program_relation(self.program, self.rows, outcome, factor, scope)


def _in_scope(rows: pd.DataFrame, program: Program, scope: Scope | None) -> pd.DataFrame:
    if not scope:
        return rows
    keep = np.ones(len(rows), dtype=bool)
    for name, values in scope.items():
        column = rows[name]
        if program.variables[name].numeric:
            keep &= column.isin([float(v) for v in values]).to_numpy()
        else:
            keep &= column.isin(list(values)).to_numpy()
    return rows[keep]


def _grid(values: pd.Series, variable: Variable) -> np.ndarray:
    values = values.dropna()
    if not variable.numeric:
        return np.array(sorted(values.astype(str).unique()), dtype=object)
    x = values.to_numpy(dtype=float)
    if variable.role == "path":
        return np.unique(x)
    return np.unique(np.quantile(x, np.linspace(*QUANTILES, GRID)))


def _as_input(values: np.ndarray, variable: Variable) -> np.ndarray:
    return values.astype(float) if variable.numeric else values.astype(object)


def program_relation(
    program: Program, rows: pd.DataFrame, outcome: str, factor: str, scope: Scope | None = None
) -> Relation | None:
    """The relation of ``factor`` to ``outcome`` in the program (module docstring), over the
    served rows within ``scope``."""
    if factor not in program.inputs[outcome]:
        return "no effect" if len(_in_scope(rows, program, scope)) else None
    variables = program.variables
    fvar = variables[factor]
    rows = _in_scope(rows, program, scope)
    if rows[factor].notna().sum() == 0:
        return None
    grid = _grid(rows[factor], fvar)
    if len(grid) < 2:
        return None
    roots = sorted(n for n in program.inputs[outcome] if not variables[n].outcome and n != factor)
    complete = rows[roots].notna().all(axis=1).to_numpy() if roots else np.ones(len(rows), bool)
    candidates = np.flatnonzero(complete)
    if len(candidates) == 0:
        return None
    rng = derive(program.spec.seed, "discovery-contexts", outcome, factor)
    k = min(CONTEXTS, len(candidates))
    chosen = np.sort(rng.choice(candidates, k, replace=False))
    g = len(grid)
    env: dict[str, np.ndarray] = {
        name: np.repeat(_as_input(rows[name].to_numpy()[chosen], variables[name]), g)
        for name in roots
    }
    sweep = np.tile(_as_input(grid, fvar), k)
    pinned = {factor: sweep} if fvar.outcome else {}
    if not fvar.outcome:
        env[factor] = sweep
    y = program.evaluate(env, k * g, pinned, score_of=outcome)[outcome].reshape(k, g)
    scale = max(1.0, float(np.nanmedian(np.abs(y)))) if np.isfinite(y).any() else 1.0
    tol = 1e-9 * k * scale
    if not fvar.numeric:
        spread = np.nanmax(y, axis=1) - np.nanmin(y, axis=1)
        return "depends on" if np.nansum(spread) > tol else "no effect"
    steps = np.diff(y, axis=1)
    rise = float(np.nansum(np.where(steps > 0, steps, 0.0)))
    fall = float(-np.nansum(np.where(steps < 0, steps, 0.0)))
    total = rise + fall
    if total <= tol:
        return "no effect"
    if fall <= AGAINST_SHARE * total:
        return "increases"
    if rise <= AGAINST_SHARE * total:
        return "decreases"
    return "depends on"


def pair_truth(
    program: Program, rows: pd.DataFrame, outcome: str, factor: str, alpha: float = ALPHA
) -> PairTruth:
    """The truth of one pair over the served ``rows`` (:func:`~.data.pooled_rows`)."""
    variables = program.variables
    fvar, yvar = variables[factor], variables[outcome]
    enters = factor in program.inputs[outcome]
    relation = (program_relation(program, rows, outcome, factor) if enters else None) or "no effect"
    directional = fvar.numeric and yvar.numeric
    tests: tuple[Association, ...] = ()
    found = False
    if relation != "no effect":
        tests = tuple(associations(rows[factor], rows[outcome], fvar.numeric, yvar.numeric))
        found = detectable(list(tests), relation, directional, alpha)
    return PairTruth(outcome, factor, relation, directional, enters, found, tests)


def compute_truth(repo: Repository, alpha: float = ALPHA) -> Truth:
    """The truth of every (outcome, factor) pair of ``repo`` (module docstring)."""
    program = Program(repo.spec)
    rows = pooled_rows(repo)
    pairs = {
        (outcome, factor): pair_truth(program, rows, outcome, factor, alpha)
        for outcome in program.outcomes
        for factor in program.variables
        if factor != outcome
    }
    unrecorded = {v.name: v.label for v in repo.spec.unrecorded}
    return Truth(repo.spec.seed, program, rows, pairs, unrecorded)
