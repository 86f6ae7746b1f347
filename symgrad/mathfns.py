"""The elementary functions symgrad understands, as sympy constructors.

One table, read by the tracer (to shim ``math``/``numpy``/builtins) and by the printer
(for the few functions sympy has no C spelling for)."""
from __future__ import annotations

import math

import sympy as sp
from sympy.codegen.cfunctions import Cbrt, exp2, expm1, hypot, log1p, log2, log10


class copysign(sp.Function):
    """C's copysign(a, b): |a| with the sign of b."""

    nargs = 2

    def fdiff(self, argindex=1):
        a, b = self.args
        if argindex == 1:
            return sp.sign(a) * copysign(1, b)
        return sp.S.Zero

    @classmethod
    def eval(cls, a, b):
        if a.is_Number and b.is_Number:
            return sp.Float(math.copysign(float(a), float(b)))


class Floor(sp.floor):
    """floor, whose derivative is 0 (almost everywhere), as for any step."""

    def fdiff(self, argindex=1):
        return sp.S.Zero


class Ceiling(sp.ceiling):
    def fdiff(self, argindex=1):
        return sp.S.Zero


def _log(x, base=None):
    return sp.log(x) if base is None else sp.log(x) / sp.log(base)


def _hypot(*xs):
    if len(xs) == 2:
        return hypot(*xs)
    return sp.sqrt(sp.Add(*[x * x for x in xs]))


def _ldexp(x, i):
    return x * sp.Integer(2) ** i


def _sign(x):
    return sp.sign(x)


# Python name (math module / numpy ufunc) -> sympy constructor on sympy arguments.
UNARY = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
    "asin": sp.asin, "acos": sp.acos, "atan": sp.atan,
    "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "asinh": sp.asinh, "acosh": sp.acosh, "atanh": sp.atanh,
    "exp": sp.exp, "expm1": expm1, "exp2": exp2,
    "log1p": log1p, "log2": log2, "log10": log10,
    "sqrt": sp.sqrt, "cbrt": Cbrt, "fabs": sp.Abs,
    "erf": sp.erf, "erfc": sp.erfc, "gamma": sp.gamma, "lgamma": sp.loggamma,
    "floor": Floor, "ceil": Ceiling,
    "degrees": lambda x: x * (180 / sp.pi), "radians": lambda x: x * (sp.pi / 180),
}
MATH = dict(UNARY)
MATH.update({
    "log": _log, "pow": lambda x, y: x**y, "atan2": sp.atan2, "hypot": _hypot,
    "copysign": copysign, "ldexp": _ldexp,
    "fma": lambda x, y, z: x * y + z,
})

# numpy ufunc name -> sympy constructor (numpy spells some names differently).
NUMPY = dict(UNARY)
NUMPY.update({
    "arcsin": sp.asin, "arccos": sp.acos, "arctan": sp.atan,
    "arcsinh": sp.asinh, "arccosh": sp.acosh, "arctanh": sp.atanh,
    "arctan2": sp.atan2, "hypot": hypot, "log": sp.log, "absolute": sp.Abs,
    "deg2rad": UNARY["radians"], "rad2deg": UNARY["degrees"],
    "square": lambda x: x * x, "reciprocal": lambda x: 1 / x, "sign": _sign,
    "power": lambda x, y: x**y, "float_power": lambda x, y: x**y, "copysign": copysign,
    "add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
    "multiply": lambda x, y: x * y, "divide": lambda x, y: x / y,
    "true_divide": lambda x, y: x / y, "negative": lambda x: -x, "positive": lambda x: x,
    "ceil": Ceiling, "rint": None, "trunc": None,
})
for _k in ("gamma", "lgamma", "erf", "erfc"):
    NUMPY.pop(_k)  # not numpy ufuncs (scipy.special's are)
NUMPY = {k: v for k, v in NUMPY.items() if v is not None}
