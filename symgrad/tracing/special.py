"""scipy.special on traced values: its ufuncs as functions of elements (ufuncs.py applies
them), and logsumexp, softmax, log_softmax as stand-ins. Imported only once the user's code
has imported scipy.special (symgrad never imports scipy itself)."""
from __future__ import annotations

import functools
import math
import sys

import numpy as np

from . import registry
from ..ir.ops import SCIPY_NAMES
from .ufuncs import as_array, holds_traced, numeric, result, scalar_of, traced, umath
from .values import Value, apply, builder, where


def _op(name):
    return lambda x: apply(name, x)


def _of(op, v):
    """``op`` of a traced value, or of a number as a node (exact until C: log(2.0) is not rounded here)."""
    if traced((v,)):
        return apply(op, v)
    b = builder()
    return Value(b, b.node(op, b.const(v)))


def _expit(x):
    """1 / (1 + exp(-x)), below 0 as exp(x) / (1 + exp(x)): an exp that cannot overflow on
    either side (its derivative would be inf/inf far out)."""
    e = apply("exp", x)
    return where(x >= 0, 1.0 / (1.0 + apply("exp", -x)), e / (1.0 + e))


def _log_expit(x):
    return where(x >= 0, -apply("log1p", apply("exp", -x)), x - apply("log1p", apply("exp", x)))


def _logit(p):
    return apply("log", p / (1.0 - p))


def _xlog(log, pole):
    """x * log(y) (log1p), 0 where x == 0 and y is not NaN, as scipy's xlogy (xlog1py). Only
    where the product would be 0 * inf or 0 * NaN (y <= ``pole`` or y = inf) is it replaced, so
    that the derivative by x at x = 0 is still log(y)."""
    def f(x, y):
        special = (x == 0.0) & ((y <= pole) | (y == math.inf))
        return where(special, 0.0, x * _of(log, y))
    return f


def _ndtr(x):
    return 0.5 * apply("erfc", -x / math.sqrt(2.0))


_ELEMENTS = {  # scipy.special's ufuncs that are ops (the registry's names), then the others
    **{name: _op(op) for name, op in SCIPY_NAMES.items()},
    "exp10": lambda x: 10.0 ** x, "expit": _expit, "log_expit": _log_expit, "logit": _logit,
    "xlogy": _xlog("log", 0.0), "xlog1py": _xlog("log1p", -1.0), "ndtr": _ndtr,
}


@functools.lru_cache(maxsize=None)
def _elements():
    special = sys.modules["scipy.special"]
    ufuncs = {name: registry.genuine(special, name) for name in _ELEMENTS}
    return {u: _element(u, _ELEMENTS[name]) for name, u in ufuncs.items() if isinstance(u, np.ufunc)}


def _element(ufunc, fn):
    def element(*xs):
        return fn(*xs) if traced(xs) else ufunc(*xs)
    return element


def ufunc_elements():
    """scipy.special's traced ufunc -> function of elements (traced or plain)."""
    return _elements()


# -- functions ------------------------------------------------------------------------------
def _shifted(a, axis):
    """(a, its max over ``axis`` kept as axes of length 1; 0 where that max is not finite)."""
    a = as_array(a)
    m = a.max(axis=axis, keepdims=True)
    finite = lambda v: where(apply("isfinite", v), v, 0.0) if traced((v,)) else (v if math.isfinite(v) else 0.0)  # noqa
    return a, as_array(np.frompyfunc(finite, 1, 1)(m.view(np.ndarray)))


def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over ``axis``, shifted by the max (no overflow), as scipy's."""
    if not holds_traced([a, b]):
        return _original("logsumexp")(numeric(a), axis, numeric(b), keepdims, return_sign)
    a, m = _shifted(a, axis)
    e = umath.exp(a - m)
    s = (e if b is None else as_array(b) * e).sum(axis=axis, keepdims=True)
    sign = None
    if return_sign:
        sign, s = umath.sign(s), umath.absolute(s)
    out = umath.log(s) + m
    if not keepdims:
        axes = tuple(range(out.ndim)) if axis is None else axis
        out = out.squeeze(axis=axes)
        sign = None if sign is None else sign.squeeze(axis=axes)
    out = scalar_of(result(out))
    return (out, scalar_of(result(sign))) if return_sign else out


def _softmax(x, axis=None):
    if not holds_traced([x]):
        return _original("softmax")(numeric(x), axis)
    x, m = _shifted(x, axis)
    e = umath.exp(x - m)
    return scalar_of(result(e / e.sum(axis=axis, keepdims=True)))


def _log_softmax(x, axis=None):
    if not holds_traced([x]):
        return _original("log_softmax")(numeric(x), axis)
    x, m = _shifted(x, axis)
    s = x - m
    return scalar_of(result(s - umath.log(umath.exp(s).sum(axis=axis, keepdims=True))))


def _original(name):
    return getattr(sys.modules["scipy.special"], name)


def standins():
    """scipy.special's function -> stand-in (called as scipy's, registry.like)."""
    special = sys.modules["scipy.special"]
    table = {}
    for name, impl in (("logsumexp", _logsumexp), ("softmax", _softmax), ("log_softmax", _log_softmax)):
        o = registry.genuine(special, name)
        if o is not None:
            table[o] = registry.like(o, impl)
    return table
