"""Traced stand-ins for ``math``, builtins and numpy, found by the identity of the original.

``standin(f)`` is what a call of ``f`` becomes in traced code (rewrite.py asks at every
call, so a replaced ``math.sin`` is looked up as whatever it is now). Each stand-in calls
the original when no argument is traced. numpy ufuncs need no stand-in: they reach
symgrad through ``__array_ufunc__`` of the traced values themselves."""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from .. import ops
from ..errors import TraceError
from .values import Condition, TracedArray, Value, apply, select_max, select_min, user_site, where


def traced(args):
    return any(isinstance(a, (Value, Condition)) or (isinstance(a, np.ndarray) and a.dtype == object)
               for a in args)


def _op(original, op):
    @functools.wraps(original)
    def f(*args):
        if not traced(args):
            return original(*args)
        return apply(op, *[_scalar(a, original) for a in args])
    return f


def _scalar(a, fn):
    """A math function's argument: a number; an array of one element is that element (as
    Python's math takes it)."""
    if isinstance(a, np.ndarray):
        if a.size != 1:
            raise TraceError(f"{getattr(fn, '__name__', 'a math function')}() takes a number, got an array "
                             f"of shape {a.shape} at {user_site()}: use the numpy function (np.sin ...)")
        return a.reshape(-1)[0]
    return a


def _unsupported(name, original):
    @functools.wraps(original)
    def f(*args, **kw):
        if traced(list(args) + list(kw.values())):
            raise TraceError(f"math.{name} on a traced value at {user_site()} is not differentiable "
                             "or not supported by symgrad")
        return original(*args, **kw)
    return f


def _fold(original, combine, start):
    @functools.wraps(original)
    def f(iterable, *a, **kw):
        xs = list(iterable)
        if not traced(xs + list(a) + list(kw.values())):
            return original(xs, *a, **kw)
        return functools.reduce(combine, xs, a[0] if a else kw.get("start", start))
    return f


def _log(x, base=None):
    x = _scalar(x, math.log)
    if base is None:
        return apply("log", x)
    base = _scalar(base, math.log)
    t = x if isinstance(x, Value) else base
    b = t.b
    lg = lambda v: apply("log", v) if isinstance(v, Value) else Value(b, b.node("log", b.const(v)))  # noqa: E731
    return lg(x) / lg(base)  # log(2) stays exact until C


def _hypot(*xs):
    return apply("hypot", *xs)


def _math():
    """original math function -> stand-in."""
    table = {getattr(math, name): _op(getattr(math, name), op) for name, op in ops.MATH.items()
             if hasattr(math, name)}
    specials = {
        "log": _log, "hypot": _hypot,
        "ldexp": lambda x, i: x * 2.0 ** i if isinstance(i, (int, np.integer)) else x * 2 ** i,
        "fma": lambda x, y, z: x * y + z,
        "dist": lambda p, q: _hypot(*[a - b for a, b in zip(p, q)]),
    }
    for name, f in specials.items():
        if hasattr(math, name):
            original = getattr(math, name)
            table[original] = functools.wraps(original)(
                lambda *a, _f=f, _o=original: _f(*a) if traced(_flat(a)) else _o(*a))
    table[math.fsum] = _fold(math.fsum, lambda a, b: a + b, 0)
    table[math.prod] = _fold(math.prod, lambda a, b: a * b, 1)
    for name in ("isclose", "fmod", "remainder", "modf", "frexp",
                 "factorial", "comb", "perm", "gcd", "lcm", "isqrt", "nextafter", "ulp", "sumprod"):
        if hasattr(math, name):
            table[getattr(math, name)] = _unsupported(name, getattr(math, name))
    return table


def _flat(args):
    out = []
    for a in args:
        out.extend(a) if isinstance(a, (list, tuple)) else out.append(a)
    return out


def _minmax(original, pick):
    @functools.wraps(original)
    def f(*args, **kw):
        xs = list(args[0]) if len(args) == 1 else list(args)  # (an iterator is consumed here)
        if not traced(xs):
            return original(xs, **kw) if len(args) == 1 else original(*args, **kw)
        if kw.get("key") is not None:
            raise TraceError(f"{original.__name__}(..., key=...) over traced values at {user_site()}: "
                             "write the comparison with symgrad.where")
        if not xs:
            if "default" in kw:
                return kw["default"]
            raise ValueError(f"{original.__name__}() arg is an empty sequence")
        return functools.reduce(pick, xs)
    return f


