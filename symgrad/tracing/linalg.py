"""Stand-ins for numpy.linalg on traced values: det, inv, solve and slogdet (LU with partial
pivoting, as LAPACK's getrf), cholesky, norm and 2x2 eigvalsh at any size; the rest
(iterative algorithms whose number of steps depends on the data) refused with a TraceError
saying so."""
from __future__ import annotations

import math

import numpy as np

from ..errors import TraceError
from .lazy import LazyArray, Unrollable
from .registry import register
from .ufuncs import element_ufunc, as_array, elementwise, holds_traced, numeric, obj, refusing, result, traced
from .values import Condition, TracedArray, Value, as_number, apply, user_site, where

MAX_DIRECT = 1  # det, inv, solve, slogdet: LU with partial pivoting beyond this size (closed forms of
# 4x4 lost most digits of ill-conditioned systems, and overflowed at entries of 1e150)


def _refused(name):
    return refusing(getattr(np.linalg, name), lambda: (
        f"np.linalg.{name} of traced values at {user_site()}: symgrad traces np.linalg.det, inv, solve, slogdet, "
        "norm and cholesky (any size) and eigvalsh (2x2); "
        f"{name} needs an iterative algorithm whose number of steps depends on the data"))


for _name in ("svd", "eig", "eigh", "eigvals", "qr", "lstsq", "pinv", "matrix_rank", "cond", "tensorsolve",
              "tensorinv", "svdvals"):
    if hasattr(np.linalg, _name):
        register(np, f"linalg.{_name}", bound=True)(_refused(_name))


def _not(c):
    return (not c) if isinstance(c, (bool, np.bool_)) else ~c


def _and(a, b):
    if isinstance(a, (bool, np.bool_)):
        return b if a else False
    if isinstance(b, (bool, np.bool_)):
        return a if b else False
    return a & b


def _lu(m, rhs):
    """Gaussian elimination with partial pivoting, as LAPACK's getrf chooses pivots (the first
    row of largest magnitude in the column), unrolled into selects: which row is the pivot is
    a condition of each row, so the program stays one straight line and its derivatives are
    the exact derivatives of the function (away from ties of magnitudes). ``rhs``: n rows of
    right-hand-side columns, carried along. Returns (U as rows, the transformed rhs, the
    condition of each step that no row was exchanged)."""
    n = len(m)
    a, r, kept = [list(row) for row in m], [list(row) for row in rhs], []
    for k in range(n):
        best, better = as_number(abs(a[k][k])), []
        for i in range(k + 1, n):  # the scan: is row i larger than every row before it?
            v = as_number(abs(a[i][k]))
            c = v > best
            better.append(c)
            best = where(c, v, best)
        chosen, none_after = {}, True  # row i is the pivot: it is larger, and no later row is
        for i in range(n - 1, k, -1):
            chosen[i] = _and(better[i - k - 1], none_after)
            none_after = _and(none_after, _not(better[i - k - 1]))
        kept.append(none_after)
        pivot, prhs = a[k][k:], r[k]
        for i in range(k + 1, n):
            pivot = [where(chosen[i], x, p) for x, p in zip(a[i][k:], pivot)]
            prhs = [where(chosen[i], x, p) for x, p in zip(r[i], prhs)]
        p = as_number(pivot[0])  # a zero pivot (a column of zeros): no elimination, as getrf skips it
        divisor = where(p == 0, 1.0, p) if isinstance(p == 0, Condition) else (1.0 if p == 0 else p)
        for i in range(k + 1, n):  # the pivot's old row k moves to where the pivot was
            row = [where(chosen[i], x, y) for x, y in zip(a[k][k:], a[i][k:])]
            rr = [where(chosen[i], x, y) for x, y in zip(r[k], r[i])]
            f = row[0] / divisor
            a[i][k + 1:] = [x - f * p for x, p in zip(row[1:], pivot[1:])]
            r[i] = [x - f * p for x, p in zip(rr, prhs)]
        a[k][k:], r[k] = pivot, prhs
    return a, r, kept


