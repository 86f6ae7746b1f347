"""Tracing tests: every Python construct symgrad promises to trace, checked against
independent references (CPython's own math on floats, hand-written closed-form
derivatives in numpy/scipy, sympy's diff of hand-written sympy expressions evaluated
in mpmath at 40 digits). Nothing is checked only against symgrad itself.

Each compiled function costs a C compile, so related checks share one function:
a vector argument carries one independent input per checked construct, and the
Jacobian/Hessian diagonal gives each construct's derivatives."""
import functools
import math
import math as m
import os
import sys
from fractions import Fraction
from math import exp, log1p, sinh  # module-level names bound by `from math import ...`
from math import pow as p

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad

special = pytest.importorskip("scipy.special")  # the references of this module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _helpers_mod  # noqa: E402
import _helpers_mod as hm  # noqa: E402
from _helpers_mod import helper_poly, kink  # noqa: E402

RTOL = 1e-12
HAS_311 = sys.version_info >= (3, 11)
X, Y = sp.symbols("x y", real=True)


def close(actual, expected, rtol=RTOL, atol=0.0):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                               rtol=rtol, atol=atol)


def mp_eval(expr, syms, *cols):
    """Evaluate a sympy expression at each row of ``cols`` in mpmath with 40 digits."""
    # DiracDelta (from differentiating Abs/sign twice) vanishes away from the kinks we test
    fn = sp.lambdify(syms, expr, modules=[{"DiracDelta": lambda *a: 0}, "mpmath"])
    cols = np.broadcast_arrays(*[np.asarray(c, dtype=float) for c in cols])
    out = np.empty(cols[0].shape)
    with mpmath.workdps(40):
        for idx in np.ndindex(*out.shape):
            r = fn(*[mpmath.mpf(float(c[idx])) for c in cols])
            out[idx] = float(mpmath.re(r))
    return out


def mp_table(exprs, syms, *cols):
    """``mp_eval`` for a list of expressions; result shape batch + (len(exprs),)."""
    return np.stack([mp_eval(e, syms, *cols) for e in exprs], axis=-1)


# Each group of checks below once ran twice, through sympy's closed form and through reverse
# accumulation; symgrad now differentiates every program on its IR (transforms/derive.py),
# so each runs once, on the function as written.
STRATEGIES = ["ir"]


def _deep(t, depth=10):
    for _ in range(depth):
        t = math.sin(t) + 0.3 * t * t
    return t


def _mp_deep(t, depth=10):
    for _ in range(depth):
        t = mpmath.sin(t) + mpmath.mpf(0.3) * t * t
    return t


def compile_for(f, strategy, shapes=None):
    return symgrad.compile(f, shapes)


def test_deep_chain_reverse_mode():
    F = symgrad.compile(_deep)
    xs = np.array([-1.2, 0.3, 0.7, 1.1])
    with mpmath.workdps(50):  # mpmath.diff at 50 digits: exact to double precision
        ref = np.array([[float(mpmath.diff(_mp_deep, mpmath.mpf(float(x)), n)) for n in range(3)]
                        for x in xs])
    close(F(xs), ref[:, 0])
    close(F.grad(xs), ref[:, 1])
    close(F.derivative(2)(xs), ref[:, 2])
    close(F.hessian(xs), ref[:, 2])


# =====================================================================================
# The founding function
# =====================================================================================

