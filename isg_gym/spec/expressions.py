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
import keyword
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from isg_gym.spec.expression_templates import NAME, NUMBER, STRING, Lifted, lift
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


# Per-expression values the nodes read: constants, variable names and category labels. A
# compiled shape (a template) is shared by every expression that differs only in these.
Params = tuple
Node = Callable[[Env, Params], Value]
Recipe = tuple[Literal["value", "negate"], object]  # a slot's value, or -(another slot)


# The nodes of a compiled shape: the ``evaluate`` method of a small object, not a closure. A
# shape is cached and shared (the template cache holds about a thousand), and a closure costs a
# function, a tuple and a cell per captured name: about 350 bytes a node against about 120. A
# bound method, unlike an object's ``__call__``, is called from Python as a function is (one
# frame, no C recursion: a 900-term sum still evaluates).
class _Slot:
    """Slot ``slot`` of the parameters: a constant."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def evaluate(self, env: Env, p: Params) -> Value:
        return p[self.slot]


class _Variable:
    """The variable named in slot ``slot``."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot

    def evaluate(self, env: Env, p: Params) -> Value:
        return env[p[self.slot]]  # type: ignore[return-value]


class _Binary:
    """``fn(left, right)``."""

    __slots__ = ("fn", "left", "right")

    def __init__(self, fn: Callable, left: Node, right: Node) -> None:
        self.fn, self.left, self.right = fn, left, right

    def evaluate(self, env: Env, p: Params) -> Value:
        return self.fn(self.left(env, p), self.right(env, p))


class _BinaryConstantRight:
    """``fn(left, constant)``, the constant read from its slot as is (the same value its node
    would return)."""

    __slots__ = ("fn", "left", "slot")

    def __init__(self, fn: Callable, left: Node, slot: int) -> None:
        self.fn, self.left, self.slot = fn, left, slot

    def evaluate(self, env: Env, p: Params) -> Value:
        return self.fn(self.left(env, p), p[self.slot])


class _BinaryConstantLeft:
    """``fn(constant, right)``."""

    __slots__ = ("fn", "right", "slot")

    def __init__(self, fn: Callable, slot: int, right: Node) -> None:
        self.fn, self.slot, self.right = fn, slot, right

    def evaluate(self, env: Env, p: Params) -> Value:
        return self.fn(p[self.slot], self.right(env, p))


class _Negative:
    __slots__ = ("operand",)

    def __init__(self, operand: Node) -> None:
        self.operand = operand

    def evaluate(self, env: Env, p: Params) -> Value:
        return np.negative(self.operand(env, p))


class _LabelIs:
    """``name == 'label'`` (or ``!=``) as 1.0 / 0.0."""

    __slots__ = ("fn", "get", "label")

    def __init__(self, fn: Callable, get: Node, label: int) -> None:
        self.fn, self.get, self.label = fn, get, label

    def evaluate(self, env: Env, p: Params) -> Value:
        return self.fn(self.get(env, p), p[self.label]).astype(np.float64)


class _Compare:
    __slots__ = ("a", "b", "fn")

    def __init__(self, fn: Callable, a: Node, b: Node) -> None:
        self.fn, self.a, self.b = fn, a, b

    def evaluate(self, env: Env, p: Params) -> Value:
        return np.asarray(self.fn(self.a(env, p), self.b(env, p)), dtype=np.float64)


class _Unary:
    __slots__ = ("fn", "x")

    def __init__(self, fn: Callable, x: Node) -> None:
        self.fn, self.x = fn, x

    def evaluate(self, env: Env, p: Params) -> Value:
        return self.fn(np.asarray(self.x(env, p), dtype=np.float64))


class _Fold:
    """``min`` / ``max`` of two or more arguments."""

    __slots__ = ("args", "reduce")

    def __init__(self, reduce: Callable, args: tuple[Node, ...]) -> None:
        self.reduce, self.args = reduce, args

    def evaluate(self, env: Env, p: Params) -> Value:
        return _fold(self.reduce, [a(env, p) for a in self.args])


class _Clip:
    __slots__ = ("hi", "lo", "x")

    def __init__(self, x: Node, lo: Node, hi: Node) -> None:
        self.x, self.lo, self.hi = x, lo, hi

    def evaluate(self, env: Env, p: Params) -> Value:
        return np.clip(self.x(env, p), self.lo(env, p), self.hi(env, p))


