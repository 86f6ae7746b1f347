"""Steps: floor, ceil, trunc, round-half-even, sign. Derivative 0 almost everywhere (None:
structurally 0)."""
from __future__ import annotations

import numpy as np

from .registry import op


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


def step(name, value, c, *, math=(), numpy=(), sympy, reads=None, nan=""):
    op(name, 1, value, lambda g, t, x: [None], c, step=True, math=math, numpy=numpy, sympy=sympy, reads=reads,
       nan=nan)


step("floor", np.floor, "floor", math=("floor",), numpy=("floor",), sympy=lambda m: m.R.Floor,
     reads=lambda m: (m.sp.floor, m.R.Floor))
step("ceil", np.ceil, "ceil", math=("ceil",), numpy=("ceil",), sympy=lambda m: m.R.Ceiling,
     reads=lambda m: (m.sp.ceiling, m.R.Ceiling))
step("trunc", np.trunc, "trunc", math=("trunc",), numpy=("trunc", "fix"), sympy=lambda m: m.R.Trunc,
     reads=lambda m: (m.R.Trunc,))
step("round", np.rint, "rint", numpy=("rint",), sympy=lambda m: m.R.Round, nan="round half to even (C's rint)")
step("sign", np.sign, _sign_c, numpy=("sign",), sympy=lambda m: m.R.Sign, reads=lambda m: (m.sp.sign, m.R.Sign),
     nan="numpy's: 0 for either zero, NaN for NaN")