def founding(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


FOUNDING_SYM = 64 * X * (1 - X) * (1 - 2 * X) ** 2 * (1 - 8 * X + 8 * X * X) ** 2


@pytest.fixture(scope="module")
def founding_fn():
    return symgrad.compile(founding)


def test_founding_fifth_derivative_is_exact(founding_fn):
    pts = [-1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 1.5]
    d5 = sp.diff(FOUNDING_SYM, X, 5)
    # sympy at exact rationals: the 5th derivative of this integer polynomial is a cubic
    # with integer coefficients, so at these binary points the result is exact.
    exact = [d5.subs(X, sp.Rational(x)) for x in pts]
    assert all(e.is_Rational for e in exact)
    got = founding_fn.derivative(5)(np.array(pts))
    close(got, [float(e) for e in exact])
    assert float(got[pts.index(3.0)]) == float(exact[pts.index(3.0)])  # exactly an integer there
    # the founding question itself: f'(3), exactly
    d1 = sp.diff(FOUNDING_SYM, X).subs(X, 3)
    assert d1.is_Integer
    close(founding_fn.grad(3.0), float(d1))
    close(founding_fn(np.array(pts)), [float(FOUNDING_SYM.subs(X, sp.Rational(x))) for x in pts])


def test_founding_expr_equals_hand_written(founding_fn):
    assert sp.simplify(founding_fn.expr - FOUNDING_SYM) == 0
    assert sp.simplify(founding_fn.grad.expr - sp.diff(FOUNDING_SYM, X)) == 0


# =====================================================================================
# F.expr equals a hand-written sympy expression
# =====================================================================================

def _expr_simple(x, y):
    return math.sin(x) * y + x ** 2 / y - math.log(x, 2) + math.exp(-x * y) + 3


def _expr_vector(v):
    return np.array([v[0] * v[1], math.cos(v[1]) + v[0] ** 3])


def test_expr_of_simple_function_matches_hand_written():
    F = symgrad.compile(_expr_simple)
    hand = sp.sin(X) * Y + X ** 2 / Y - sp.log(X) / sp.log(2) + sp.exp(-X * Y) + 3
    assert sp.simplify(F.expr - hand) == 0
    gx, gy = F.grad.expr
    assert sp.simplify(gx - sp.diff(hand, X)) == 0
    assert sp.simplify(gy - sp.diff(hand, Y)) == 0


def test_expr_of_vector_function_matches_hand_written():
    F = symgrad.compile(_expr_vector, shapes=[(2,)])
    v0, v1 = sp.symbols("v[0] v[1]", real=True)
    e = F.expr
    assert isinstance(e, sp.NDimArray) and e.shape == (2,)
    assert sp.simplify(e[0] - v0 * v1) == 0
    assert sp.simplify(e[1] - (sp.cos(v1) + v0 ** 3)) == 0


def test_expr_of_where_is_piecewise():
    F = symgrad.compile(lambda x, y: symgrad.where(x < y, x * y, math.exp(x - y)))
    e = F.expr
    assert e.has(sp.Piecewise)
    hand = sp.Piecewise((X * Y, X < Y), (sp.exp(X - Y), True))
    for xv, yv in [(0.5, 2.0), (2.0, 0.5), (1.0, 1.0), (-3.0, -1.0)]:
        sub = {X: sp.Float(xv), Y: sp.Float(yv)}
        assert float(e.xreplace(sub)) == float(hand.xreplace(sub))


# =====================================================================================
# Arithmetic operators and powers
# =====================================================================================

def _arith(x, y):
    # x > 0 feeds the fractional/traced exponents; y (any sign, != 0) the integer ones
    return np.array([
        x + y, x - y, x * y, x / y, -x, +y, -(x * y),
        3 - y, 2 / y, 1.5 * y, y + 2, y - 0.25, x * 4, y / 8,
        y ** 3, y ** -2, y ** -3, y ** 2.0, y ** 0, (x * y) ** 2, (x + y) ** -1,
        x ** 0.5, x ** 1.5, x ** -0.5, x ** Fraction(1, 3), x ** Fraction(-2, 3),
        x ** y, 2 ** y, 2.5 ** y, x ** (y * y),
        pow(y, 3), pow(x, y), pow(3, x), pow(y, -1),
        # numpy scalars and Fractions as constants, on either side
        np.float64(1.5) * y, np.float64(1.5) - y, y ** np.int64(3), np.float64(1.5) ** x,
        Fraction(1, 3) * y, y / np.int64(4),
    ])


ARITH_SYM = [
    X + Y, X - Y, X * Y, X / Y, -X, Y, -(X * Y),
    3 - Y, 2 / Y, sp.Rational(3, 2) * Y, Y + 2, Y - sp.Rational(1, 4), 4 * X, Y / 8,
    Y ** 3, Y ** -2, Y ** -3, Y ** 2, sp.Integer(1), (X * Y) ** 2, 1 / (X + Y),
    sp.sqrt(X), X ** sp.Rational(3, 2), 1 / sp.sqrt(X), X ** sp.Rational(1, 3), X ** sp.Rational(-2, 3),
    X ** Y, 2 ** Y, sp.Rational(5, 2) ** Y, X ** (Y * Y),
    Y ** 3, X ** Y, 3 ** X, 1 / Y,
    sp.Rational(3, 2) * Y, sp.Rational(3, 2) - Y, Y ** 3, sp.Rational(3, 2) ** X,
    Y / 3, Y / 4,
]

ARITH_X = np.array([0.3, 0.7, 1.5, 2.2, 4.0, 0.9])
ARITH_Y = np.array([-1.7, -0.4, 0.6, 1.3, 2.5, -3.1])


@pytest.fixture(scope="module", params=STRATEGIES)
def arith_fn(request):
    return compile_for(_arith, request.param)


NA = len(ARITH_SYM)


def test_arithmetic_values(arith_fn):
    got = arith_fn(ARITH_X, ARITH_Y)[:, :NA]
    close(got, mp_table(ARITH_SYM, [X, Y], ARITH_X, ARITH_Y))
    # and CPython's own float arithmetic on the same inputs
    py = np.array([_arith(float(a), float(b)) for a, b in zip(ARITH_X, ARITH_Y)], dtype=float)
    close(got, py)


def test_arithmetic_first_derivatives(arith_fn):
    jx, jy = arith_fn.jacobian(ARITH_X, ARITH_Y)
    close(jx[:, :NA], mp_table([sp.diff(e, X) for e in ARITH_SYM], [X, Y], ARITH_X, ARITH_Y), atol=1e-300)
    close(jy[:, :NA], mp_table([sp.diff(e, Y) for e in ARITH_SYM], [X, Y], ARITH_X, ARITH_Y), atol=1e-300)


@pytest.mark.parametrize("argnum,sym", [(0, X), (1, Y)])
def test_arithmetic_second_derivatives(arith_fn, argnum, sym):
    got = arith_fn.derivative(2, argnum)(ARITH_X, ARITH_Y)[:, :NA]
    close(got, mp_table([sp.diff(e, sym, 2) for e in ARITH_SYM], [X, Y], ARITH_X, ARITH_Y), atol=1e-300)


def test_grad_structure_one_arg_array_several_args_tuple():
    g1 = symgrad.grad(lambda x: x ** 3)(np.array([1.0, 2.0]))
    assert isinstance(g1, np.ndarray) and g1.shape == (2,)
    close(g1, [3.0, 12.0])
    g2 = symgrad.grad(lambda x, y: x * y * y)(2.0, 3.0)
    assert isinstance(g2, tuple) and len(g2) == 2
    close(g2, [9.0, 12.0])


def test_large_integer_constants():
    F = symgrad.compile(lambda x: x * 10 ** 20 + x * 2 ** 70)
    close(F(1.0), 1e20 + 2.0 ** 70)


def test_high_order_derivative_large_integer_coefficient():
    F = symgrad.compile(lambda x: x ** 30)
    close(F.derivative(25)(1.0), math.factorial(30) / math.factorial(5))


# =====================================================================================
# Comparisons through symgrad.where (Piecewise)
# =====================================================================================

def _compare(x, y):
    return np.array([
        symgrad.where(x < y, x * y, x + y),
        symgrad.where(x <= y, x ** 2, 3 * y),
        symgrad.where(x > y, math.sin(x), math.cos(y)),
        symgrad.where(x >= y, x - y, y * y),
        symgrad.where(x == y, 7 * x, y - x),
        symgrad.where(x != y, x / y, 1.0),
        symgrad.where((x > 0) & (x < y), x * x * y, -y),
        symgrad.where((x > 2) | ~(y > 0), x, 2 * y),
        symgrad.where(x < 1, symgrad.where(y < 1, x * y, x), 5.0),   # nested, constant branch
        symgrad.where(x < y, 1.0, 0.0),                               # a pure step
    ])


def _compare_ref(x, y):
    """Hand-written branches: (value, d/dx, d/dy) for one point."""
    rows = [
        (x * y, y, x) if x < y else (x + y, 1, 1),
        (x ** 2, 2 * x, 0) if x <= y else (3 * y, 0, 3),
        (math.sin(x), math.cos(x), 0) if x > y else (math.cos(y), 0, -math.sin(y)),
        (x - y, 1, -1) if x >= y else (y * y, 0, 2 * y),
        (7 * x, 7, 0) if x == y else (y - x, -1, 1),
        (x / y, 1 / y, -x / y ** 2) if x != y else (1.0, 0, 0),
        (x * x * y, 2 * x * y, x * x) if (0 < x < y) else (-y, 0, -1),
        (x, 1, 0) if (x > 2 or not y > 0) else (2 * y, 0, 2),
        ((x * y, y, x) if y < 1 else (x, 1, 0)) if x < 1 else (5.0, 0, 0),
        (1.0 if x < y else 0.0, 0, 0),
    ]
    return [np.array(c, dtype=float) for c in zip(*rows)]


# both sides of every comparison, and ties (x == y)
CMP_X = np.array([0.5, 2.0, 1.5, 1.5, -1.0, 3.0, 0.25, 2.5, 0.75, 0.8])
CMP_Y = np.array([2.0, 0.5, 1.5, 2.5, -2.0, -1.0, 0.25, 2.5, 0.5, 0.9])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_where_comparisons_values_and_derivatives(strategy):
    F = compile_for(_compare, strategy)
    nc = 10
    assert all(e.has(sp.Piecewise) for e in list(F.expr)[:nc])
    refs = [_compare_ref(float(a), float(b)) for a, b in zip(CMP_X, CMP_Y)]
    val, dx, dy = (np.array([r[k] for r in refs]) for k in range(3))
    close(F(CMP_X, CMP_Y)[:, :nc], val)
    gx, gy = F.jacobian(CMP_X, CMP_Y)
    close(gx[:, :nc], dx)
    close(gy[:, :nc], dy)


def test_where_piecewise_both_sides_second_derivative():
    F = symgrad.compile(lambda x: symgrad.where(x < 1.0, math.exp(2 * x), x ** 3 - math.log(x)))
    xs = np.array([-0.5, 0.3, 0.999, 1.0, 1.001, 2.5])
    lo = xs < 1.0
    safe = np.where(lo, 1.0, xs)  # log only where that branch is taken
    close(F(xs), np.where(lo, np.exp(2 * xs), xs ** 3 - np.log(safe)))
    close(F.grad(xs), np.where(lo, 2 * np.exp(2 * xs), 3 * xs ** 2 - 1 / safe))
    close(F.derivative(2)(xs), np.where(lo, 4 * np.exp(2 * xs), 6 * xs + 1 / safe ** 2))
    assert F.expr.has(sp.Piecewise)


def test_python_branch_on_traced_value_converts_and_a_loop_raises():
    def f(x):
        if x > 0:
            return x
        return -x

    def g(x):
        while x > 1.0:
            x = x / 2
        return x
    F = symgrad.compile(f)
    close(F(np.array([-2.0, 3.0])), [2.0, 3.0])
    close(F.grad(np.array([-2.0, 3.0])), [-1.0, 1.0])
    with pytest.raises(symgrad.TraceError, match="`while` loop at g"):
        symgrad.compile(g).expr


# =====================================================================================
# math: every differentiable function, value and first/second derivative
# =====================================================================================

# (name, reference value on floats (CPython), points, d/dx closed form, d2: sympy expr in X
#  whose 2nd derivative sympy takes, or a numpy closed form for d2)
def _cbrt_d1(x):
    return 1.0 / (3.0 * np.cbrt(x) ** 2)


def _cbrt_d2(x):
    return -2.0 / (9.0 * x * np.cbrt(x) ** 2)


_TRIG = [-2.5, -0.7, 0.3, 1.2, 3.0]
_ANY = [-3.0, -0.7, 0.3, 1.2, 4.0]
_POS = [0.1, 0.5, 1.5, 3.0, 100.0]
_UNIT = [-0.95, -0.5, 0.1, 0.6, 0.9]

UNARY = [
    ("sin", math.sin, _TRIG, np.cos, sp.sin(X)),
    ("cos", math.cos, _TRIG, lambda x: -np.sin(x), sp.cos(X)),
    ("tan", math.tan, [-1.3, -0.7, 0.3, 1.2, 2.0], lambda x: 1 / np.cos(x) ** 2, sp.tan(X)),
    ("asin", math.asin, _UNIT, lambda x: 1 / np.sqrt(1 - x * x), sp.asin(X)),
    ("acos", math.acos, _UNIT, lambda x: -1 / np.sqrt(1 - x * x), sp.acos(X)),
    ("atan", math.atan, [-5.0, -0.7, 0.3, 1.2, 30.0], lambda x: 1 / (1 + x * x), sp.atan(X)),
    ("sinh", math.sinh, _ANY, np.cosh, sp.sinh(X)),
    ("cosh", math.cosh, _ANY, np.sinh, sp.cosh(X)),
    ("tanh", math.tanh, [-3.0, -0.7, 0.3, 1.2, 2.5], lambda x: 1 / np.cosh(x) ** 2, sp.tanh(X)),
    ("asinh", math.asinh, [-3.0, -0.7, 0.3, 1.2, 10.0], lambda x: 1 / np.sqrt(x * x + 1), sp.asinh(X)),
    ("acosh", math.acosh, [1.1, 1.5, 2.0, 3.5, 10.0], lambda x: 1 / np.sqrt(x * x - 1), sp.acosh(X)),
    ("atanh", math.atanh, [-0.9, -0.5, 0.1, 0.6, 0.95], lambda x: 1 / (1 - x * x), sp.atanh(X)),
    ("exp", math.exp, [-3.0, -0.7, 0.3, 1.2, 5.0], np.exp, sp.exp(X)),
    ("expm1", math.expm1, [-1.0, -1e-3, 1e-6, 0.3, 2.0], np.exp, sp.exp(X) - 1),
    ("log", math.log, _POS, lambda x: 1 / x, sp.log(X)),
    ("log_base3", lambda x: math.log(x, 3), _POS, lambda x: 1 / (x * np.log(3.0)), sp.log(X) / sp.log(3)),
    ("log1p", math.log1p, [-0.5, -1e-3, 1e-6, 0.3, 10.0], lambda x: 1 / (1 + x), sp.log(1 + X)),
    ("log2", math.log2, _POS, lambda x: 1 / (x * np.log(2.0)), sp.log(X) / sp.log(2)),
    ("log10", math.log10, _POS, lambda x: 1 / (x * np.log(10.0)), sp.log(X) / sp.log(10)),
    ("sqrt", math.sqrt, [0.01, 0.5, 1.5, 3.0, 100.0], lambda x: 0.5 / np.sqrt(x), sp.sqrt(X)),
    ("exp2", getattr(math, "exp2", None), [-3.0, -0.7, 0.3, 1.2, 5.0],
     lambda x: np.log(2.0) * np.exp2(x), 2 ** X),
    ("cbrt", getattr(math, "cbrt", None), [-8.3, -0.7, 0.3, 1.2, 27.0], _cbrt_d1, _cbrt_d2),
    ("erf", math.erf, [-2.0, -0.7, 0.3, 1.2, 3.0],
     lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x), sp.erf(X)),
    ("erfc", math.erfc, [-2.0, -0.7, 0.3, 1.2, 5.0],
     lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x), sp.erfc(X)),
    ("gamma", math.gamma, [-2.5, 0.3, 1.7, 3.7, 10.2],
     lambda x: special.gamma(x) * special.digamma(x), sp.gamma(X)),
    ("lgamma", math.lgamma, [-2.5, 0.3, 1.7, 3.7, 30.0], special.digamma,
     lambda x: special.polygamma(1, x)),
    ("fabs", math.fabs, _ANY, np.sign, lambda x: np.zeros_like(x)),
    ("degrees", math.degrees, _ANY, lambda x: np.full_like(x, 180 / np.pi), lambda x: np.zeros_like(x)),
    ("radians", math.radians, _ANY, lambda x: np.full_like(x, np.pi / 180), lambda x: np.zeros_like(x)),
    ("pow_x_2.5", lambda x: math.pow(x, 2.5), _POS, lambda x: 2.5 * x ** 1.5, X ** sp.Rational(5, 2)),
    ("pow_1.7_x", lambda x: math.pow(1.7, x), _ANY, lambda x: np.log(1.7) * 1.7 ** x,
     sp.Rational(17, 10) ** X),
    ("pow_x_3", lambda x: math.pow(x, 3), _ANY, lambda x: 3 * x * x, X ** 3),
    ("hypot_3args", lambda x: math.hypot(x, 2.0, -1.0), _ANY, lambda x: x / np.sqrt(x * x + 5),
     sp.sqrt(X ** 2 + 5)),
    ("copysign_x_neg", lambda x: math.copysign(x, -1.0), _ANY, lambda x: -np.sign(x),
     lambda x: np.zeros_like(x)),
    ("copysign_2_x", lambda x: math.copysign(2.0, x), _ANY, lambda x: np.zeros_like(x),
     lambda x: np.zeros_like(x)),
    ("atan2_x_neg2", lambda x: math.atan2(x, -2.0), _ANY, lambda x: -2 / (x * x + 4), sp.atan2(X, -2)),
    ("atan2_neg2_x", lambda x: math.atan2(-2.0, x), _ANY, lambda x: 2 / (x * x + 4), sp.atan2(-2, X)),
]


