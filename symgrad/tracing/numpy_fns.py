"""Stand-ins for numpy's functions (not ufuncs) where traced values need them.

- Arrays made by numpy's constructors in traced code hold objects, so that traced values
  can be stored into them (``b = np.zeros(4); b[1:3] = x``), as plain numpy code does.
- Functions given lists or plain object arrays of traced values see them as TracedArrays,
  whose ufuncs reach symgrad (``np.max([x, y])``).
- Functions whose numpy implementation branches on values (``where``, ``select``,
  ``piecewise``, ``interp``, ``sinc``) or calls LAPACK (``linalg``) get traced forms: closed
  forms for small fixed sizes, a TraceError saying so beyond them.
Each stand-in calls numpy's own function when nothing traced reaches it."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import TraceError
from .ufuncs import _frompyfunc, as_array, elementwise, holds_traced, traced
from .values import Condition, TracedArray, apply, user_site, where

TABLE = {}
MAX_DIRECT = 4  # det, inv, solve, slogdet: closed forms up to this size


def _register(*originals):
    def deco(f):
        for o in originals:
            if o is not None:
                TABLE[o] = functools.wraps(o)(f) if callable(o) else f
        return f
    return deco


def _numeric(x):
    """An object array of plain numbers (made in traced code) as numbers again, for numpy's
    own functions (np.linalg.svd of constants)."""
    if isinstance(x, np.ndarray) and x.dtype == object and x.size:
        try:
            return np.array(x.tolist(), dtype=float)
        except (TypeError, ValueError):
            return x
    return x


def _result(r):
    return r.view(TracedArray) if isinstance(r, np.ndarray) and r.dtype == object else r


# -- constructors: object arrays that traced values can be stored into ----------------------------
def _numeric_kind(dtype):
    return dtype is not None and np.dtype(dtype).kind in "biuc"


def _constructor(original, fill):
    def f(*a, **kw):
        if _numeric_kind(kw.get("dtype")):
            return original(*a, **kw)
        kw.pop("dtype", None)
        r = original(*a, dtype=object, **kw)
        if fill is not None:
            r[...] = fill(a, kw)
        return r.view(TracedArray)
    return f


for _orig, _fill in ((np.zeros, lambda a, kw: 0.0), (np.ones, lambda a, kw: 1.0), (np.empty, None),
                     (np.zeros_like, lambda a, kw: 0.0), (np.ones_like, lambda a, kw: 1.0), (np.empty_like, None)):
    TABLE[_orig] = functools.wraps(_orig)(_constructor(_orig, _fill))


def _filled(original):
    """np.full / np.full_like: an object array when the fill value is traced or no numeric
    dtype is asked for."""
    def f(shape_or_proto, fill_value, dtype=None, *a, **kw):
        if _numeric_kind(dtype) and not holds_traced([fill_value]):
            return original(shape_or_proto, fill_value, dtype, *a, **kw)
        r = original(shape_or_proto, None, object, *a, **kw)
        r[...] = fill_value.view(np.ndarray) if isinstance(fill_value, TracedArray) else fill_value
        return r.view(TracedArray)
    return functools.wraps(original)(f)


TABLE[np.full], TABLE[np.full_like] = _filled(np.full), _filled(np.full_like)


@_register(np.array, np.asarray, np.asanyarray, np.ascontiguousarray)
def _array(x, dtype=None, *a, **kw):
    if _numeric_kind(dtype) or (isinstance(x, np.ndarray) and x.dtype != object and not kw.get("copy", True)):
        return np.array(x, dtype, *a, **kw)
    if not holds_traced([x]):
        r = np.array(x, dtype, *a, **kw)
        if r.dtype.kind not in "fc":  # integers and booleans: indices and masks, as written
            return r
    if isinstance(x, np.ndarray) and x.dtype != object and x.size > 100_000:
        return np.asarray(x)  # large numeric data stays numeric (constants)
    return as_array(x).copy() if isinstance(x, np.ndarray) else as_array(x)


@_register(np.eye, np.identity)
def _eye(*a, **kw):
    if _numeric_kind(kw.get("dtype")):
        return np.eye(*a, **kw) if len(a) > 1 or "M" in kw else np.identity(*a, **kw)
    kw.pop("dtype", None)
    return np.eye(*a, **kw).astype(object).view(TracedArray)


# -- functions of arrays: lists and plain object arrays of traced values as TracedArrays -----------
def _arrays_in(original):
    def f(*a, **kw):
        if not any(holds_traced(x) for x in list(a) + list(kw.values())):
            return original(*a, **kw)
        conv = lambda x: as_array(x) if isinstance(x, (list, tuple, np.ndarray)) and holds_traced(x) else x  # noqa
        if original in (np.stack, np.concatenate, np.hstack, np.vstack, np.column_stack, np.block):
            a = ([conv(x) for x in a[0]],) + a[1:]  # a sequence of arrays
        return _result(original(*[conv(x) for x in a], **{k: conv(v) for k, v in kw.items()}))
    return f


for _name in ("sum", "prod", "mean", "average", "var", "std", "max", "min", "amax", "amin", "ptp", "cumsum",
              "cumprod", "diff", "dot", "vdot", "inner", "outer", "matmul", "einsum", "tensordot", "kron",
              "cross", "trace", "diag", "diagonal", "tril", "triu", "stack", "concatenate", "hstack", "vstack",
              "column_stack", "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "flip", "fliplr",
              "flipud", "roll", "pad", "polyval", "atleast_1d", "atleast_2d", "squeeze", "expand_dims",
              "broadcast_to", "repeat", "tile", "take", "nansum"):
    _o = getattr(np, _name, None)
    if _o is not None:
        TABLE[_o] = functools.wraps(_o)(_arrays_in(_o))


# -- functions whose numpy code branches on values ----------------------------------------------
@_register(np.where)
def _npwhere(cond, *ab):
    if len(ab) == 2 and traced([cond, *ab]) or holds_traced([cond, *ab]):
        if len(ab) != 2:
            raise TraceError(f"np.where(cond) with one argument on a traced condition at {user_site()}: its "
                             "result (the indices where cond holds) would depend on the data; use "
                             "np.where(cond, x, y)")
        return _result(where(_obj(cond), _obj(ab[0]), _obj(ab[1])))
    return np.where(cond, *ab)


def _obj(x):
    return as_array(x) if isinstance(x, (list, tuple)) else x


@_register(np.clip)
def _npclip(a, *args, **kw):
    bounds = list(args[:2]) + [None] * (2 - len(args[:2]))
    for k, names in ((0, ("a_min", "min")), (1, ("a_max", "max"))):
        for name in names:
            if name in kw and kw[name] is not np._NoValue:
                bounds[k] = kw[name]
    rest = {k: v for k, v in kw.items() if k not in ("a_min", "min", "a_max", "max")}
    lo, hi = bounds
    if not traced([a, lo, hi]) and not holds_traced([a, lo, hi]) or args[2:] or rest:
        return np.clip(a, *args, **kw)
    r = a if lo is None else elementwise(_frompyfunc("maximum", 2), (_obj(a), lo))
    return _result(r if hi is None else elementwise(_frompyfunc("minimum", 2), (r, hi)))


@_register(np.select)
def _select(condlist, choicelist, default=0):
    if not holds_traced([condlist, choicelist, default]):
        return np.select(condlist, choicelist, default)
    r = default
    for c, v in reversed(list(zip(condlist, choicelist))):  # the first condition that holds wins
        r = where(_obj(c), _obj(v), r)
    return _result(r)


@_register(np.piecewise)
def _piecewise(x, condlist, funclist, *args, **kw):
    if not holds_traced([x, condlist]):
        return np.piecewise(_numeric(x), condlist, funclist, *args, **kw)
    from .rewrite import intercept
    x = _obj(x)
    conds = [condlist] if isinstance(condlist, (Condition, bool)) or (
        isinstance(condlist, np.ndarray) and condlist.shape == np.shape(x)) else list(condlist)
    funcs = list(funclist)
    value = lambda f: intercept(f)(x, *args, **kw) if callable(f) else f  # noqa: E731
    r = value(funcs[len(conds)]) if len(funcs) > len(conds) else 0.0  # the "otherwise" function
    for c, f in reversed(list(zip(conds, funcs))):
        r = where(_obj(c), value(f), r)
    return _result(r)


@_register(np.sinc)
def _sinc(x):
    if not holds_traced([x]):
        return np.sinc(_numeric(x))
    return _result(elementwise(np.frompyfunc(_sinc1, 1, 1), (_obj(x),)))


def _sinc1(x):
    if not traced((x,)):
        return float(np.sinc(x))
    y = math.pi * x
    # below |y| = 1 the series (to y**20: the value and its first derivatives exact to
    # rounding), so that derivatives do not come from the cancelling quotient
    y2 = y * y
    series = 0.0
    for k in range(10, -1, -1):  # sum of (-y2)**k / (2k+1)!, Horner's way
        series = (-1) ** k / math.factorial(2 * k + 1) + y2 * series
    return where(abs(y) < 1.0, series, apply("sin", y) / y)


@_register(np.linspace)
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if not holds_traced([start, stop]):
        return np.linspace(_numeric(start), _numeric(stop), num, endpoint, retstep, dtype, axis)
    if np.ndim(start) or np.ndim(stop) or axis != 0:
        raise TraceError(f"np.linspace of traced array endpoints at {user_site()}: symgrad takes scalar "
                         "endpoints; build the points as start + (stop - start) * np.linspace(0, 1, num)")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else math.nan * stop
    pts = [k * step + start if div > 0 else start for k in range(num)]  # as numpy computes them
    if endpoint and num > 1:
        pts[-1] = stop
    arr = as_array(pts) if num else np.empty(0, dtype=object).view(TracedArray)
    return (arr, step) if retstep else arr


@_register(np.interp)
def _interp(x, xp, fp, left=None, right=None, period=None):
    if not holds_traced([x, xp, fp, left, right]):
        return np.interp(_numeric(x), _numeric(xp), _numeric(fp), left, right, period)
    if holds_traced([xp]) or period is not None:
        raise TraceError(f"np.interp with traced breakpoints xp (or period=) at {user_site()}: symgrad "
                         "interpolates traced x or fp over constant xp")
    xp = np.asarray(xp, dtype=float)
    fp = _obj(fp) if holds_traced([fp]) else np.asarray(fp, dtype=float)
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right

    def one(t):
        if not traced((t,)):  # a constant x: weights of fp
            if t < xp[0]:
                return lo
            if t > xp[-1]:
                return hi
            k = min(int(np.searchsorted(xp, t, side="right")) - 1, len(xp) - 2)
            if t == xp[-1]:
                return fp[-1]
            w = (t - xp[k]) / (xp[k + 1] - xp[k])
            return fp[k] * (1 - w) + fp[k + 1] * w
        r = where(t > xp[-1], hi, fp[-1])
        for k in range(len(xp) - 2, -1, -1):  # the segment [xp[k], xp[k+1]) that holds t
            seg = fp[k] + (t - xp[k]) * ((fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k]))
            r = where(t < xp[k + 1], seg, r)
        return where(apply("isnan", t), t, where(t < xp[0], lo, r))  # nan stays nan, as in numpy
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return one(x)
    return _result(elementwise(np.frompyfunc(one, 1, 1), (_obj(x),)))


# -- functions whose result is an order or an index found in the data -----------------------------
def _data_order(name, original, instead):
    def f(*a, **kw):
        if not holds_traced(list(a) + list(kw.values())):
            return original(*map(_numeric, a), **kw)
        raise TraceError(f"np.{name} of traced values at {user_site()}: its result is an order or a position "
                         f"found in the data, which a traced function cannot fix in advance; {instead}")
    return functools.wraps(original)(f)


_BY_VALUE = "use np.max/np.min (they trace), or symgrad.where on comparisons"
for _name, _instead in (("sort", _BY_VALUE), ("argsort", _BY_VALUE), ("argmax", "use np.max(x) for the value"),
                        ("argmin", "use np.min(x) for the value"), ("median", _BY_VALUE), ("percentile", _BY_VALUE),
                        ("quantile", _BY_VALUE), ("nanmedian", _BY_VALUE), ("unique", _BY_VALUE),
                        ("partition", _BY_VALUE), ("argpartition", _BY_VALUE), ("nonzero", "use np.where(cond, x, 0.0)"),
                        ("flatnonzero", "use np.where(cond, x, 0.0)"), ("argwhere", "use np.where(cond, x, 0.0)"),
                        ("searchsorted", "use np.interp or symgrad.where on comparisons"),
                        ("histogram", "use sums of symgrad.where(cond, 1.0, 0.0)")):
    _o = getattr(np, _name, None)
    if _o is not None:
        TABLE[_o] = _data_order(_name, _o, _instead)


# -- linear algebra of small matrices of traced values ---------------------------------------------
def _refused(name, original):
    def f(*a, **kw):
        if not holds_traced(list(a) + list(kw.values())):
            return original(*map(_numeric, a), **kw)
        raise TraceError(f"np.linalg.{name} of traced values at {user_site()}: symgrad traces np.linalg.det, "
                         "inv, solve, slogdet (up to 4x4), eigvalsh (2x2), norm and cholesky (any size); "
                         f"{name} needs an iterative or pivoting algorithm whose steps depend on the data")
    return functools.wraps(original)(f)


for _name in ("svd", "eig", "eigh", "eigvals", "qr", "lstsq", "pinv", "matrix_rank", "cond", "tensorsolve",
              "tensorinv", "svdvals"):
    _o = getattr(np.linalg, _name, None)
    if _o is not None:
        TABLE[_o] = _refused(_name, _o)


def _matrices(a, fn_name, max_n=None):
    a = _obj(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError(f"{fn_name}: last 2 dimensions of the array must be square")
    n = a.shape[-1]
    if max_n is not None and n > max_n:
        raise TraceError(f"np.linalg.{fn_name} of a traced {n}x{n} matrix at {user_site()}: symgrad writes "
                         f"{fn_name} in closed form up to {max_n}x{max_n}; for larger systems write the "
                         "algorithm with the matrix's structure (np.linalg.cholesky works at any size)")
    return a, n


def _det(m):
    """Laplace expansion along the first row (exact; for the small sizes it is used at)."""
    n = len(m)
    if n == 1:
        return m[0][0]
    if n == 2:
        return m[0][0] * m[1][1] - m[0][1] * m[1][0]
    total = 0.0
    for j in range(n):
        minor = [row[:j] + row[j + 1:] for row in m[1:]]
        term = m[0][j] * _det(minor)
        total = total + term if j % 2 == 0 else total - term
    return total


def _rows(mat):
    return [list(r) for r in np.asarray(mat, dtype=object)]


def _batched(a, per_matrix, out_tail):
    a = np.asarray(a, dtype=object)
    batch = a.shape[:-2]
    out = np.empty(batch + out_tail, dtype=object)
    for idx in np.ndindex(*batch):
        out[idx] = per_matrix(_rows(a[idx]))
    return out[()] if out.ndim == 0 else out.view(TracedArray)


@_register(np.linalg.det)
def _linalg_det(a):
    if not holds_traced([a]):
        return np.linalg.det(_numeric(a))
    a, n = _matrices(a, "det", MAX_DIRECT)
    return _batched(a, _det, ())


def _adjugate_inverse(m):
    n = len(m)
    d = _det(m)
    if n == 1:
        return np.array([[1.0 / d]], dtype=object)
    inv = np.empty((n, n), dtype=object)
    for i in range(n):
        for j in range(n):
            minor = [row[:i] + row[i + 1:] for k, row in enumerate(m) if k != j]
            c = _det(minor)
            inv[i, j] = (c if (i + j) % 2 == 0 else -c) / d
    return inv


@_register(np.linalg.inv)
def _linalg_inv(a):
    if not holds_traced([a]):
        return np.linalg.inv(_numeric(a))
    a, n = _matrices(a, "inv", MAX_DIRECT)
    return _batched(a, lambda m: _adjugate_inverse(m), (n, n))


@_register(np.linalg.solve)
def _linalg_solve(a, b):
    if not holds_traced([a, b]):
        return np.linalg.solve(_numeric(a), _numeric(b))
    a, n = _matrices(a, "solve", MAX_DIRECT)
    b = _obj(b)
    if a.ndim != 2:
        raise TraceError(f"np.linalg.solve of a batch of traced matrices at {user_site()}: solve one system "
                         "a call (symgrad batches the whole function instead)")
    return _result(np.dot(_adjugate_inverse(_rows(a)).view(TracedArray), b))


@_register(np.linalg.slogdet)
def _linalg_slogdet(a):
    if not holds_traced([a]):
        return np.linalg.slogdet(_numeric(a))
    d = _linalg_det(a)
    sign = elementwise(_frompyfunc("sign", 1), (d,))
    logabs = elementwise(_frompyfunc("log", 1), (elementwise(_frompyfunc("absolute", 1), (d,)),))
    return np.linalg._linalg.SlogdetResult(_result(sign), _result(logabs)) \
        if hasattr(np.linalg, "_linalg") and hasattr(np.linalg._linalg, "SlogdetResult") else (sign, logabs)


@_register(np.linalg.norm)
def _linalg_norm(x, ord=None, axis=None, keepdims=False):
    if not holds_traced([x]):
        return np.linalg.norm(_numeric(x), ord, axis, keepdims)
    x = _obj(x)
    absolute = lambda v: elementwise(_frompyfunc("absolute", 1), (v,))  # noqa: E731
    matrix = (axis is None and x.ndim == 2 and ord is not None) or (isinstance(axis, tuple) and len(axis) == 2)
    if matrix:
        axes = axis if axis is not None else (0, 1)
        if ord in ("fro", None):
            r = np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims))
        elif ord in (1, -1, np.inf, -np.inf):
            sum_axis, other = (axes[0], axes[1]) if ord in (1, -1) else (axes[1], axes[0])
            s = np.sum(absolute(x), axis=sum_axis, keepdims=True)
            r = (np.max if ord in (1, np.inf) else np.min)(s, axis=other if other < sum_axis else other,
                                                          keepdims=True)
            if not keepdims:
                r = r.reshape([n for k, n in enumerate(r.shape) if k not in (axes[0] % x.ndim, axes[1] % x.ndim)])
        else:
            raise TraceError(f"np.linalg.norm(..., ord={ord!r}) of a traced matrix at {user_site()}: symgrad "
                             "takes 'fro', 1, -1, inf, -inf (the spectral and nuclear norms need an SVD)")
        return _result(r)
    if axis is None and x.ndim != 1:
        x, axis = x.reshape(-1), 0
    if ord is None or ord == 2:
        r = np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    elif ord == np.inf:
        r = np.max(absolute(x), axis=axis, keepdims=keepdims)
    elif ord == -np.inf:
        r = np.min(absolute(x), axis=axis, keepdims=keepdims)
    elif ord == 1:
        r = np.sum(absolute(x), axis=axis, keepdims=keepdims)
    elif ord == 0:
        r = np.sum(elementwise(np.frompyfunc(lambda v: where(v != 0, 1.0, 0.0), 1, 1), (x,)), axis=axis,
                   keepdims=keepdims)
    else:
        r = np.sum(absolute(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)
    return _result(r)


@_register(np.linalg.cholesky)
def _linalg_cholesky(a, *args, **kw):
    if not holds_traced([a]):
        return np.linalg.cholesky(_numeric(a), *args, **kw)
    a, n = _matrices(a, "cholesky")

    def chol(m):
        L = [[0.0] * n for _ in range(n)]
        for j in range(n):
            s = m[j][j] - sum(L[j][k] * L[j][k] for k in range(j))
            L[j][j] = apply("sqrt", s) if traced((s,)) else math.sqrt(s)
            for i in range(j + 1, n):
                L[i][j] = (m[i][j] - sum(L[i][k] * L[j][k] for k in range(j))) / L[j][j]
        return np.array(L, dtype=object)
    return _batched(a, chol, (n, n))


@_register(np.linalg.eigvalsh)
def _linalg_eigvalsh(a, UPLO="L"):
    if not holds_traced([a]):
        return np.linalg.eigvalsh(_numeric(a), UPLO)
    # 2x2 only: the closed form of the 3x3 cubic (trigonometric or Cardano) loses most digits
    # of the smaller eigenvalues when they are far apart (1e-3 next to 1e6)
    a, n = _matrices(a, "eigvalsh", 2)

    def eig(m):
        if n == 1:
            return np.array([m[0][0]], dtype=object)
        p, q = m[0][0], m[1][1]
        b = m[1][0] if UPLO == "L" else m[0][1]  # the triangle numpy reads
        half, d = (p + q) / 2, (p - q) / 2
        r = apply("hypot", d, b) if traced((d, b)) else math.hypot(d, b)
        # the eigenvalue of larger magnitude from the sum, the other from the determinant
        # (half - r would cancel when |half| ~ r)
        big = where(half >= 0, half + r, half - r)
        small = where(big == 0, 0.0, (p * q - b * b) / big)
        return np.array([where(half >= 0, small, big), where(half >= 0, big, small)], dtype=object)
    return _batched(a, eig, (n,))
