"""The derivative kinds, each defined once: its name, what it is called in words, the shapes
of its results and how they nest, how its program is built (transforms/derive.py), and which
of them the loop form of a program takes (loops kept as loops, tracing/lazy.py). No sympy:
a warm start reads this module to find a kernel.

A Function's steps are (kind name, argument indices) pairs; the n-th derivative's name is
``d<n>`` (nth_name). Everything else asks this registry; how a user asks for a kind (the
verbs ``F.grad``, ``F.grad_wrt(1)``, ``symgrad.grad``, what codegen and the CLI offer) is
call/verbs.py's, keyed by the names defined here."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import CompileError
from ..ir.nodes import looped_argument
from ..structure import shift


@dataclass(frozen=True)
class Kind:
    name: str
    words: str                   # "gradient of ": the title of a Function of this kind
    scalar: bool                 # needs a scalar-valued function
    shapes: Callable             # (result shapes, argument shapes, argnums) -> result shapes
    build: Callable              # (program, argnums, context) -> derivative Program
    loops: Optional[Callable]    # (loop result forms, large, argnums, first) -> forms, or None: not as loops
    structure: Callable = lambda own, by, m: by  # how results nest: (the function's, the argnums', m)
    tangents: bool = False       # takes one tangent argument per argument differentiated by (after them)
    last: bool = False           # nothing is differentiated after it
    runs: Optional[str] = None   # of a large program: runs the kernel of this kind, its first result unstored
    stacked: Optional[str] = None  # the kind <name>_wrt(..., stack=True) takes
    sparse: Optional[str] = None  # the kind of its sparse form (F.jacobian(x, sparse=True))
    symmetric: bool = False      # a symmetric matrix: its sparse form holds the lower triangle
    pattern: Optional[Callable] = None  # (program, argnums) -> its sparsity.Pattern: one result, its entries
    exact: Optional[Callable] = None  # (traced program, argnums) -> whether its loop form takes them (else unrolled)


def _stacked(outs, args, nums):
    return [o + (sum(math.prod(args[i]) for i in nums),) for o in outs]


def _build_grad(prog, nums, ctx):
    from . import derive
    return derive.without_value(ctx.value_and_grad())


def _build_vg(prog, nums, ctx):
    return ctx.value_and_grad()


def _build_jac(prog, nums, ctx):
    from . import derive
    return derive.jacobian(prog, nums)


def _build_jac_stacked(prog, nums, ctx):
    from . import derive
    return derive.jacobian(prog, nums, stack=True)


def _build_hessian(prog, nums, ctx):
    from . import hessian, hessian_sums
    h = hessian_sums.hessian_of_sums(prog, nums)
    if h is not None:
        return h
    if {a for a in map(looped_argument, prog.nodes) if a is not None} & set(nums):
        raise CompileError("a Hessian by an argument the loops read that hessian_sums does not take (a bug in "
                           "symgrad: _hessian_exact should have said no)")
    return hessian.hessian(prog, nums)


def _jacobian_pattern(prog, nums):
    from . import sparsity
    return sparsity.jacobian_pattern(prog, nums)


def _build_jacobian_sparse(prog, nums, ctx):
    from . import sparsity
    return sparsity.jacobian(prog, nums, ctx.pattern())  # (the Function's, read once)


def _hessian_pattern(prog, nums):
    from . import sparsity
    return sparsity.hessian_pattern(prog, nums)


def _build_hessian_sparse(prog, nums, ctx):
    from . import sparsity
    return sparsity.hessian(prog, nums, ctx.pattern())


def _sparse_loops():
    from . import sparsity_loops
    return sparsity_loops


def _build_hvp(prog, nums, ctx):
    from . import derive
    from ..ir.program import tangent_names
    return derive.hvp(prog, nums, tangent_names([a.name for a in prog.args], nums),
                      derive.without_value(ctx.value_and_grad()))


# -- which steps the loop form takes: each result is "scalar", "plain" (small array), "map"
# (an array kept as a loop) or "scatter" (a gradient by a large argument)
def _small(shape, o="scalar"):
    return "scalar" if o == "scalar" and shape == () else "plain"


def _loops_grad(outs, large, shapes, nums, with_value):
    if outs != ["scalar"]:
        return None
    return (["scalar"] if with_value else []) + ["scatter" if i in large else _small(shapes[i]) for i in nums]


def _loops_jacobian(outs, large, shapes, nums):
    big = any(i in large for i in nums)
    if "scatter" in outs or (big and outs != ["scalar"]):
        return None
    return ["scatter" if i in large else "map" if o == "map" else _small(shapes[i], o) for o in outs for i in nums]


def _loops_second(outs, large, shapes, nums, count):
    if outs != ["scalar"] or any(i in large for i in nums):
        return None
    return ["plain"] * count


def _loops_hessian(outs, large, shapes, nums):
    return ["scatter"] * len(nums) ** 2 if outs == ["scalar"] else None


def _hessian_exact(prog, nums):
    """By arguments the loops read, the Hessian is taken only as hessian_sums takes it (the
    Jacobian of a scattered gradient is not)."""
    if not {a for a in map(looped_argument, prog.nodes) if a is not None} & set(nums):
        return True
    from . import hessian_sums
    return hessian_sums.takes(prog, nums)


def _each_leaf(structure, f):
    return f(structure) if isinstance(structure, int) else tuple(_each_leaf(s, f) for s in structure)


# The kind whose program (value and gradient) the gradient's kinds are built from, made once
# per argument set (pipeline/memo.py); the gradient runs its kernel.
SHARED = "value_and_grad"

GRAD, JACOBIAN, HESSIAN, HVP = "grad", "jacobian", "hessian", "hvp"
JACOBIAN_STACKED, JACOBIAN_SPARSE, HESSIAN_SPARSE = "jacobian_stacked", "jacobian_sparse", "hessian_sparse"

KINDS = {k.name: k for k in (
    Kind(GRAD, "gradient of ", True, lambda outs, args, nums: [args[i] for i in nums], _build_grad,
         lambda o, lg, sh, nums: _loops_grad(o, lg, sh, nums, False), runs=SHARED),
    Kind(SHARED, "value and gradient of ", True,
         lambda outs, args, nums: [()] + [args[i] for i in nums], _build_vg,
         lambda o, lg, sh, nums: _loops_grad(o, lg, sh, nums, True),
         structure=lambda own, by, m: (0, shift(by, 1))),
    Kind(JACOBIAN, "Jacobian of ", False, lambda outs, args, nums: [o + args[i] for o in outs for i in nums],
         _build_jac, _loops_jacobian,  # each result becomes its Jacobian by each argument
         structure=lambda own, by, m: _each_leaf(own, lambda i: shift(by, i * m)),
         stacked=JACOBIAN_STACKED, sparse=JACOBIAN_SPARSE),
    Kind(JACOBIAN_STACKED, "stacked Jacobian of ", False, _stacked, _build_jac_stacked, None,
         structure=lambda own, by, m: own, sparse=JACOBIAN_SPARSE),
    Kind(JACOBIAN_SPARSE, "sparse Jacobian of ", False, None, _build_jacobian_sparse,
         lambda o, lg, sh, nums: ["plain"], structure=lambda own, by, m: 0, last=True, pattern=_jacobian_pattern,
         exact=lambda prog, nums: _sparse_loops().jacobian_supported(prog, nums)),
    Kind(HESSIAN, "Hessian of ", True, lambda outs, args, nums: [args[i] + args[j] for i in nums for j in nums],
         _build_hessian, _loops_hessian, exact=_hessian_exact,
         structure=lambda own, by, m: 0 if isinstance(by, int) else
         tuple(tuple(i * m + j for j in range(m)) for i in range(m)), sparse=HESSIAN_SPARSE, symmetric=True),
    Kind(HESSIAN_SPARSE, "sparse Hessian of ", True, None, _build_hessian_sparse,
         lambda o, lg, sh, nums: ["plain"] if o == ["scalar"] else None,
         structure=lambda own, by, m: 0, last=True, pattern=_hessian_pattern,
         exact=lambda prog, nums: _sparse_loops().supported(prog, nums)),
    Kind(HVP, "Hessian-vector product of ", True, lambda outs, args, nums: [args[i] for i in nums], _build_hvp,
         lambda o, lg, sh, nums: _loops_second(o, lg, sh, nums, len(nums)), tangents=True, last=True),
)}
VALUE = "value"  # the kernel of the function itself (F.build, codegen, the CLI)


def _build_nth(n):
    def build(prog, nums, ctx):
        from . import derive
        return derive.nth(prog, n, nums[0], nth_name(n))
    return build


def _loops_nth(outs, large, shapes, nums):
    if any(i in large for i in nums) or "scatter" in outs:
        return None
    return outs


def nth_name(n):
    """The name of the n-th derivative's kind."""
    return f"d{n}"


