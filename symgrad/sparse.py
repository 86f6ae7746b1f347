"""Sparse derivatives as the caller gets them: a sparse Function's values (one per entry of its
pattern, transforms/sparsity.py) made a scipy.sparse.csr_array for one point, or (rows, cols,
values) triplets for a batch (and where scipy is not installed)."""
from __future__ import annotations

import inspect

import numpy as np

MODES = {True: False, "lower": True}  # sparse= -> whether the lower triangle only


def _scipy_sparse():
    try:
        import scipy.sparse as sp
    except ImportError:
        return None
    return sp if hasattr(sp, "csr_array") else None


def _csr(rows, cols, data, shape):
    """A csr_array of entries already in CSR order (no sorting, no summing)."""
    sp = _scipy_sparse()
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    return sp.csr_array((data, cols.copy(), indptr), shape=shape)


def _entries(pattern, lower):
    """(rows, cols, take) of ``pattern`` as asked: a Hessian's whole symmetric matrix unless
    ``lower`` (computed once per pattern)."""
    memo = pattern.__dict__.setdefault("_entries", {})
    hit = memo.get(lower or not pattern.lower)
    if hit is None:
        hit = (pattern.rows, pattern.cols, None) if lower or not pattern.lower else pattern.full()
        memo[lower or not pattern.lower] = hit
    return hit


def pattern_matrix(pattern, lower=False):
    """The pattern as a boolean csr_array, or (rows, cols, shape) without scipy."""
    if lower and not pattern.lower:
        raise ValueError("lower=True is for Hessians (a symmetric matrix); a Jacobian's pattern is all of it")
    rows, cols, _ = _entries(pattern, lower)
    if _scipy_sparse() is None:
        return rows.copy(), cols.copy(), pattern.shape
    return _csr(rows, cols, np.ones(len(rows), dtype=bool), pattern.shape)


def takes_sparse(fn):
    """Whether the user's function has a parameter named ``sparse`` (then sparse= is its own)."""
    src = fn._source
    if src.fn is None:
        return False
    try:
        return "sparse" in inspect.signature(src.fn).parameters
    except (TypeError, ValueError):
        return False


def sparse_call(fn, mode, args, kwargs, out):
    """``fn(*args, sparse=mode)`` for a Jacobian or Hessian Function ``fn``: its structural
    non-zeros, computed by one kernel (Function._sparse). ``mode``: True, "lower" (a Hessian's
    lower triangle only) or False (the dense result)."""
    if mode is False:
        return fn(*args, out=out, **kwargs)
    if isinstance(mode, (bool, str)) and mode in MODES:
        lower = MODES[mode]
    else:
        raise ValueError(f"sparse must be True, False or 'lower', got {mode!r}")
    f = fn._sparse()
    if lower and not f.sparsity().lower:
        raise ValueError("sparse='lower' is for Hessians (a symmetric matrix); a Jacobian takes sparse=True")
    values = f(*args, out=out, **kwargs)
    pattern = f.sparsity()
    rows, cols, take = _entries(pattern, lower)
    data = values if take is None else values[..., take]
    if values.ndim == 1 and _scipy_sparse() is not None:
        return _csr(rows, cols, data, pattern.shape)
    return rows.copy(), cols.copy(), data
