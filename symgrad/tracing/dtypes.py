"""numpy's type rules that traced values, which are doubles, follow where numpy's result
depends on them (numpy's bools, bool + bool and the like: bools.py):

- casts to int64 and bool (``dtype=`` of sums, products, their cumulative forms and means,
  ``astype``, ``np.array(..., dtype=)``): numpy truncates a float toward zero (a step, whose
  derivative is 0), a bool is ``x != 0``, and a sum of bools with ``dtype=bool`` is logical or;
- np.power's stride-0 exponent: numpy's float loop computes ``x ** 0.5`` as ``sqrt(x)`` where
  it reads the exponent with stride 0 (nan at -inf, -0.0 at -0.0: C's pow gives inf, +0.0).

A traced integer is a double: exact while it is below 2**53. Where an int64 result of numpy's
would need more (a sum of n entries of 2**53 / n or more, a product past 2**53, a cast of NaN,
inf or anything past 2**63, where numpy's int64 has a platform's value or wraps around), the
traced result is NaN: never a rounded integer that numpy's exact one would differ from."""
from __future__ import annotations

import math

import numpy as np

from ..errors import TraceError
from . import sumorder
from .bools import any_traced, boolish, numpy_bool
from .values import CASTS, Condition, TracedArray, Value, apply, keeps_values, user_site, where

EXACT = 2.0 ** 53  # integers below it are exact in double
INT64 = 2.0 ** 63


def kind(dtype, what):
    """How traced values are cast to ``dtype``: "keep" (None, float64, object: as they are),
    "int" (int64) or "bool"; a narrower float (keeps_values), another integer or a complex type
    raises TraceError naming ``what`` and the user's line."""
    if dtype is None or keeps_values(dtype):
        return "keep"
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return "bool"
    if dt.kind == "i" and dt.itemsize == 8:
        return "int"
    raise TraceError(f"{what} with dtype={dt} of traced values at {user_site()}: symgrad computes in double and "
                     f"casts traced values to int64 and bool only ({dt} would need numpy's own rounding or "
                     "wrap-around); compute in float64 (np.trunc(x) for the integer part)")


def to_int(v, bound=INT64):
    """numpy's cast of a float64 entry to int64, as a double: trunc(v) (0.0 for -0.0: an int has
    no sign of zero) where |v| < ``bound``, NaN elsewhere (``bound``: where sums of such
    integers stay exact in double; past 2**63, and for NaN and inf, numpy's int64 is a
    platform's value). A comparison is its 0/1."""
    if isinstance(v, Condition):
        return v.number()
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, Value):
        t = apply("add", apply("trunc", v), 0.0)
        return where(apply("lt", apply("abs", v), bound), t, math.nan)
    if isinstance(v, (int, np.integer)):
        return int(v) if abs(int(v)) < bound else math.nan
    f = float(v)
    return int(f) if abs(f) < bound else math.nan


def to_bool(v):
    """numpy's cast of an entry to bool: v != 0 (NaN is True)."""
    if isinstance(v, Condition):
        return numpy_bool(v)
    if isinstance(v, Value):
        return numpy_bool(apply("ne", v, 0.0))
    return np.bool_(v != 0)


def cast(x, k, bound=INT64):
    """Every entry of ``x`` (a traced value, number or object array) cast as kind ``k``
    ("int" or "bool")."""
    one = to_bool if k == "bool" else (lambda v: to_int(v, bound))
    if isinstance(x, np.ndarray) and x.ndim:
        out = np.empty(x.shape, dtype=object)
        flat = out.reshape(-1)
        for j, v in enumerate(x.flat):
            flat[j] = one(v)
        return out
    return one(x[()] if isinstance(x, np.ndarray) else x)


def _guard_product(p):
    """An int64 product p computed in double: NaN past 2**53, where it may have rounded (a
    product of non-zero integers only grows, so below 2**53 every partial product was exact);
    0.0 for -0.0."""
    if isinstance(p, (Value, Condition)):
        return where(apply("lt", apply("abs", p), EXACT), apply("add", p, 0.0), math.nan)
    return p + 0 if abs(p) < EXACT else math.nan


_BOOL_LOOPS = {"add": "logical_or", "multiply": "logical_and", "logical_or": "logical_or",
               "logical_and": "logical_and", "maximum": "logical_or", "minimum": "logical_and"}