def _pow(base, exp, mod=None):
    if mod is not None:
        if traced([base, exp, mod]):
            raise TraceError(f"pow(x, y, mod) on traced values at {user_site()} is not differentiable")
        return builtins.pow(base, exp, mod)
    return base**exp


def _npwhere(cond, *ab):
    if len(ab) == 2 and traced([cond, *ab]):
        return where(cond, *ab)
    return np.where(cond, *ab)


def _npclip(a, *args, **kw):
    bounds = list(args[:2]) + [None] * (2 - len(args[:2]))
    for k, names in ((0, ("a_min", "min")), (1, ("a_max", "max"))):
        for name in names:
            if name in kw and kw[name] is not np._NoValue:
                bounds[k] = kw[name]
    rest = {k: v for k, v in kw.items() if k not in ("a_min", "min", "a_max", "max")}
    lo, hi = bounds
    if not traced([a, lo, hi]) or args[2:] or rest:
        return np.clip(a, *args, **kw)
    r = a if lo is None else elementwise(_frompyfunc("maximum", 2), (a, lo))
    return r if hi is None else elementwise(_frompyfunc("minimum", 2), (r, hi))


# -- numpy ufuncs on traced values -----------------------------------------------------------
def _element_op(op, ufunc):
    def element(*xs):
        return apply(op, *xs) if traced(xs) else ufunc(*xs)
    return element


def _element_pick(pick, ufunc):
    def element(a, b):
        return pick(a, b) if traced((a, b)) else ufunc(a, b)
    return element


def _nan_pick(op, propagate):
    """numpy's maximum/minimum (a NaN in either gives NaN) or fmax/fmin (a NaN is ignored):
    b if b beats a, or if b (propagate) / a (ignore) is NaN, else a: the first at a tie."""
    def pick(a, b):
        nan = b if propagate else a
        if isinstance(nan, (float, np.floating)) and math.isnan(nan):
            return b
        beats = apply(op, b, a) if not (isinstance(a, (float, np.floating)) and math.isnan(a)) else False
        if isinstance(nan, Value):
            beats = beats | apply("isnan", nan) if isinstance(beats, Condition) else apply("isnan", nan)
        return where(beats, b, a)
    return pick


def _ufunc_elements():
    """ufunc name -> function of elements (traced or plain)."""
    table = {}
    for name, op in ops.NUMPY.items():
        u = getattr(np, name, None)
        if isinstance(u, np.ufunc):
            table[name] = _element_op(op, u)
    table.update(maximum=_element_pick(_nan_pick("gt", True), np.maximum),
                 fmax=_element_pick(_nan_pick("gt", False), np.fmax),
                 minimum=_element_pick(_nan_pick("lt", True), np.minimum),
                 fmin=_element_pick(_nan_pick("lt", False), np.fmin),
                 square=lambda x: x * x, reciprocal=lambda x: 1.0 / x, positive=lambda x: x)
    return table


_ELEMENT = _ufunc_elements()
_FROMPY = {}


def _frompyfunc(name, nin):
    f = _FROMPY.get(name)
    if f is None:
        f = _FROMPY[name] = np.frompyfunc(_ELEMENT[name], nin, 1)
    return f


def _boxed(a):
    if isinstance(a, np.ndarray):
        return a.view(np.ndarray)  # a TracedArray would send the frompyfunc back to us
    box = np.empty((), dtype=object)
    box[()] = a
    return box


def elementwise(element, args):
    """Apply a function of elements over traced scalars and arrays, numpy-broadcast."""
    pyfunc = element if isinstance(element, np.ufunc) else np.frompyfunc(element, len(args), 1)
    out = pyfunc(*[_boxed(a) for a in args])
    if isinstance(out, np.ndarray):
        return out[()] if out.ndim == 0 else out.view(TracedArray)
    return out


