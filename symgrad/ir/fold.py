"""Constant folding of the graph builder (graph.py): a node of constants computed once, exactly
where that loses nothing (rationals, rounded once when printed), else as numpy computes it."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .ops import OPS

_TINY, _HUGE = Fraction(2.2250738585072014e-308), Fraction(1.7976931348623157e308)


def finite(v):
    """Whether number ``v`` is no float infinity or NaN."""
    return not isinstance(v, float) or math.isfinite(v)


def in_range(r):
    """Whether exact constant ``r`` is 0 or a normal double: folding it loses nothing."""
    return r == 0 or _TINY <= abs(Fraction(r)) <= _HUGE


def fold(g, n):
    """Node ``n`` of Graph ``g``, its operands all constants, as a constant node: exact
    arithmetic in rationals where every operand is finite, numpy's float64 value otherwise;
    None where an exact result is no normal double (the node stays)."""
    op, xs = n[0], [g.value(j) for j in n[1:]]
    exact = all(isinstance(x, (int, Fraction)) or (isinstance(x, float) and math.isfinite(x)) for x in xs)
    if exact and op in ("add", "sub", "mul", "neg", "div"):
        q = [Fraction(x) for x in xs]
        if op != "div" or q[1] != 0:
            r = {"add": lambda: q[0] + q[1], "sub": lambda: q[0] - q[1], "mul": lambda: q[0] * q[1],
                 "neg": lambda: -q[0], "div": lambda: q[0] / q[1]}[op]()
            if r == 0 and op in ("mul", "div", "neg") and any(isinstance(x, float) for x in xs):
                r = float(np.float64(OPS[op].value(*[np.float64(x) for x in xs])))  # the sign of a zero
            elif not in_range(r):  # 1e200 * 1e200 stays a product: x * its rounding to inf is not
                return None  # what the program computes where x is small
            return g.const(int(r) if isinstance(r, Fraction) and r.denominator == 1 else r)
    if exact and op == "pow" and isinstance(xs[1], int) and xs[0] != 0 and abs(xs[1]) <= 64:
        r = Fraction(xs[0]) ** xs[1]
        return g.const(r) if in_range(r) else None
    with np.errstate(all="ignore"):
        v = OPS[op].value(*[np.float64(float(x)) for x in xs])
    v = float(v) if not OPS[op].condition else int(bool(v))
    return g.const(v)