def nth_order(name):
    """n, where ``name`` is the n-th derivative's kind (d0: the function itself), else None."""
    m = re.fullmatch(r"d(0|[1-9][0-9]*)", name)
    return int(m.group(1)) if m else None


def kind(name) -> Kind:
    """The Kind called ``name``: one of KINDS, or ``d<n>`` (the n-th derivative)."""
    k = KINDS.get(name)
    if k is not None:
        return k
    m = re.fullmatch(r"d([0-9]+)", name)
    if m is None:
        raise ValueError(f"unknown derivative kind {name!r}: expected one of {', '.join(KINDS)} or d<n>")
    n = int(m.group(1))
    return Kind(name, f"derivative {n} of ", False, lambda outs, args, nums: outs, _build_nth(n), _loops_nth,
                structure=lambda own, by, m: own)


def result_shapes(outs, args, steps, nnz=None):
    """Core shapes of the results after ``steps``, from the traced program's (no sympy); a
    sparse kind's (the last step) is (``nnz``,), the size of its pattern."""
    outs, args = list(outs), list(args)
    for name, nums in steps:
        k = kind(name)
        if k.scalar and (len(outs) != 1 or outs[0] != ()):
            raise ValueError(f"{name} needs a scalar-valued function, but it returns shape "
                             f"{outs[0] if len(outs) == 1 else outs}; use .jacobian for vector-valued functions")
        new = [(nnz,)] if k.pattern is not None else k.shapes(outs, args, nums)
        if k.tangents:  # the tangents are arguments after the function's own
            args = args + [args[i] for i in nums]
        outs = new
    return outs


def title(steps, call):
    """What a Function of these steps computes, in words: "gradient of f(x, y)"."""
    return "".join(kind(name).words for name, _ in reversed(steps)) + call


def supports(prog, steps) -> bool:
    """Whether the loop form takes these derivative steps of ``prog`` (a traced Program)."""
    large = {a for a in map(looped_argument, prog.nodes) if a is not None}
    shapes = [a.shape for a in prog.args]
    outs = ["scatter" if o.adds is not None else "map" if o.loops else "scalar" if o.shape == () else "plain"
            for o in prog.outputs]
    for step, (name, nums) in enumerate(steps):
        if step and any(i in large for i in nums):  # a second derivative by a large argument
            return False
        k = kind(name)
        outs = k.loops(outs, large, shapes, nums) if k.loops is not None else None
        if outs is None or (k.exact is not None and (step or not k.exact(prog, nums))):
            return False
    return True
