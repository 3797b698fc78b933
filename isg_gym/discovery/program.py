"""A Spec's data-generating program as a function: which inputs each outcome reads, and its
noiseless value for chosen inputs.

Dependencies come from the expression compiler (:func:`~isg_gym.spec.expressions.
compile_expression` parses with ``ast`` and records the names an expression reads); nothing is
ever ``eval``-ed. The value of an outcome is the program without noise: dependents in column
order, each clipped as the generator clips it (rounding aside), with any chosen variable pinned
to given values (a pinned dependent is not recomputed; everything downstream of it is).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from isg_gym.spec.expressions import Expression, Kind, compile_expression
from isg_gym.spec.models import (
    CategoricalColumn,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    IntegerColumn,
    Spec,
)
from isg_gym.syntax import parse as parse_python

VariableRole = str  # "outcome" | "column" | "path"


@dataclass(frozen=True)
class Variable:
    """A recorded variable an analysis can use: a column (not the identifier or timestamp) or a
    path variable. ``numeric`` says whether it is ordered (numeric columns, numeric and sequence
    path variables); ``outcome`` whether it is a dependent column."""

    name: str
    label: str
    role: VariableRole
    numeric: bool
    short: str | None = None  # a path variable's placeholder in the README layout

    @property
    def outcome(self) -> bool:
        return self.role == "outcome"


def score_source(expression: str) -> str:
    """The numeric score of an expression: its first argument when it is a ``cut(...)``,
    else the expression itself (parsed with ``ast``, never evaluated)."""
    body = parse_python(expression.strip(), mode="eval").body
    if isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "cut":
        return ast.unparse(body.args[0])
    return expression


class Program:
    """The dependents of a Spec, compiled once, with their dependency graph."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        kinds: dict[str, Kind] = spec.expression_kinds()
        self.kinds = kinds
        self.dependents: list[DependentColumn] = [
            c for c in spec.columns if isinstance(c, DependentColumn)
        ]
        self.expressions: dict[str, Expression] = {
            c.name: compile_expression(c.expression, kinds) for c in self.dependents
        }
        self.scores: dict[str, Expression] = {
            c.name: compile_expression(score_source(c.expression), kinds) for c in self.dependents
        }
        self._clips = {c.name: c.clip for c in self.dependents}

    @cached_property
    def variables(self) -> dict[str, Variable]:
        """Every recorded variable by name: columns in order (identifier and timestamp left
        out), then path variables."""
        out: dict[str, Variable] = {}
        for col in self.spec.columns:
            if isinstance(col, IdentifierColumn | DatetimeColumn):
                continue
            if isinstance(col, DependentColumn):
                numeric = self.expressions[col.name].kind == "numeric"
                out[col.name] = Variable(col.name, col.label, "outcome", numeric)
            else:
                numeric = isinstance(col, IntegerColumn | ContinuousColumn)
                assert numeric or isinstance(col, CategoricalColumn)
                out[col.name] = Variable(col.name, col.label, "column", numeric)
        for pv in self.spec.path_variables:
            numeric = pv.kind in ("numeric", "sequence")
            out[pv.name] = Variable(pv.name, pv.label, "path", numeric, pv.short)
        return out

    @property
    def outcomes(self) -> list[str]:
        return [c.name for c in self.dependents]

    @cached_property
    def inputs(self) -> dict[str, frozenset[str]]:
        """Outcome -> every variable its value depends on, directly or through other
        dependents (the transitive closure of the names its expression reads)."""
        out: dict[str, frozenset[str]] = {}
        for dep in self.dependents:  # column order is a topological order
            names = set(self.expressions[dep.name].names)
            for name in list(names):
                names |= out.get(name, frozenset())
            out[dep.name] = frozenset(names)
        return out

    def direct_inputs(self, outcome: str) -> frozenset[str]:
        return self.expressions[outcome].names

    def evaluate(
        self,
        roots: Mapping[str, np.ndarray | float | str],
        n: int,
        pinned: Mapping[str, np.ndarray] | None = None,
        score_of: str | None = None,
    ) -> dict[str, np.ndarray]:
        """Every dependent over ``n`` rows without noise, from the values of the independent
        columns and path variables in ``roots``; ``pinned`` dependents take the given values.
        With ``score_of``, only that outcome and the dependents it reads are computed (``roots``
        need hold only its inputs), and its entry is its unclipped numeric score (the value
        before ``clip``, or the score a ``cut`` maps to labels)."""
        pinned = pinned or {}
        env: dict[str, np.ndarray | float | str] = dict(roots)
        out: dict[str, np.ndarray] = {}
        needed = None if score_of is None else self.inputs[score_of] | {score_of}
        for dep in self.dependents:
            name = dep.name
            if needed is not None and name not in needed:
                continue
            if name == score_of:
                out[name] = self.scores[name].evaluate(env, n)
                break  # nothing downstream of the outcome matters to it
            if name in pinned:
                value = np.asarray(pinned[name])
            else:
                value = self.expressions[name].evaluate(env, n)
                clip = self._clips[name]
                if clip is not None and value.dtype != object and clip != (None, None):
                    value = np.clip(value, clip[0], clip[1])
            env[name] = value
            out[name] = value
        return out
