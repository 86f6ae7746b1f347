"""Arithmetic: + - * / negation, powers, remainders, copysign, math.fsum."""
from __future__ import annotations

import math

import numpy as np

from .registry import op, vectorized


def _d_pow(g, t, a, b):
    if g.is_const(b):
        e = g.value(b)
        if e == 0:
            return [None, None]
        return [g.mul(b, g.pow(a, g.const_sub(b, 1))), None]
    da = g.mul(b, g.pow(a, g.sub(b, g.const(1))))
    if g.is_const(a):  # a ** b * log(a); log(1) at a constant 0 base: 0 for b >= 0, NaN below
        if g.value(a) == 0:
            return [da, g.select(g.node("ge", b, g.const(0)), g.const(0), g.const(math.nan))]
        return [da, g.mul(t, g.call("log", a))]
    base = g.select(g.node("eq", a, g.const(0)), g.const(1), a)  # JAX's rule: log(1) at base 0
    return [da, g.mul(t, g.call("log", base))]


op("add", 2, np.add, lambda g, t, a, b: [g.const(1), g.const(1)], ("infix", "+"),
   numpy=("add",), sympy=lambda m: lambda a, b: a + b)
op("sub", 2, np.subtract, lambda g, t, a, b: [g.const(1), g.const(-1)], ("infix", "-"),
   numpy=("subtract",), sympy=lambda m: lambda a, b: a - b)
op("mul", 2, np.multiply, lambda g, t, a, b: [b, a], ("infix", "*"),
   numpy=("multiply",), sympy=lambda m: lambda a, b: a * b)
op("div", 2, np.divide, lambda g, t, a, b: [g.div(g.const(1), b), g.neg(g.div(t, b))], ("infix", "/"),
   numpy=("divide", "true_divide"), sympy=lambda m: m.div)
op("neg", 1, np.negative, lambda g, t, a: [g.const(-1)], ("prefix", "-"),
   numpy=("negative",), sympy=lambda m: lambda a: -a)
op("pow", 2, np.power, _d_pow, library=True, vector="pow", math=("pow",), numpy=("power", "float_power"),
   sympy=lambda m: m.power)

# remainders: d/da 1, d/db -q(a/b), q the quotient's rounding (floor, trunc, round-half-even)
# (the quotient as a node of its own: a/b of a constant 0 is no structural 0, b may be 0)
op("mod", 2, np.mod, lambda g, t, a, b: [g.const(1), g.neg(g.call("floor", g.node("div", a, b)))],
   "symgrad_mod", library=True, numpy=("mod", "remainder"), sympy=lambda m: m.R.Mod,
   nan="Python's %: the sign of the divisor (symgrad_mod)")
op("fmod", 2, np.fmod, lambda g, t, a, b: [g.const(1), g.neg(g.call("trunc", g.node("div", a, b)))],
   library=True, math=("fmod",), numpy=("fmod",), sympy=lambda m: m.R.Fmod)
op("remainder", 2, vectorized(math.remainder),
   lambda g, t, a, b: [g.const(1), g.neg(g.call("round", g.node("div", a, b)))],
   library=True, math=("remainder",), sympy=lambda m: m.R.Remainder)
op("floordiv", 2, np.floor_divide, lambda g, t, a, b: [None, None], "symgrad_floordiv", step=True, library=True,
   numpy=("floor_divide",), sympy=lambda m: m.R.FloorDiv)
op("copysign", 2, np.copysign, lambda g, t, a, b: [g.mul(g.call("sign", a), g.node("copysign", g.const(1), b)), None],
   math=("copysign",), numpy=("copysign",), sympy=lambda m: m.R.copysign, reads=lambda m: (m.R.copysign,))


def _fsum_value(*xs):
    return np.vectorize(lambda *v: _fsum(v), otypes=[np.float64])(*xs)


def _fsum(v):
    """math.fsum, where CPython raises: inf - inf is NaN; where a partial sum overflows the
    terms are summed halved until none does, then scaled back (as symgrad_fsum in C)."""
    scale = 1.0
    while True:
        try:
            return math.fsum([x / scale for x in v]) * scale
        except OverflowError:
            if scale >= 1e300:
                return math.inf
            scale *= 2.0
        except ValueError:  # inf - inf
            return math.nan


# math.fsum: the exactly rounded sum (a runtime function over a local array of the terms)
op("fsum", -1, _fsum_value, lambda g, t, *xs: [g.const(1)] * len(xs),
   lambda a, T: f"symgrad_fsum{T.suffix}({len(a)}, ({T.math}[{2 * len(a)}]){{{', '.join(['0'] * len(a) + a)}}})",
   sympy=lambda m: lambda *xs: m.sp.Add(*xs))
