"""Special functions: erf, erfc, gamma, lgamma and polygamma (their derivatives)."""
from __future__ import annotations

import math

from .registry import op, sq, vectorized
from .elementary import fn

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _gamma(x):
    if x == 0:
        return math.copysign(math.inf, x)  # C's tgamma at a pole (math.gamma raises)
    if x == math.floor(x) and x < 0:
        return math.nan
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf


def _lgamma(x):
    try:
        return math.lgamma(x)
    except ValueError:
        return math.inf  # C's lgamma at a pole


def _polygamma(m, x):
    import mpmath  # the IR interpreter only (tests): C has symgrad_polygamma
    if math.isnan(x) or (x <= 0 and x == math.floor(x)):
        return math.nan
    return float(mpmath.polygamma(int(m), x))


fn("erf", vectorized(math.erf), lambda g, t, x: g.mul(g.const(TWO_OVER_SQRT_PI), g.call("exp", g.neg(sq(g, x)))),
   numpy=(), scipy=("erf",), sympy=lambda m: m.sp.erf, reads=lambda m: (m.sp.erf,))
fn("erfc", vectorized(math.erfc), lambda g, t, x: g.mul(g.const(-TWO_OVER_SQRT_PI), g.call("exp", g.neg(sq(g, x)))),
   numpy=(), scipy=("erfc",), sympy=lambda m: m.sp.erfc, reads=lambda m: (m.sp.erfc,))
fn("gamma", vectorized(_gamma), lambda g, t, x: g.mul(t, g.node("polygamma", g.const(0), x)), "tgamma",
   vector=False, numpy=(), scipy=("gamma",), sympy=lambda m: m.sp.gamma, reads=lambda m: (m.sp.gamma,), real=True)
fn("lgamma", vectorized(_lgamma), lambda g, t, x: g.node("polygamma", g.const(0), x), vector=False,
   numpy=(), scipy=("gammaln",), sympy=lambda m: m.sp.loggamma, reads=lambda m: (m.sp.loggamma,), real=True)
op("polygamma", 2, vectorized(_polygamma), lambda g, t, m, x: [None, g.node("polygamma", g.const_add(m, 1), x)],
   lambda a, T: f"symgrad_polygamma((int)({a[0]}), {a[1]})", library=True,
   sympy=lambda m: lambda k, x: m.sp.polygamma(k, x))