def _unary_traced(v):
    # one input column per UNARY entry, in the same order
    return np.array([
        math.sin(v[0]), math.cos(v[1]), math.tan(v[2]),
        math.asin(v[3]), math.acos(v[4]), math.atan(v[5]),
        math.sinh(v[6]), math.cosh(v[7]), math.tanh(v[8]),
        math.asinh(v[9]), math.acosh(v[10]), math.atanh(v[11]),
        math.exp(v[12]), math.expm1(v[13]), math.log(v[14]), math.log(v[15], 3),
        math.log1p(v[16]), math.log2(v[17]), math.log10(v[18]), math.sqrt(v[19]),
        math.exp2(v[20]) if HAS_311 else v[20],
        math.cbrt(v[21]) if HAS_311 else v[21],
        math.erf(v[22]), math.erfc(v[23]), math.gamma(v[24]), math.lgamma(v[25]),
        math.fabs(v[26]), math.degrees(v[27]), math.radians(v[28]),
        math.pow(v[29], 2.5), math.pow(1.7, v[30]), math.pow(v[31], 3),
        math.hypot(v[32], 2.0, -1.0), math.copysign(v[33], -1.0), math.copysign(2.0, v[34]),
        math.atan2(v[35], -2.0), math.atan2(-2.0, v[36]),
    ])


