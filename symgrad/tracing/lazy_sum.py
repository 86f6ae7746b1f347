"""Sums of arrays kept as loops (lazy.py): ``np.sum``, ``.sum()``, ``np.add.reduce`` and through
them ``mean``, ``var``, ``std``, ``linalg.norm``; and matrix products (``dot``, ``@``).

A reduction adds in the order numpy's float64 ``add.reduce`` does (sumorder.py), worked out
from the memory layout numpy would give the array (LazyArray.strides): a small one term by
term (each run pairwise), a large one as a ``("sum", body, loops, (block, run))`` node whose
loops visit the entries in numpy's order, rendered so (render/pairwise.py). Matrix products
are BLAS's in numpy, in no order modelled: their sums are plain ``("sum", body, loops)``
nodes, free to add in any order (as are the sums derivatives build)."""
from __future__ import annotations

import math

import numpy as np

from . import dtypes, registry, sumorder
from .lazy import UNROLL, LazyArray, Unrollable, const, elementwise, index_vars, var, wrap
from .lazy_index import normal_axes
from .values import Condition, Value, builder, user_site

# A sum over a large axis inside another loop (``X @ w`` over the rows of X, ``np.sum(A, axis=1)``)
# is added term by term in the outer loop's body up to this many terms (the IR has no sums in
# sums): the body, and the compile time, grow linearly with it, never with the outer extent.
INNER_TERMS = 4096


def reduce_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True, numpy_order=True,
         zero=False):
    if out is not None or where is not True:
        raise Unrollable(f"numpy.sum(..., out=/where=) of a large array at {user_site()}")
    b = builder() or getattr(a, "b", None)
    x = wrap(b, a)
    k = dtypes.kind(dtype, "numpy.sum")
    if k == "bool":  # (a logical or: traced element by element)
        raise Unrollable(f"numpy.sum(..., dtype=bool) of a large array at {user_site()}")
    if not isinstance(x, LazyArray):
        return dtypes.to_int(x) if k == "int" else x
    axes = normal_axes(axis, x.ndim)
    if k == "int":  # numpy's sum of the entries cast to int64 (exact in double below 2**53: dtypes.py)
        bound = dtypes.EXACT / max(math.prod(x.shape[j] for j in axes), 1)
        x = elementwise(lambda v: dtypes.to_int(v, bound), (x,))
        initial = initial if initial is np._NoValue else dtypes.to_int(initial)
    if x.parts:
        return x.total(axes, keepdims, initial)
    keep = [k for k in range(x.ndim) if k not in axes]
    if numpy_order:
        order, block, run = sumorder.reduction(x.shape, x.strides, axes, np.getbufsize())
        looped = order if math.prod(x.shape[k] for k in axes) >= b.loop_min else []
        terms = [k for k in order if k not in looped]
    else:  # (BLAS's order): large axes looped, small ones term by term in the body
        order, block, run = [k for k in axes if x.shape[k] != 1], None, None
        looped = [k for k in order if x.shape[k] > UNROLL]
        if math.prod(x.shape[k] for k in looped) < b.loop_min:
            looped = []  # a small sum: term by term, as traced unrolled
        terms = [k for k in order if k not in looped]
    inner = math.prod(x.shape[k] for k in looped)

    def total(outer):
        src = [const(0)] * x.ndim  # (reduced axes of extent 1)
        for k, i in zip(keep, outer):
            src[k] = i
        looped_, terms_ = looped, terms
        if looped and any(index_vars(i) for i in outer):  # inside another loop: term by term
            if inner > INNER_TERMS:
                raise Unrollable(f"a sum over a large axis ({inner} terms, over {INNER_TERMS}) inside another "
                                 f"loop at {user_site()}")
            looped_, terms_ = [], order
        start = 0.0 if initial is np._NoValue or looped_ or not numpy_order else initial
        return _plus(whole(src, looped_, terms_, start), None if start is initial else initial)

    def whole(src, looped, terms, start):
        vs = [(b.new_var(), x.shape[k]) for k in looped]
        for k, (v, _) in zip(looped, vs):
            src[k] = var(v)
        entries = []
        for flat in np.ndindex(*[x.shape[k] for k in terms]):
            for k, c in zip(terms, flat):
                src[k] = const(c)
            entries.append(x.at(tuple(src)))
        if not entries or any(e == 0 for _, e in vs):
            return start
        if not numpy_order:
            body = entries[0]
            for e in entries[1:]:
                body = body + e
            if not vs:  # ``zero``: from +0.0, as BLAS's (a -0.0 is +0.0); a loop's sum starts from 0.0
                return 0.0 + body if zero else body
        elif not vs:
            entries = [e.number() if isinstance(e, Condition) else e for e in entries]
            return sumorder.numpy_sum(sumorder.runs(entries, block, run), _add, start)
        else:
            body = entries[0]
        if not isinstance(body, (Value, Condition)):  # a number at every point
            n = math.prod(e for _, e in vs)
            return sumorder.constant_sum(body, n, block, run) if numpy_order else body * n
        if isinstance(body, Condition):
            body = body.number()
        if not numpy_order:
            return Value(b, b.node("sum", body.i, tuple(vs)))
        return Value(b, b.node("sum", body.i, tuple(vs), (block, run)))
    if not keep and not keepdims:
        return total(())
    shape = [x.shape[k] for k in keep]
    strides = sumorder.allocate(x.shape, [x.strides], set(axes))  # numpy's result: in the input's order
    lazy = LazyArray(b, shape, total, strides=[strides[k] for k in keep])
    if keepdims:
        return _reshape_keep(lazy, x.shape, axes)
    return lazy if shape else total(())


def _add(p, q):
    return p + q


def _plus(r, initial):
    return r if initial is None or initial is np._NoValue else r + initial


def _reshape_keep(x, full, axes):
    shape = [1 if k in axes else n for k, n in enumerate(full)]
    keep = [k for k in range(len(full)) if k not in axes]
    strides = [0] * len(full)
    for k, s in zip(keep, x.strides):
        strides[k] = s
    return LazyArray(x.b, shape, lambda idx: x.at(tuple(idx[k] for k in keep)), strides=strides)


def contract(a, c, zero=True):
    """a @ c (a sum from +0.0, as numpy's matmul: ``zero``) of arrays kept as loops."""
    b = builder()
    a, c = wrap(b, a), wrap(b, c)
    if not all(isinstance(z, LazyArray) for z in (a, c)):
        raise ValueError("matmul: input operand does not have enough dimensions")
    if all(z.size and isinstance(z.at((const(0),) * z.ndim), Condition) for z in (a, c)):
        raise Unrollable(f"a product of two bool arrays (numpy's: an or of ands) at {user_site()}")
    if a.ndim == 1 and c.ndim == 1:
        return reduce_sum(a * c, numpy_order=False, zero=zero)
    if a.ndim == 2 and c.ndim == 1:
        return reduce_sum(a * c[None, :], axis=1, numpy_order=False, zero=zero)
    if a.ndim == 1 and c.ndim == 2:
        return reduce_sum(a[:, None] * c, axis=0, numpy_order=False, zero=zero)
    if a.ndim == 2 and c.ndim == 2:
        return reduce_sum(a[:, :, None] * c[None, :, :], axis=1, numpy_order=False, zero=zero)
    raise Unrollable(f"a matrix product of {a.ndim}- and {c.ndim}-dimensional arrays at {user_site()}")


registry.HOOKS.lazy_sum, registry.HOOKS.lazy_matmul = reduce_sum, contract
