"""The one printer (render/c.py), on programs of the IR, for each target's number type."""
import math

import numpy as np
import pytest

from symgrad import options
from symgrad.render import TARGETS
from symgrad.render.c import Printer, lower
from symgrad.tracing import trace


def show(f, target=("cpu", "float64")):
    """The C expression of ``f(x, y)``'s one result, every node inlined."""
    low = lower(trace(f, [(), ()]), options.DEFAULT)
    names = {s: a.name for a in low.args for s in a.symbols}
    assert not low.body  # one expression
    return Printer(names, TARGETS[target], options.DEFAULT).doprint(low.outputs[0].exprs[0])


@pytest.mark.parametrize("f, double, single", [
    (lambda x, y: x ** 2, "(x*x)", "(x*x)"),
    (lambda x, y: x ** -3, "(1.0/((x*x)*x))", "(1.0F/((x*x)*x))"),
    (lambda x, y: math.sqrt(x), "sqrt(x)", "sqrtf(x)"),
    (lambda x, y: x ** -1.5, "pow(x, (-1.5))", "powf(x, (-1.5F))"),  # Python's pow: not sqrt's bits
    (lambda x, y: x ** y, "pow(x, y)", "powf(x, y)"),
    (lambda x, y: x / 10, "(x / 10.0)", "(x / 10.0F)"),
    (lambda x, y: x / 0.1, "(x / 0.1)", "(x / 0.10000000149011612F)"),  # the float nearest, exactly
    (lambda x, y: math.sin(x) * math.log(y), "(sin(x) * log(y))", "(sinf(x) * logf(y))"),
    (lambda x, y: abs(x) + math.floor(y), "(fabs(x) + floor(y))", "(fabsf(x) + floorf(y))"),
    (lambda x, y: np.cbrt(x), "cbrt(x)", "cbrtf(x)"),
    (lambda x, y: np.sign(x), "(isnan(x) ? (x) : (double)(((x) > 0) - ((x) < 0)))",
     "(isnan(x) ? (x) : (float)(((x) > 0) - ((x) < 0)))"),
    (lambda x, y: np.where(x > y, x, y), "((x > y) ? x : y)", "((x > y) ? x : y)"),
    (lambda x, y: math.inf * x, "(INFINITY * x)", "(INFINITY * x)"),
    (lambda x, y: 2.0 ** 60 * x, "(1.152921504606847e+18 * x)", None),  # a double literal, not an integer
    (lambda x, y: math.pi * x, "(3.141592653589793 * x)", "(3.1415927410125732F * x)"),
    (lambda x, y: 1e300 * x, "(1e+300 * x)", "(INFINITY * x)"),  # past float's range: its infinity
])
def test_expression_strings(f, double, single):
    assert show(f) == double
    if single is not None:
        assert show(f, ("cpu", "float32")) == single


def test_every_target_prints_the_same_expressions():
    def f(x, y):
        return math.sin(x) * y ** 2.5 + x / 3.0
    for dtype in ("float64", "float32"):
        assert len({show(f, (kind, dtype)) for kind in ("cpu", "c99", "cuda")}) == 1


def test_half_integer_powers_a_derivative_builds_are_square_roots():
    from symgrad.transforms import derive
    low = lower(derive.grad(trace(lambda x, y: math.asin(x), [(), ()]), (0,)), options.DEFAULT)
    names = {s: a.name for a in low.args for s in a.symbols}
    names.update({t: f"t{k}" for k, (t, _) in enumerate(low.body)})
    printer = Printer(names, TARGETS["cpu", "float64"], options.DEFAULT)
    text = " ".join(printer.doprint(e) for _, e in low.body) + " " + printer.doprint(low.outputs[0].exprs[0])
    assert "sqrt(" in text and "pow(" not in text, text  # (1 - x*x) ** (-1/2): 1/sqrt, exactly rounded once


def _printed(low):
    names = {s: a.name for a in low.args for s in a.symbols}
    names.update({t: f"t{k}" for k, (t, _) in enumerate(low.body)})
    printer = Printer(names, TARGETS["cpu", "float64"], options.DEFAULT)
    return [printer.doprint(e) for _, e in low.body], [printer.doprint(e) for e in low.outputs[0].exprs]


def test_statements_where_inlining_would_repeat_or_keep_alive():
    """A power's base is a statement (printed once, not once a factor); so is each select of a
    chain of selects (np.max's); in kernels that may roll (``links``), so is each link of a
    running sum, the last one included; elsewhere nothing used once is."""
    body, out = _printed(lower(trace(lambda x, y: (x + y) ** 3, [(), ()]), options.DEFAULT))
    assert body == ["(x + y)"] and out == ["((t0*t0)*t0)"]
    body, out = _printed(lower(trace(lambda x, y: max(x, y, x * y, x - y), [(), ()]), options.DEFAULT))
    assert [b.count("?") for b in body if "?" in b] == [1, 1] and out[0].count("?") == 1  # one select each

    def running(x, y):
        s = x
        for k in range(4):
            s = s + math.sin(y * k)
        return s
    body, out = _printed(lower(trace(running, [(), ()]), options.DEFAULT))
    assert body == [] and out[0].count("+") == 4  # one expression
    body, out = _printed(lower(trace(running, [(), ()]), options.DEFAULT, links=True))
    assert [b.count("+") for b in body] == [1, 1, 1, 1] and out == ["t3"]