def _unary_sum(v):
    return np.sum(_unary_traced(v))


@pytest.fixture(scope="module", params=STRATEGIES)
def unary_results(request):
    n = len(UNARY)
    pts = np.array([u[2] for u in UNARY], dtype=float).T  # (5, n): column i feeds entry i
    F = symgrad.compile(_unary_traced, shapes=[(n,)])
    S = symgrad.compile(_unary_sum, shapes=[(n,)])
    return pts, F(pts), F.jacobian(pts), S.hessian(pts)


def _skip_old(name):
    return [pytest.mark.skipif(not HAS_311, reason=f"math.{name} needs Python >= 3.11")] \
        if name in ("cbrt", "exp2") else []


@pytest.mark.parametrize("i", [pytest.param(i, id=u[0], marks=_skip_old(u[0]))
                               for i, u in enumerate(UNARY)])
def test_math_unary_value_and_derivatives(unary_results, i):
    _, ref, _, d1, d2 = UNARY[i]
    pts, val, jac, hess = unary_results
    x = pts[:, i]
    close(val[:, i], [ref(float(t)) for t in x])
    close(jac[:, i, i], d1(x))
    d2_ref = mp_eval(sp.diff(d2, X, 2), [X], x) if isinstance(d2, sp.Expr) else d2(x)
    close(hess[:, i, i], d2_ref, atol=1e-300)


def test_math_unary_inputs_do_not_leak(unary_results):
    # each output depends only on its own input: Jacobian and Hessian are diagonal
    _, _, jac, hess = unary_results
    n = len(UNARY)
    off = ~np.eye(n, dtype=bool)
    assert np.all(jac[:, :n, :n][:, off] == 0)
    assert np.all(hess[:, :n, :n][:, off] == 0)