def reduction(ufunc, method, arr, dtype, kw, umath):
    """(ufunc, entries, after) for numpy's ``ufunc.reduce`` / ``.accumulate`` (``method``) of
    object array ``arr`` with an integer or bool ``dtype`` (its other keywords ``kw``: their
    ``initial`` cast too): the entries cast as numpy casts them, the ufunc numpy's loop of that
    dtype runs (add of bools: logical or), and what to do to each entry of the result (None:
    nothing)."""
    name = f"numpy.{ufunc.__name__}.{method}"
    k, axis = kind(dtype, name), kw.get("axis", 0)
    if kw.get("initial", np._NoValue) is not np._NoValue:
        kw["initial"] = cast(kw["initial"], k)
    arr = np.asarray(arr, dtype=object)
    if arr.ndim == 0:
        axes = ()
    elif axis is None:
        axes = tuple(range(arr.ndim))
    else:
        axes = tuple(a % arr.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    n = max(math.prod(arr.shape[a] for a in axes), 1)
    if k == "bool":
        loop = _BOOL_LOOPS.get(ufunc.__name__)
        if loop is None:
            raise TraceError(f"{name}(..., dtype=bool) of traced values at {user_site()} is not supported")
        return getattr(umath, loop), cast(arr, "bool"), None
    if ufunc is umath.add:
        return ufunc, cast(arr, "int", EXACT / n), None
    if ufunc is umath.multiply:
        return ufunc, cast(arr, "int", EXACT), _guard_product
    return ufunc, cast(arr, "int"), None


def each_entry(fn, r):
    """``fn`` of every entry of ``r`` (an object array or one entry)."""
    if isinstance(r, np.ndarray) and r.dtype == object:
        out = np.empty(r.shape, dtype=object)
        flat = out.reshape(-1)
        for j, v in enumerate(r.flat):
            flat[j] = fn(v)
        return out.view(type(r)) if type(r) is not np.ndarray else out
    return fn(r)


def statistic(name, dtype):
    """The kind of np.mean's (var's, std's) ``dtype``: "keep" or "int" (np.mean: the sum of the
    entries cast to int64, divided, the mean truncated again); others raise TraceError (numpy
    casts deviations and results to the dtype along the way, which symgrad does not trace)."""
    k = kind(dtype, f"numpy.{name}")
    if k == "keep" or (k == "int" and name == "mean"):
        return k
    raise TraceError(f"numpy.{name}(..., dtype={np.dtype(dtype)}) of traced values at {user_site()}: numpy "
                     f"computes it in {np.dtype(dtype)}, casting the mean, the deviations and the result, which "
                     "symgrad does not trace; compute it in float64 (no dtype=)")


def mean_int(r):
    """numpy's np.mean(..., dtype=int64) from the mean of the cast entries: truncated."""
    return each_entry(to_int, r)


# -- np.power's exponent read with stride 0 ----------------------------------------------
def _strides(x, shape):
    """The strides (bytes) of operand ``x`` broadcast to ``shape`` (a scalar's: 0)."""
    xs = getattr(x, "shape", None)
    if xs is None or not len(xs):
        return [0] * len(shape)
    own = getattr(x, "strides", None) or sumorder.c_strides(xs)
    lead = len(shape) - len(xs)
    return [0 if k < lead or xs[k - lead] == 1 else own[k - lead] for k in range(len(shape))]


def exponent_stride_zero(base, exp, bufsize=None):
    """Whether numpy's float power loop reads exponent ``exp`` (of base ``base``) with stride 0:
    a scalar, or an array broadcast along the inner loop, which nditer's buffering setup
    (numpy 2: npyiter_find_buffering_setup, GROWINNER, no cast) leaves unbuffered. There
    DOUBLE_power's fast path computes x ** 0.5 as sqrt(x) (and x ** -1, 0, 1, 2 as 1/x, 1, x,
    x*x: pow's values)."""
    base, exp = [np.asarray(x, dtype=object) if isinstance(x, (list, tuple)) else x for x in (base, exp)]
    es = tuple(getattr(exp, "shape", ()))
    if not es:
        return True
    bs = tuple(getattr(base, "shape", ()))
    shape = tuple(np.broadcast_shapes(bs, es))
    if math.prod(shape) <= 1:  # numpy's trivial loop (each operand 0-d or of the result's shape) reads
        return not (bs in ((), shape) and es == shape)  # the exponent's own stride; nditer's is 0 here
    ops = [_strides(base, shape), _strides(exp, shape)]
    perm = sumorder.axis_order(shape, ops)  # innermost first
    ops.insert(0, list(sumorder.allocate(shape, ops)))  # the result, allocated in that order
    dims = []  # coalesced: [extent, stride of each operand], innermost first
    for k in perm:
        if dims and all(d * dims[-1][0] == op[k] for d, op in zip(dims[-1][1:], ops)):
            dims[-1][0] *= shape[k]
        else:
            dims.append([shape[k]] + [op[k] for op in ops])
    if dims[0][3] != 0:  # [extent, result, base, exponent]
        return False
    bufsize = np.getbufsize() if bufsize is None else bufsize
    single, cost, size = [1, 1, 1], 1, dims[0][0]
    best_dim, best_cost, best_size = 0, 1, size
    for idim in range(1, len(dims)):
        if size >= bufsize and cost > 1:
            break
        prev, cur = dims[idim - 1], dims[idim]
        for j in range(3):
            if single[j] == idim:
                if prev[1 + j] * prev[0] == cur[1 + j]:
                    single[j] += 1
                    continue
                cost += 1
        size *= cur[0]
        if size == 0:
            break
        buf = min(size, bufsize) if cost > 1 else size
        if cost * best_size <= best_cost * buf:
            best_dim, best_cost, best_size = idim, cost, size
    return single[2] > best_dim  # else the exponent is copied into a buffer: stride of one entry


def fast_power(x, y):
    """numpy's power of elements where it reads the exponent with stride 0: sqrt(x) for an
    exponent of 0.5 (a traced exponent: where it is 0.5 at -inf and +-0, the only bases where
    sqrt and pow differ), C's pow otherwise."""
    if not any_traced((x, y)):
        return np.power(x, y)
    if not isinstance(y, (Value, Condition)):
        return apply("sqrt", x) if y == 0.5 else apply("pow", x, y)
    p = apply("pow", x, y)
    if isinstance(x, (Value, Condition)):
        edge = apply("eq", x, -math.inf) | apply("eq", x, 0.0)
    elif float(x) == -math.inf or float(x) == 0.0:
        edge = True
    else:
        return p
    root = apply("sqrt", x) if isinstance(x, (Value, Condition)) else float(np.sqrt(np.float64(x)))
    return where(apply("eq", y, 0.5) & edge, root, p)


FAST_POWER = np.frompyfunc(fast_power, 2, 1)


def plus_zero(v):
    """0.0 + v: where numpy's sum starts from +0.0 (a -0.0 is +0.0 then)."""
    return 0.0 + v


def counted(x):
    """Object array ``x`` with its bools (comparisons, True) as 0/1 numbers (numpy adds and
    multiplies bools in int: np.sum(x > 0) counts); without any, ``x`` itself."""
    if not isinstance(x, np.ndarray) or x.dtype != object or not any(boolish(v) for v in x.flat):
        return x
    return each_entry(lambda v: v.number() if isinstance(v, Condition) else int(v) if boolish(v) else v, x)


def dot_from_zero(a, b, inner=False):
    """Whether numpy's float64 np.dot (``inner``: np.inner) of arrays of shapes ``a`` and ``b``
    adds its products from +0.0 (BLAS's gemm, gemv, ddot: a sum of -0.0s is +0.0), not from its
    one product (a result of one entry of a contraction of one: that product, -0.0 included)."""
    if not a or not b:
        return False  # a product by a scalar: no sum
    rest = b[:-1] if inner else b[:-2] + b[-1:] if len(b) > 1 else ()
    return not (a[-1] == 1 and math.prod(a[:-1]) * math.prod(rest) == 1)


def cast_to(x, dtype):
    """``x`` (a traced value or an object array) cast to ``dtype`` (int64 or bool) as numpy casts."""
    return cast(x, kind(dtype, ".astype"))


CASTS.cast, CASTS.statistic, CASTS.mean_int = cast_to, statistic, mean_int


def _has_condition(x):
    if isinstance(x, Condition):
        return True
    if isinstance(x, np.ndarray) and x.dtype == object:
        return any(isinstance(v, Condition) for v in x.flat)
    return isinstance(x, (list, tuple)) and any(_has_condition(v) for v in x)


def stored(x):
    """What a float array holds of ``x`` stored into it: its comparisons as 0/1 numbers."""
    if not _has_condition(x):
        return x
    if isinstance(x, Condition):
        return x.number()
    if isinstance(x, np.ndarray):
        out = np.empty(x.shape, dtype=object)
        out.reshape(-1)[:] = [stored(v) for v in x.flat] if x.size else []
        return out
    return type(x)(stored(v) for v in x)


# np.mean/var/std of a traced array (numpy calls the array's methods): dtype= as numpy has it
def _mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
    k = statistic("mean", dtype)  # int64: numpy's mean of the cast entries, truncated
    r = np.ndarray.mean(self, axis, dtype if k == "int" else None, out, keepdims, **kw)
    return mean_int(r) if k == "int" else r


def _var(self, axis=None, dtype=None, *a, **kw):
    statistic("var", dtype)  # float64 only: numpy casts deviations and result to an int dtype
    return np.ndarray.var(self, axis, None, *a, **kw)


def _std(self, axis=None, dtype=None, *a, **kw):
    statistic("std", dtype)
    return np.ndarray.std(self, axis, None, *a, **kw)


TracedArray.mean, TracedArray.var, TracedArray.std = _mean, _var, _std
CASTS.stored = stored