def _nonzero(u):
    """``u``, a divisor: a constant 0 (singular whatever the traced entries) raises as numpy does."""
    if isinstance(as_number(u), (int, float)) and as_number(u) == 0:
        raise np.linalg.LinAlgError("Singular matrix")
    return u


def _lu_solve(m, rhs):
    """X with m X = rhs (n x q, as rows), by _lu and back substitution."""
    n = len(m)
    u, r, _ = _lu(m, rhs)
    x = [None] * n
    for i in range(n - 1, -1, -1):
        _nonzero(u[i][i])
        row = []
        for q in range(len(r[i])):
            s = r[i][q]
            for j in range(i + 1, n):
                s = s - u[i][j] * x[j][q]
            row.append(s / u[i][i])
        x[i] = row
    return x


def _lu_det(m):
    """(the sign of each exchange, U's diagonal): det = product of both."""
    u, _, kept = _lu(m, [[] for _ in m])
    return [where(k, 1.0, -1.0) for k in kept], [u[i][i] for i in range(len(m))]


def _matrices(a, fn_name, max_n=None):
    if isinstance(a, LazyArray):  # traced element by element, as it must be: no warning
        e = Unrollable(f"np.linalg.{fn_name} of a large array at {user_site()}")
        e.quiet = True
        raise e
    a = as_array(a) if isinstance(a, (list, tuple, Value, Condition)) else a
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    n = a.shape[-1]
    if max_n is not None and n > max_n:
        raise TraceError(f"np.linalg.{fn_name} of a traced {n}x{n} matrix at {user_site()}: symgrad writes "
                         f"{fn_name} in closed form up to {max_n}x{max_n}; for larger systems write the "
                         "algorithm with the matrix's structure (np.linalg.cholesky works at any size)")
    return a, n


def _rows(mat):
    return [list(r) for r in np.asarray(mat, dtype=object)]


def _batched(a, per_matrix, out_tail):
    a = np.asarray(a, dtype=object)
    batch = a.shape[:-2]
    out = np.empty(batch + out_tail, dtype=object)
    for idx in np.ndindex(*batch):
        out[idx] = per_matrix(_rows(a[idx]))
    return out[()] if out.ndim == 0 else out.view(TracedArray)


def _slogdet(m):
    """(sign, log|det|) from U's diagonal and the exchanges."""
    signs, diag = _lu_det(m)
    sign, logabs = 1.0, 0.0
    for s, u in zip(signs, diag):
        sign = sign * s * elementwise(element_ufunc(np.sign), (u,))
        logabs = logabs + elementwise(element_ufunc(np.log), (elementwise(element_ufunc(np.absolute), (u,)),))
    return where(sign == 0, 0.0, sign), logabs  # (0, not -0, for a singular matrix: numpy's)


def _det_any(m):
    """det as numpy computes it, sign * exp(log|det|): no overflow of a partial product."""
    if len(m) <= MAX_DIRECT:
        return m[0][0] if m else 1.0
    sign, logabs = _slogdet(m)
    return sign * elementwise(element_ufunc(np.exp), (logabs,))


@register(np, "linalg.det")
def _linalg_det(a):
    if not holds_traced([a]):
        return np.linalg.det(numeric(a))
    a, n = _matrices(a, "det")
    return _batched(a, _det_any, ())


def _inverse(m):
    n = len(m)
    if n <= MAX_DIRECT:
        return np.array([[1.0 / _nonzero(m[0][0])]] if n else np.zeros((0, 0)), dtype=object)
    return np.array(_lu_solve(m, [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]), dtype=object)


@register(np, "linalg.inv")
def _linalg_inv(a):
    if not holds_traced([a]):
        return np.linalg.inv(numeric(a))
    a, n = _matrices(a, "inv")
    return _batched(a, _inverse, (n, n))


