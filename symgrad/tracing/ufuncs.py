"""numpy ufuncs on traced values: each ufunc as a function of elements (traced or plain),
applied through numpy's own machinery (broadcasting, reductions, out=) on object arrays."""
from __future__ import annotations

import math

import numpy as np

from . import names as ops
from ..errors import TraceError
from . import bools, dtypes, lazy, lazy_numpy, registry, sumorder, unshaped, values
from .registry import element_of, ufunc_name
from .values import Condition, TracedArray, Value, apply, builder, keeps_values, user_site, where


def traced(args):
    return any(isinstance(a, (Value, Condition, lazy.LazyArray)) or (isinstance(a, np.ndarray) and a.dtype == object)
               for a in args)


def _element_op(op, ufunc):
    def element(*xs):
        return apply(op, *xs) if traced(xs) else ufunc(*xs)
    return element


# numpy's ufuncs where user code cannot replace them (np.sum = ... leaves umath.add alone):
# what symgrad's own traced forms call
umath = getattr(getattr(np, "_core", None), "umath", None) or np.core.umath


def _ufunc_elements():
    """numpy ufunc -> function of elements (traced or plain)."""
    table = {}
    for name, op in ops.NUMPY.items():
        u = getattr(np, name, None)
        if isinstance(u, np.ufunc):
            table[name] = _element_op(op, u)
    table.update(square=lambda x: x * x, reciprocal=lambda x: 1.0 / x, positive=lambda x: x,
                 clip=lambda x, lo, hi: table["minimum"](table["maximum"](x, lo), hi),  # as numpy's
                 heaviside=_heaviside,
                 conjugate=lambda x: x)  # the values are real
    bools.numpy_bools(table, [n for n, op in ops.NUMPY.items() if op in ops.COMPARE + ops.LOGIC])
    # numpy's own ufuncs, as umath holds them (np.clip is a function; a np.sin replaced is not numpy's)
    ufuncs = {name: registry.genuine(umath, name) for name in table}
    return {u: table[name] for name, u in ufuncs.items() if isinstance(u, np.ufunc)}


def _heaviside(x, h0):
    """numpy's heaviside: 0 below 0, 1 above, h0 at 0, nan for nan; derivative 0."""
    if not traced((x, h0)):
        return np.heaviside(x, h0)
    return where(apply("isnan", x), math.nan, where(x < 0, 0.0, where(x > 0, 1.0, h0)))


registry.ELEMENTS.update(_ufunc_elements())
_FROMPY = {}


def element_ufunc(ufunc):
    """The object-array ufunc of a traced ufunc's function of elements."""
    f = _FROMPY.get(ufunc)
    if f is None:
        fn = element_of(ufunc)
        f = _FROMPY[ufunc] = np.frompyfunc(fn, ufunc.nin, 1)
        _PYFUNC[f] = fn
    return f


_PYFUNC = {values.WHERE: lazy_numpy.select}  # our frompyfuncs -> their functions of elements (for lazy.py)


def _boxed(a):
    if isinstance(a, np.ndarray):
        return a.view(np.ndarray)  # a TracedArray would send the frompyfunc back to us
    if isinstance(a, (list, tuple)):
        return as_array(a).view(np.ndarray)
    box = np.empty((), dtype=object)
    box[()] = a
    return box


def elementwise(element, args):
    """Apply a function of elements over traced scalars and arrays, numpy-broadcast."""
    if any(isinstance(a, lazy.LazyArray) for a in args):
        if isinstance(element, np.ufunc):  # a frompyfunc of ours: its function of elements
            fn = _PYFUNC.get(element)
            if fn is None:
                raise lazy.Unrollable(f"numpy.{element.__name__} of an array at {user_site()}")
            element = fn
        return lazy.elementwise(element, args)
    pyfunc = element if isinstance(element, np.ufunc) else np.frompyfunc(element, len(args), 1)
    out = pyfunc(*[_boxed(a) for a in args])
    if isinstance(out, np.ndarray):
        return out[()] if out.ndim == 0 else out.view(TracedArray)
    return out


