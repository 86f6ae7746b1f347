"""Affine indices of arrays kept as loops (lazy.py): ``(const, ((term, coef), ...))``, a term
an index variable (int) or a gather ``("g", data, index)`` of an integer data array."""
from __future__ import annotations

from ..ir.program import index_vars  # noqa: F401  (affine.index_vars)


def const(c):
    return (int(c), ())


def var(v):
    return (0, ((v, 1),))


def add(a, b):
    terms = dict(a[1])
    for t, c in b[1]:
        terms[t] = terms.get(t, 0) + c
    return (a[0] + b[0], tuple(sorted(((t, c) for t, c in terms.items() if c), key=repr)))


def scale(a, k):
    return (a[0] * k, tuple((t, c * k) for t, c in a[1])) if k else (0, ())


def gather(b, data, index):
    """Entry ``index`` of integer data array ``data`` (its id), as an index."""
    if not index[1]:
        return const(b.data[data][0].flat[index[0]])
    return (0, ((("g", data, index), 1),))


def flat(idx, shape):
    """The C-order flat index of an index tuple into ``shape``."""
    flat, stride = const(0), 1
    for a, n in zip(reversed(idx), reversed(shape)):
        flat = add(flat, scale(a, stride))
        stride *= n
    return flat
