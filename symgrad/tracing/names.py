"""The tracer's view of the op registry (ir/ops/): what Python's math module and numpy call
each op, which ops give conditions, and Python's reflected comparisons. No sympy."""
from __future__ import annotations

from ..ir.ops import LOGIC, MATH_NAMES as MATH, NUMPY_NAMES as NUMPY, OPS, SWAPPED

# Comparisons and tests give conditions (used by "select"), never numbers; so does logic.
COMPARE = tuple(n for n, o in OPS.items() if o.condition and n not in LOGIC)


__all__ = ["COMPARE", "LOGIC", "MATH", "NUMPY", "SWAPPED"]