# two-argument functions: (name, reference on floats, u points, w points, du, dw, sympy expr
# in (X, Y) for second derivatives, or None when they vanish)
BINARY = [
    ("log_x_base", math.log, [0.5, 2.0, 3.7, 10.0, 0.1], [2.0, 10.0, 0.5, 3.0, 1.5],
     lambda u, w: 1 / (u * np.log(w)), lambda u, w: -np.log(u) / (w * np.log(w) ** 2),
     sp.log(X) / sp.log(Y)),
    ("pow", math.pow, [0.5, 1.5, 2.0, 3.0, 0.8], [2.5, -1.3, 0.5, 3.0, 1.0],
     lambda u, w: w * u ** (w - 1), lambda u, w: u ** w * np.log(u), X ** Y),
    ("hypot", math.hypot, [3.0, -1.0, 0.5, 2.0, -4.0], [4.0, 2.0, -0.7, 0.1, -3.0],
     lambda u, w: u / np.hypot(u, w), lambda u, w: w / np.hypot(u, w), sp.sqrt(X ** 2 + Y ** 2)),
    ("atan2", math.atan2, [1.0, 1.0, -1.0, -1.0, 0.5], [1.0, -1.0, -1.0, 1.0, -2.0],
     lambda u, w: w / (u * u + w * w), lambda u, w: -u / (u * u + w * w), sp.atan2(X, Y)),
    ("copysign", math.copysign, [1.5, -2.0, 3.0, -0.5, 2.0], [1.0, 1.0, -2.0, -3.0, -0.1],
     lambda u, w: np.sign(u) * np.sign(w), lambda u, w: 0 * u, None),
]


def _binary_traced(u, w):
    return np.array([math.log(u[0], w[0]), math.pow(u[1], w[1]), math.hypot(u[2], w[2]),
                     math.atan2(u[3], w[3]), math.copysign(u[4], w[4])])


def _binary_sum(u, w):
    return np.sum(_binary_traced(u, w))


@pytest.fixture(scope="module", params=STRATEGIES)
def binary_results(request):
    k = len(BINARY)
    U = np.array([b[2] for b in BINARY]).T
    W = np.array([b[3] for b in BINARY]).T
    F = symgrad.compile(_binary_traced, shapes=[(k,), (k,)])
    S = symgrad.compile(_binary_sum, shapes=[(k,), (k,)])
    return U, W, F(U, W), F.jacobian(U, W), S.hessian(U, W)


@pytest.mark.parametrize("i", range(len(BINARY)), ids=[b[0] for b in BINARY])
def test_math_binary_value_and_derivatives(binary_results, i):
    _, ref, _, _, du, dw, sym = BINARY[i]
    U, W, val, (ju, jw), ((huu, huw), (hwu, hww)) = binary_results
    u, w = U[:, i], W[:, i]
    close(val[:, i], [ref(float(a), float(b)) for a, b in zip(u, w)])
    close(ju[:, i, i], du(u, w), atol=1e-300)
    close(jw[:, i, i], dw(u, w), atol=1e-300)
    for h, s1, s2 in [(huu, X, X), (huw, X, Y), (hwu, Y, X), (hww, Y, Y)]:
        ref2 = np.zeros_like(u) if sym is None else mp_eval(sp.diff(sym, s1, s2), [X, Y], u, w)
        close(h[:, i, i], ref2, atol=1e-300)


def test_math_constants():
    F = symgrad.compile(lambda x: math.pi * x + math.e * x ** 2 + math.tau + m.pi / x)
    xs = np.array([-2.0, 0.5, 3.0])
    close(F(xs), np.pi * xs + np.e * xs ** 2 + 2 * np.pi + np.pi / xs)
    close(F.grad(xs), np.pi + 2 * np.e * xs - np.pi / xs ** 2)


# =====================================================================================
# However math/numpy/helpers are reached
# =====================================================================================

def _local_helper(t):
    # a helper in this module using `from math import ...` names and `import math as m`
    return sinh(t) * m.atan(t)


_module_lambda = lambda t: m.exp(-t) * math.cos(t)  # noqa: E731
_half_pow = functools.partial(math.pow, 2.0)      # a partial of a math function: 2**t


def _import_styles(x):
    return np.array([
        math.sin(x),                    # import math
        m.cos(x),                       # import math as m
        p(x, 3),                        # from math import pow as p
        exp(x / 2),                     # from math import exp
        log1p(x * x),                   # from math import log1p
        _local_helper(x),               # helper in this module
        _module_lambda(x),              # module-level lambda
        _half_pow(x),                   # functools.partial(math.pow, 2.0)
        _helpers_mod.star_user(x),      # import _helpers_mod; helper uses `from math import *`
        hm.alias_user(x),               # import _helpers_mod as hm; helper uses `import math as mm`
        helper_poly(x),                 # from _helpers_mod import helper_poly (star-imported pow)
        hm.calls_sibling(x),            # helper calling a sibling helper (numpy) in its module
        hm.math.tan(x),                 # math reached as an attribute of another module
        kink(x),                        # builtins min/max/abs inside another module
        hm.SCALE * x,                   # a module constant
    ])


def _import_styles_sym(x):
    kink_sym = (sp.Piecewise((x, x > 0), (0, True)) + sp.Piecewise((x * x, x * x < 1), (1, True))
                + sp.Abs(x - sp.Rational(1, 2)))
    return [
        sp.sin(x), sp.cos(x), x ** 3, sp.exp(x / 2), sp.log(1 + x * x),
        sp.sinh(x) * sp.atan(x), sp.exp(-x) * sp.cos(x), 2 ** x,
        sp.sin(x) * sp.exp(-x) + sp.sqrt(x * x + 1) + sp.atan(x) + sp.pi,
        sp.log(1 + x * x) + sp.cosh(x) * sp.Rational(3, 2),
        x ** 3 - 2 * x,
        sp.sin(x) ** 2 + sp.tanh(x) * sp.Rational(3, 2),
        sp.tan(x), kink_sym, sp.Rational(3, 2) * x,
    ]


IMPORT_X = np.array([-1.4, -0.6, 0.2, 0.9, 1.3, 2.1])


@pytest.fixture(scope="module", params=STRATEGIES)
def import_fn(request):
    return compile_for(_import_styles, request.param)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_import_styles(import_fn, order):
    syms = _import_styles_sym(X)
    got = import_fn(IMPORT_X) if order == 0 else import_fn.derivative(order)(IMPORT_X)
    got = got[:, :len(syms)]
    close(got, mp_table([sp.diff(e, X, order) for e in syms], [X], IMPORT_X), atol=1e-300)
    if order == 0:  # the untraced function on floats agrees too (and calls the real math)
        close(got, np.array([_import_styles(float(t)) for t in IMPORT_X], dtype=float))


