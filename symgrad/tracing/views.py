"""Reshapes of large arrays kept as loops (lazy.py), by numpy's own no-copy rule.

An array that is a strided view of an argument or data array (lazy.View: slices with any
step, integer indices, transposes, new axes, reshapes of one) reads its source at the affine
flat index ``offset + sum(stride_k * i_k)``. A reshape of a view is again a view wherever
numpy's ``_attempt_nocopy_reshape`` (numpy/_core/src/multiarray/shape.c) succeeds on the
view's strides: an axis split always, axes merged only where each is contiguous with the next.
A reshape that only splits axes of a computed array is affine too (old index ``a * B + b``).
What is neither (axes merged that are not contiguous: numpy's copy) is a data array again
where the view reads data (numpy's copy, made now), and Unrollable where it reads an
argument or a computed array: its index would be a quotient and a remainder, not affine."""
from __future__ import annotations

import numpy as np

from . import sumorder
from .affine import add, const, scale
from .lazy import LazyArray, Unrollable, View, data
from .values import user_site


def groups(old, new):
    """numpy's pairing of the axes of shape ``old`` (extent 1 left out) with those of ``new``
    into runs of equal products: [(old axes, new axes)], both lists of axis numbers; axes of
    ``new`` after the last run have extent 1. Both shapes of the same nonzero size."""
    o = [k for k, n in enumerate(old) if n != 1]
    out, oi, ni = [], 0, 0
    while ni < len(new) and oi < len(o):
        p, q, nj, oj = new[ni], old[o[oi]], ni + 1, oi + 1
        while p != q:
            if p < q:
                p, nj = p * new[nj], nj + 1
            else:
                q, oj = q * old[o[oj]], oj + 1
        out.append((o[oi:oj], list(range(ni, nj))))
        ni, oi = nj, oj
    return out


def nocopy(old, strides, new, unit):
    """The strides of ``new`` where numpy reshapes an array of shape ``old`` and these
    strides without a copy, else None (merged axes not contiguous). ``unit``: the stride of
    one entry (numpy's itemsize), given to new axes of extent 1 after the last run."""
    out = [0] * len(new)
    last = None
    for olds, news in groups(old, new):
        if any(strides[a] != old[c] * strides[c] for a, c in zip(olds, olds[1:])):
            return None
        s = strides[olds[-1]]
        for k in reversed(news):
            out[k] = s
            s *= new[k]
        last = out[news[-1]]
    done = max((news[-1] + 1 for _, news in groups(old, new)), default=0)
    for k in range(done, len(new)):
        out[k] = unit if last is None else last
    return tuple(out)


def reshape(x, shape):
    """``x.reshape(shape)`` (C order, ``shape`` of x's size, none -1) of a LazyArray kept as loops."""
    memory = (nocopy(x.shape, x.strides, shape, 8) if x.size else None) or sumorder.c_strides(shape)
    v = x.view
    if v is not None:  # (an empty view's strides say nothing: numpy's C order)
        st = nocopy(x.shape, v.strides, shape, 1) if x.size else tuple(s // 8 for s in sumorder.c_strides(shape))
        if st is not None:  # a view again
            w = View(v.base, v.offset, st)
            return LazyArray(x.b, shape, lambda idx: read(w, idx), strides=memory, view=w)
        if v.base.values is not None:  # numpy's copy of data: data
            return data(x.b, values(v, x.shape).reshape(shape))
    if x.size and all(len(olds) == 1 for olds, _ in groups(x.shape, shape)):  # splits: old = a * B + b
        runs = groups(x.shape, shape)

        def at(idx):
            src = [const(0)] * x.ndim
            for (o,), news in runs:
                i, s = const(0), 1
                for k in reversed(news):
                    i, s = add(i, scale(idx[k], s)), s * shape[k]
                src[o] = i
            return x.at(tuple(src))
        return LazyArray(x.b, shape, at, strides=memory, view=None)
    what = "an array whose axes merged are not contiguous (a view of an argument)" if v is not None else \
        "a computed large array that merges its axes"
    raise Unrollable(f"a reshape of {what} at {user_site()}")


def read(view, idx):
    """Entry ``idx`` of a View: its source at the affine flat index."""
    flat = const(view.offset)
    for i, s in zip(idx, view.strides):
        flat = add(flat, scale(i, s))
    return view.base.entry(flat)


def values(view, shape):
    """The numbers of a View of ``shape`` of a data array, as numpy gives them."""
    flat = np.asarray(view.base.values).reshape(-1)
    at = view.offset + sum(np.arange(n).reshape((-1,) + (1,) * (len(shape) - k - 1)) * s
                           for k, (n, s) in enumerate(zip(shape, view.strides)))
    return flat[np.asarray(at, dtype=np.int64)]


def sliced(x, offset, strides):
    """The View of an index of ``x`` (ints, slices, new axes) that moves x's View by ``offset``
    entries and has ``strides``: None where x is no view."""
    return None if x.view is None else View(x.view.base, x.view.offset + offset, tuple(strides))


def permuted(x, axes):
    """The View of x's transpose by ``axes``: None where x is no view."""
    return None if x.view is None else View(x.view.base, x.view.offset, tuple(x.view.strides[a] for a in axes))

