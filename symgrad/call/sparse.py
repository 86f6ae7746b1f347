"""Sparse derivatives as the caller gets them: a sparse Function's values (one per entry of its
pattern, transforms/sparsity.py) made a scipy.sparse.csr_array for one point, or (rows, cols,
values) triplets for a batch (and where scipy is not installed). ``out=`` is the values array
(shape batch + (nnz,)): a csr result holds it as its data, so the next call into the same
out= changes it."""
from __future__ import annotations

import numpy as np

MODES = {True: False, "lower": True}  # sparse= -> whether the lower triangle only


def _scipy_sparse():
    try:
        import scipy.sparse as sp
    except ImportError:
        return None
    return sp if hasattr(sp, "csr_array") else None


def _csr(entries, data, shape):
    """A csr_array of ``entries`` (rows, cols, take, indptr: _entries), already in CSR order."""
    rows, cols, _, indptr = entries
    return _scipy_sparse().csr_array((data, cols.copy(), indptr.copy()), shape=shape)


def _entries(pattern, lower):
    """(rows, cols, take, indptr) of ``pattern`` as asked: a Hessian's whole symmetric matrix
    unless ``lower`` (take: where each entry is among the kernel's values; None: in order),
    computed once per pattern."""
    memo = pattern.views
    whole = not lower and pattern.lower
    hit = memo.get(whole)
    if hit is None:
        rows, cols, take = pattern.full() if whole else (pattern.rows, pattern.cols, None)
        indptr = np.zeros(pattern.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=pattern.shape[0]), out=indptr[1:])
        for a in (rows, cols, take, indptr):
            if a is not None:
                a.setflags(write=False)
        hit = memo[whole] = (rows, cols, take, indptr)
    return hit


def pattern_matrix(pattern, lower=False):
    """The pattern as a boolean csr_array, or (rows, cols, shape) without scipy."""
    entries = _entries(pattern, lower)
    if _scipy_sparse() is None:
        return entries[0].copy(), entries[1].copy(), pattern.shape
    return _csr(entries, np.ones(len(entries[0]), dtype=bool), pattern.shape)


def _no_entries(fn, args, kwargs, out, nnz):
    """The values of an empty pattern (a linear function's Hessian, a Jacobian by an argument
    never read): no kernel, the arguments checked as a call checks them."""
    from .calling import real_array
    if kwargs:
        fn, args = fn.bind_call(args, kwargs)
    if len(args) != len(fn.args):
        raise TypeError(f"{fn.spec.what} takes {len(fn.args)} argument(s) "
                        f"({', '.join(n for n, _ in fn.args)}), got {len(args)}")
    batches = []
    for (name, core), x in zip(fn.args, args):
        arr = real_array(x, name, fn.dtype)
        if arr.ndim < len(core) or arr.shape[arr.ndim - len(core):] != core:
            raise ValueError(f"argument {name!r} must have trailing (core) shape {core}, got an array of shape {arr.shape}")
        batches.append(arr.shape[:arr.ndim - len(core)])
    shape = np.broadcast_shapes(*batches) + (nnz,)
    if out is None:
        return np.zeros(shape, dtype=fn.dtype)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != fn.dtype:
        raise ValueError(f"out= must be a {fn.dtype} array of shape {shape} (the values), got "
                         f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    return out


def sparse_call(fn, mode, args, kwargs, out):
    """``fn(*args, sparse=mode)`` for a Jacobian or Hessian Function ``fn``: its structural
    non-zeros, computed by one kernel (Function.sparse_form). ``mode``: True, "lower" (a Hessian's
    lower triangle only) or False (the dense result)."""
    if mode is False:
        return fn(*args, out=out, **kwargs)
    if isinstance(mode, (bool, str)) and mode in MODES:
        lower = MODES[mode]
    else:
        raise ValueError(f"sparse must be True, False or 'lower', got {mode!r}")
    f = fn.sparse_form()
    pattern = f.sparsity()
    if lower and not pattern.lower:
        raise ValueError("sparse='lower' is for Hessians (a symmetric matrix); a Jacobian takes sparse=True")
    entries = _entries(pattern, lower)
    if out is not None and entries[2] is not None:
        raise ValueError("out= with F.hessian(..., sparse=True): the kernel computes the lower triangle, which "
                         "the whole matrix repeats; pass sparse='lower' to fill out= with its values")
    if pattern.nnz:
        values = f(*args, out=out, **kwargs)
    else:
        values = _no_entries(f, args, kwargs, out, 0)
    data = values if entries[2] is None else values[..., entries[2]]
    if values.ndim == 1 and _scipy_sparse() is not None:
        return _csr(entries, data, pattern.shape)
    return entries[0].copy(), entries[1].copy(), data


def pattern_method(name, stacks, symmetric):
    """Function.<name>_sparsity: the pattern of derivative kind ``name`` as a boolean matrix
    (symmetric kinds take ``lower``)."""
    def matrix(self, argnums, lower):
        f = self._derive(name, argnums, stack=True) if stacks else self._derive(name, argnums)
        return pattern_matrix(f.sparse_form().sparsity(), lower)
    if symmetric:
        def pattern(self, argnums=None, *, lower=False):
            return matrix(self, argnums, lower)
    else:
        def pattern(self, argnums=None):
            return matrix(self, argnums, False)
    return pattern


def own_pattern(self, *, lower=False):
    """Which entries of this Jacobian or Hessian are not identically zero, by the arguments it
    was taken by (``symgrad.jacobian(f, argnums=1).pattern()``: of ``f(t, y)``, the n x n
    pattern by y, what scipy's solve_ivp takes as ``jac_sparsity=``): a boolean
    scipy.sparse.csr_array (without scipy: (rows, cols, shape)) of the entries that
    ``J(..., sparse=True)`` computes. ``lower=True``: a Hessian's lower triangle, what
    ``sparse='lower'`` computes. (``J.jacobian_sparsity()`` is the pattern of J's own Jacobian.)"""
    from ..transforms.kinds import kind
    if not self.steps or kind(self.steps[-1][0]).sparse is None:
        raise ValueError(f"{self.spec.what}: pattern() is the pattern of a Jacobian or Hessian; of a function, write "
                         "F.jacobian_wrt(argnums).pattern() or F.jacobian_sparsity(argnums) (likewise hessian)")
    pattern = self.sparse_form().sparsity()
    if lower and not pattern.lower:
        raise ValueError("pattern(lower=True) is for Hessians (a symmetric matrix); a Jacobian has no lower form")
    return pattern_matrix(pattern, lower)
