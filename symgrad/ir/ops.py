"""Every operation of the IR, defined once: arity, its numpy value (constant folding and the
IR interpreter), its local partial derivatives as IR builders, its C spelling, the names
Python's math module and numpy give it (the tracer's tables: symgrad/ops.py), and its sympy
form (the edge: symbolic.py builds .expr with it, from_sympy reads programs back).

The derivative rules (``partials``) take a builder (transforms/build.py's Graph) and the
operand node indices and return one node per operand: its partial, or None where it is 0
(structurally: the branch of a select, a step). Conditions (comparisons, tests, logic) are
ops too; they give 0/1 and have no derivative. No sympy here: the sympy forms of the ops
are spelled here as functions of the edge module, so nothing here imports sympy."""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Optional

import numpy as np

LN2, LN10 = math.log(2.0), math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@dataclass(frozen=True)
class Op:
    name: str
    arity: int                   # -1: any number of operands (hypot)
    value: Callable              # numpy arrays (float64) -> numpy array
    partials: Optional[Callable]  # (graph, node, operands) -> [partial node or None, ...]; None: 0
    c: object                    # C spelling: "name" (a call; the float target adds "f"),
                                 # ("infix", "+"), ("prefix", "-"), or a function(args, t) -> text
    condition: bool = False      # gives a condition (0/1), not a number
    step: bool = False           # derivative 0 almost everywhere


OPS: dict = {}


def op(name, arity, value, partials=None, c=None, **kw):
    OPS[name] = Op(name, arity, value, partials, name if c is None else c, **kw)


def _vec(f):
    """A math-module function of floats on numpy arrays (for the few numpy lacks)."""
    def g(*xs):
        def one(*v):
            try:
                return f(*v)
            except (ValueError, OverflowError, ZeroDivisionError):
                return math.nan
        return np.vectorize(one, otypes=[np.float64])(*xs)
    return g


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


def _mod(x, y):
    return np.mod(x, y)  # Python's %: the sign of the divisor (symgrad_mod)


# -- partial derivatives, as IR builders ------------------------------------------------------
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


def _inv_sqrt(g, x):
    return g.pow(x, g.const(Fraction(-1, 2)))  # printed 1/sqrt(x): NaN below 0, where pow(-inf, -0.5) is 0


def _sq(g, x):
    return g.mul(x, x)


_ARITH = [
    ("add", 2, np.add, lambda g, t, a, b: [g.const(1), g.const(1)], ("infix", "+")),
    ("sub", 2, np.subtract, lambda g, t, a, b: [g.const(1), g.const(-1)], ("infix", "-")),
    ("mul", 2, np.multiply, lambda g, t, a, b: [b, a], ("infix", "*")),
    ("div", 2, np.divide, lambda g, t, a, b: [g.div(g.const(1), b), g.neg(g.div(t, b))], ("infix", "/")),
    ("neg", 1, np.negative, lambda g, t, a: [g.const(-1)], ("prefix", "-")),
    ("pow", 2, np.power, _d_pow, "pow"),
]
for _n, _k, _v, _p, _c in _ARITH:
    op(_n, _k, _v, _p, _c)

