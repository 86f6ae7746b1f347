"""numpy's type rules that traced values, which are doubles, follow where numpy's result
depends on them:

- casts to int64 and bool (``dtype=`` of sums, products, their cumulative forms and means,
  ``astype``, ``np.array(..., dtype=)``): numpy truncates a float toward zero (a step, whose
  derivative is 0), a bool is ``x != 0``, and a sum of bools with ``dtype=bool`` is logical or;
- numpy's bools: ``bool + bool`` is logical or, ``bool * bool`` logical and, ``bool - bool`` and
  ``-bool`` TypeErrors, ``~bool`` logical not, ``~`` of a number bitwise (the element functions
  of numpy's ufuncs, whatever the array's size; entries of bool arrays are NpConditions);
- np.power's stride-0 exponent: numpy's float loop computes ``x ** 0.5`` as ``sqrt(x)`` where
  it reads the exponent with stride 0 (nan at -inf, -0.0 at -0.0: C's pow gives inf, +0.0).

A traced integer is a double: exact while it is below 2**53. Where an int64 result of numpy's
would need more (a sum of n entries of 2**53 / n or more, a product past 2**53, a cast of NaN,
inf or anything past 2**63, where numpy's int64 has a platform's value or wraps around), the
traced result is NaN: never a rounded integer that numpy's exact one would differ from."""
from __future__ import annotations

import math

import numpy as np

from . import names as ops
from ..errors import TraceError
from . import sumorder
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


# -- numpy's bools --------------------------------------------------------------------------
_SUB = ("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, "
        "or the logical_xor function instead.")
_NEG = "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logical_not " \
       "function instead."




def numpy_bool(c):
    """``c`` as numpy's bool if it is a traced comparison (an NpCondition), else as it is."""
    return NpCondition(c.b, c.i) if type(c) is Condition else c


class NpCondition(Condition):
    """A traced comparison numpy made (an entry of a bool array, what np.greater gives): a
    np.bool_, whose arithmetic with bools is numpy's: bool + bool is logical or, bool * bool
    logical and, bool - bool and -bool raise TypeError as numpy does; with numbers it is the
    0/1 number (as a Condition). A comparison of traced scalars stays a Condition: Python's
    bools add as ints (True + True == 2)."""

    __slots__ = ()

    def __add__(self, o):
        return numpy_bool(self | o) if _boolish(o) else Condition.__add__(self, o)

    def __radd__(self, o):
        return numpy_bool(self | o) if _boolish(o) else Condition.__radd__(self, o)

    def __mul__(self, o):
        return numpy_bool(self & o) if _boolish(o) else Condition.__mul__(self, o)

    def __rmul__(self, o):
        return numpy_bool(self & o) if _boolish(o) else Condition.__rmul__(self, o)

    def __sub__(self, o):
        if _boolish(o):
            raise TypeError(_SUB)
        return Condition.__sub__(self, o)

    def __rsub__(self, o):
        if _boolish(o):
            raise TypeError(_SUB)
        return Condition.__rsub__(self, o)

    def __neg__(self):
        raise TypeError(_NEG)

    def __pos__(self):
        raise TypeError("ufunc 'positive' did not contain a loop with signature matching types "
                        "<class 'numpy.dtypes.BoolDType'> -> None")

    def __abs__(self):
        return self

    def __and__(self, o):
        return numpy_bool(Condition.__and__(self, o))

    def __or__(self, o):
        return numpy_bool(Condition.__or__(self, o))

    def __xor__(self, o):
        return numpy_bool(Condition.__xor__(self, o))

    def __invert__(self):
        return numpy_bool(Condition.__invert__(self))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__


def _boolish(x):
    return isinstance(x, (Condition, bool, np.bool_))


def _traced(xs):
    return any(isinstance(x, (Value, Condition)) for x in xs)


def _bitwise(name, logical):
    def element(a, b):
        if _boolish(a) and _boolish(b):
            return numpy_bool(logical(a, b)) if _traced((a, b)) else getattr(np, name)(a, b)
        if _traced((a, b)):
            raise TraceError(f"numpy.{name} of a traced number at {user_site()}: numpy's is bitwise on integers "
                             "(a TypeError on floats), which symgrad, computing in double, does not trace; on "
                             "comparisons it is logical (write `&`, `|`, `^` of comparisons)")
        return getattr(np, name)(a, b)
    return element