class _Where:
    __slots__ = ("a", "b", "cond")

    def __init__(self, cond: Node, a: Node, b: Node) -> None:
        self.cond, self.a, self.b = cond, a, b

    def evaluate(self, env: Env, p: Params) -> Value:
        return np.where(np.asarray(self.cond(env, p)) != 0, self.a(env, p), self.b(env, p))


@dataclass(frozen=True)
class _Cut:
    score: Node
    thresholds: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class _CutShape:
    """``cut`` before its values are known: (sign, slot) per threshold, a slot per label."""

    score: Node
    thresholds: tuple[tuple[float, int], ...]
    labels: tuple[int, ...]


class Expression:
    """A compiled expression: ``evaluate(env, n, noise)`` gives floats, or labels for ``cut``."""

    def __init__(
        self, source: str, root: Node | _Cut, names: frozenset[str], params: Params = ()
    ) -> None:
        self.source = source
        self.names = names
        self._root = root
        self._params = params

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
            value = np.asarray(node(env, self._params), dtype=np.float64)
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


@dataclass(frozen=True)
class _Shape:
    """A compiled expression whose values live in slots: first the values :func:`lift` took
    out of the source (``counts`` of numbers, names and strings; none when the source itself
    was compiled), then those made by ``recipes``. ``wanted`` lists the variable slots whose
    names are checked when the shape is instantiated (a template's names are not known when it
    is compiled)."""

    root: Node | _CutShape
    counts: tuple[int, int, int]
    recipes: tuple[Recipe, ...]
    name_slots: tuple[int, ...]
    wanted: tuple[tuple[int, Kind], ...]

    def instantiate(
        self, source: str, values: Lifted | None, variables: Mapping[str, Kind]
    ) -> Expression | None:
        """The expression with these values, or None where a deferred check fails."""
        slots: list = []
        if values is not None:
            if (len(values.numbers), len(values.names), len(values.strings)) != self.counts:
                return None
            slots = [*values.numbers, *values.names, *values.strings]
        for op, arg in self.recipes:
            slots.append(np.negative(slots[arg]) if op == "negate" else arg)  # type: ignore[index]
        for slot, want in self.wanted:
            name = slots[slot]
            if name.startswith("_") or variables.get(name) != want:
                return None
        root = self.root
        if isinstance(root, _CutShape):
            ts = [sign * slots[s] for sign, s in root.thresholds]
            if any(b <= a for a, b in itertools.pairwise(ts)):
                return None
            labels = np.array([slots[s] for s in root.labels], dtype=object)
            root = _Cut(root.score, np.array(ts, dtype=np.float64), labels)
        return Expression(source, root, frozenset(slots[s] for s in self.name_slots), tuple(slots))