def array_ufunc(ufunc, method, inputs, kw):
    """``__array_ufunc__`` of traced values and arrays: numpy's ufunc machinery on them."""
    out = _object_out(ufunc, kw.pop("out", None))
    plain = [x.view(np.ndarray) if isinstance(x, TracedArray) else x for x in inputs]
    name = ufunc.__name__
    if name not in _ELEMENT:
        if method == "__call__" and any(isinstance(x, (Value, Condition)) for x in plain):
            raise TraceError(f"numpy.{name} on traced values at {user_site()} is not supported by symgrad")
        res = getattr(ufunc, method)(*plain, **kw)  # numpy's object loop (np.matmul ...)
    elif method == "__call__":
        for k in ("casting", "subok", "order"):  # numpy's own code passes these: no effect here
            kw.pop(k, None)
        if kw.get("dtype") in (None, object):
            kw.pop("dtype", None)
        if kw.pop("where", True) is not True or kw:
            raise TraceError(f"numpy.{name}(..., {', '.join(kw) or 'where'}=...) on traced values at "
                             f"{user_site()} is not supported")
        res = elementwise(_frompyfunc(name, ufunc.nin), plain)
    elif method == "reduce":
        res = _reduce(_frompyfunc(name, ufunc.nin), name, plain[0], **kw)
    else:
        res = getattr(_frompyfunc(name, ufunc.nin), method)(*plain, **kw)
    if out is not None:  # numpy's own code (np.mean) writing into an object array: fine
        out[...] = res
        return out.view(TracedArray)
    return res.view(TracedArray) if isinstance(res, np.ndarray) and res.dtype == object else res


def _reduce(pyfunc, name, arr, axis=0, dtype=None, keepdims=False, initial=np._NoValue, where=True):
    """ufunc.reduce over traced values, one axis at a time (np.sum(X), np.max(X, axis=(0, 1)))."""
    if where is not True:
        raise TraceError(f"numpy.{name}.reduce(..., where=...) on traced values at {user_site()} "
                         "is not supported")
    arr = np.asarray(arr, dtype=object)
    axes = range(arr.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = sorted({a % max(arr.ndim, 1) for a in axes}, reverse=True)
    res = arr
    for a in axes:
        res = pyfunc.reduce(res, axis=a)
    if initial is not np._NoValue:
        res = elementwise(pyfunc, (res, initial))
    if keepdims:
        res = np.asarray(res, dtype=object).reshape([1 if k in axes else n for k, n in enumerate(arr.shape)])
    return res


def _object_out(ufunc, out):
    """The out= array of a ufunc on traced values: only object arrays can hold them."""
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    if not outs:
        return None
    if len(outs) == 1 and isinstance(outs[0], np.ndarray) and outs[0].dtype == object:
        return outs[0].view(np.ndarray)
    raise TraceError(f"numpy.{ufunc.__name__}(..., out=...) or an in-place operation stores a traced "
                     f"value into a float array at {user_site()}: build an object array "
                     "(dtype=object) or a list instead")


# -- calls whose results change from call to call ---------------------------------------------
_VOLATILE_MODULES = ("random", "time", "secrets", "uuid")
_VOLATILE_NAMES = {("posix", "urandom"), ("posix", "getrandom"), ("nt", "urandom"), ("datetime", "now"),
                   ("datetime", "today"), ("datetime", "utcnow"), ("date", "today")}


def volatile(f):
    """A description of ``f`` if it returns something new at every call (a random number,
    the time), else None: traced once, it would become a constant in every later process.
    (Recognised by module and owner names, so that neither random nor numpy.random is
    imported to ask.)"""
    owner = getattr(f, "__self__", None)
    if owner is None:
        owner = getattr(f, "__objclass__", None)  # random.Random.random, unbound
    name = getattr(f, "__name__", "")
    cls = owner if isinstance(owner, type) else type(owner)
    if owner is not None:
        for base in getattr(cls, "__mro__", ()):  # a subclass of random.Random draws the same way
            mod = getattr(base, "__module__", "") or ""
            if mod in ("random", "_random") or mod.startswith("numpy.random"):
                return f"{mod}.{base.__name__}.{name}"
    mod = getattr(f, "__module__", None) or ""
    if mod.split(".")[0] in _VOLATILE_MODULES or mod.startswith("numpy.random"):
        return f"{mod}.{name}"
    if (mod or getattr(cls, "__name__", ""), name) in _VOLATILE_NAMES or \
            (getattr(cls, "__name__", None), name) in _VOLATILE_NAMES:
        return f"{mod or cls.__name__}.{name}"
    return None


STANDINS = _math()
STANDINS.update({builtins.min: _minmax(builtins.min, select_min),
                 builtins.max: _minmax(builtins.max, select_max),
                 builtins.pow: _pow, np.where: _npwhere, np.clip: _npclip})
STANDINS = {id(k): (k, v) for k, v in STANDINS.items()}


def standin(f):
    """The stand-in for ``f`` if it has one, else None."""
    hit = STANDINS.get(id(f))
    return hit[1] if hit is not None and hit[0] is f else None
