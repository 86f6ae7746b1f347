"""Conditions: comparisons, logic and IEEE tests. They give 0/1 (select's first operand) and
have no derivative; a comparison with NaN is false but for != (IEEE)."""
from __future__ import annotations

import numpy as np

from .registry import op


def compare(name, value, infix, numpy, rel, read, swapped, negate=False):
    """Comparison ``name``: sympy relation ``rel`` (its class ``read``, read back as it)."""
    op(name, 2, value, None, ("infix", infix), condition=True, numpy=(numpy,), swapped=swapped,
       sympy=lambda m: m.relation(getattr(m.sp, rel), negate=negate), reads=lambda m: (getattr(m.sp, read),))


compare("lt", np.less, "<", "less", "Lt", "StrictLessThan", "gt")
compare("le", np.less_equal, "<=", "less_equal", "Le", "LessThan", "ge")
compare("gt", np.greater, ">", "greater", "Gt", "StrictGreaterThan", "lt")
compare("ge", np.greater_equal, ">=", "greater_equal", "Ge", "GreaterThan", "le")
compare("eq", np.equal, "==", "equal", "Eq", "Equality", "eq")
compare("ne", np.not_equal, "!=", "not_equal", "Ne", "Unequality", "ne", negate=True)
op("and", 2, np.logical_and, None, ("infix", "&&"), condition=True, numpy=("logical_and",),
   sympy=lambda m: lambda a, b: m.sp.And(m.boolean(a), m.boolean(b)))
op("or", 2, np.logical_or, None, ("infix", "||"), condition=True, numpy=("logical_or",),
   sympy=lambda m: lambda a, b: m.sp.Or(m.boolean(a), m.boolean(b)))
op("not", 1, np.logical_not, None, ("prefix", "!"), condition=True, numpy=("logical_not",),
   sympy=lambda m: lambda a: m.R.Negation(m.boolean(a)))  # (sympy's Not(x > 0) is x <= 0: wrong for NaN)
op("isnan", 1, np.isnan, None, lambda a, T: f"isnan({a[0]})", condition=True, math=("isnan",), numpy=("isnan",),
   sympy=lambda m: m.R.IsNan, reads=lambda m: (m.R.IsNan,))
op("isinf", 1, np.isinf, None, lambda a, T: f"isinf({a[0]})", condition=True, math=("isinf",), numpy=("isinf",),
   sympy=lambda m: m.R.IsInf, reads=lambda m: (m.R.IsInf,))
op("isfinite", 1, np.isfinite, None, lambda a, T: f"isfinite({a[0]})", condition=True, math=("isfinite",),
   numpy=("isfinite",), sympy=lambda m: lambda a: m.sp.Not(m.R.IsNan(a) | m.R.IsInf(a)))
