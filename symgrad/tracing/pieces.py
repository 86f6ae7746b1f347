"""Large arrays joined along an axis (``np.concatenate``, ``hstack``, ``vstack``, ``append`` of
arrays kept as loops, lazy.py). A Joined array keeps its parts, and each operation on it that
keeps the joined axis runs on each part: an elementwise op on the matching slices of its
operands, a sum over the joined axis as the sum of the parts' sums, a slice as slices of the
parts it covers. So code that builds a residual or a constraint vector from pieces stays
loops. An entry read at a loop index along the joined axis (a gather, a reshape) cannot pick
its part: Unrollable (the function is traced element by element)."""
from __future__ import annotations

import bisect
import itertools
import operator

import numpy as np

from . import lazy, lazy_index, registry
from .lazy import LazyArray, Unrollable, wrap
from .values import Condition, Value, builder, keeps_values, user_site


class Joined(LazyArray):
    """``parts`` (LazyArrays, none empty) joined along ``axis``; ``starts``: where each begins."""

    def __init__(self, b, parts, axis):
        shape = list(parts[0].shape)
        shape[axis] = sum(p.shape[axis] for p in parts)
        self.parts, self.axis = tuple(parts), axis
        self.starts = list(itertools.accumulate([0] + [p.shape[axis] for p in parts]))
        super().__init__(b, shape, self._entry)

    def _entry(self, idx):
        i = idx[self.axis]
        if i[1]:
            raise Unrollable(f"an array joined by numpy.concatenate, read along its joined axis in a loop, "
                             f"at {user_site()}")
        k = bisect.bisect_right(self.starts, i[0]) - 1
        return self.parts[k].at(idx[:self.axis] + (lazy.const(i[0] - self.starts[k]),) + idx[self.axis + 1:])

    def split(self, fn, xs, shape, name):
        """lazy.elementwise(fn, xs) (``shape``: theirs broadcast) as the join of the op on each
        stretch of this array's joined axis where every joined operand is one part."""
        nd = len(shape)
        ax = self.axis + nd - self.ndim

        def own(x):  # x's axis that lies on the result's axis ``ax`` (None: broadcast along it)
            k = x.ndim - nd + ax if isinstance(x, LazyArray) else -1
            return k if k >= 0 and x.shape[k] != 1 else None
        cuts = sorted({c for x in xs if own(x) is not None and x.parts and x.axis == own(x) for c in x.starts})
        parts = [lazy.elementwise(fn, [x if own(x) is None else cut(x, own(x), lo, hi) for x in xs], name)
                 for lo, hi in zip(cuts, cuts[1:])]
        return join(self.b, parts, ax)

    def total(self, axes, keepdims, initial):
        """lazy.reduce_sum over ``axes`` (sorted, normalised)."""
        if self.axis in axes:  # the sum of the parts' sums
            r = None
            for p in self.parts:
                s = lazy.reduce_sum(p, axes, keepdims=keepdims)
                r = s if r is None else r + s
            return r if initial is np._NoValue else r + initial
        kw = {} if initial is np._NoValue else {"initial": initial}
        ax = self.axis if keepdims else self.axis - sum(1 for a in axes if a < self.axis)
        return join(self.b, [lazy.reduce_sum(p, axes, keepdims=keepdims, **kw) for p in self.parts], ax)

    def transposed(self, axes):
        return join(self.b, [lazy_index.transpose(p, axes) for p in self.parts], axes.index(self.axis))

    def basic_index(self, index):
        """``self[index]`` for ints, slices, None and Ellipsis: the parts it covers, each
        indexed; None for any other index (lazy_index.index's general form)."""
        parts = list(index) if isinstance(index, tuple) else [index]
        for p in parts:
            if not (p is None or p is Ellipsis or isinstance(p, slice) or _integer(p)):
                return None
        if parts.count(Ellipsis) > 1:
            return None
        used = sum(1 for p in parts if p is not None and p is not Ellipsis)
        if used > self.ndim:
            return None
        if Ellipsis in parts:
            k = parts.index(Ellipsis)
            parts[k:k + 1] = [slice(None)] * (self.ndim - used)
        parts += [slice(None)] * (self.ndim - sum(1 for p in parts if p is not None))
        pos = [k for k, p in enumerate(parts) if p is not None][self.axis]  # the joined axis's entry
        out_axis = sum(1 for p in parts[:pos] if p is None or isinstance(p, slice))
        p, n, s = parts[pos], self.shape[self.axis], self.starts
        if not isinstance(p, slice):
            c = operator.index(p)
            if not -n <= c < n:
                raise IndexError(f"index {c} is out of bounds for axis {self.axis} with size {n}")
            k = bisect.bisect_right(s, c % n) - 1
            return lazy_index.index(self.parts[k], tuple(parts[:pos] + [c % n - s[k]] + parts[pos + 1:]))
        start, stop, step = p.indices(n)
        at = np.arange(start, stop, step)
        if not at.size:
            return None
        which = np.searchsorted(s, at, side="right") - 1
        runs = np.flatnonzero(np.diff(which)) + 1
        out = []
        for a, z in zip([0, *runs], [*runs, at.size]):
            k = which[a]
            first, last = int(at[a]) - s[k], int(at[z - 1]) - s[k]
            local = slice(first, last + step if last + step >= 0 else None, step)
            out.append(lazy_index.index(self.parts[k], tuple(parts[:pos] + [local] + parts[pos + 1:])))
        return join(self.b, out, out_axis)


