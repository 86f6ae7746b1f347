"""The operations of the IR, and how Python's and numpy's names map onto them (no sympy).

Each op is a real function of real arguments; symbolic.py gives each its sympy form."""
from __future__ import annotations

# Elementary functions of one argument; the op is also the math module's name.
ELEMENTARY = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
              "atanh", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "erf",
              "erfc", "gamma", "lgamma", "degrees", "radians")
# Steps: derivative 0 almost everywhere.
STEPS = ("floor", "ceil", "trunc", "sign", "round")  # round: half to even, as Python and numpy
UNARY = ELEMENTARY + STEPS + ("neg", "abs")
# mod: Python's % (the sign of the divisor); fmod: C's (the sign of the dividend); remainder:
# IEEE's (x - y*round(x/y)); floordiv: Python's //. Each has derivative 1 (or 0) almost everywhere.
BINARY = ("add", "sub", "mul", "div", "pow", "atan2", "copysign", "mod", "fmod", "remainder", "floordiv")
# Comparisons, tests and logic give conditions (used by "select"), never numbers.
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne", "isnan", "isinf", "isfinite")
LOGIC = ("and", "or", "not")
# ("select", c, a, b): a where condition c holds, else b. ("hypot", *xs): sqrt of the sum of squares.
# ("fsum", *xs): their exactly rounded sum (math.fsum).
OTHER = ("select", "hypot", "fsum")

# math module function -> op of the same arguments.
MATH = {name: name for name in ELEMENTARY + ("floor", "ceil", "trunc", "atan2", "copysign", "pow", "fmod",
                                              "remainder")}
MATH.update(fabs="abs", isnan="isnan", isinf="isinf", isfinite="isfinite")

# numpy ufunc -> op of the same arguments.
NUMPY = {name: name for name in ELEMENTARY + ("floor", "ceil", "trunc", "sign", "copysign")
         if name not in ("gamma", "lgamma", "erf", "erfc")}  # not numpy ufuncs (scipy.special's are)
NUMPY.update({
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "arctan2": "atan2", "absolute": "abs", "fabs": "abs", "deg2rad": "radians",
    "rad2deg": "degrees", "hypot": "hypot", "power": "pow", "float_power": "pow", "add": "add", "subtract": "sub",
    "multiply": "mul", "divide": "div", "true_divide": "div", "negative": "neg",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "equal": "eq",
    "not_equal": "ne", "logical_and": "and", "logical_or": "or", "logical_not": "not",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "rint": "round", "fix": "trunc",
    "mod": "mod", "remainder": "mod", "fmod": "fmod", "floor_divide": "floordiv",
})

# Python's reflected comparison: a < b is b > a.
SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