def array_ufunc(ufunc, method, inputs, kw):
    """``__array_ufunc__`` of traced values and arrays: numpy's ufunc machinery on them
    (large arrays: lazy.py)."""
    b = builder()
    if any(isinstance(x, lazy.LazyArray) for x in inputs) or (b is not None and b.loop_min and any(
            isinstance(x, np.ndarray) and x.size >= b.loop_min for x in inputs)):
        return lazy.array_ufunc(ufunc, method, inputs, kw)
    if method != "__call__" or ufunc.signature is not None:  # np.asarray(x).sum(), x @ w of an argument
        unshaped.check_ufunc(ufunc, method, inputs)  # traced as a scalar: a forgotten shapes=
    out = _object_out(ufunc, kw.pop("out", None))
    plain = [x.view(np.ndarray) if isinstance(x, TracedArray) else
             as_array(x).view(np.ndarray) if isinstance(x, (Value, Condition)) and method != "__call__" else x
             for x in inputs]  # the reduction of a number is the number (a 0-d array)
    name = ufunc_name(ufunc)
    dtype = kw.get("dtype")
    if dtype is None or (np.dtype(dtype).kind == "b" and ops.NUMPY.get(ufunc.__name__) in ops.COMPARE + ops.LOGIC) \
            or keeps_values(dtype):  # float64 (object), or truth values of conditions: as they are
        kw.pop("dtype", None)
    after = None
    if "dtype" in kw and method in ("reduce", "accumulate"):  # numpy's cast of the entries (int64, bool)
        ufunc, plain[0], after = dtypes.reduction(ufunc, method, plain[0], kw.pop("dtype"), kw, umath)
    elif method == "accumulate" and ufunc in (umath.add, umath.multiply):
        plain[0] = dtypes.counted(plain[0])  # bools counted as numpy's add.accumulate does, in int
    if element_of(ufunc) is None:
        if method == "__call__" and any(isinstance(x, (Value, Condition)) for x in plain):
            raise TraceError(f"{name} on traced values at {user_site()} is not supported by symgrad")
        res = getattr(ufunc, method)(*plain, **kw)  # numpy's object loop (np.matmul ...)
        if ufunc is umath.matmul and method == "__call__":  # numpy's float matmul adds from +0.0
            res = dtypes.each_entry(dtypes.plus_zero, res)
    elif method == "__call__":
        for k in ("casting", "subok", "order"):  # numpy's own code passes these: no effect here
            kw.pop(k, None)
        if kw.pop("where", True) is not True or kw:
            raise TraceError(f"{name}(..., {', '.join(kw) or 'where'}=...) on traced values at "
                             f"{user_site()} is not supported")
        fast = ufunc is umath.power and dtypes.exponent_stride_zero(*plain)  # numpy's sqrt for x ** 0.5
        res = elementwise(dtypes.FAST_POWER if fast else element_ufunc(ufunc), plain)
        if not isinstance(res, np.ndarray) and any(isinstance(x, np.ndarray) for x in plain):
            res = as_array(res)  # of 0-d arrays a 0-d array (numpy's code asks it for .dtype, out=...)
    elif method == "reduce":
        res = _reduce(ufunc, plain[0], **kw)
    else:
        res = getattr(element_ufunc(ufunc), method)(*plain, **kw)
    if after is not None:
        res = dtypes.each_entry(after, res)
    if out is not None:  # numpy's own code (np.mean) writing into an object array: fine
        out[...] = res
        return out.view(TracedArray)
    return res.view(TracedArray) if isinstance(res, np.ndarray) and res.dtype == object else res


registry.HOOKS.array_ufunc, registry.HOOKS.elementwise = array_ufunc, elementwise


