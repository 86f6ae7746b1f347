"""numpy's functions on arrays kept as loops (lazy.py), called as numpy's own (registry.like:
their parameter names): the table registry.LAZY that LazyArray.__array_function__ reads."""
from __future__ import annotations

import math

import numpy as np

from . import bools, dtypes, registry
from .lazy import LazyArray, Unrollable, elementwise, wrap
from .lazy_index import index, normal_axes, reshape, transpose
from .lazy_sum import contract, reduce_sum
from .values import Condition, Value, builder, user_site, where


def np_where(c, a, b):
    """numpy.where of one entry: where both branches are bools the result is numpy's bool
    ((c & a) | (~c & b): np.where(m, m1, m2) + m3 is a logical or), else the traced select; a
    number ``c`` is true unless 0."""
    if isinstance(c, Value):
        c = c != 0
    if isinstance(c, Condition) and bools.boolish(a) and bools.boolish(b):
        return bools.numpy_bool((c & a) | (~c & b))
    return where(c, a, b)


NP_WHERE = np.frompyfunc(np_where, 3, 1)


def select(c, a, b):
    """numpy.where of one element (np_where)."""
    return np_where(c, a, b)


def _mean(a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    x = wrap(builder() or a.b, a)
    count = math.prod(x.shape[k] for k in normal_axes(axis, x.ndim))
    k = dtypes.statistic("mean", dtype)  # int64: numpy's mean of the cast entries, truncated
    s = reduce_sum(x, axis, dtype=dtype if k == "int" else None, out=out, keepdims=keepdims, where=where)
    m = s / np.float64(count)  # of nothing: nan, as numpy (0.0 / 0 would raise)
    if k == "int":
        return elementwise(dtypes.to_int, (m,)) if isinstance(m, LazyArray) else dtypes.to_int(m)
    return m


def _dot(a, b, out=None):
    if out is not None:
        raise Unrollable(f"numpy.dot(..., out=) of a large array at {user_site()}")
    if not isinstance(wrap(builder(), a), LazyArray) or not isinstance(wrap(builder(), b), LazyArray):
        return a * b
    return contract(a, b, dtypes.dot_from_zero(np.shape(a), np.shape(b)))


def lazy_where(condition, x=None, y=None):
    if x is None:
        raise Unrollable(f"numpy.where(cond) (the indices) of a large array at {user_site()}")
    return elementwise(select, (condition, x, y))


def _norm(x, ord=None, axis=None, keepdims=False):
    axes = normal_axes(axis, x.ndim) if axis is not None else tuple(range(x.ndim))
    if ord is not None and not (ord == 2 and len(axes) == 1) and not (ord == "fro" and len(axes) == 2):
        raise Unrollable(f"numpy.linalg.norm(ord={ord!r}, axis={axis!r}) of a large array at {user_site()}")
    return np.sqrt(reduce_sum(x * x, axis, keepdims=keepdims))


def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue, mean=np._NoValue,
         correction=np._NoValue):
    if out is not None or where is not np._NoValue or mean is not np._NoValue:
        raise Unrollable(f"numpy.var/std(..., out=/where=/mean=) of a large array at {user_site()}")
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    dtypes.statistic("var", dtype)  # float64 only
    m = _mean(a, axis, keepdims=True)
    d = a - m
    count = math.prod(a.shape[k] for k in normal_axes(axis, a.ndim))
    return reduce_sum(d * d, axis, keepdims=keepdims) / np.float64(max(count - ddof, 0))  # numpy's nan or inf


def _std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    dtypes.statistic("std", dtype)  # float64 only
    return np.sqrt(_var(a, axis, dtype, out, ddof, keepdims, **kw))


def _expand_dims(a, axis):
    axes = normal_axes(axis, a.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1))
    return index(a, tuple(None if k in axes else slice(None) for k in range(a.ndim + len(axes))))


def _reshape_fn(a, shape=None, order="C", *, newshape=None, copy=None):
    if copy is False:
        raise Unrollable(f"numpy.reshape(..., copy=False) of a large array at {user_site()}")
    return reshape(a, shape if shape is not None else newshape, order)


registry.LAZY.update({f: registry.like(f, impl) for f, impl in (
    (np.sum, reduce_sum), (np.mean, _mean), (np.dot, _dot), (np.where, lazy_where), (np.var, _var), (np.std, _std),
    (np.linalg.norm, _norm), (np.reshape, _reshape_fn),
    (np.ravel, lambda a, order="C": reshape(a, (-1,), order)),
    (np.transpose, lambda a, axes=None: transpose(a, axes)),
    (np.swapaxes, lambda a, axis1, axis2: a.swapaxes(axis1, axis2)),
    (np.shape, lambda a: a.shape), (np.ndim, lambda a: a.ndim),
    (np.size, lambda a, axis=None: a.size if axis is None else a.shape[axis]),
    (np.expand_dims, _expand_dims), (np.real, lambda val: val.real), (np.imag, lambda val: val.imag),
)})