def _integer(p):
    if isinstance(p, (bool, np.bool_)) or isinstance(p, np.ndarray):
        return False
    try:
        operator.index(p)
    except TypeError:
        return False
    return True


def cut(x, axis, lo, hi):
    """Entries ``lo:hi`` of ``x`` along ``axis`` (lo < hi)."""
    if x.parts and x.axis == axis:
        s, out = x.starts, []
        for k, p in enumerate(x.parts):
            a, z = max(lo, s[k]), min(hi, s[k + 1])
            if a < z:
                out.append(p if (a, z) == (s[k], s[k + 1]) else cut(p, axis, a - s[k], z - s[k]))
        return join(x.b, out, axis)
    return lazy_index.index(x, (slice(None),) * axis + (slice(lo, hi),))


def join(b, parts, axis):
    """``parts`` (LazyArrays, none empty) joined along ``axis``: one is itself, a joined one's
    parts are joined in its place."""
    flat = []
    for p in parts:
        flat.extend(p.parts if p.parts and p.axis == axis else (p,))
    return flat[0] if len(flat) == 1 else Joined(b, flat, axis)


# -- numpy's joining functions on arrays kept as loops ---------------------------------------------
def _arrays(name, arrays):
    b = builder()
    if isinstance(arrays, np.ndarray) and arrays.ndim:  # numpy iterates an array's first axis
        arrays = list(arrays)
    if isinstance(arrays, (LazyArray, np.ndarray)) or not hasattr(arrays, "__iter__"):
        raise TypeError(f"numpy.{name}() takes a sequence of arrays, got {type(arrays).__name__}")
    xs = [wrap(b, a) for a in arrays]
    if not xs:
        raise ValueError("need at least one array to concatenate")
    return b, xs


def _scalar_array(b, x):
    """A 0-d operand (a traced value or a number) as a 1-entry array."""
    return x if isinstance(x, LazyArray) else wrap(b, np.array([x], dtype=object if isinstance(x, Value) else float))


def _rows_joined(x, item, axis):
    """What numpy's joining functions make of one array ``x`` given as the sequence: its
    entries along the first axis, each of shape ``item`` (x's other axes, with 1s in front
    as atleast_1d/2d add them), joined along ``axis`` of the items."""
    n = x.shape[0]
    if n == 0:
        raise ValueError("need at least one array to concatenate")
    y = lazy_index.reshape(x, (n,) + item, "C")
    if axis:  # the rows' axis moved beside the joined one
        y = lazy_index.transpose(y, tuple(range(1, axis + 1)) + (0,) + tuple(range(axis + 1, len(item) + 1)))
    return lazy_index.reshape(y, item[:axis] + (n * item[axis],) + item[axis + 1:], "C")


