"""Every operation of the IR, each defined once with everything about it: arity, its numpy
value (constant folding and the IR interpreter), its local partials as IR builders, its C
spelling and vector-maths name, the names math / numpy / scipy.special give it, its sympy form
and the sympy functions read back as it. Every other table (the tracer's names, the C flags'
vector functions, the sympy edges' tables, the reflected comparisons) is derived here.

An op is one ``op(...)`` call in the file of its family (arith, elementary, special, steps,
conditions, selects). Partials take a builder (ir/graph.py's Graph), the result node and the
operand nodes, and give one node per operand: its partial, or None where it is 0
(structurally: a select's branch, a step). Conditions give 0/1 and have no derivative.
Sympy forms are functions of an edge module ``m`` (m.sp sympy, m.R edges/realfns.py, m.cf
sympy's C functions, m.relation / m.select / m.boolean / m.div / m.power IEEE-faithful
constructors), so nothing here imports sympy.

Adding an op is one ``op(...)`` entry; where C has no function for it, its helper goes in
csrc/symgrad_math.h (device-safe; standalone C and CUDA files copy it), and where that helper
calls vector maths, its one-lane helpers in csrc/symgrad_rt.h (logaddexp: both)."""
from __future__ import annotations

from .registry import CONSTANTS, OPS, Op, op  # noqa: F401  (the record and the registry)
from . import arith, elementary, special, steps, conditions, selects  # noqa: F401  (each registers its ops)

# -- derived tables ---------------------------------------------------------------------------
# ops printed as function calls (a kernel's cost counts them)
CALLS = frozenset(n for n, o in OPS.items() if isinstance(o.c, str) or o.library) - {"pow"}
# ops that call a maths library function (a vector one, libmvec's, in a vectorised CPU lane
# loop), not one that compiles to an instruction (pow: where its exponent is not an integer)
LIBRARY = frozenset(n for n, o in OPS.items() if o.library)
# C functions that a block's lane loop calls in vector variants, each with helpers
# symgrad_one_FN_W calling that variant for one lane (csrc/symgrad_rt.h: the same lists)
VECTOR_FUNCTIONS = frozenset(o.vector for o in OPS.values() if o.vector)
MATH_NAMES = {m: n for n, o in OPS.items() for m in o.math}     # math.<name> -> op
NUMPY_NAMES = {u: n for n, o in OPS.items() for u in o.numpy}   # numpy.<ufunc> -> op
SCIPY_NAMES = {u: n for n, o in OPS.items() for u in o.scipy}   # scipy.special.<ufunc> -> op
SYMPY = {n: o.sympy for n, o in OPS.items()}
SWAPPED = {n: o.swapped for n, o in OPS.items() if o.swapped}  # Python's reflected comparison
PICKS = frozenset(n for n, o in OPS.items() if o.pick)  # ops giving one operand unchanged
LOGIC = ("and", "or", "not")