_UNARY = {  # name: (numpy value, partial of x as a function of (graph, node t, x)), C: the name
    "sin": (np.sin, lambda g, t, x: g.call("cos", x)),
    "cos": (np.cos, lambda g, t, x: g.neg(g.call("sin", x))),
    "tan": (np.tan, lambda g, t, x: g.add(g.const(1), _sq(g, t))),
    "asin": (np.arcsin, lambda g, t, x: _inv_sqrt(g, g.sub(g.const(1), _sq(g, x)))),
    "acos": (np.arccos, lambda g, t, x: g.neg(_inv_sqrt(g, g.sub(g.const(1), _sq(g, x))))),
    "atan": (np.arctan, lambda g, t, x: g.div(g.const(1), g.add(g.const(1), _sq(g, x)))),
    "sinh": (np.sinh, lambda g, t, x: g.call("cosh", x)),
    "cosh": (np.cosh, lambda g, t, x: g.call("sinh", x)),
    "tanh": (np.tanh, lambda g, t, x: g.call("sech2", x)),
    "asinh": (np.arcsinh, lambda g, t, x: _inv_sqrt(g, g.add(_sq(g, x), g.const(1)))),
    "acosh": (np.arccosh, lambda g, t, x: _inv_sqrt(g, g.sub(_sq(g, x), g.const(1)))),
    "atanh": (np.arctanh, lambda g, t, x: g.div(g.const(1), g.sub(g.const(1), _sq(g, x)))),
    "exp": (np.exp, lambda g, t, x: t),
    "expm1": (np.expm1, lambda g, t, x: g.call("exp", x)),
    "exp2": (np.exp2, lambda g, t, x: g.mul(t, g.const(LN2))),
    "log": (np.log, lambda g, t, x: g.div(g.const(1), x)),
    "log1p": (np.log1p, lambda g, t, x: g.div(g.const(1), g.add(g.const(1), x))),
    "log2": (np.log2, lambda g, t, x: g.div(g.const(1), g.mul(x, g.const(LN2)))),
    "log10": (np.log10, lambda g, t, x: g.div(g.const(1), g.mul(x, g.const(LN10)))),
    "sqrt": (np.sqrt, lambda g, t, x: g.div(g.const(0.5), t)),
    "cbrt": (np.cbrt, lambda g, t, x: g.div(g.const(1), g.mul(g.const(3), _sq(g, t)))),
    "erf": (_vec(math.erf), lambda g, t, x: g.mul(g.const(TWO_OVER_SQRT_PI), g.call("exp", g.neg(_sq(g, x))))),
    "erfc": (_vec(math.erfc), lambda g, t, x: g.mul(g.const(-TWO_OVER_SQRT_PI), g.call("exp", g.neg(_sq(g, x))))),
    "gamma": (_vec(_gamma), lambda g, t, x: g.mul(t, g.node("polygamma", g.const(0), x))),
    "lgamma": (_vec(_lgamma), lambda g, t, x: g.node("polygamma", g.const(0), x)),
    "sech2": (lambda x: 1 / np.cosh(x) ** 2, lambda g, t, x: g.mul(g.const(-2), g.mul(g.call("tanh", x), t))),
    "abs": (np.abs, lambda g, t, x: g.call("sign", x)),
}
_C_NAMES = {"gamma": "tgamma", "abs": "fabs", "sech2": "symgrad_sech2"}
for _n, (_v, _p) in _UNARY.items():
    op(_n, 1, _v, lambda g, t, x, _p=_p: [_p(g, t, x)], _C_NAMES.get(_n, _n))

# degrees and radians: x times the double 180/pi (pi/180), as Python and numpy compute them
op("degrees", 1, np.degrees, lambda g, t, x: [g.const(180.0 / math.pi)],
   lambda a, T: f"({a[0]} * {T.literal(180.0 / math.pi)})")
op("radians", 1, np.radians, lambda g, t, x: [g.const(math.pi / 180.0)],
   lambda a, T: f"({a[0]} * {T.literal(math.pi / 180.0)})")


def _sign_c(a, T):  # T: the render.c.Printer
    # numpy's sign: 0 for either zero, nan for nan. One select, not a nest of them: GCC's
    # combiner takes time quadratic in nested vector selects (seconds for np.max of 256).
    # In a kernel that calls maths functions, each comparison converted on its own: their int
    # difference converted leaves some lane loops unvectorised (control flow after
    # if-conversion), calling libm's scalar functions where another kernel of the same program
    # calls libmvec's (other last bits). Elsewhere that difference: the loops GCC then leaves
    # scalar compile in half the time (np.max(np.abs(x)) of 256: 0.45 s, 1.05 s vectorised).
    x = a[0]
    if T.target.vector_calls:
        return f"(isnan({x}) ? ({x}) : (({T.math})(({x}) > 0) - ({T.math})(({x}) < 0)))"
    return f"(isnan({x}) ? ({x}) : ({T.math})((({x}) > 0) - (({x}) < 0)))"


_STEPS = {"floor": (np.floor, "floor"), "ceil": (np.ceil, "ceil"), "trunc": (np.trunc, "trunc"),
          "round": (np.rint, "rint"), "sign": (np.sign, _sign_c)}
for _n, (_v, _c) in _STEPS.items():
    op(_n, 1, _v, lambda g, t, x: [None], _c, step=True)
op("floordiv", 2, np.floor_divide, lambda g, t, a, b: [None, None], "symgrad_floordiv", step=True)

