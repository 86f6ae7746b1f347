"""numpy's NaN-ignoring reductions (nansum ... nanstd) and weighted averages on traced values:
numpy's own code masks NaNs in place and tests weights for zero, which traced values cannot
take; here they are selects and sums. Arguments numpy takes but these do not (out=, where=,
mean=) are refused, never ignored."""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from .registry import register
from .ufuncs import an_array, as_array, each, elementwise, holds_traced, numeric, result, scalar_of, traced, umath
from .values import apply, user_site, where

_NO = np._NoValue


def _nan_as(a, fill, value=None):
    """``a`` (an array: a loop for a large one) with its NaN entries as ``fill`` and, with
    ``value``, every other entry as ``value``."""
    def one(v):
        other = v if value is None else value
        return apply("select", apply("isnan", v), fill, other) if traced((v,)) else (fill if v != v else other)
    return an_array(each(one, a))


def _count(a):
    """1.0 for each entry of ``a`` that is not NaN, else 0.0."""
    return _nan_as(a, 0.0, 1.0)


def _refuse(name, **given):
    for k, v in given.items():
        if v is not _NO and v is not None:
            raise TraceError(f"np.{name}(..., {k}=...) of traced values at {user_site()} is not supported")


def _kw(**given):
    return {k: v for k, v in given.items() if v is not _NO}


def _reduction(name, ufunc, fill):
    original = getattr(np, name)

    def f(a, axis=None, dtype=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
        if not holds_traced([a, initial]):
            return original(numeric(a), axis, dtype, out, **_kw(keepdims=keepdims, initial=initial, where=where))
        _refuse(name, out=out, where=where)
        r = _reduce(ufunc, _nan_as(a, fill), axis, dtype, keepdims, initial)
        return scalar_of(result(r))
    return f


def _reduce(ufunc, a, axis, dtype, keepdims, initial=_NO):
    return ufunc.reduce(a, axis, dtype, **_kw(keepdims=keepdims, initial=initial))


register(np, "nansum")(_reduction("nansum", umath.add, 0.0))
register(np, "nanprod")(_reduction("nanprod", umath.multiply, 1.0))


def _extreme(name, ufunc):
    original = getattr(np, name)

    def f(a, axis=None, out=None, keepdims=_NO, initial=_NO, where=_NO):
        if not holds_traced([a, initial]):
            return original(numeric(a), axis, out, **_kw(keepdims=keepdims, initial=initial, where=where))
        _refuse(name, out=out, where=where)  # fmax/fmin ignore a NaN (all NaN: NaN, as numpy)
        a = an_array(a)
        return scalar_of(result(ufunc.reduce(a, axis, **_kw(keepdims=keepdims, initial=initial))))
    return f


register(np, "nanmax")(_extreme("nanmax", umath.fmax))
register(np, "nanmin")(_extreme("nanmin", umath.fmin))


def _accumulation(name, ufunc, fill):
    original = getattr(np, name)

    def f(a, axis=None, dtype=None, out=None):
        if not holds_traced([a]):
            return original(numeric(a), axis, dtype, out)
        _refuse(name, out=out)
        a = _nan_as(a, fill)
        if axis is None:
            a, axis = a.reshape(-1), 0
        return result(ufunc.accumulate(a, axis, dtype))
    return f


register(np, "nancumsum")(_accumulation("nancumsum", umath.add, 0.0))
register(np, "nancumprod")(_accumulation("nancumprod", umath.multiply, 1.0))


def _inexact(dtype):
    """numpy's check of nanmean's, nanvar's and nanstd's dtype= (of a float array)."""
    if dtype is not None and not issubclass(np.dtype(dtype).type, np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")


@register(np, "nanmean")
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=_NO, *, where=_NO):
    if not holds_traced([a]):
        return np.nanmean(numeric(a), axis, dtype, out, **_kw(keepdims=keepdims, where=where))
    _refuse("nanmean", out=out, where=where)
    _inexact(dtype)
    return scalar_of(result(_mean(a, axis, dtype, keepdims)))


def _mean(a, axis, dtype, keepdims):
    """The mean of the entries that are not NaN (all NaN: 0 / 0, NaN)."""
    s = _reduce(umath.add, _nan_as(a, 0.0), axis, dtype, keepdims)
    return s / _reduce(umath.add, _count(a), axis, None, keepdims)


@register(np, "nanvar")
def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO, *, where=_NO, mean=_NO, correction=_NO):
    if not holds_traced([a]):
        return np.nanvar(numeric(a), axis, dtype, out, ddof,
                         **_kw(keepdims=keepdims, where=where, mean=mean, correction=correction))
    _refuse("nanvar", out=out, where=where, mean=mean)
    _inexact(dtype)
    return scalar_of(result(_var(a, axis, dtype, ddof, keepdims, correction)))


