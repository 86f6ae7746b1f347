"""The shape and index operations of large arrays kept as loops (lazy.py): transpose, reshape,
numpy's basic and advanced indexing as a new rule over the same sources, and the axes of a
reduction. LazyArray's methods reach them through registry.HOOKS (this module imports lazy.py)."""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numpy as np

from . import registry, views
from .affine import add, const, flat as _flat, gather, scale
from .lazy import LazyArray, Unrollable
from .values import Condition, Value, builder, user_site


class _Int(NamedTuple):  # input axis ``axis`` at the constant ``c``
    axis: int
    c: int


class _Slice(NamedTuple):  # input axis ``axis`` from ``start`` by ``step``, along output axis ``out``
    axis: int
    start: int
    step: int
    out: int


class _Fancy(NamedTuple):  # input axis ``axis`` gathered at the broadcast index arrays' entry
    axis: int


class _New(NamedTuple):  # an output axis of length 1 (None)
    out: int


def transpose(x, axes):
    axes = tuple(reversed(range(x.ndim))) if axes is None else tuple(a % x.ndim for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} don't match an array of {x.ndim} dimensions")
    if x.parts:
        return x.transposed(axes)
    inverse = [axes.index(k) for k in range(x.ndim)]
    return LazyArray(x.b, [x.shape[a] for a in axes], lambda idx: x.at(tuple(idx[inverse[k]] for k in range(x.ndim))),
                     strides=[x.strides[a] for a in axes], view=views.permuted(x, axes))


def reshape(x, shape, order):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if order != "C":
        raise Unrollable(f"reshape(order={order!r}) of a large array at {user_site()}")
    if shape.count(-1) == 1:
        known = math.prod(n for n in shape if n != -1)
        shape = tuple(x.size // known if n == -1 else n for n in shape)
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    if shape == x.shape:  # (joined arrays stay joined)
        return x
    return views.reshape(x, shape)


def index(x, index):
    b = builder() or x.b
    r = x.basic_index(index) if x.parts else None
    if r is not None:
        return r
    parts = list(index) if isinstance(index, tuple) else [index]
    ellipsis = [k for k, p in enumerate(parts) if p is Ellipsis]
    if ellipsis:
        k = ellipsis[0]
        used = sum(np.ndim(p) if isinstance(p, (np.ndarray, list)) and np.asarray(p).dtype == bool else 1
                   for p in parts if p is not None and p is not Ellipsis)
        parts[k:k + 1] = [slice(None)] * (x.ndim - used)
    # boolean arrays: their nonzero entries
    expanded = []
    for p in parts:
        if isinstance(p, (list, tuple)):
            p = np.asarray(p)
        if isinstance(p, (Value, Condition, LazyArray)) or (isinstance(p, np.ndarray) and p.dtype == object):
            raise Unrollable(f"a large array indexed by traced values at {user_site()}")
        if isinstance(p, np.ndarray) and p.dtype == bool:
            expanded.extend(np.nonzero(p))
        else:
            expanded.append(p)
    if any(isinstance(p, np.ndarray) for p in expanded):  # numpy: integers beside arrays are advanced too
        expanded = [np.asarray(p) if isinstance(p, (int, np.integer)) else p for p in expanded]
    parts = expanded
    parts += [slice(None)] * (x.ndim - sum(1 for p in parts if p is not None))
    if sum(1 for p in parts if p is not None) > x.ndim:
        raise IndexError(f"too many indices for an array of {x.ndim} dimensions")
    fancy = [k for k, p in enumerate(parts) if isinstance(p, np.ndarray)]
    # each input axis: _Int | _Slice | _Fancy, and each new axis _New; output axes in order
    plan, out_shape, ax = [], [], 0
    fshape = np.broadcast_shapes(*[parts[k].shape for k in fancy]) if fancy else ()
    adjacent = fancy and fancy == list(range(fancy[0], fancy[-1] + 1))
    fancy_at = None
    if fancy and not adjacent:
        fancy_at = 0
        out_shape.extend(fshape)
    gathers = {}
    for k, p in enumerate(parts):
        if p is None:
            plan.append(_New(len(out_shape)))
            out_shape.append(1)
            continue
        n = x.shape[ax]
        if isinstance(p, np.ndarray):
            if p.dtype.kind not in "iu":
                raise IndexError(f"arrays used as indices must be of integer or boolean type, got {p.dtype}")
            if p.size and (p.max() >= n or p.min() < -n):
                raise IndexError(f"index {p.max() if p.max() >= n else p.min()} is out of bounds for axis {ax} "
                                 f"with size {n}")
            if fancy_at is None:
                fancy_at = len(out_shape)
                out_shape.extend(fshape)
            gathers[ax] = b.add_data(np.broadcast_to(np.where(p < 0, p + n, p), fshape).astype(np.int64))
            plan.append(_Fancy(ax))
        elif isinstance(p, slice):
            start, stop, step = p.indices(n)
            plan.append(_Slice(ax, start, step, len(out_shape)))
            out_shape.append(len(range(start, stop, step)))
        else:
            try:
                c = operator.index(p)
            except TypeError:
                raise IndexError(f"only integers, slices, None, Ellipsis and integer or boolean arrays are "
                                 f"valid indices, got {type(p).__name__}") from None
            if not -n <= c < n:
                raise IndexError(f"index {c} is out of bounds for axis {ax} with size {n}")
            plan.append(_Int(ax, c % n))
        if p is not None:
            ax += 1
    nf = len(fshape)

    def at(idx):
        src = [None] * x.ndim
        fidx = _flat(idx[fancy_at:fancy_at + nf], fshape) if fancy else None
        for step in plan:
            if isinstance(step, _Int):
                src[step.axis] = const(step.c)
            elif isinstance(step, _Slice):
                src[step.axis] = add(const(step.start), scale(idx[step.out], step.step))
            elif isinstance(step, _Fancy):
                src[step.axis] = gather(b, gathers[step.axis], fidx)
        return x.at(tuple(src))
    if not out_shape:
        return at(())
    if fancy:  # a new array, C order
        return LazyArray(b, out_shape, at)
    strides, steps, offset = [0] * len(out_shape), [0] * len(out_shape), 0  # numpy's view: its memory, and
    for step in plan:  # where it lies in the source x is a view of (views.py)
        if isinstance(step, _Slice):
            strides[step.out] = x.strides[step.axis] * step.step
            if x.view is not None:
                steps[step.out] = x.view.strides[step.axis] * step.step
                offset += x.view.strides[step.axis] * step.start
        elif isinstance(step, _Int) and x.view is not None:
            offset += x.view.strides[step.axis] * step.c
    return LazyArray(b, out_shape, at, strides=strides, view=views.sliced(x, offset, steps))


def normal_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return tuple(sorted(set(out)))


registry.HOOKS.lazy_index, registry.HOOKS.lazy_reshape, registry.HOOKS.lazy_transpose = index, reshape, transpose
