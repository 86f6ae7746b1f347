"""Large arrays kept as loops: a LazyArray is a shape and a rule ``at(index)`` that traces
the element at a symbolic index, so that numpy code on 10^6 data points records one body
over index variables, not 10^6 assignments.

An index is an affine form over loop variables ``(const, ((term, coef), ...))``, a term
an index variable (int) or a gather ``("g", data, index)`` of an integer data array (fancy
indexing with constant index arrays). Large arguments and large closed-over numeric arrays
(data, read by pointer in the kernel) are the sources; ufuncs, broadcasting, slicing,
indexing, transposes, ``sum``/``mean``/``dot``/``@``/``where`` build on them; a full
reduction over loop variables is one ``("sum", body, vars[, order])`` node (lazy_sum.py; shapes and
indexing: lazy_index.py).
Anything else raises Unrollable, and the function is traced again with every array
unrolled (trace()). Each array knows the strides numpy would give it, which decide the
order numpy adds its entries in (sumorder.py)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import TraceError
from . import bools, dtypes, registry, sumorder, values
from .affine import add, const, flat as _flat, gather, index_vars, scale, var  # noqa: F401  (lazy.const ...)
from .values import Condition, Value, builder, user_site

UNROLL = 8  # reduced axes up to this extent are summed term by term, not looped


class View(NamedTuple):
    """A LazyArray that is numpy's strided view of an argument or data array ``base`` (a
    LazyArray of its own with ``entry``: the element at a C-order flat index of it): entry
    ``idx`` is ``base.entry(offset + sum(strides[k] * idx[k]))``, strides counted in entries
    (views.py decides which reshapes keep one)."""
    base: object
    offset: int
    strides: tuple


class Unrollable(BaseException):  # not an Exception: a user's `except Exception` cannot swallow it
    """An operation on an array that the loop form does not cover (the message says which,
    and where): the function is traced again unrolled (a warning says so if the trace had
    met a large array: ``large``)."""
    large = False


# -- the array ------------------------------------------------------------------------------
class LazyArray:
    """An array of traced values given by a rule: ``at(index)`` -> Value, Condition or number."""

    __array_priority__ = 1000
    parts = None  # of arrays joined along an axis (pieces.Joined), which runs ops part by part

    def __init__(self, b, shape, at, source=None, strides=None, view=None):
        self.b, self.shape = b, tuple(int(n) for n in shape)
        # the layout numpy would give this array (bytes of float64s): the order of its sums
        self.strides = sumorder.c_strides(self.shape) if strides is None else tuple(strides)
        memo = {}

        def once(idx):  # each entry traced once, however many paths reach it (x = x - f(x) ...)
            v = memo.get(idx, memo)
            if v is memo:
                v = memo[idx] = at(idx)
            return v
        self.at = once
        self.source = source  # (kind, id): C-order entries of an argument or data array
        self.view = view  # a View where this array's entries are those of a source at affine flat indices
        if self.size >= b.loop_min:
            b.large = True  # a fallback to unrolled tracing is then worth a warning

    def __getattr__(self, name):
        if name in _NDARRAY:
            raise Unrollable(f"the array method .{name} of a large array at {user_site()}")
        raise AttributeError(f"'LazyArray' object has no attribute {name!r}")

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    T = property(lambda self: self.transpose())
    dtype = property(lambda self: np.dtype(float))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    __repr__ = lambda self: f"{type(self).__name__}(shape={self.shape})"  # noqa: E731

    def __array__(self, *a, **k):
        raise Unrollable(f"a large array converted to a numpy array at {user_site()}")

    def __bool__(self):
        raise Unrollable(f"the truth value of a large array at {user_site()}")

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def __getitem__(self, index):
        if type(index) is int and self.ndim == 1:  # the common x[k] of loop-style code
            if not -self.shape[0] <= index < self.shape[0]:
                raise IndexError(f"index {index} is out of bounds for axis 0 with size {self.shape[0]}")
            return self.at((const(index % self.shape[0]),))
        return registry.HOOKS.lazy_index(self, index)  # lazy_index.py

    def __setitem__(self, index, value):
        raise Unrollable(f"an assignment into a large array at {user_site()}")

    # arithmetic: numpy's ufuncs, elementwise
    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        return array_ufunc(ufunc, method, inputs, kw)

    def __array_function__(self, func, types, args, kwargs):
        f = FUNCTIONS.get(func)
        if f is None:
            raise Unrollable(f"numpy.{func.__name__} of a large array at {user_site()}")
        return f(*args, **kwargs)

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return registry.HOOKS.lazy_reshape(self, shape, order)

    def ravel(self):
        return registry.HOOKS.lazy_reshape(self, (-1,), "C")

    flatten = ravel

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        return registry.HOOKS.lazy_transpose(self, axes or None)

    def swapaxes(self, a, b):
        axes = list(range(self.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return registry.HOOKS.lazy_transpose(self, axes)

    def sum(self, axis=None, keepdims=False, **kw):
        return reduce_sum(self, axis, keepdims=keepdims, **kw)

    def max(self, axis=None, out=None, keepdims=False, **kw):
        return FUNCTIONS[np.max](self, axis, out=out, keepdims=keepdims, **kw)

    def min(self, axis=None, out=None, keepdims=False, **kw):
        return FUNCTIONS[np.min](self, axis, out=out, keepdims=keepdims, **kw)

    def mean(self, axis=None, keepdims=False, **kw):
        return FUNCTIONS[np.mean](self, axis, keepdims=keepdims, **kw)

    def dot(self, other):
        return contract(self, other)

    copy = lambda self: self  # noqa: E731

    real = property(lambda self: self)  # the values are real
    imag = property(lambda self: LazyArray(self.b, self.shape, lambda idx: 0.0))

    def astype(self, dtype, *a, **k):
        if values.keeps_values(dtype):
            if np.dtype(dtype).kind == "O":
                return self
            return elementwise(lambda v: v.number() if isinstance(v, values.Condition) else v, (self,))  # bools
            # as 1.0 / 0.0: a float array's entries add as numbers
        kind = dtypes.kind(dtype, ".astype")  # numpy's cast to int64 (a step) or bool
        return elementwise(lambda v: dtypes.cast(v, kind), (self,))


_NDARRAY = set(dir(np.ndarray))
_PICKS = (np.maximum, np.minimum, np.fmax, np.fmin)
values.ARRAYS = (np.ndarray, LazyArray)


def _op(name, reflected=False):
    ufunc = getattr(np, name)

    def f(self, other):
        return array_ufunc(ufunc, "__call__", (other, self) if reflected else (self, other), {})
    return f


for _dunder, _ufunc in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                        ("pow", "power"), ("mod", "remainder"), ("floordiv", "floor_divide")):
    setattr(LazyArray, f"__{_dunder}__", _op(_ufunc))
    setattr(LazyArray, f"__r{_dunder}__", _op(_ufunc, True))
for _dunder, _ufunc in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                        ("eq", "equal"), ("ne", "not_equal")):
    setattr(LazyArray, f"__{_dunder}__", _op(_ufunc))
for _dunder, _ufunc in (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor")):  # numpy's &, |, ^:
    setattr(LazyArray, f"__{_dunder}__", _op(_ufunc))  # logical on bools (tracing/bools.py)
    setattr(LazyArray, f"__r{_dunder}__", _op(_ufunc, True))
def _in_place(self, other):
    raise Unrollable(f"an in-place operation on an array at {user_site()}")


for _dunder in ("iadd", "isub", "imul", "itruediv", "ipow", "imod", "ifloordiv", "imatmul"):
    setattr(LazyArray, f"__{_dunder}__", _in_place)
LazyArray.__neg__ = lambda self: array_ufunc(np.negative, "__call__", (self,), {})
LazyArray.__pos__ = lambda self: self
LazyArray.__abs__ = lambda self: array_ufunc(np.absolute, "__call__", (self,), {})
LazyArray.__invert__ = lambda self: array_ufunc(np.invert, "__call__", (self,), {})  # numpy's ~: not of bools
LazyArray.__matmul__ = lambda self, o: contract(self, o)
LazyArray.__rmatmul__ = lambda self, o: contract(o, self)
LazyArray.__hash__ = None


# -- sources ---------------------------------------------------------------------------------
def argument(b, a, shape):
    """The large argument ``a`` of ``shape``: entry reads by pointer."""
    def entry(flat):
        return read(b, "a", a, flat)
    return _source(b, shape, entry, ("a", a), None, None)


def data(b, arr):
    """A closed-over numeric array as kernel data (copied: the trace sees today's values)."""
    d = b.add_data(arr)
    shape = arr.shape

    def entry(flat):
        return read(b, "d", d, flat)
    if arr.dtype.kind == "b":  # a bool array's entries are numpy's bools (True + True is True)
        def entry(flat, _read=entry):
            return bools.numpy_bool(_read(flat) != 0)
    return _source(b, shape, entry, ("d", d), [s // arr.itemsize * 8 for s in arr.strides], arr)


def _source(b, shape, entry, source, strides, values):
    """The LazyArray of a source's entries (``entry``: by C-order flat index), a View of itself;
    ``values``: a data array's numbers (None for an argument)."""
    x = LazyArray(b, shape, lambda idx: entry(_flat(idx, shape)), source, strides)
    x.entry, x.values = entry, values
    x.view = View(x, 0, tuple(s // 8 for s in sumorder.c_strides(shape)))
    return x


def read(b, kind, source, index):
    """Entry ``index`` of a large argument ("a") or data array ("d")."""
    if not index[1]:
        if kind == "d":
            v = b.data[source][0].flat[index[0]]
            return float(v) if b.data[source][0].dtype.kind == "f" else int(v)
        return Value(b, b.node("arg", source, index[0]))
    return Value(b, b.node("read", kind, source, index))


def wrap(b, x):
    """``x`` (a LazyArray, a numeric or traced array, a traced value, a number) as a LazyArray
    or a scalar; a numeric array becomes data, a small traced array stays as it is."""
    if isinstance(x, LazyArray):
        return x
    if isinstance(x, (list, tuple)):
        x = np.asarray(x, dtype=object) if any(isinstance(v, (Value, Condition)) for v in np.ravel(
            np.asarray(x, dtype=object))) else np.asarray(x)
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return x[()]
        if x.dtype == object:
            arr = x.view(np.ndarray)
            if any(isinstance(v, np.ndarray) for v in arr.flat):  # 0-d entries (a stand-in's list of them)
                arr = np.array([v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in arr.flat],
                               dtype=object).reshape(arr.shape)
            try:  # numbers only (np.eye in traced code): data
                return data(b, arr.astype(float))
            except TraceError:  # a traced value refuses float()
                pass
            except (TypeError, ValueError):
                raise Unrollable(f"an array of {type(arr.flat[0]).__name__} beside a large array at "
                                 f"{user_site()}") from None

            def at(idx):
                if any(i[1] for i in idx):
                    raise Unrollable(f"a small array of traced values indexed along a large axis at {user_site()}")
                return arr[tuple(i[0] for i in idx)]
            return LazyArray(b, x.shape, at, strides=x.strides)
        if x.dtype.kind not in "biuf":
            raise Unrollable(f"an array of {x.dtype} beside a large array at {user_site()}")
        return data(b, x)
    return x


def _broadcast(x, shape):
    """``at`` of x broadcast to ``shape``."""
    if not isinstance(x, LazyArray):
        return lambda idx: x
    lead, xs = len(shape) - x.ndim, x.shape
    zero = const(0)
    return lambda idx: x.at(tuple(zero if n == 1 else i for i, n in zip(idx[lead:], xs)))


def elementwise(fn, xs, name=""):
    """``fn`` (a function of elements) over LazyArrays and others, numpy-broadcast."""
    b = builder()
    xs = [wrap(b, x) for x in xs]
    try:
        shape = np.broadcast_shapes(*[x.shape for x in xs if isinstance(x, LazyArray)])
    except ValueError:
        raise ValueError(f"operands could not be broadcast together with shapes "
                         f"{' '.join(str(x.shape) for x in xs if isinstance(x, LazyArray))}") from None
    for x in xs:  # arrays joined along an axis: the op on each stretch of it (pieces.Joined)
        if isinstance(x, LazyArray) and x.parts:
            return x.split(fn, xs, shape, name)
    gets = [_broadcast(x, shape) for x in xs]
    lead = [len(shape) - x.ndim if isinstance(x, LazyArray) else 0 for x in xs]
    strides = sumorder.allocate(shape, [[0 if k < n or x.shape[k - n] == 1 else x.strides[k - n]  # numpy's K order
                                         for k in range(len(shape))] for x, n in zip(xs, lead) if isinstance(x, LazyArray)])
    return LazyArray(b, shape, lambda idx: fn(*[g(idx) for g in gets]), strides=strides)


def array_ufunc(ufunc, method, inputs, kw):
    name = registry.ufunc_name(ufunc)
    out = kw.pop("out", None)
    for k in ("casting", "subok", "order"):
        kw.pop(k, None)
    if kw.get("dtype") is not None and values.keeps_values(kw["dtype"]):  # float64 (float32: refused)
        kw.pop("dtype")
    if out is not None or kw.pop("where", True) is not True:
        raise Unrollable(f"{name}(..., out=/where=) on a large array at {user_site()}")
    if method == "__call__" and ufunc is np.matmul and not kw and len(inputs) == 2:
        return contract(*inputs)
    if method == "reduce" and ufunc is np.add and not kw.keys() - {"axis", "keepdims", "dtype"}:
        return reduce_sum(inputs[0], kw.get("axis", 0), dtype=kw.get("dtype"), keepdims=kw.get("keepdims", False))
    if method == "reduce" and ufunc in _PICKS and not kw.keys() - {"axis", "keepdims", "initial"}:  # lazy_extremum.py
        return registry.HOOKS.lazy_extremum(ufunc, inputs[0], kw.get("axis", 0), keepdims=kw.get("keepdims", False),
                                            initial=kw.get("initial", np._NoValue))
    element = registry.element_of(ufunc)
    if ufunc is np.power and method == "__call__" and len(inputs) == 2 and dtypes.exponent_stride_zero(*inputs):
        element = dtypes.fast_power  # numpy's sqrt for x ** 0.5
    if method != "__call__" or element is None or kw:
        raise Unrollable(f"{name}.{method} on a large array at {user_site()}")
    return elementwise(element, inputs, name)


# -- reductions --------------------------------------------------------------------------------
def reduce_sum(a, axis=None, **kw):
    return registry.HOOKS.lazy_sum(a, axis, **kw)  # lazy_sum.py


def contract(a, c):
    return registry.HOOKS.lazy_matmul(a, c)


FUNCTIONS = registry.LAZY  # numpy function -> its form on large arrays (lazy_numpy.py fills it)