class _Compiler:
    """Compiles an expression's syntax tree to a :class:`_Shape`.

    ``template`` holds the numbers of placeholders (``_k``, ``_v``, ``'_s'``) when the tree is
    a template's, or is None when it is the source's own tree; then every check is made here,
    with the column of what failed. A template's placeholders of one kind take their slots in
    the order the compiler meets them, which :meth:`shape` checks is the order of the source.
    """

    def __init__(
        self, variables: Mapping[str, Kind], template: tuple[int, int, int] | None = None
    ) -> None:
        self.variables = variables
        self.template = template
        self.counts = template or (0, 0, 0)
        n_k, n_v, _ = self.counts
        self.first_slot = {NUMBER: 0, NAME: n_k, STRING: n_k + n_v}
        self.met: dict[str, list[int]] = {NUMBER: [], NAME: [], STRING: []}  # columns met
        self.recipes: list[Recipe] = []
        self.name_slots: list[int] = []
        self.wanted: list[tuple[int, Kind]] = []
        self.constants: dict[Node, int] = {}  # constant nodes and their slots

    def fail(self, node: ast.AST, what: str) -> ExpressionError:
        col = getattr(node, "col_offset", None)
        where = f" at column {col + 1}" if col is not None else ""
        return ExpressionError(f"{what}{where}")

    def shape(self, node: ast.AST) -> _Shape:
        root = self.root(node)
        if self.template is not None:
            for kind, count in zip((NUMBER, NAME, STRING), self.template, strict=True):
                met = self.met[kind]
                if len(met) != count or any(b <= a for a, b in itertools.pairwise(met)):
                    raise self.fail(node, "placeholders out of order")  # compiled as it is
        return _Shape(
            root, self.counts, tuple(self.recipes), tuple(self.name_slots), tuple(self.wanted)
        )

    def slot(self, op: Literal["value", "negate"], arg: object) -> int:
        """A new slot made by a recipe."""
        self.recipes.append((op, arg))
        return sum(self.counts) + len(self.recipes) - 1

    def placeholder(self, node: ast.AST, kind: str) -> int | None:
        """The slot of the template's placeholder ``kind`` at ``node`` (None: not a template)."""
        if self.template is None:
            return None
        text = node.id if isinstance(node, ast.Name) else getattr(node, "value", None)
        if text != kind:
            raise self.fail(node, "not a placeholder")  # the source is compiled as it is
        met = self.met[kind]
        met.append(node.col_offset)
        return self.first_slot[kind] + len(met) - 1

    def root(self, node: ast.AST) -> Node | _CutShape:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cut":
            return self.cut(node)
        return self.numeric(node)

    def cut(self, node: ast.Call) -> _CutShape:
        if node.keywords or len(node.args) != 3:
            raise self.fail(node, "cut takes exactly (score, [thresholds], [labels])")
        score, thresholds, labels = node.args
        if not isinstance(thresholds, ast.List) or not isinstance(labels, ast.List):
            raise self.fail(node, "cut needs list literals for thresholds and labels")
        # a template meets its placeholders in source order; the source keeps its errors' order
        first = self.numeric(score) if self.template is not None else None
        ts = [self.number_literal(t) for t in thresholds.elts]
        ls = [self.string_literal(x) for x in labels.elts]
        if len(ls) != len(ts) + 1 or not ts:
            raise self.fail(node, "cut needs k >= 1 thresholds and k + 1 labels")
        if self.template is None:
            values = [sign * self.recipes[s][1] for sign, s in ts]  # type: ignore[operator]
            if any(b <= a for a, b in itertools.pairwise(values)):
                raise self.fail(node, "cut thresholds must be strictly increasing")
        return _CutShape(first or self.numeric(score), tuple(ts), tuple(ls))

    def number_literal(self, node: ast.AST) -> tuple[float, int]:
        """(sign, slot) of a number literal, optionally negated."""
        sign = 1.0
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sign, node = -1.0, node.operand
        if self.template is not None and isinstance(node, ast.Name):
            return sign, self.placeholder(node, NUMBER)  # type: ignore[return-value]
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
            and self.template is None
        ):
            value = _finite_float(node.value)
            if value is not None:
                return sign, self.slot("value", value)
        raise self.fail(node, "expected a finite number literal")

    def string_literal(self, node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            slot = self.placeholder(node, STRING)
            return self.slot("value", node.value) if slot is None else slot
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
        if isinstance(v, int | float) and self.template is None:
            value = _finite_float(v)
            if value is None:
                raise self.fail(node, f"non-finite number {v!r}")
            return self.constant(self.slot("value", value))
        if isinstance(v, str):
            raise self.fail(node, f"string {v!r} is allowed only in == / != with a category")
        raise self.fail(node, f"{_describe(node)} is not allowed")

    def _name_node(self, node: ast.Name) -> Node:
        if node.id in CONSTANTS:
            return self.constant(self.slot("value", CONSTANTS[node.id]))
        if self.template is not None and node.id == NUMBER:
            return self.constant(self.placeholder(node, NUMBER))  # type: ignore[arg-type]
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
            return _BinaryConstantRight(fn, left, constants[right]).evaluate
        if left in constants and right not in constants:
            return _BinaryConstantLeft(fn, constants[left], right).evaluate
        return _Binary(fn, left, right).evaluate

    def _unary_node(self, node: ast.UnaryOp) -> Node:
        if isinstance(node.op, ast.UAdd):
            return self.numeric(node.operand)
        if not isinstance(node.op, ast.USub):
            raise self._operator_error(node)
        operand = self.numeric(node.operand)
        if operand in self.constants:  # -c: the np.negative the node would compute
            return self.constant(self.slot("negate", self.constants[operand]))
        return _Negative(operand).evaluate

    def _operator_error(self, node: ast.BinOp | ast.UnaryOp) -> ExpressionError:
        symbol = _OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)
        return self.fail(node, f"operator '{symbol}' is not allowed (allowed: + - * / **)")

    def constant(self, slot: int) -> Node:
        """A node returning slot ``slot``, remembered as a constant for its parent."""
        node = _Slot(slot).evaluate
        self.constants[node] = slot
        return node

    def variable(self, node: ast.AST, name: str, want: Kind) -> Node:
        if self.template is not None:
            slot = self.placeholder(node, NAME)
            self.wanted.append((slot, want))  # type: ignore[arg-type]
        else:
            self.check_variable(node, name, want)
            slot = self.slot("value", name)
        self.name_slots.append(slot)  # type: ignore[arg-type]
        return _Variable(slot).evaluate  # type: ignore[arg-type]

    def check_variable(self, node: ast.AST, name: str, want: Kind) -> None:
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

    def compare(self, node: ast.Compare) -> Node:
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
            raise self.fail(node, "only single comparisons < <= > >= == != are allowed")
        op, left, right = node.ops[0], node.left, node.comparators[0]
        fn = _COMPARE[type(op)]
        if isinstance(right, ast.Constant) and isinstance(right.value, str):
            if not isinstance(op, ast.Eq | ast.NotEq) or not isinstance(left, ast.Name):
                raise self.fail(node, "a category label compares only as name == 'label'")
            get, label = self.variable(left, left.id, "categorical"), self.string_literal(right)
            return _LabelIs(fn, get, label).evaluate
        a, b = self.numeric(left), self.numeric(right)
        return _Compare(fn, a, b).evaluate

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
            return _Unary(fn, x).evaluate
        if name in ("min", "max"):
            if len(args) < 2:
                raise self.fail(node, f"{name}() takes two or more arguments")
            reduce = np.fmin if name == "min" else np.fmax
            return _Fold(reduce, tuple(args)).evaluate
        if name == "clip":
            x, lo, hi = args
            return _Clip(x, lo, hi).evaluate
        cond, a, b = args
        return _Where(cond, a, b).evaluate