def _rec(x, n):
    """Fixed-depth recursion through a module-level function."""
    return x if n == 0 else math.sin(_rec(x, n - 1)) + 0.5 * x


def _make_closure_fn():
    k = 2.5                                    # closed-over constant
    helper = lambda t: math.exp(-t * t)        # closed-over helper (a lambda)  # noqa: E731

    def sq_sin(t):                             # closed-over helper (a def)
        return m.sin(t) ** 2
    import math as local_math                  # closed-over module (a local import)
    s = math.sinh                              # closed-over math function object

    def crec(t, n):                            # closed-over recursive function (cell -> itself)
        return t if n == 0 else local_math.cos(crec(t, n - 1)) * t

    def f(x, pw=math.pow, ufn=np.tanh, absf=abs, *, lg=math.log):   # defaults
        inner = lambda t: local_math.cos(t) * k  # lambda defined inside f  # noqa: E731

        def nested(t):                           # nested function defined inside f
            return pw(t, 2) + s(t)

        def pw_rec(t, n):                        # recursion inside f
            return 1 if n == 0 else t * pw_rec(t, n - 1)

        return np.array([
            k * helper(x), sq_sin(x), inner(x), nested(x), ufn(x), lg(x * x + 1),
            absf(x - 3), _rec(x, 3), crec(x, 2), pw_rec(x, 4),
        ])
    return f


def _closure_sym(x):
    r = x
    for _ in range(3):
        r = sp.sin(r) + x / 2
    c = x
    for _ in range(2):
        c = sp.cos(c) * x
    return [sp.Rational(5, 2) * sp.exp(-x * x), sp.sin(x) ** 2, sp.cos(x) * sp.Rational(5, 2),
            x ** 2 + sp.sinh(x), sp.tanh(x), sp.log(x * x + 1), 3 - x, r, c, x ** 4]


CLOSURE_X = np.array([-1.7, -0.4, 0.3, 1.1, 2.4])


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("order", [0, 1, 2])
def test_closures_defaults_lambdas_nested_recursion(order, strategy):
    F = _closure_compiled(strategy)
    got = F(CLOSURE_X) if order == 0 else F.derivative(order)(CLOSURE_X)
    close(got[:, :10], mp_table([sp.diff(e, X, order) for e in _closure_sym(X)], [X], CLOSURE_X), atol=1e-300)


@functools.lru_cache(maxsize=None)
def _closure_compiled(strategy):
    return compile_for(_make_closure_fn(), strategy)


def test_lambda_compiled_directly():
    F = symgrad.compile(lambda x, y: m.log(x) * _module_lambda(y) + p(x, y))
    xs, ys = np.array([0.5, 1.5, 3.0]), np.array([-0.3, 0.7, 2.0])
    hand = sp.log(X) * sp.exp(-Y) * sp.cos(Y) + X ** Y
    close(F(xs, ys), mp_eval(hand, [X, Y], xs, ys))
    gx, gy = F.grad(xs, ys)
    close(gx, mp_eval(sp.diff(hand, X), [X, Y], xs, ys))
    close(gy, mp_eval(sp.diff(hand, Y), [X, Y], xs, ys))


def _local_import_math(x):
    import math
    return math.sin(x) * 2


def _local_from_import(x):
    from math import sin
    return sin(x) * 2


def _local_import_helper_module(x):
    import _helpers_mod
    return _helpers_mod.helper_poly(x) - x ** 3 + 2 * x + 2 * m.sin(x)


@pytest.mark.parametrize("f", [_local_import_math, _local_from_import, _local_import_helper_module])
def test_import_inside_traced_function(f):
    F = symgrad.compile(f)
    xs = np.array([-0.7, 0.3, 1.9])
    close(F(xs), 2 * np.sin(xs))
    close(F.grad(xs), 2 * np.cos(xs))


class _Model:
    def energy(self, x):
        return math.sin(x) * 2


_MODEL = _Model()
_DISPATCH = {"sin": math.sin}


@pytest.mark.parametrize("f", [lambda x: _MODEL.energy(x), lambda x: 2 * _DISPATCH["sin"](x)],
                         ids=["method", "dict"])
def test_math_reached_through_instance_or_container(f):
    F = symgrad.compile(f)
    close(F.grad(0.3), 2 * np.cos(0.3))


# =====================================================================================
# builtins and loops
# =====================================================================================

def _mn(a, b):
    return (a + b - sp.Abs(a - b)) / 2


def _mx(a, b):
    return (a + b + sp.Abs(a - b)) / 2


def _builtins_fn(x, y):
    acc = 0.0
    for k in range(1, 4):          # unrolled: x + x**2/2 + x**3/3
        acc = acc + x ** k / k
    h = 0.0
    for c in (1.0, -2.0, 0.5):     # Horner: (x - 2) * x + 0.5
        h = h * x + c
    i, w = 0, y
    while i < 3:                   # while loop with a fixed trip count: sin(sin(sin(y)))
        w = math.sin(w)
        i += 1
    return np.array([
        abs(x - y), min(x, y), max(x, y), min([x, y, 0.25]), max((x * y, x + y, 1.0)),
        max(x, 0.1, y), min(v for v in (x, 2 * y)),
        pow(x, 3), pow(x, y), pow(2, y), pow(x, -2),
        sum([x, y, 1.0]), sum((x * x, y * y), 0.5), sum(math.sin(k * x) for k in range(1, 4)),
        acc, h, w, math.fsum([x, y]), math.prod([x, y, 2.0]),
        sum([x ** j for j in range(4)]),   # list comprehension
    ])


def _builtins_sym(x, y):
    return [
        sp.Abs(x - y), _mn(x, y), _mx(x, y), _mn(_mn(x, y), sp.Rational(1, 4)),
        _mx(_mx(x * y, x + y), 1), _mx(_mx(x, sp.Rational(1, 10)), y), _mn(x, 2 * y),
        x ** 3, x ** y, 2 ** y, x ** -2,
        x + y + 1, x * x + y * y + sp.Rational(1, 2), sp.sin(x) + sp.sin(2 * x) + sp.sin(3 * x),
        x + x ** 2 / 2 + x ** 3 / 3, (x - 2) * x + sp.Rational(1, 2), sp.sin(sp.sin(sp.sin(y))),
        x + y, 2 * x * y, 1 + x + x ** 2 + x ** 3,
    ]