def _reduce(ufunc, arr, axis=0, dtype=None, keepdims=False, initial=np._NoValue, where=True):
    """ufunc.reduce over traced values, one axis at a time (np.sum(X), np.max(X, axis=(0, 1)));
    an empty axis gives the ufunc's identity (or ``initial``), or numpy's own error."""
    if where is not True or dtype is not None:  # (a float64 dtype was taken out: array_ufunc)
        raise TraceError(f"{ufunc_name(ufunc)}.reduce(..., {'where' if where is not True else 'dtype'}=...) "
                         f"on traced values at {user_site()} is not supported")
    pyfunc = element_ufunc(ufunc)
    arr = np.asarray(arr, dtype=object)
    if ufunc in (umath.add, umath.multiply):
        arr = dtypes.counted(arr)  # a sum of bools is numpy's count (int), not their logical or
    axes = range(arr.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = sorted({a % max(arr.ndim, 1) for a in axes}, reverse=True)
    res, todo = arr, axes
    if any(arr.shape[a] == 0 for a in axes):  # nothing to reduce: the start value, as numpy
        start = ufunc.identity if initial is np._NoValue else initial
        if start is None:
            ufunc.reduce(np.zeros(arr.shape), axis=tuple(axes))  # numpy's error ("... has no identity")
        start = np.float64(start) if type(start) is int else start  # numpy's 0.0 of a float array (0.0 / 0: nan)
        res = np.full([n for k, n in enumerate(arr.shape) if k not in axes], start, dtype=object)
        todo, initial = [], np._NoValue
    if todo and ufunc in (umath.add, umath.multiply) and not any(isinstance(v, Condition) for v in arr.flat):
        # in the order numpy adds (multiplies) float64s: sumorder.py
        start = initial if initial is not np._NoValue else 0.0 if ufunc is umath.add else None
        res = sumorder.reduce_entries(arr, set(todo), element_of(ufunc), ufunc is umath.add, start)
        todo, initial = [], np._NoValue
    for a in todo:
        res = pyfunc.reduce(res, axis=a)
    if initial is not np._NoValue:
        res = elementwise(pyfunc, (res, initial))
    if keepdims:
        res = np.asarray(res, dtype=object).reshape([1 if k in axes else n for k, n in enumerate(arr.shape)])
    return res


def _object_out(ufunc, out):
    """The out= array of a ufunc on traced values: only object arrays can hold them."""
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    if not outs:
        return None
    if len(outs) == 1 and isinstance(outs[0], np.ndarray) and outs[0].dtype == object:
        return outs[0].view(np.ndarray)
    raise TraceError(f"numpy.{ufunc.__name__}(..., out=...) or an in-place operation stores a traced "
                     f"value into a float array at {user_site()}: build an object array "
                     "(dtype=object) or a list instead")


def as_array(x):
    """``x`` (traced values, numbers, nested lists of them) as a TracedArray of objects."""
    if isinstance(x, TracedArray):
        return x
    if isinstance(x, np.ndarray) and x.dtype != object:
        return x.astype(object).view(TracedArray)
    if isinstance(x, np.ndarray):
        return x.view(TracedArray)
    try:
        arr = np.array(x, dtype=object)
    except ValueError:
        raise TraceError(f"a ragged list of traced values at {user_site()}: numpy needs rectangular arrays") from None
    arr = bools.numbers(arr)  # comparisons beside numbers: numpy's float array (1.0 / 0.0)
    if arr.ndim == 0 and not isinstance(arr[()], (Value, Condition)):
        arr = np.empty((), dtype=object)
        arr[()] = x
    return arr.view(TracedArray)


def holds_traced(x):
    """True for a traced value or array, or a list/tuple/array that holds one (at any depth)."""
    if isinstance(x, (Value, Condition, lazy.LazyArray)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype == object and any(holds_traced(v) for v in x.flat)
    if isinstance(x, (list, tuple)):
        return any(holds_traced(v) for v in x)
    return False


def obj(x):
    """A list or tuple as a TracedArray of objects; anything else as it is."""
    return as_array(x) if isinstance(x, (list, tuple)) else x


def numeric(x):
    """An object array of plain numbers (made in traced code) as numbers again, for numpy's
    own functions (np.linalg.svd of constants)."""
    if isinstance(x, np.ndarray) and x.dtype == object and x.size:
        try:
            return np.array(x.tolist(), dtype=float)
        except (TypeError, ValueError):
            return x
    return x


def refusing(original, why):
    """A stand-in (on numpy's BoundArguments) that calls ``original`` where nothing traced
    reaches it (object arrays of plain numbers as numbers) and raises TraceError(why()) else."""
    def f(b):
        if holds_traced(list(b.arguments.values())):
            raise TraceError(why())
        for k, v in b.arguments.items():
            b.arguments[k] = numeric(v)
        return original(*b.args, **b.kwargs)
    return f


def result(r):
    """What numpy returned on traced values: object arrays as TracedArrays."""
    return r.view(TracedArray) if isinstance(r, np.ndarray) and r.dtype == object else r


def each(fn, x):
    """``fn`` (a function of one element) over a traced scalar or array (a loop: lazy.py)."""
    return result(elementwise(fn, (obj(x),)))


def an_array(x):
    """``x`` as an array: a traced scalar or list as a TracedArray, an array (a loop) as it is."""
    return x if isinstance(x, (np.ndarray, lazy.LazyArray)) else as_array(x)


def scalar_of(r):
    """A result of no dimensions as numpy's functions give it for numbers: the number."""
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r