def _finite_float(value: int | float) -> float | None:
    """``float(value)`` when it is finite, else None (an integer too large counts as infinite)."""
    try:
        out = float(value)
    except OverflowError:
        return None
    return out if math.isfinite(out) else None


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


@lru_cache(maxsize=1024)  # the expressions of recent specs (each a few hundred bytes)
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


# Names a template keeps as they are: they are the language, not a repository's values.
_VERBATIM = frozenset({*FUNCTIONS, *CONSTANTS, *keyword.kwlist})
_TEMPLATES_SIZE = 1024  # the builder makes about 1,000 shapes in all (6,000 seeds); ~6 KB each


@lru_cache(maxsize=_TEMPLATES_SIZE)
def _template_shape(template: str) -> _Shape | None:
    """The compiled shape of a template; None if it does not compile (the source is then
    compiled as it is, which gives the error with its column)."""
    counts = (template.count(NUMBER), template.count(NAME), template.count(STRING))
    try:
        return _Compiler({}, template=counts).shape(parse_python(template, mode="eval").body)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None


def _compile(source: str, variables: Mapping[str, Kind]) -> Expression:
    return _from_template(source, variables) or _from_source(source, variables)


def _from_template(source: str, variables: Mapping[str, Kind]) -> Expression | None:
    """``source`` compiled through the shape of its template, or None where it has none (it is
    not plain, its template does not compile, or its values fail a check)."""
    lifted = lift(source.strip(), _VERBATIM)
    if lifted is None:
        return None
    shape = _template_shape(lifted.template)
    return None if shape is None else shape.instantiate(source, lifted, variables)


def _from_source(source: str, variables: Mapping[str, Kind]) -> Expression:
    """``source`` parsed and compiled as it is; errors name what failed and where."""
    try:
        tree = parse_python(source.strip(), mode="eval")
    except SyntaxError as err:
        raise ExpressionError(f"syntax error in expression: {err.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError("expression is nested too deeply or is malformed") from None
    try:
        shape = _Compiler(variables).shape(tree.body)
    except RecursionError:
        raise ExpressionError("expression is nested too deeply") from None
    expression = shape.instantiate(source, None, variables)
    if expression is None:  # the compiler made every check instantiating makes
        raise ExpressionError("expression failed a check after compiling")
    return expression
