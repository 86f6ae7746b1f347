"""The IR in sympy: every op real, IEEE's answers where sympy's evaluation would leave the reals."""
import math

import pytest
import sympy as sp

from symgrad import realfns as R
from symgrad.program import Arg, Builder, Output
from symgrad.symbolic import to_sympy


def convert(build, nargs=1):
    """to_sympy of a one-output program made by ``build(b, args)``."""
    b = Builder()
    args = [b.node("arg", k, 0) for k in range(nargs)]
    out = build(b, args)
    prog = b.program([Arg(f"x{k}", ()) for k in range(nargs)], [Output("out", (), (out,))])
    sym = to_sympy(prog)
    env = {}
    for t, e in sym.body:
        env[t] = e.xreplace(env)
    return sym.outputs[0].exprs[0].xreplace(env), [a.symbols[0] for a in sym.args]


@pytest.mark.parametrize("zero, sign", [(0.0, 1), (-0.0, -1)])
def test_division_by_a_zero_constant(zero, sign):
    e, (x,) = convert(lambda b, a: b.node("div", a[0], b.const(zero)))
    assert e == sign * sp.oo * x
    e, _ = convert(lambda b, a: b.node("div", b.const(-3.0), b.const(zero)))
    assert e == -sign * sp.oo
    e, _ = convert(lambda b, a: b.node("div", b.const(0.0), b.const(zero)))
    assert e is sp.nan


def test_powers_stay_real():
    e, (x,) = convert(lambda b, a: b.node("pow", b.const(-1.5), a[0]))
    assert isinstance(e, R.RealPow)
    assert sp.diff(e, x) is sp.nan  # d/dy (-1.5)**y: no real derivative (log of a negative base)
    e, _ = convert(lambda b, a: b.node("pow", b.const(-8.0), b.const(1 / 3)))
    assert e is sp.nan                      # numpy: nan (Python: a complex number)
    e, _ = convert(lambda b, a: b.node("pow", b.const(0.0), b.const(-2)))
    assert e is sp.oo
    e, (x,) = convert(lambda b, a: b.node("pow", a[0], b.const(3)))
    assert e == x ** 3                      # integer powers stay sympy powers


@pytest.mark.parametrize("op, arg, expected", [
    ("log", -2.0, sp.nan), ("log", 0.0, -sp.oo), ("sqrt", -4.0, sp.nan), ("asin", 2.0, sp.nan),
    ("acosh", 0.5, sp.nan), ("atanh", 1.0, sp.oo), ("log1p", -2.0, sp.nan), ("log10", 100, 2),
    ("cbrt", -8, -2), ("abs", -0.5, 0.5), ("sign", -3.0, -1),
])
def test_functions_of_numbers_are_real_or_nan(op, arg, expected):
    e, _ = convert(lambda b, a: b.node(op, b.const(arg)))
    assert e is sp.nan if expected is sp.nan else (e == expected or sp.simplify(e - expected) == 0)
    assert not e.has(sp.I) and not e.has(sp.zoo)


def test_comparisons_with_nan_are_false_but_not_equal():
    for op, want in (("gt", 2.0), ("lt", 2.0), ("eq", 2.0), ("ne", 1.0)):
        e, _ = convert(lambda b, a, op=op: b.node("select", b.node(op, a[0], b.const(math.nan)),
                                                  b.const(1.0), b.const(2.0)))
        assert float(e) == want, op


def test_abs_and_sign_of_anything_have_real_derivatives():
    e, (x,) = convert(lambda b, a: b.node("abs", b.node("pow", a[0], b.const(2.5))))
    d = sp.diff(e, x)
    assert not d.has(sp.re, sp.im, sp.Derivative, sp.arg)
    e, (x,) = convert(lambda b, a: b.node("mul", a[0], b.node("sign", b.node("cbrt", a[0]))))
    assert not sp.diff(e, x, 2).has(sp.Derivative)


def test_abs_of_sign_and_of_abs():
    e, (x,) = convert(lambda b, a: b.node("abs", b.node("sign", a[0])))
    assert isinstance(e, R.Abs) and isinstance(e.args[0], R.Sign)  # |sign(x)|: no simpler form (0 at 0)
    e, (x,) = convert(lambda b, a: b.node("abs", b.node("abs", a[0])))
    assert e == R.Abs(x)
