"""Stand-ins for numpy's functions (not ufuncs) where traced values need them.

- Arrays made by numpy's constructors in traced code hold objects, so that traced values
  can be stored into them (``b = np.zeros(4); b[1:3] = x``), as plain numpy code does.
- Functions given traced scalars, lists or plain object arrays of traced values see them as
  TracedArrays, whose ufuncs reach symgrad (``np.max([x, y])``, ``np.var(x)``).
- Functions whose numpy implementation allocates float arrays (``gradient``) get traced
  forms; those that branch on values are in numpy_branches.py, numpy.linalg's in linalg.py.
Each stand-in is called as numpy's function is (registry.py) and calls numpy's own function
when nothing traced reaches it."""
from __future__ import annotations

import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:  # numpy < 2
    from numpy.core.numeric import normalize_axis_tuple

from . import bools, dtypes
from .registry import register
from .ufuncs import as_array, each, holds_traced, numeric, obj, refusing, result, scalar_of, traced
from .lazy import LazyArray
from .values import Condition, TracedArray, Value, keeps_values, user_site, where


def _numeric_kind(dtype):
    return dtype is not None and np.dtype(dtype).kind in "biuc"


# -- constructors: object arrays that traced values can be stored into ----------------------------
def _constructor(original, fill):
    def f(b):
        if _numeric_kind(b.arguments.get("dtype")):
            return original(*b.args, **b.kwargs)
        b.arguments["dtype"] = object
        r = original(*b.args, **b.kwargs)
        if fill is not None:
            r[...] = fill
        return r.view(TracedArray)
    return f


for _name, _fill in (("zeros", 0.0), ("ones", 1.0), ("empty", None), ("zeros_like", 0.0), ("ones_like", 1.0),
                     ("empty_like", None)):
    register(np, _name, bound=True)(_constructor(getattr(np, _name), _fill))


def _filled(original):
    """np.full / np.full_like: an object array when the fill value is traced or no numeric
    dtype is asked for."""
    def f(b):
        fill, dtype = b.arguments["fill_value"], b.arguments.get("dtype")
        if dtype is not None and not holds_traced([fill]):  # numbers: numpy's (float32's rounding)
            r = original(*b.args, **b.kwargs)
            return r if _numeric_kind(dtype) else r.astype(object).view(TracedArray)
        k = dtypes.kind(dtype, f"numpy.{original.__name__}")  # (float32: refused)
        if k != "keep":  # numpy's cast of the fill to int64 (a step) or bool
            fill = dtypes.cast(fill.view(np.ndarray) if isinstance(fill, TracedArray) else fill, k)
        b.arguments.update(fill_value=None, dtype=object)
        r = original(*b.args, **b.kwargs)
        r[...] = fill.view(np.ndarray) if isinstance(fill, TracedArray) else fill
        return r.view(TracedArray)
    return f


register(np, "full", bound=True)(_filled(np.full))
register(np, "full_like", bound=True)(_filled(np.full_like))


def _array(original):
    """np.array and its kin: traced values (and floats, so traced values can be stored into
    them) in a TracedArray of objects; integers and booleans (indices, masks) as numpy makes them."""
    def f(b):
        x = next(iter(b.arguments.values()))
        dtype = b.arguments.get("dtype")
        if isinstance(x, LazyArray):  # an array kept as a loop is one already (numpy's C code cannot see it)
            return x if dtype is None else x.astype(dtype)
        if dtype is not None and np.dtype(dtype).kind == "f" and holds_traced([x]):  # (a mask's bools as numbers)
            b.arguments["dtype"] = None
            return as_array(f(b)).astype(dtype, copy=False)
        copy = b.arguments.get("copy", True if original is np.array else None)
        if _numeric_kind(dtype) and holds_traced([x]):  # numpy's cast to int64 (a step) or bool; others refused
            b.arguments["dtype"] = None
            return as_array(f(b)).astype(dtype)
        if _numeric_kind(dtype) or (isinstance(x, np.ndarray) and x.dtype != object and copy is False):
            return original(*b.args, **b.kwargs)
        if dtype is not None and holds_traced([x]):
            keeps_values(dtype)  # a narrower float is refused: its rounding is not traced
        if not holds_traced([x]):
            r = original(*b.args, **b.kwargs)
            if r.dtype.kind not in "fc":  # integers and booleans: indices and masks, as written
                return r
            x = r if dtype is not None else x  # rounded to the dtype asked for (float32 constants)
        if isinstance(x, np.ndarray) and x.dtype != object and x.size > 100_000:
            return np.asarray(x)  # large numeric data stays numeric (constants)
        if isinstance(x, np.ndarray) and x.dtype == object and copy is not True:
            r = x.view(TracedArray)  # numpy's asarray: the same array, not a copy
        else:
            r = as_array(x).copy() if isinstance(x, np.ndarray) else as_array(x)
        ndmin = 1 if original is np.ascontiguousarray else b.arguments.get("ndmin", 0)  # (numpy's ndim >= 1)
        return r.reshape((1,) * (ndmin - r.ndim) + r.shape) if r.ndim < ndmin else r
    return f