# x > 0 (for pow(x, y)); no ties in any min/max at these points
BI_X = np.array([0.3, 1.7, 0.9, 2.6, 0.6])
BI_Y = np.array([1.1, -0.8, 0.35, 2.0, -2.2])


@pytest.fixture(scope="module", params=STRATEGIES)
def builtins_fn(request):
    return compile_for(_builtins_fn, request.param)


NB = 20  # outputs of _builtins_fn


def test_builtins_and_loops_values(builtins_fn):
    ref = mp_table(_builtins_sym(X, Y), [X, Y], BI_X, BI_Y)
    close(builtins_fn(BI_X, BI_Y)[:, :NB], ref)
    py = np.array([_builtins_fn(float(a), float(b)) for a, b in zip(BI_X, BI_Y)], dtype=float)
    close(py, ref)  # the reference itself agrees with plain Python


def test_builtins_and_loops_derivatives(builtins_fn):
    syms = _builtins_sym(X, Y)
    gx, gy = builtins_fn.jacobian(BI_X, BI_Y)
    close(gx[:, :NB], mp_table([sp.diff(e, X) for e in syms], [X, Y], BI_X, BI_Y), atol=1e-300)
    close(gy[:, :NB], mp_table([sp.diff(e, Y) for e in syms], [X, Y], BI_X, BI_Y), atol=1e-300)
    d2 = builtins_fn.derivative(2, 0)(BI_X, BI_Y)[:, :NB]
    close(d2, mp_table([sp.diff(e, X, 2) for e in syms], [X, Y], BI_X, BI_Y), atol=1e-300)


# =====================================================================================
# min / max / abs kinks: one-sided derivatives on both sides
# =====================================================================================

def _kinks(x):
    # every kink at x = 1
    return np.array([
        abs(x - 1), max(x * x, 1.0), min(3 - x, 2 * x), np.maximum(x - 1, 0.0),
        np.minimum(x, 2 - x), math.fabs(1 - x), max([x, 1.0, 2 - x]), min(x ** 3, x),
    ])


def _kinks_onesided(x):
    """(value, derivative) on the side of 1 where x lies (x != 1)."""
    right = x > 1
    val = [abs(x - 1), max(x * x, 1.0), min(3 - x, 2 * x), max(x - 1, 0.0), min(x, 2 - x),
           abs(1 - x), max(x, 1.0, 2 - x), min(x ** 3, x)]
    if right:
        der = [1, 2 * x, -1, 1, -1, 1, 1, 1]
    else:  # 0 < x < 1
        der = [-1, 0, 2, 0, 1, -1, -1, 3 * x * x]
    return val, der


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("delta", [1e-9, 1e-4, 0.3])
def test_kinks_both_sides(delta, strategy):
    F = _kinks_compiled(strategy)
    xs = np.array([1 - delta, 1 + delta])
    refs = [_kinks_onesided(float(t)) for t in xs]
    close(F(xs)[:, :8], [r[0] for r in refs])
    close(F.jacobian(xs)[:, :8], [r[1] for r in refs])
    # at the kink itself the value is continuous
    close(F(1.0)[:8], np.array([0, 1, 2, 0, 1, 0, 1, 1], dtype=float))


@functools.lru_cache(maxsize=None)
def _kinks_compiled(strategy):
    return compile_for(_kinks, strategy)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_kinks_at_the_kink_follow_pythons_choice(strategy):
    # Exactly at a tie, Python's min/max (and numpy's maximum/minimum) return the first
    # argument; the derivative is that argument's. abs: some subgradient in [-1, 1].
    d = _kinks_compiled(strategy).jacobian(1.0)[:8]
    close(d[[1, 2, 3, 4, 6, 7]], [2.0, -1.0, 1.0, 1.0, 1.0, 3.0])
    assert -1 <= d[0] <= 1 and -1 <= d[5] <= 1


def _clamp_builtin(x):
    return min(max(x, 0.0), 1.0)


def _clamp_numpy(x):
    return np.minimum(np.maximum(x, 0.0), 1.0)


def _clamp_clip(x):
    return np.clip(x, 0.0, 1.0)


@pytest.mark.parametrize("f", [_clamp_builtin, _clamp_numpy, _clamp_clip])
def test_clamp_nested_min_max(f):
    F = symgrad.compile(f)
    xs = np.array([-0.5, 0.25, 0.75, 1.5])
    close(F(xs), np.clip(xs, 0.0, 1.0))
    close(F.grad(xs), [0.0, 1.0, 1.0, 0.0])


def test_kink_helper_other_module():
    # kink() in _helpers_mod: kinks at 0, 0.5 and 1
    F = symgrad.compile(lambda x: kink(x))
    xs = np.array([-0.5, -1e-9, 1e-9, 0.4999999, 0.5000001, 0.9999999, 1.0000001, 2.0])
    close(F(xs), [max(t, 0.0) + min(t * t, 1.0) + abs(t - 0.5) for t in xs])
    d = [(1 if t > 0 else 0) + (2 * t if abs(t) < 1 else 0) + (1 if t > 0.5 else -1) for t in xs]
    close(F.grad(xs), d, atol=4.5e-16)  # terms of magnitude 1 cancel: a few ulp of 1


# =====================================================================================
# numpy
# =====================================================================================

_A = np.array([[1.0, 2.0, -0.5], [0.3, -1.2, 2.0]])


def _make_numpy_fn():
    A = _A.copy()   # closed-over constant float matrix

    def f(v):
        w = A @ v
        return np.array([
            np.sin(v[0]), np.exp(v[1]), np.power(v[2], 3), np.power(v[0] * v[0] + 1, v[2]),
            np.tanh(w[0]), np.sqrt(v[0] ** 2 + 1), np.log(v[1] ** 2 + 2),
            np.arctan2(v[0], v[1]), np.hypot(v[1], v[2]), np.maximum(v[0], v[2]),
            np.sum(v[1:] ** 2), np.dot(v, v[::-1]), np.where(v[0] > v[1], v[0] * v[2], v[1]),
            w[1], np.sum(np.sin(v)), np.sum(np.exp(v[:2]) * A[0, :2]), v[-1] * v[[0, 2]][0],
            np.dot(A[1], v) * np.minimum(v[1], v[2]), np.sum(np.power(v, 2)),
        ])
    return f


