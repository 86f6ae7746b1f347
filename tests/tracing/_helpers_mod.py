"""Helpers in a separate user module, called from traced functions in test_tracing.py.

They reach ``math``/numpy in every style a user module might: a star import, an
aliased module import, a plain import, a module-level constant, a sibling helper."""
import math
import math as mm
from math import *  # noqa: F401,F403  (star import on purpose: bare sin, exp, pow, ...)

import numpy as np

SCALE = 1.5


def star_user(x):
    # sin, exp, sqrt, atan, pi all come from `from math import *`
    return sin(x) * exp(-x) + sqrt(x * x + 1) + atan(x) + pi  # noqa: F405


def alias_user(x):
    # `import math as mm` and plain `import math`, plus a module-level constant
    return mm.log1p(x * x) + math.cosh(x) * SCALE


def helper_poly(x):
    # `pow` here is math.pow: the star import shadows the builtin
    return pow(x, 3) - 2 * x  # noqa: F405


def _square_sin(t):
    return np.sin(t) ** 2


def calls_sibling(x):
    # a helper calling another helper of its own module, which uses numpy
    return _square_sin(x) + np.tanh(x) * SCALE


def kink(x):
    # builtins inside another module: min/max/abs must be traced here too
    return max(x, 0.0) + min(x * x, 1.0) + abs(x - 0.5)