for _name in ("array", "asarray", "asanyarray", "ascontiguousarray"):
    register(np, _name, bound=True)(_array(getattr(np, _name)))


def _eye(original):
    def f(b):
        if _numeric_kind(b.arguments.get("dtype")):
            return original(*b.args, **b.kwargs)
        b.arguments["dtype"] = float
        return original(*b.args, **b.kwargs).astype(object).view(TracedArray)
    return f


register(np, "eye", bound=True)(_eye(np.eye))
register(np, "identity", bound=True)(_eye(np.identity))


# -- functions of arrays: traced scalars, lists and plain object arrays as TracedArrays -----------
_SEQUENCES = ("stack", "concatenate", "hstack", "vstack", "column_stack", "block", "atleast_1d", "atleast_2d")


def _as_traced(x, nested=False):
    """A traced value, or a list/tuple/array holding some, as a TracedArray (each entry of a
    sequence of arrays, with ``nested``); anything else as it is."""
    if nested and isinstance(x, (list, tuple)):
        scalars = not any(isinstance(v, (list, tuple, np.ndarray, LazyArray)) for v in x)
        if scalars and not hasattr(x, "_fields") and holds_traced(x):
            return as_array(x)  # a list of scalars: one array of them (not a list of 0-d arrays)
        items = [_as_traced(v, True) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # a namedtuple (slogdet's)
    if isinstance(x, (list, tuple, np.ndarray, Value, Condition)) and holds_traced(x):
        return as_array(x)
    return x


def _arrays_in(original, sequence):
    def f(b):
        values = list(b.arguments.values())
        if not holds_traced(values):
            return original(*b.args, **b.kwargs)
        scalars = not any(isinstance(v, (list, tuple, np.ndarray)) for v in values)
        for k, (name, v) in enumerate(list(b.arguments.items())):
            b.arguments[name] = _as_traced(v, nested=sequence and k == 0)
        if b.arguments.get("dtype") is not None and keeps_values(b.arguments["dtype"]):
            b.arguments["dtype"] = None  # float64: the values as they are (float32: refused)
        if original is np.diff and bools.logical(b.arguments["a"]) and \
                b.arguments.get("prepend", np._NoValue) is b.arguments.get("append", np._NoValue) is np._NoValue:
            return _bool_diff(b.arguments["a"], b.arguments.get("n", 1), b.arguments.get("axis", -1))
        r = result(original(*b.args, **b.kwargs))
        if sequence:  # bool arrays joined with float ones: numpy's float array (its 1.0 / 0.0)
            r = result(bools.numbers(r))
        elif original in (np.dot, np.inner) and dtypes.dot_from_zero(
                np.shape(values[0]), np.shape(values[1]), original is np.inner):  # BLAS's sum from +0.0
            r = result(dtypes.each_entry(dtypes.plus_zero, r))
        return scalar_of(r) if scalars else r
    return f


def _bool_diff(a, n, axis):
    """numpy's diff of bools: not_equal of neighbours (subtract of bools is a TypeError)."""
    axis = normalize_axis_tuple(axis, a.ndim)[0]
    hi, lo = [slice(None)] * a.ndim, [slice(None)] * a.ndim
    hi[axis], lo[axis] = slice(1, None), slice(None, -1)
    for _ in range(n):
        a = np.not_equal(a[tuple(hi)], a[tuple(lo)])
    return result(a)


for _name in ("sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "ptp", "cumsum",
              "cumprod", "diff", "dot", "vdot", "inner", "outer", "matmul", "einsum", "tensordot", "kron",
              "cross", "trace", "diag", "diagonal", "tril", "triu", "stack", "concatenate", "hstack", "vstack",
              "column_stack", "block", "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "flip", "fliplr",
              "flipud", "roll", "pad", "polyval", "atleast_1d", "atleast_2d", "squeeze", "expand_dims",
              "broadcast_to", "repeat", "tile", "take", "real", "imag", "real_if_close", "trapezoid"):
    if hasattr(np, _name):
        register(np, _name, bound=True)(_arrays_in(getattr(np, _name), _name in _SEQUENCES))


# -- functions that allocate float arrays ---------------------------------------------------------
@register(np, "gradient")
def _gradient(f, *varargs, axis=None, edge_order=1):
    """numpy.gradient (numpy's formulas: second-order central differences inside, first- or
    second-order one-sided ones at the edges) on traced values or traced spacings. Coordinates
    given as an array take the non-uniform formulas (numpy takes the uniform ones where the
    coordinates' differences are all equal: the same values, rounded otherwise)."""
    if not holds_traced([f, *varargs]):
        return np.gradient(numeric(f), *map(numeric, varargs), axis=axis, edge_order=edge_order)
    f = as_array(f)
    if f.dtype == object and f.size and not holds_traced(f):
        f = as_array(np.asarray(f.tolist(), dtype=float))  # integers: differences in float
    axes = tuple(range(f.ndim)) if axis is None else normalize_axis_tuple(axis, f.ndim)
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = []
        for k, d in enumerate(varargs):
            if np.ndim(d) == 0:
                spacings.append(d)
                continue
            d = obj(d) if holds_traced([d]) else np.asarray(d, dtype=float)
            if d.ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if len(d) != f.shape[axes[k]]:
                raise ValueError("when 1d, distances must match the length of the corresponding dimension")
            dx = d[1:] - d[:-1]
            if not holds_traced([dx]) and (dx == dx[0]).all():
                dx = dx[0]  # constant spacing: numpy's uniform formulas
            spacings.append(dx)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    outs = [_gradient_axis(f, a, dx, edge_order) for a, dx in zip(axes, spacings)]
    return outs[0] if len(axes) == 1 else tuple(outs)


def _gradient_axis(f, axis, dx, edge_order):
    if f.shape[axis] < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least (edge_order + 1) elements are required.")
    n = f.ndim
    at = lambda k: f[(slice(None),) * axis + (k,)]  # noqa: E731  (an index or a slice along axis)
    out = np.empty(f.shape, dtype=object).view(TracedArray)
    put = lambda k, v: out.__setitem__((slice(None),) * axis + (k,), v)  # noqa: E731
    uniform = np.ndim(dx) == 0
    if uniform:
        put(slice(1, -1), (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx))
    else:
        dx1, dx2 = dx[:-1], dx[1:]
        shape = [1] * n
        shape[axis] = -1
        a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
        put(slice(1, -1), a * at(slice(None, -2)) + b * at(slice(1, -1)) + c * at(slice(2, None)))
    if edge_order == 1:
        put(0, (at(1) - at(0)) / (dx if uniform else dx[0]))
        put(-1, (at(-1) - at(-2)) / (dx if uniform else dx[-1]))
        return out
    if uniform:
        a, b, c = -1.5 / dx, 2.0 / dx, -0.5 / dx
    else:
        d1, d2 = dx[0], dx[1]
        a, b, c = -(2.0 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
    put(0, a * at(0) + b * at(1) + c * at(2))
    if uniform:
        a, b, c = 0.5 / dx, -2.0 / dx, 1.5 / dx
    else:
        d1, d2 = dx[-2], dx[-1]
        a, b, c = d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2.0 * d2 + d1) / (d2 * (d1 + d2))
    put(-1, a * at(-3) + b * at(-2) + c * at(-1))
    return out


# -- functions whose result is an order or an index found in the data -----------------------------
def _data_order(name, instead):
    return refusing(getattr(np, name), lambda: (
        f"np.{name} of traced values at {user_site()}: its result is an order or a position found in the data, "
        f"which a traced function cannot fix in advance; {instead}"))


_BY_VALUE = "use np.max/np.min (they trace), or symgrad.where on comparisons"
for _name, _instead in (("sort", _BY_VALUE), ("argsort", _BY_VALUE), ("argmax", "use np.max(x) for the value"),
                        ("argmin", "use np.min(x) for the value"), ("median", _BY_VALUE), ("percentile", _BY_VALUE),
                        ("quantile", _BY_VALUE), ("nanmedian", _BY_VALUE), ("unique", _BY_VALUE),
                        ("partition", _BY_VALUE), ("argpartition", _BY_VALUE), ("nonzero", "use np.where(cond, x, 0.0)"),
                        ("flatnonzero", "use np.where(cond, x, 0.0)"), ("argwhere", "use np.where(cond, x, 0.0)"),
                        ("searchsorted", "use np.interp or symgrad.where on comparisons"),
                        ("histogram", "use sums of symgrad.where(cond, 1.0, 0.0)")):
    if hasattr(np, _name):
        register(np, _name, bound=True)(_data_order(_name, _instead))
