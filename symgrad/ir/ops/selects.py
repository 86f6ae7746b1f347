"""Selects: ``select(c, a, b)``, a where condition c holds, else b (np.where, Piecewise)."""
from __future__ import annotations

import numpy as np

from .registry import op


def _select_partials(g, t, c, a, b):
    return [None, g.select(c, g.const(1), g.const(0)), g.select(c, g.const(0), g.const(1))]


op("select", 3, lambda c, a, b: np.where(c, a, b), _select_partials, lambda a, T: f"({a[0]} ? {a[1]} : {a[2]})",
   sympy=lambda m: lambda c, a, b: m.select(m.boolean(c), a, b), nan="the branch not taken is not read")