def _numpy_sym(v0, v1, v2):
    v = [v0, v1, v2]
    w0 = sum(float(_A[0, j]) * v[j] for j in range(3))
    w1 = sum(float(_A[1, j]) * v[j] for j in range(3))
    return [
        sp.sin(v0), sp.exp(v1), v2 ** 3, (v0 ** 2 + 1) ** v2,
        sp.tanh(w0), sp.sqrt(v0 ** 2 + 1), sp.log(v1 ** 2 + 2),
        sp.atan2(v0, v1), sp.sqrt(v1 ** 2 + v2 ** 2), _mx(v0, v2),
        v1 ** 2 + v2 ** 2, 2 * v0 * v2 + v1 ** 2, sp.Piecewise((v0 * v2, v0 > v1), (v1, True)),
        w1, sp.sin(v0) + sp.sin(v1) + sp.sin(v2), sp.exp(v0) * 1.0 + sp.exp(v1) * 2.0, v2 * v0,
        w1 * _mn(v1, v2), v0 ** 2 + v1 ** 2 + v2 ** 2,
    ]


NP_V = np.array([[0.3, -1.2, 0.8], [1.5, 0.4, -0.6], [-0.7, 2.0, 1.3], [2.2, -0.3, -1.9]])
V0, V1, V2 = sp.symbols("v0 v1 v2", real=True)


@pytest.fixture(scope="module", params=STRATEGIES)
def numpy_fn(request):
    return compile_for(_make_numpy_fn(), request.param, shapes=[(3,)])


def test_numpy_values(numpy_fn):
    syms = _numpy_sym(V0, V1, V2)
    got = numpy_fn(NP_V)[:, :len(syms)]
    close(got, mp_table(syms, [V0, V1, V2], *NP_V.T), atol=1e-300)
    close(got, np.array([_make_numpy_fn()(row) for row in NP_V]))  # plain numpy on floats


def test_numpy_jacobian(numpy_fn):
    syms = _numpy_sym(V0, V1, V2)
    J = numpy_fn.jacobian(NP_V)
    assert J.shape[0] == len(NP_V) and J.shape[2] == 3
    for j, s in enumerate((V0, V1, V2)):
        close(J[:, :len(syms), j], mp_table([sp.diff(e, s) for e in syms], [V0, V1, V2], *NP_V.T), atol=1e-300)


def _make_array_valued():
    A = _A.copy()

    def g(v):   # numpy returns arrays: ufuncs on the whole object array, then @
        return np.sin(v) * v[0] + A.T @ (A @ v) + np.exp(v) / 2
    return g


def test_numpy_array_valued_jacobian():
    F = symgrad.compile(_make_array_valued(), shapes=[(3,)])
    AtA = _A.T @ _A
    for v in NP_V:
        close(F(v), np.sin(v) * v[0] + AtA @ v + np.exp(v) / 2)
        J = np.diag(np.cos(v) * v[0] + np.exp(v) / 2) + AtA
        J[:, 0] += np.sin(v)
        close(F.jacobian(v), J)


def test_numpy_scalar_hessian_with_matrix_constant():
    A = _A.copy()
    F = symgrad.compile(lambda v: 0.5 * np.dot(A @ v, A @ v) + np.sum(np.sin(v)), shapes=[(3,)])
    for v in NP_V:
        close(F.grad(v), _A.T @ (_A @ v) + np.cos(v))
        close(F.hessian(v), _A.T @ _A - np.diag(np.sin(v)))


def _matrix_fn(M):
    det = M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0]
    return det + 0.5 * np.trace(M @ M) + np.sum(np.exp(M[:, 0])) + np.sum(M.T[0] * 0.0)


def test_matrix_argument_grad_and_hessian():
    F = symgrad.compile(_matrix_fn, shapes=[(2, 2)])
    Ms = np.array([[[1.0, 2.0], [3.0, 4.0]], [[-0.5, 0.3], [1.7, -2.2]]])
    for Mv in Ms:
        a, b, c, d = Mv.ravel()
        close(F(Mv), a * d - b * c + 0.5 * np.trace(Mv @ Mv) + np.exp(a) + np.exp(c))
        G = np.array([[d, -c], [-b, a]]) + Mv.T + np.array([[np.exp(a), 0], [np.exp(c), 0]])
        close(F.grad(Mv), G)
        H = np.zeros((2, 2, 2, 2))
        H[0, 0, 1, 1] = H[1, 1, 0, 0] = 1
        H[0, 1, 1, 0] = H[1, 0, 0, 1] = -1
        for i in range(2):
            for j in range(2):
                H[i, j, j, i] += 1          # from 0.5 * trace(M @ M)
        H[0, 0, 0, 0] += np.exp(a)
        H[1, 0, 1, 0] += np.exp(c)
        close(F.hessian(Mv), H)
    assert F.grad(Ms).shape == (2, 2, 2)  # batched over the leading axis


def test_matrix_valued_jacobian():
    F = symgrad.compile(lambda M: M @ M, shapes=[(2, 2)])
    Mv = np.array([[0.5, -1.0], [2.0, 3.0]])
    close(F(Mv), Mv @ Mv)
    J = np.zeros((2, 2, 2, 2))
    e = np.eye(2)
    for i in range(2):
        for j in range(2):
            for k in range(2):
                for l_ in range(2):
                    J[i, j, k, l_] = e[i, k] * Mv[l_, j] + Mv[i, k] * e[j, l_]
    close(F.jacobian(Mv), J)


def test_numpy_where_elementwise_on_arrays_via_ufunc():
    F = symgrad.compile(lambda v: np.where(np.greater(v, 0), v * v, -v), shapes=[(3,)])
    v = np.array([1.5, -2.0, 0.5])
    close(F(v), np.where(v > 0, v * v, -v))
    close(F.jacobian(v), np.diag(np.where(v > 0, 2 * v, -1.0)))


def test_numpy_where_with_array_comparison_operator():
    F = symgrad.compile(lambda v: np.where(v > 0, v * v, -v), shapes=[(3,)])
    v = np.array([1.5, -2.0, 0.5])
    close(F(v), np.where(v > 0, v * v, -v))