def _axis(axis):
    if isinstance(axis, (bool, np.bool_)):  # numpy takes no truth value for an axis
        raise TypeError("an integer is required for the axis")
    return operator.index(axis)


def _dtype(name, dtype):
    if dtype is not None and not keeps_values(dtype):
        raise Unrollable(f"numpy.{name}(..., dtype={np.dtype(dtype)}) of a large array at {user_site()}")


def _at_least(shape, nd):
    return (1,) * (nd - len(shape)) + shape


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise Unrollable(f"numpy.concatenate(..., out=) of a large array at {user_site()}")
    _dtype("concatenate", dtype)
    if isinstance(arrays, LazyArray) and arrays.ndim:
        if axis is None:
            return lazy_index.reshape(arrays, (-1,), "C")
        item = tuple(arrays.shape[1:])
        if not item:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        axis = _axis(axis)
        if not -len(item) <= axis < len(item):
            raise np.exceptions.AxisError(axis, len(item))
        return _rows_joined(arrays, item, axis % len(item))
    b, xs = _arrays("concatenate", arrays)
    if axis is None:
        xs, axis = [lazy_index.reshape(_scalar_array(b, x), (-1,), "C") for x in xs], 0
    return _join(b, xs, axis)


def _join(b, xs, axis):
    if not all(isinstance(x, LazyArray) for x in xs):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = xs[0].ndim
    for k, x in enumerate(xs):
        if x.ndim != nd:
            raise ValueError(f"all the input arrays must have same number of dimensions, but the array at index 0 "
                             f"has {nd} dimension(s) and the array at index {k} has {x.ndim} dimension(s)")
    axis = _axis(axis)
    if not -nd <= axis < nd:
        raise np.exceptions.AxisError(axis, nd)
    axis %= nd
    for k, x in enumerate(xs):
        for d in range(nd):
            if d != axis and x.shape[d] != xs[0].shape[d]:
                raise ValueError(f"all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size {xs[0].shape[d]} "
                                 f"and the array at index {k} has size {x.shape[d]}")
    full = [x for x in xs if x.shape[axis]]
    logical = [isinstance(x.at((lazy.const(0),) * nd), _BOOLS) for x in full]
    if any(logical) and not all(logical):  # bools joined with numbers: numpy's float array, 1.0 / 0.0
        full = [lazy.elementwise(_number, (x,)) if k else x for x, k in zip(full, logical)]
    return join(b, full, axis) if full else xs[0]


_BOOLS = (Condition, bool, np.bool_)


def _number(v):
    return v.number() if isinstance(v, Condition) else float(v) if isinstance(v, _BOOLS) else v


def _hstack(tup, *, dtype=None, casting="same_kind"):
    if isinstance(tup, LazyArray) and tup.ndim:
        item = _at_least(tuple(tup.shape[1:]), 1)
        _dtype("hstack", dtype)
        return _rows_joined(tup, item, 0 if len(item) == 1 else 1)
    b, xs = _arrays("hstack", tup)
    xs = [_scalar_array(b, x) for x in xs]
    return _concatenate(xs, 0 if all(x.ndim == 1 for x in xs) else 1, dtype=dtype)


def _vstack(tup, *, dtype=None, casting="same_kind"):
    if isinstance(tup, LazyArray) and tup.ndim:
        _dtype("vstack", dtype)
        return _rows_joined(tup, _at_least(tuple(tup.shape[1:]), 2), 0)
    b, xs = _arrays("vstack", tup)
    xs = [_scalar_array(b, x) for x in xs]
    xs = [lazy_index.index(x, (None, slice(None))) if x.ndim == 1 else x for x in xs]
    return _concatenate(xs, 0, dtype=dtype)


def _append(arr, values, axis=None):
    return _concatenate([arr, values], axis)


registry.LAZY.update({f: registry.like(f, impl) for f, impl in (
    (np.concatenate, _concatenate), (np.hstack, _hstack), (np.vstack, _vstack), (np.append, _append))})
