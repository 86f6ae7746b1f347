"""Selects and picks: ``select(c, a, b)`` (a where condition c holds, else b: np.where,
Piecewise) and numpy's maximum, minimum, fmax, fmin, each a pick of one operand.

One tie rule for all four picks: at a tie (a == b, +0.0 and -0.0 included) the result is the
first operand, and so is the whole derivative (d/da 1, d/db 0), as the select each was traced
into before (numpy's own choice between +0.0 and -0.0 differs between its scalar, array and
reduce loops: symgrad's is the first, everywhere). NaN rules are numpy's: maximum/minimum give
NaN where either operand is NaN, fmax/fmin ignore a NaN operand (NaN only where both are).
np.clip(x, lo, hi) is minimum(maximum(x, lo), hi), as numpy computes it. Python's builtin
max/min are not these ops: max(a, b) is b if b > a else a (a NaN first operand wins, a NaN
second one loses), so they stay selects, made in one place (tracing/standins.py: select_max,
select_min)."""
from __future__ import annotations

import math

import numpy as np

from .registry import op


def _select_partials(g, t, c, a, b):
    return [None, g.select(c, g.const(1), g.const(0)), g.select(c, g.const(0), g.const(1))]


op("select", 3, lambda c, a, b: np.where(c, a, b), _select_partials, lambda a, T: f"({a[0]} ? {a[1]} : {a[2]})",
   pick=True, sympy=lambda m: lambda c, a, b: m.select(m.boolean(c), a, b), nan="the branch not taken is not read")


def _second_wins(g, a, b, beats, nan_of):
    """The condition under which pick(a, b) is b: b beats a, or the operand ``nan_of`` is NaN
    (a constant's NaN test decided here, as the traced select had it)."""
    x = b if nan_of == "b" else a
    if g.is_const(x):
        return g.const(1) if math.isnan(g.value(x)) else g.node(beats, b, a)
    return g.node("or", g.node(beats, b, a), g.node("isnan", x))


PICK_RULES = {}  # name -> (beats, nan_of): an extremum's chain (render/loops.py, ir/evaluate.py) reads it


def second_wins(name, a, b):
    """numpy: where pick ``name``(a, b) is b (the rule of ``pick``), as booleans."""
    beats, nan_of = PICK_RULES[name]
    return ((b > a) if beats == "gt" else (b < a)) | np.isnan(b if nan_of == "b" else a)


def second_wins_c(name, a, b):
    """C: the condition under which pick ``name``(a, b) is b (C expressions ``a``, ``b`` read twice;
    ``|``, no branch: a SIMD loop's lanes blend)."""
    beats, nan_of = PICK_RULES[name]
    return f"({b} {'>' if beats == 'gt' else '<'} {a}) | (isnan({b if nan_of == 'b' else a}) != 0)"


def pick(name, beats, nan_of, rule):
    """Op ``name``: b where b ``beats`` a (gt: b > a) or operand ``nan_of`` is NaN, else a;
    C: csrc/symgrad_math.h's symgrad_NAME, the same select written once (operands read once)."""
    def d(g, t, a, b):
        c = _second_wins(g, a, b, beats, nan_of)
        return [g.select(c, g.const(0), g.const(1)), g.select(c, g.const(1), g.const(0))]

    def sympy(m):
        def form(a, b):
            nan = m.R.IsNan(b if nan_of == "b" else a)
            rel = m.relation(m.sp.Gt if beats == "gt" else m.sp.Lt)(b, a)
            return m.select(m.sp.Or(m.boolean(rel), m.boolean(nan)), b, a)
        return form
    wins = np.greater if beats == "gt" else np.less
    PICK_RULES[name] = (beats, nan_of)

    def value(a, b):  # the select itself: numpy's own answer at a tie of +0.0 and -0.0 varies
        return np.where(wins(b, a) | np.isnan(b if nan_of == "b" else a), b, a)
    op(name, 2, value, d, lambda a, T: T.call(f"symgrad_{name}", a), pick=True,
       numpy=(name,), sympy=sympy, nan=rule)


pick("maximum", "gt", "b", "NaN where either is NaN; the first at a tie")
pick("minimum", "lt", "b", "NaN where either is NaN; the first at a tie")
pick("fmax", "gt", "a", "a NaN operand ignored (NaN where both are); the first at a tie")
pick("fmin", "lt", "a", "a NaN operand ignored (NaN where both are); the first at a tie")
