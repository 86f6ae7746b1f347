"""Elementary functions: trigonometric, hyperbolic, exponentials and logarithms, roots,
atan2, hypot, abs, degrees/radians, and sech2 (tanh's derivative)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .registry import op, sq

LN2, LN10 = math.log(2.0), math.log(10.0)


def _inv_sqrt(g, x):
    return g.pow(x, g.const(Fraction(-1, 2)))  # printed 1/sqrt(x): NaN below 0, where pow(-inf, -0.5) is 0


def fn(name, value, d, c=None, *, math=None, numpy=None, sympy, reads=None, real=False, vector=True,
       library=True, **facts):
    """A function of one operand, x -> ``value``, its derivative ``d(g, t, x)``; named ``name``
    in math and numpy unless told otherwise, a library call with vector variants by default."""
    c = c or name
    op(name, 1, value, lambda g, t, x: [d(g, t, x)], c, library=library, vector=c if vector else None,
       math=(name,) if math is None else math, numpy=(name,) if numpy is None else numpy,
       sympy=sympy, reads=reads, real=real, **facts)


fn("sin", np.sin, lambda g, t, x: g.call("cos", x), sympy=lambda m: m.sp.sin, reads=lambda m: (m.sp.sin,))
fn("cos", np.cos, lambda g, t, x: g.neg(g.call("sin", x)), sympy=lambda m: m.sp.cos, reads=lambda m: (m.sp.cos,))
fn("tan", np.tan, lambda g, t, x: g.add(g.const(1), sq(g, t)), sympy=lambda m: m.sp.tan,
   reads=lambda m: (m.sp.tan,))
fn("asin", np.arcsin, lambda g, t, x: _inv_sqrt(g, g.sub(g.const(1), sq(g, x))), numpy=("asin", "arcsin"),
   sympy=lambda m: m.R.Asin, reads=lambda m: (m.sp.asin,), real=True)
fn("acos", np.arccos, lambda g, t, x: g.neg(_inv_sqrt(g, g.sub(g.const(1), sq(g, x)))), numpy=("acos", "arccos"),
   sympy=lambda m: m.R.Acos, reads=lambda m: (m.sp.acos,), real=True)
fn("atan", np.arctan, lambda g, t, x: g.div(g.const(1), g.add(g.const(1), sq(g, x))), numpy=("atan", "arctan"),
   sympy=lambda m: m.sp.atan, reads=lambda m: (m.sp.atan,))
fn("sinh", np.sinh, lambda g, t, x: g.call("cosh", x), sympy=lambda m: m.sp.sinh, reads=lambda m: (m.sp.sinh,))
fn("cosh", np.cosh, lambda g, t, x: g.call("sinh", x), sympy=lambda m: m.sp.cosh, reads=lambda m: (m.sp.cosh,))
fn("tanh", np.tanh, lambda g, t, x: g.call("sech2", x), sympy=lambda m: m.R.Tanh, reads=lambda m: (m.sp.tanh,))
fn("asinh", np.arcsinh, lambda g, t, x: _inv_sqrt(g, g.add(sq(g, x), g.const(1))), numpy=("asinh", "arcsinh"),
   sympy=lambda m: m.sp.asinh, reads=lambda m: (m.sp.asinh,))
fn("acosh", np.arccosh, lambda g, t, x: _inv_sqrt(g, g.sub(sq(g, x), g.const(1))), numpy=("acosh", "arccosh"),
   sympy=lambda m: m.R.Acosh, reads=lambda m: (m.sp.acosh,), real=True)
fn("atanh", np.arctanh, lambda g, t, x: g.div(g.const(1), g.sub(g.const(1), sq(g, x))), numpy=("atanh", "arctanh"),
   sympy=lambda m: m.R.Atanh, reads=lambda m: (m.sp.atanh,), real=True)
fn("exp", np.exp, lambda g, t, x: t, sympy=lambda m: m.sp.exp, reads=lambda m: (m.sp.exp,))
fn("expm1", np.expm1, lambda g, t, x: g.call("exp", x), scipy=("expm1",), sympy=lambda m: m.cf.expm1,
   reads=lambda m: (m.cf.expm1,))
fn("exp2", np.exp2, lambda g, t, x: g.mul(t, g.const(LN2)), scipy=("exp2",), sympy=lambda m: m.cf.exp2,
   reads=lambda m: (m.cf.exp2,))
fn("log", np.log, lambda g, t, x: g.div(g.const(1), x), sympy=lambda m: m.R.Log, reads=lambda m: (m.sp.log,),
   real=True)
fn("log1p", np.log1p, lambda g, t, x: g.div(g.const(1), g.add(g.const(1), x)), scipy=("log1p",),
   sympy=lambda m: m.R.Log1p, reads=lambda m: (m.cf.log1p,), real=True)
fn("log2", np.log2, lambda g, t, x: g.div(g.const(1), g.mul(x, g.const(LN2))), sympy=lambda m: m.R.Log2,
   reads=lambda m: (m.cf.log2,), real=True)
fn("log10", np.log10, lambda g, t, x: g.div(g.const(1), g.mul(x, g.const(LN10))), sympy=lambda m: m.R.Log10,
   reads=lambda m: (m.cf.log10,), real=True)


def _d_logaddexp(name, exp):
    """log(exp(a) + exp(b))'s partials: for a, exp(-L(0, b - a)) with L the op itself, which is
    1/(1 + exp(b - a)) without NaN at an infinite b - a (0 or 1 there), and so are its own
    derivatives (p (1 - p): 0 x 1 there, where the quotient's would be inf/inf); 1/2 each at a
    tie of infinities, where b - a is NaN."""
    def d(g, t, a, b):
        tie = g.node("and", g.node("eq", a, b), g.node("isinf", a))
        share = lambda u, v: g.select(tie, g.const(0.5), g.call(exp, g.neg(g.node(name, g.const(0), g.sub(v, u)))))  # noqa
        return [share(a, b), share(b, a)]
    return d


op("logaddexp", 2, np.logaddexp, _d_logaddexp("logaddexp", "exp"), "symgrad_logaddexp", library=True, vector="symgrad_logaddexp",
   numpy=("logaddexp",), sympy=lambda m: m.R.LogAddExp, reads=lambda m: (m.R.LogAddExp,),
   nan="numpy's: NaN for a NaN; a tie gives a + log(2) (infinities of one sign give themselves)")
op("logaddexp2", 2, np.logaddexp2, _d_logaddexp("logaddexp2", "exp2"), "symgrad_logaddexp2", library=True,
   vector="symgrad_logaddexp2", numpy=("logaddexp2",), sympy=lambda m: m.R.LogAddExp2, reads=lambda m: (m.R.LogAddExp2,),
   nan="numpy's: NaN for a NaN; a tie gives a + 1")

fn("sqrt", np.sqrt, lambda g, t, x: g.div(g.const(0.5), t), vector=False, library=False,
   sympy=lambda m: lambda a: m.R.RealPow(a, m.sp.S.Half), real=True)
fn("cbrt", np.cbrt, lambda g, t, x: g.div(g.const(1), g.mul(g.const(3), sq(g, t))), scipy=("cbrt",),
   sympy=lambda m: m.R.Cbrt, reads=lambda m: (m.cf.Cbrt, m.R.Cbrt))
fn("sech2", lambda x: 1 / np.cosh(x) ** 2, lambda g, t, x: g.mul(g.const(-2), g.mul(g.call("tanh", x), t)),
   "symgrad_sech2", math=(), numpy=(), sympy=lambda m: m.R.Sech2)
fn("abs", np.abs, lambda g, t, x: g.call("sign", x), "fabs", vector=False, library=False, math=("fabs",),
   numpy=("absolute", "fabs"), sympy=lambda m: m.R.Abs, reads=lambda m: (m.sp.Abs, m.R.Abs),
   nan="|x|: NaN for NaN; derivative sign(x) (0 at either zero, NaN at NaN)")

# degrees and radians: x times the double 180/pi (pi/180), as Python and numpy compute them
op("degrees", 1, np.degrees, lambda g, t, x: [g.const(180.0 / math.pi)],
   lambda a, T: f"({a[0]} * {T.literal(180.0 / math.pi)})", math=("degrees",), numpy=("degrees", "rad2deg"),
   sympy=lambda m: lambda a: a * (180 / m.sp.pi))
op("radians", 1, np.radians, lambda g, t, x: [g.const(math.pi / 180.0)],
   lambda a, T: f"({a[0]} * {T.literal(math.pi / 180.0)})", math=("radians",), numpy=("radians", "deg2rad"),
   sympy=lambda m: lambda a: a * (m.sp.pi / 180))


def _atan2_partials(g, t, y, x):
    r = g.add(sq(g, x), sq(g, y))
    return [g.div(x, r), g.neg(g.div(y, r))]


op("atan2", 2, np.arctan2, _atan2_partials, library=True, vector="atan2", math=("atan2",),
   numpy=("atan2", "arctan2"), sympy=lambda m: m.sp.atan2, reads=lambda m: (m.sp.atan2,), real=True)


def _hypot_value(*xs):
    if len(xs) == 1:
        return np.abs(xs[0])
    acc = xs[0]
    for x in xs[1:]:
        acc = np.hypot(acc, x)
    return acc


def _hypot_c(a, T):
    if len(a) == 1:
        return f"fabs{T.suffix}({a[0]})"
    acc = a[0]  # hypot(hypot(a, b), c): no overflow or underflow of the squares
    for x in a[1:]:
        acc = T.call("hypot", [acc, x])
    return acc


def _hypot_partials(g, t, *xs):
    if len(xs) == 1:  # |x|: abs'(0) = 0
        return [g.call("sign", xs[0])]
    return [g.div(x, t) for x in xs]


op("hypot", -1, _hypot_value, _hypot_partials, _hypot_c, library=True, vector="hypot", numpy=("hypot",),
   sympy=lambda m: lambda *xs: m.cf.hypot(*xs) if len(xs) == 2 else m.sp.sqrt(m.sp.Add(*[x * x for x in xs])),
   reads=lambda m: (m.cf.hypot,), real=True)