def _deviation(v, m):
    """numpy's deviation of entry ``v`` from the mean ``m`` in nanvar: 0 where v is NaN."""
    if not traced((v,)):
        return 0.0 if v != v else v - m
    return apply("select", apply("isnan", v), 0.0, v - m)


def _var(a, axis, dtype, ddof, keepdims, correction):
    """numpy's nanvar: the mean of the squared deviations of the entries that are not NaN, over
    their count less ``ddof``; NaN where that is 0 or less."""
    if correction is not _NO:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = an_array(a)
    axes = range(a.ndim) if axis is None else [k % a.ndim for k in np.atleast_1d(axis)]
    if np.prod([a.shape[k] for k in axes]) == 1:  # one entry: its own mean, so its deviation is x - x
        d = an_array(each(lambda v: _deviation(v, v), a))  # (0, NaN at inf), whose derivative is 0
    else:
        d = an_array(elementwise(_deviation, (a, _mean(a, axis, dtype, True))))
    dof = _reduce(umath.add, _count(a), axis, None, keepdims) - ddof
    var = _reduce(umath.add, d * d, axis, dtype, keepdims)
    return elementwise(lambda s, k: where(k > 0, s / k, np.nan) if traced((k,)) else s / k if k > 0 else np.nan,
                       (var, dof))


@register(np, "nanstd")
def _nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_NO, *, where=_NO, mean=_NO, correction=_NO):
    if not holds_traced([a]):
        return np.nanstd(numeric(a), axis, dtype, out, ddof,
                         **_kw(keepdims=keepdims, where=where, mean=mean, correction=correction))
    _refuse("nanstd", out=out, where=where, mean=mean)
    _inexact(dtype)
    return scalar_of(result(umath.sqrt(_var(a, axis, dtype, ddof, keepdims, correction))))


@register(np, "average")
def _average(a, axis=None, weights=None, returned=False, *, keepdims=_NO):
    """sum(a * w) / sum(w) over ``axis``. numpy raises where the weights sum to 0; traced
    weights cannot be tested, so there the result is inf or NaN (0 / 0)."""
    if not holds_traced([a, weights]):
        return np.average(numeric(a), axis, numeric(weights), returned, **_kw(keepdims=keepdims))
    a = an_array(a)
    keep = keepdims is not _NO and keepdims
    if weights is None:
        axes = range(a.ndim) if axis is None else np.atleast_1d(axis)
        scl = float(np.prod([a.shape[k] for k in axes]))
        avg = _reduce(umath.add, a, axis, None, keep) / scl
    else:
        w = as_array(weights) if holds_traced([weights]) else as_array(np.asarray(weights, dtype=float))
        if w.shape != a.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.ndim != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            if w.shape[0] != a.shape[axis]:
                raise ValueError("Length of weights not compatible with specified axis.")
            w = np.broadcast_to(w, (a.ndim - 1) * (1,) + w.shape).swapaxes(-1, axis)
        scl = _reduce(umath.add, w, axis, None, keep)
        avg = _reduce(umath.add, a * w, axis, None, keep) / scl
    avg = scalar_of(result(avg))
    if not returned:
        return avg
    return avg, scalar_of(result(np.broadcast_to(as_array(scl), np.shape(avg)).copy()))