def _invert(x):
    if isinstance(x, Condition):
        return numpy_bool(~x)
    if isinstance(x, Value):
        raise TraceError(f"~ (numpy.invert) of a traced number at {user_site()}: numpy's ~ of an integer is "
                         "bitwise (-x - 1) and of a float a TypeError, and symgrad, computing in double, cannot "
                         "tell them apart; write -x - 1 for integers, or ~ / np.logical_not of a comparison")
    return np.invert(x)


def _logical_xor(a, b):
    if not _traced((a, b)):
        return np.logical_xor(a, b)
    t = [x if _boolish(x) else (apply("ne", x, 0.0) if isinstance(x, Value) else bool(x != 0)) for x in (a, b)]
    if not isinstance(t[0], Condition):
        t.reverse()
    return numpy_bool(t[0] ^ t[1])


def _bool_rule(element, rule, op=None):
    """``element`` (a ufunc's function of elements) where an operand is a number; numpy's rule
    of that ufunc's bool loop where every operand is a bool. ``op``: the IR op ``element``
    applies to traced operands (numpy's arithmetic of a traced number: at once)."""
    def f(*xs):
        for x in xs:
            if type(x) is Value:  # a number among them (most calls): the ufunc's arithmetic
                return apply(op, *xs) if op is not None else element(*xs)
        if all(_boolish(x) for x in xs) and _traced(xs):
            return rule(*xs)
        return element(*xs)
    return f


def _raise(message):
    def f(*xs):
        raise TypeError(message)
    return f




def _or(a, b):
    return numpy_bool(a | b) if isinstance(a, Condition) else numpy_bool(b | a)


def _and(a, b):
    return numpy_bool(a & b) if isinstance(a, Condition) else numpy_bool(b & a)


_ARITHMETIC = ("add", "multiply", "subtract", "negative")  # their elements: apply(ops.NUMPY[name], ...)
_RULES = {"add": _or, "multiply": _and, "maximum": _or, "minimum": _and, "fmax": _or, "fmin": _and,
          "subtract": _raise(_SUB), "negative": _raise(_NEG),
          "positive": _raise("ufunc 'positive' did not contain a loop with signature matching types "
                             "<class 'numpy.dtypes.BoolDType'> -> None"),
          "absolute": numpy_bool}


def numpy_bools(table, conditions):
    """Give the elements of numpy's ufuncs in ``table`` (name -> function of elements)
    numpy's bool rules: the ufuncs of ``conditions`` give numpy's bools (NpCondition),
    arithmetic of bools is logical (see the module's note), ~ and the bitwise ufuncs are
    logical on bools and refused on traced numbers."""
    for name in conditions:
        if name in table:
            table[name] = (lambda f: lambda *xs: numpy_bool(f(*xs)))(table[name])
    for name, rule in _RULES.items():
        if name in table:
            table[name] = _bool_rule(table[name], rule, ops.NUMPY[name] if name in _ARITHMETIC else None)
    table.update(invert=_invert, logical_xor=_logical_xor,
                 bitwise_and=_bitwise("bitwise_and", lambda a, b: _and(a, b)),
                 bitwise_or=_bitwise("bitwise_or", lambda a, b: _or(a, b)),
                 bitwise_xor=_bitwise("bitwise_xor", lambda a, b: _logical_xor(a, b)))
    return table


def logical(x):
    """Whether object array ``x`` is numpy's bool array: every entry a bool or a comparison."""
    return isinstance(x, np.ndarray) and x.dtype == object and x.size > 0 and all(_boolish(v) for v in x.flat)


def numbers(x):
    """An object array (or list) that mixes comparisons with numbers as numpy holds it: a float
    array, the comparisons 0/1 numbers; one of comparisons (a bool array) or of numbers as it is."""
    if not isinstance(x, np.ndarray) or x.dtype != object or not x.size:
        return x
    flat = x.reshape(-1)
    conds = [j for j, v in enumerate(flat) if isinstance(v, Condition)]
    if not conds or len(conds) == flat.size or all(_boolish(v) for v in flat):
        return x
    out = x.copy()
    oflat = out.reshape(-1)
    for j in conds:
        oflat[j] = oflat[j].number()
    return out


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
    if not _traced((x, y)):
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
    if not isinstance(x, np.ndarray) or x.dtype != object or not any(_boolish(v) for v in x.flat):
        return x
    return each_entry(lambda v: v.number() if isinstance(v, Condition) else int(v) if _boolish(v) else v, x)


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