# remainders: d/da 1, d/db -q(a/b), q the quotient's rounding (floor, trunc, round-half-even)
# (the quotient as a node of its own: a/b of a constant 0 is no structural 0, b may be 0)
op("mod", 2, _mod, lambda g, t, a, b: [g.const(1), g.neg(g.call("floor", g.node("div", a, b)))], "symgrad_mod")
op("fmod", 2, np.fmod, lambda g, t, a, b: [g.const(1), g.neg(g.call("trunc", g.node("div", a, b)))])
op("remainder", 2, _vec(math.remainder),
   lambda g, t, a, b: [g.const(1), g.neg(g.call("round", g.node("div", a, b)))])
op("copysign", 2, np.copysign,
   lambda g, t, a, b: [g.mul(g.call("sign", a), g.node("copysign", g.const(1), b)), None])


def _atan2_partials(g, t, y, x):
    r = g.add(_sq(g, x), _sq(g, y))
    return [g.div(x, r), g.neg(g.div(y, r))]


op("atan2", 2, np.arctan2, _atan2_partials)


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


op("hypot", -1, _hypot_value, _hypot_partials, _hypot_c)
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
   lambda a, T: f"symgrad_fsum{T.suffix}({len(a)}, ({T.math}[{2 * len(a)}]){{{', '.join(['0'] * len(a) + a)}}})")
op("polygamma", 2, _vec(_polygamma), lambda g, t, m, x: [None, g.node("polygamma", g.const_add(m, 1), x)],
   lambda a, T: f"symgrad_polygamma((int)({a[0]}), {a[1]})")


def _select_partials(g, t, c, a, b):
    return [None, g.select(c, g.const(1), g.const(0)), g.select(c, g.const(0), g.const(1))]


op("select", 3, lambda c, a, b: np.where(c, a, b), _select_partials, lambda a, T: f"({a[0]} ? {a[1]} : {a[2]})")

_CONDITIONS = {"lt": (np.less, "<"), "le": (np.less_equal, "<="), "gt": (np.greater, ">"),
               "ge": (np.greater_equal, ">="), "eq": (np.equal, "=="), "ne": (np.not_equal, "!="),
               "and": (np.logical_and, "&&"), "or": (np.logical_or, "||")}
for _n, (_v, _s) in _CONDITIONS.items():
    op(_n, 2, _v, None, ("infix", _s), condition=True)
op("not", 1, np.logical_not, None, ("prefix", "!"), condition=True)
op("isnan", 1, np.isnan, None, lambda a, T: f"isnan({a[0]})", condition=True)
op("isinf", 1, np.isinf, None, lambda a, T: f"isinf({a[0]})", condition=True)
op("isfinite", 1, np.isfinite, None, lambda a, T: f"isfinite({a[0]})", condition=True)

CALLS = frozenset(n for n, o in OPS.items() if isinstance(o.c, str) or n in ("hypot", "polygamma")) - {"pow"}
# ops that call a maths library function (a vector one, libmvec's, in a vectorised CPU lane
# loop), not one that compiles to an instruction (pow: where its exponent is not an integer)
LIBRARY = (CALLS | {"pow"}) - {n for n, o in OPS.items() if o.c in ("fabs", "sqrt", "floor", "ceil", "trunc", "rint",
                                                                   "copysign", "fmin", "fmax")}


# -- what Python and numpy call each op (read by the tracer, symgrad/ops.py) --------------------
_SAME_IN_MATH = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                 "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "erf", "erfc", "gamma",
                 "lgamma", "degrees", "radians", "floor", "ceil", "trunc", "atan2", "copysign", "pow", "fmod",
                 "remainder", "isnan", "isinf", "isfinite")
MATH_NAMES = {**{n: n for n in _SAME_IN_MATH}, "fabs": "abs"}  # math.<name> -> op
NUMPY_NAMES = {  # numpy.<ufunc> -> op (gamma, lgamma, erf, erfc are scipy.special's, not numpy's)
    **{n: n for n in _SAME_IN_MATH if n not in ("gamma", "lgamma", "erf", "erfc", "pow", "remainder", "fmod")},
    "sign": "sign", "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
    "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "absolute": "abs", "fabs": "abs",
    "deg2rad": "radians", "rad2deg": "degrees", "hypot": "hypot", "power": "pow", "float_power": "pow",
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
    "negative": "neg", "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
    "equal": "eq", "not_equal": "ne", "logical_and": "and", "logical_or": "or", "logical_not": "not",
    "rint": "round", "fix": "trunc", "mod": "mod", "remainder": "mod", "fmod": "fmod",
    "floor_divide": "floordiv"}
