"""Expressions compiled through a shared template mean exactly what their source means.

The compiler lifts numbers, names and labels out of a plain expression and compiles the template
once (isg_gym/spec/expression_templates.py); here every such expression is compared with the
same source parsed and compiled as it is: same kind, names and labels, and bit-identical values.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isg_gym.simulator import procedural
from isg_gym.spec.expression_templates import lift
from isg_gym.spec.expressions import (
    _VERBATIM,
    ExpressionError,
    _from_source,
    _from_template,
    compile_expression,
)

VARS = {"x": "numeric", "y": "numeric", "c": "categorical", "group": "categorical"}
ENV = {
    "x": np.array([1.0, -1.0, 0.0, 4.0, 2.5, np.nan]),
    "y": np.array([2.0, 3.0, 0.0, 1.0, -7.0, 0.5]),
    "c": np.array(["a", "b", "a", "b", "a b", None], dtype=object),
    "group": np.array(["ctrl", "drug", "ctrl", "ctrl", "drug", "drug"], dtype=object),
}
N = 6


def same(a, b) -> bool:
    """Bit-identical arrays (NaN where NaN), or equal label arrays."""
    if a.dtype == object:
        return a.tolist() == b.tolist()
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def assert_equivalent(source: str, variables, env, n: int) -> None:
    templated = _from_template(source, variables)
    assert templated is not None, f"no template for {source!r}: {lift(source, _VERBATIM)}"
    direct = _from_source(source, variables)
    assert templated.kind == direct.kind
    assert templated.names == direct.names
    assert templated.labels == direct.labels
    noise = np.linspace(-0.5, 0.5, n)
    for extra in (None, noise):
        assert same(templated.evaluate(env, n, extra), direct.evaluate(env, n, extra)), source


PLAIN = [
    "1 + 2*x",
    "-x + +y - -3 - - -2.5",
    "x**2 - y/(y + 40.3316) - 1",
    "20.5 + 10.7105*(2*x/(x + 40.3316) - 1) - 5.30584*((y - 0.2902)/0.453855)",
    "pi - e + sqrt(4) + exp(-x) + log(y) + abs(x) + tanh(x) + sin(y) + cos(y)",
    "where(x > 0, x, -x) + min(x, y, 0.5) + max(x, -1) + clip(x, -1, 2.5)",
    "2*(c == 'a') + (c != 'a b') - 3*(group == 'drug')",
    "(x >= 1) + (x <= 0) + (x < 0) + (y == 3) + (y != 0.5)",
    "1e-5*x + 2.5E+3*y + .5 + 5. + 00 + 0.0 + 007.5 + 1_000",
    "cut(0.5 + 0.2976*(2*x/(x + 4.3) - 1) - 0.1366*y, [0.5], ['incorrect', 'correct'])",
    "cut(x - y, [-1, 0, 2e+3], ['lo', \"mid'\", 'high', 'top'])",
    "cut(-x, [-2.5], ['neg', 'pos'])",
    "x*x*x + y*x - x",
    "2 * 3 + -pi * e",
]


@pytest.mark.parametrize("source", PLAIN)
def test_plain_expressions_compile_through_templates_to_the_same_thing(source):
    assert_equivalent(source, VARS, ENV, N)


def test_every_expression_of_the_builder_is_the_same_through_its_template():
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(300):
        spec = procedural.build_spec(seed)
        kinds = spec.expression_kinds()
        env = {
            name: (rng.normal(1.0, 2.0, N) if kind == "numeric"
                   else rng.choice(["a", "b", "c"], N).astype(object))
            for name, kind in kinds.items()
        }  # fmt: skip
        for col in spec.columns:
            if hasattr(col, "expression"):
                for name in kinds:
                    if kinds[name] == "categorical" and f"{name} ==" in col.expression:
                        labels = col.expression.split(f"{name} == '")[1].split("'")[0]
                        env[name] = np.array([labels, "other"] * (N // 2), dtype=object)
                assert_equivalent(col.expression, kinds, env, N)
                checked += 1
    assert checked > 800


@pytest.mark.parametrize(
    "source",
    ["2x", "007", "0_7", "x.real", "0x1F", "1.5.3", "1j", "1e999", "1" * 400, "x\t+ 1",
     "'a\\'b'", "x2e-5", "f(x).y", "{x}", "x;y", "x @ y"],
)  # fmt: skip
def test_sources_that_are_not_plain_are_compiled_as_they_are(source):
    assert lift(source, _VERBATIM) is None


@pytest.mark.parametrize(
    "source",
    ["x == 'a'", "c + 1", "z * 2", "_x + 1", "__import__('os')", "cut(x, [2, 1], ['a','b','c'])",
     "cut(x, [1], ['a'])", "exp", "log(x, y)", "'a' 'b'", "True + x", "x if y else 2",
     "2(x)", "x(2)", "1 == 'a'", "c == 1", "cut(x, [1], [1, 2])", "x + 'a'", "lambda: 1",
     "x and y", "not x", "min(x)", "_k + 1", "_v * x", "'_s' == c", "x[0]", "[x]"],
)  # fmt: skip
def test_errors_are_those_of_the_source(source):
    """A template never accepts what the source's own compiler refuses, and the error (its
    message and column) is the source's."""
    with pytest.raises(ExpressionError) as direct:
        _from_source(source, VARS)
    assert _from_template(source, VARS) is None
    with pytest.raises(ExpressionError) as compiled:
        compile_expression(source, VARS)
    assert str(compiled.value) == str(direct.value)


def test_an_integer_too_large_for_a_float_is_an_expression_error():
    with pytest.raises(ExpressionError, match="non-finite"):
        compile_expression("1" * 400 + " * x", VARS)


_pieces = st.sampled_from(
    ["x", "y", "c", "group", "pi", "e", "'a'", "'drug'", "1", "2.5", "-3", "1e-3", "0.0", "07",
     "+", "-", "*", "/", "**", "(", ")", ",", "==", "!=", "<", ">=", " ", "exp(", "log(",
     "min(", "where(", "clip(", "cut(", "[", "]", "x.", "_k", "lambda", "if", "not"]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_pieces, min_size=1, max_size=20).map("".join))
def test_fuzz_template_and_source_agree(source):
    try:
        direct = _from_source(source, VARS)
    except ExpressionError:
        assert _from_template(source, VARS) is None
        return
    templated = _from_template(source, VARS)
    if templated is None:  # not plain, or the template did not compile: the source is used
        return
    assert templated.kind == direct.kind and templated.names == direct.names
    assert templated.labels == direct.labels
    assert same(templated.evaluate(ENV, N), direct.evaluate(ENV, N))
