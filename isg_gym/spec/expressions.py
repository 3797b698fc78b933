"""A tiny, whitelisted expression language for dependent variables, compiled to numpy.

Grammar (a subset of Python expression syntax, parsed with ``ast`` and never executed):

- numbers, the constants ``pi`` and ``e``, and variable names (columns and path variables);
- ``+ - * / **``, unary ``-`` and ``+``, comparisons ``< <= > >= == !=`` (one per comparison,
  yielding 1.0 / 0.0);
- categorical variables appear only as ``name == 'label'`` or ``name != 'label'``;
- functions: ``exp log sqrt abs tanh sin cos`` (one argument), ``min max`` (two or more,
  elementwise), ``clip(x, lo, hi)``, ``where(cond, a, b)`` (cond nonzero selects ``a``);
- ``cut(score, [t1, ..., tk], ['l0', ..., 'lk'])`` maps a numeric score to categorical labels by
  ascending thresholds: ``score < t1`` gives ``l0``, ``t1 <= score < t2`` gives ``l1``, and so on.
  It may only be the outermost call, and makes the expression categorical.

Domain errors never raise and never leak infinities: ``log`` of a non-positive number, ``sqrt`` of
a negative one, division by zero, a negative base to a fractional power, and overflow all give
NaN, the documented missing value. A missing score passed to ``cut`` gives a missing label.
Anything else (attribute access, subscripts, calls of unknown names, keywords, lambdas,
comprehensions, f-strings, ...) is rejected with an :class:`ExpressionError` naming the token.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from isg_gym.syntax import parse as parse_python

Kind = Literal["numeric", "categorical"]
Value = np.ndarray | float
Env = Mapping[str, np.ndarray | float | str]
MAX_SOURCE_LENGTH = 4000
CONSTANTS = {"pi": math.pi, "e": math.e}
UNARY_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "log": lambda x: np.log(np.where(x > 0, x, np.nan)),
    "sqrt": lambda x: np.sqrt(np.where(x >= 0, x, np.nan)),
    "abs": np.abs,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
}
FUNCTIONS = frozenset({*UNARY_FUNCTIONS, "min", "max", "clip", "where", "cut"})
_BINARY = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: lambda a, b: np.divide(a, np.where(b == 0, np.nan, b)),
    ast.Pow: np.power,
}
_COMPARE = {
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
}


_OPERATOR_SYMBOLS = {
    ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
    ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.Invert: "~", ast.Not: "not",
}  # fmt: skip


class ExpressionError(ValueError):
    """An expression uses something outside the whitelist, or uses it wrongly."""


def _finite(x: Value) -> Value:
    if isinstance(x, np.ndarray):
        return np.where(np.isfinite(x), x, np.nan)
    return x if math.isfinite(x) else math.nan


Node = Callable[[Env], Value]


@dataclass(frozen=True)
class _Cut:
    score: Node
    thresholds: np.ndarray
    labels: np.ndarray


class Expression:
    """A compiled expression: ``evaluate(env, n, noise)`` gives floats, or labels for ``cut``."""

    def __init__(self, source: str, root: Node | _Cut, names: frozenset[str]) -> None:
        self.source = source
        self.names = names
        self._root = root

    @property
    def kind(self) -> Kind:
        return "categorical" if isinstance(self._root, _Cut) else "numeric"

    @property
    def labels(self) -> list[str]:
        return list(self._root.labels) if isinstance(self._root, _Cut) else []

    def evaluate(self, env: Env, n: int, noise: np.ndarray | None = None) -> np.ndarray:
        """Evaluate over ``n`` rows; ``noise`` is added to the value (or to the score of ``cut``).

        Numeric results are float64 with NaN for missing; categorical results are an object
        array of labels with None for missing.
        """
        with np.errstate(all="ignore"):
            node = self._root.score if isinstance(self._root, _Cut) else self._root
            value = np.asarray(node(env), dtype=np.float64)
            if value.shape != (n,):
                value = np.broadcast_to(value, (n,))
            if noise is not None:
                value = value + noise
            value = _finite(np.asarray(value, dtype=np.float64))
        if isinstance(self._root, _Cut):
            codes = np.searchsorted(self._root.thresholds, value, side="right")
            out = self._root.labels[codes].astype(object)
            out[np.isnan(value)] = None
            return out
        return value

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


class _Compiler:
    def __init__(self, variables: Mapping[str, Kind]) -> None:
        self.variables = variables
        self.names: set[str] = set()
        self.constants: dict[Node, float | np.floating] = {}  # constant nodes and their values

    def fail(self, node: ast.AST, what: str) -> ExpressionError:
        col = getattr(node, "col_offset", None)
        where = f" at column {col + 1}" if col is not None else ""
        return ExpressionError(f"{what}{where}")

    def root(self, node: ast.AST) -> Node | _Cut:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cut":
            return self.cut(node)
        return self.numeric(node)

    def cut(self, node: ast.Call) -> _Cut:
        if node.keywords or len(node.args) != 3:
            raise self.fail(node, "cut takes exactly (score, [thresholds], [labels])")
        score, thresholds, labels = node.args
        if not isinstance(thresholds, ast.List) or not isinstance(labels, ast.List):
            raise self.fail(node, "cut needs list literals for thresholds and labels")
        ts = [self.number_literal(t) for t in thresholds.elts]
        ls = [self.string_literal(x) for x in labels.elts]
        if len(ls) != len(ts) + 1 or not ts:
            raise self.fail(node, "cut needs k >= 1 thresholds and k + 1 labels")
        if any(b <= a for a, b in itertools.pairwise(ts)):
            raise self.fail(node, "cut thresholds must be strictly increasing")
        return _Cut(self.numeric(score), np.array(ts, dtype=np.float64), np.array(ls, dtype=object))

    def number_literal(self, node: ast.AST) -> float:
        sign = 1.0
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1.0, node.operand
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
            and math.isfinite(node.value)
        ):
            return sign * float(node.value)
        raise self.fail(node, "expected a finite number literal")

    def string_literal(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        raise self.fail(node, "expected a string literal")

    def numeric(self, node: ast.AST) -> Node:
        # one dictionary look-up per node instead of a chain of class patterns
        handler = _NUMERIC_NODES.get(type(node))
        if handler is None:
            raise self.fail(node, f"{_describe(node)} is not allowed")
        return handler(self, node)

    def _constant_node(self, node: ast.Constant) -> Node:
        v = node.value
        if isinstance(v, bool):
            raise self.fail(node, f"boolean literal {v!r} is not allowed")
        if isinstance(v, int | float):
            value = float(v)
            if not math.isfinite(value):
                raise self.fail(node, f"non-finite number {v!r}")
            return self.constant(value)
        if isinstance(v, str):
            raise self.fail(node, f"string {v!r} is allowed only in == / != with a category")
        raise self.fail(node, f"{_describe(node)} is not allowed")

    def _name_node(self, node: ast.Name) -> Node:
        if node.id in CONSTANTS:
            return self.constant(CONSTANTS[node.id])
        return self.variable(node, node.id, "numeric")

    def _binary_node(self, node: ast.BinOp) -> Node:
        fn = _BINARY.get(type(node.op))
        if fn is None:
            raise self._operator_error(node)
        # a chain of operators (a + b + c ...) recurses one frame per operator, as it always has
        left, right = node.left, node.right
        left = self._binary_node(left) if type(left) is ast.BinOp else self.numeric(left)
        right = self._binary_node(right) if type(right) is ast.BinOp else self.numeric(right)
        constants = self.constants
        # a constant operand is passed as is (the same value the node would return)
        if right in constants and left not in constants:
            b = constants[right]
            return lambda env: fn(left(env), b)
        if left in constants and right not in constants:
            a = constants[left]
            return lambda env: fn(a, right(env))
        return lambda env: fn(left(env), right(env))

    def _unary_node(self, node: ast.UnaryOp) -> Node:
        if isinstance(node.op, ast.UAdd):
            return self.numeric(node.operand)
        if not isinstance(node.op, ast.USub):
            raise self._operator_error(node)
        operand = self.numeric(node.operand)
        if operand in self.constants:  # -c: the np.negative the node would compute
            return self.constant(np.negative(self.constants[operand]))
        return lambda env: np.negative(operand(env))

    def _operator_error(self, node: ast.BinOp | ast.UnaryOp) -> ExpressionError:
        symbol = _OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)
        return self.fail(node, f"operator '{symbol}' is not allowed (allowed: + - * / **)")

    def constant(self, value: float | np.floating) -> Node:
        """A node returning ``value``, remembered as a constant for its parent."""
        node = lambda env: value  # noqa: E731
        self.constants[node] = value
        return node

    def variable(self, node: ast.AST, name: str, want: Kind) -> Node:
        if name.startswith("_"):
            raise self.fail(node, f"name {name!r} is not allowed")
        if name in FUNCTIONS:
            raise self.fail(node, f"function {name!r} must be called")
        kind = self.variables.get(name)
        if kind is None:
            known = ", ".join(sorted(self.variables)) or "none"
            raise self.fail(node, f"unknown variable {name!r} (known: {known})")
        if kind != want:
            raise self.fail(node, f"{kind} variable {name!r} used where a {want} value is needed")
        self.names.add(name)
        return lambda env: env[name]

    def compare(self, node: ast.Compare) -> Node:
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
            raise self.fail(node, "only single comparisons < <= > >= == != are allowed")
        op, left, right = node.ops[0], node.left, node.comparators[0]
        fn = _COMPARE[type(op)]
        if isinstance(right, ast.Constant) and isinstance(right.value, str):
            if not isinstance(op, ast.Eq | ast.NotEq) or not isinstance(left, ast.Name):
                raise self.fail(node, "a category label compares only as name == 'label'")
            get, label = self.variable(left, left.id, "categorical"), right.value
            return lambda env: fn(get(env), label).astype(np.float64)
        a, b = self.numeric(left), self.numeric(right)
        return lambda env: np.asarray(fn(a(env), b(env)), dtype=np.float64)

    def call(self, node: ast.Call) -> Node:
        if not isinstance(node.func, ast.Name):
            raise self.fail(node, f"call of {_describe(node.func)} is not allowed")
        name = node.func.id
        if name not in FUNCTIONS:
            raise self.fail(node, f"unknown function {name!r} (allowed: {sorted(FUNCTIONS)})")
        if node.keywords:
            raise self.fail(node, f"{name}() takes no keyword arguments")
        if name == "cut":
            raise self.fail(node, "cut() is allowed only as the outermost call")
        args = [self.numeric(a) for a in node.args]
        arity = {"clip": 3, "where": 3}.get(name, 1 if name in UNARY_FUNCTIONS else None)
        if arity is not None and len(args) != arity:
            raise self.fail(node, f"{name}() takes {arity} argument(s), got {len(args)}")
        if name in UNARY_FUNCTIONS:
            fn, (x,) = UNARY_FUNCTIONS[name], args
            return lambda env: fn(np.asarray(x(env), dtype=np.float64))
        if name in ("min", "max"):
            if len(args) < 2:
                raise self.fail(node, f"{name}() takes two or more arguments")
            reduce = np.fmin if name == "min" else np.fmax
            return lambda env: _fold(reduce, [a(env) for a in args])
        if name == "clip":
            x, lo, hi = args
            return lambda env: np.clip(x(env), lo(env), hi(env))
        cond, a, b = args
        return lambda env: np.where(np.asarray(cond(env)) != 0, a(env), b(env))


_NUMERIC_NODES: dict[type, Callable[[_Compiler, ast.AST], Node]] = {
    ast.Constant: _Compiler._constant_node,
    ast.Name: _Compiler._name_node,
    ast.BinOp: _Compiler._binary_node,
    ast.UnaryOp: _Compiler._unary_node,
    ast.Compare: _Compiler.compare,
    ast.Call: _Compiler.call,
}


def _fold(fn: Callable, values: list[Value]) -> Value:
    out = values[0]
    for v in values[1:]:
        out = fn(out, v)
    return out


_NODE_WORDS = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscript",
    ast.Lambda: "lambda",
    ast.JoinedStr: "f-string",
    ast.IfExp: "conditional expression",
    ast.BoolOp: "boolean operator",
    ast.NamedExpr: "assignment expression",
    ast.Starred: "starred expression",
    ast.Await: "await",
}


def _describe(node: ast.AST) -> str:
    word = _NODE_WORDS.get(type(node), type(node).__name__.lower())
    try:
        return f"{word} {ast.unparse(node)[:60]!r}"
    except Exception:
        return word


@lru_cache(maxsize=4096)
def expression_kind(source: str) -> Kind:
    """``categorical`` when the outermost call is ``cut``, else ``numeric`` (no validation)."""
    compiled = _COMPILED.get(source)
    if compiled is not None:  # a Spec's expressions were compiled when it was validated
        return compiled[0].kind
    try:
        body = parse_python(source.strip(), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return "numeric"
    is_cut = (
        isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "cut"
    )
    return "categorical" if is_cut else "numeric"


# Recently compiled expressions by source, with the (name, kind) of each variable they use: a
# Spec's expressions are compiled when it is validated, again for its table generator and again
# for its questions, always against the same kinds. Compiled expressions hold no state.
_COMPILED: OrderedDict[str, tuple[Expression, tuple[tuple[str, Kind], ...]]] = OrderedDict()
_COMPILED_SIZE = 256


def compile_expression(source: str, variables: Mapping[str, Kind]) -> Expression:
    """Parse and type-check ``source`` against ``variables`` (name -> kind)."""
    if not isinstance(source, str):
        raise ExpressionError(f"expression must be a string, got {type(source).__name__}")
    if len(source) > MAX_SOURCE_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_SOURCE_LENGTH} characters")
    hit = _COMPILED.get(source)
    if hit is not None and all(variables.get(name) == kind for name, kind in hit[1]):
        return hit[0]  # the same names with the same kinds compile to the same expression
    expression = _compile(source, variables)
    _COMPILED[source] = (expression, tuple((n, variables[n]) for n in sorted(expression.names)))
    _COMPILED.move_to_end(source)
    while len(_COMPILED) > _COMPILED_SIZE:
        _COMPILED.popitem(last=False)
    return expression


def _compile(source: str, variables: Mapping[str, Kind]) -> Expression:
    try:
        tree = parse_python(source.strip(), mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"syntax error in expression: {err.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError("expression is nested too deeply or is malformed") from None
    compiler = _Compiler(variables)
    try:
        root = compiler.root(tree.body)
    except RecursionError:
        raise ExpressionError("expression is nested too deeply") from None
    return Expression(source, root, frozenset(compiler.names))