LOGIC = ("and", "or", "not")

# -- the sympy form of each op, a function of the edge module m (symbolic.py: m.sp is sympy,
# m.R symgrad's real functions, m.cf sympy's C functions, m.relation / m.select / m.boolean
# its IEEE-faithful constructors) -> the sympy constructor on sympy arguments
SYMPY = {
    "add": lambda m: lambda a, b: a + b, "sub": lambda m: lambda a, b: a - b,
    "mul": lambda m: lambda a, b: a * b, "neg": lambda m: lambda a: -a,
    "abs": lambda m: m.R.Abs, "sign": lambda m: m.R.Sign, "floor": lambda m: m.R.Floor,
    "ceil": lambda m: m.R.Ceiling, "trunc": lambda m: m.R.Trunc, "copysign": lambda m: m.R.copysign,
    "cbrt": lambda m: m.R.Cbrt, "round": lambda m: m.R.Round, "mod": lambda m: m.R.Mod,
    "fmod": lambda m: m.R.Fmod, "remainder": lambda m: m.R.Remainder, "floordiv": lambda m: m.R.FloorDiv,
    "sin": lambda m: m.sp.sin, "cos": lambda m: m.sp.cos, "tan": lambda m: m.sp.tan,
    "asin": lambda m: m.R.Asin, "acos": lambda m: m.R.Acos, "atan": lambda m: m.sp.atan,
    "sinh": lambda m: m.sp.sinh, "cosh": lambda m: m.sp.cosh, "tanh": lambda m: m.R.Tanh,
    "asinh": lambda m: m.sp.asinh, "acosh": lambda m: m.R.Acosh, "atanh": lambda m: m.R.Atanh,
    "exp": lambda m: m.sp.exp, "expm1": lambda m: m.cf.expm1, "exp2": lambda m: m.cf.exp2,
    "log": lambda m: m.R.Log, "log1p": lambda m: m.R.Log1p, "log2": lambda m: m.R.Log2,
    "log10": lambda m: m.R.Log10, "sqrt": lambda m: lambda a: m.R.RealPow(a, m.sp.S.Half),
    "erf": lambda m: m.sp.erf, "erfc": lambda m: m.sp.erfc, "gamma": lambda m: m.sp.gamma,
    "lgamma": lambda m: m.sp.loggamma, "atan2": lambda m: m.sp.atan2,
    "degrees": lambda m: lambda a: a * (180 / m.sp.pi), "radians": lambda m: lambda a: a * (m.sp.pi / 180),
    "hypot": lambda m: lambda *xs: m.cf.hypot(*xs) if len(xs) == 2 else m.sp.sqrt(m.sp.Add(*[x * x for x in xs])),
    "fsum": lambda m: lambda *xs: m.sp.Add(*xs), "sech2": lambda m: m.R.Sech2,
    "polygamma": lambda m: lambda k, x: m.sp.polygamma(k, x),
    "lt": lambda m: m.relation(m.sp.Lt), "le": lambda m: m.relation(m.sp.Le),
    "gt": lambda m: m.relation(m.sp.Gt), "ge": lambda m: m.relation(m.sp.Ge),
    "eq": lambda m: m.relation(m.sp.Eq), "ne": lambda m: m.relation(m.sp.Ne, negate=True),
    "isnan": lambda m: m.R.IsNan, "isinf": lambda m: m.R.IsInf,
    "isfinite": lambda m: lambda a: m.sp.Not(m.R.IsNan(a) | m.R.IsInf(a)),
    "and": lambda m: lambda a, b: m.sp.And(m.boolean(a), m.boolean(b)),
    "or": lambda m: lambda a, b: m.sp.Or(m.boolean(a), m.boolean(b)),
    "not": lambda m: lambda a: m.R.Negation(m.boolean(a)),  # (sympy's Not(x > 0) is x <= 0: wrong for NaN)
    "select": lambda m: lambda c, a, b: m.select(m.boolean(c), a, b),
}