@register(np, "linalg.solve")
def _linalg_solve(a, b):
    if not holds_traced([a, b]):
        return np.linalg.solve(numeric(a), numeric(b))
    a, n = _matrices(a, "solve")
    b = obj(b)
    if a.ndim != 2:
        raise TraceError(f"np.linalg.solve of a batch of traced matrices at {user_site()}: solve one system "
                         "a call (symgrad batches the whole function instead)")
    if b.ndim == 0 or (b.shape[0] if b.ndim == 1 else b.shape[-2]) != n:
        raise ValueError(f"solve: b of shape {b.shape} does not match a {n}x{n} matrix: expected ({n},) "
                         f"or (..., {n}, k)")
    axis = 0 if b.ndim == 1 else b.ndim - 2  # the axis of the equations; the others are right-hand sides
    cols = np.moveaxis(b, axis, 0)
    flat = cols.reshape(n, -1)
    if n <= MAX_DIRECT:
        x = flat / _nonzero(a[0, 0]) if n else flat
    else:
        x = np.array(_lu_solve(_rows(a), [list(row) for row in flat]), dtype=object).reshape(n, -1)
    return result(np.moveaxis(x.reshape(cols.shape), 0, axis).view(TracedArray))


@register(np, "linalg.slogdet")
def _linalg_slogdet(a):
    if not holds_traced([a]):
        return np.linalg.slogdet(numeric(a))
    a, n = _matrices(a, "slogdet")
    if n > MAX_DIRECT:  # from U's diagonal: a product of n numbers would overflow where its log does not
        both = _batched(a, lambda m: np.array(_slogdet(m), dtype=object), (2,))
        sign, logabs = result(np.asarray(both)[..., 0]), result(np.asarray(both)[..., 1])
        return np.linalg._linalg.SlogdetResult(sign, logabs) \
            if hasattr(np.linalg, "_linalg") and hasattr(np.linalg._linalg, "SlogdetResult") else (sign, logabs)
    d = _linalg_det(a)
    sign = elementwise(element_ufunc(np.sign), (d,))
    logabs = elementwise(element_ufunc(np.log), (elementwise(element_ufunc(np.absolute), (d,)),))
    return np.linalg._linalg.SlogdetResult(result(sign), result(logabs)) \
        if hasattr(np.linalg, "_linalg") and hasattr(np.linalg._linalg, "SlogdetResult") else (sign, logabs)


@register(np, "linalg.norm")
def _linalg_norm(x, ord=None, axis=None, keepdims=False):
    if not holds_traced([x]):
        return np.linalg.norm(numeric(x), ord, axis, keepdims)
    x = as_array(x) if isinstance(x, (list, tuple, Value, Condition)) else x
    absolute = lambda v: elementwise(element_ufunc(np.absolute), (v,))  # noqa: E731
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
        return result(r)
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
    return result(r)


@register(np, "linalg.cholesky")
def _linalg_cholesky(a, *, upper=False):
    if not holds_traced([a]):
        return np.linalg.cholesky(numeric(a), upper=True) if upper else np.linalg.cholesky(numeric(a))
    a, n = _matrices(a, "cholesky")

    def chol(m):
        L = [[0.0] * n for _ in range(n)]
        for j in range(n):
            s = m[j][j] - sum(L[j][k] * L[j][k] for k in range(j))
            L[j][j] = apply("sqrt", s) if traced((s,)) else math.sqrt(s)
            for i in range(j + 1, n):
                L[i][j] = (m[i][j] - sum(L[i][k] * L[j][k] for k in range(j))) / L[j][j]
        return np.array(L, dtype=object)
    L = _batched(a, chol, (n, n))
    return np.swapaxes(L, -1, -2).view(TracedArray) if upper else L


@register(np, "linalg.eigvalsh")
def _linalg_eigvalsh(a, UPLO="L"):
    if not holds_traced([a]):
        return np.linalg.eigvalsh(numeric(a), UPLO)
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
