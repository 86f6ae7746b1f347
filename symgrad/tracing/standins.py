"""Traced stand-ins for ``math``, builtins and numpy functions, found by the identity of the
original; and which calls are refused because their results change from call to call.

``standin(f)`` is what a call of ``f`` becomes in traced code (rewrite.py asks at every
call, so a replaced ``math.sin`` is looked up as whatever it is now). Each stand-in calls
the original when no argument is traced. numpy ufuncs need no stand-in: they reach
symgrad through ``__array_ufunc__`` of the traced values themselves (ufuncs.py)."""
from __future__ import annotations

import builtins
import functools
import math
import sys
import types
import warnings

import numpy as np

from . import names as ops
from ..errors import ScalarUsedAsArray, TraceError
from . import linalg, nanfuncs, numpy_branches, numpy_fns, registry, unshaped  # noqa: F401  (fill registry.TABLE)
from .lazy import LazyArray, Unrollable
from .values import Condition, Value, as_number, apply, user_site, where


from .ufuncs import holds_traced, traced  # noqa: E402


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
    if isinstance(a, LazyArray):
        if a.size != 1:
            raise Unrollable(f"{getattr(fn, '__name__', 'a math function')}() of an array at {user_site()}")
        return a.at(tuple((0, ()) for _ in a.shape))
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


@functools.wraps(math.fsum)
def _fsum(iterable):
    xs = list(iterable)
    if not traced(xs):
        return math.fsum(xs)
    return apply("fsum", *xs) if len(xs) > 1 else apply("add", xs[0], 0.0)


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


def _own(module, name):
    """``module``'s own function ``name``, or None: one replaced before symgrad was imported is
    not math's, and is traced as whatever it is (registry.genuine)."""
    return registry.genuine(module, name)


def _math():
    """original math function -> stand-in."""
    table = {_own(math, name): _op(_own(math, name), op) for name, op in ops.MATH.items() if _own(math, name)}
    specials = {
        "log": _log, "hypot": _hypot,
        "ldexp": lambda x, i: x * 2.0 ** i if isinstance(i, (int, np.integer)) else x * 2 ** i,
        "fma": lambda x, y, z: x * y + z,
        "dist": lambda p, q: _hypot(*[a - b for a, b in zip(p, q)]),
    }
    for name, f in specials.items():
        original = _own(math, name)
        if original is not None:
            table[original] = functools.wraps(original)(
                lambda *a, _f=f, _o=original: _f(*a) if traced(_flat(a)) else _o(*a))
    table[math.fsum] = _fsum
    table[math.prod] = _fold(math.prod, lambda a, b: a * b, 1)
    for name in ("isclose", "modf", "frexp",
                 "factorial", "comb", "perm", "gcd", "lcm", "isqrt", "nextafter", "ulp", "sumprod"):
        if _own(math, name):
            table[_own(math, name)] = _unsupported(name, _own(math, name))
    table.pop(None, None)
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


def select_max(a, b):
    """Python's max(a, b): b if b > a else a (the first at a tie, nan as Python has it: not
    numpy's maximum, so a select, not that op); the one returned is the object given (an
    np.int8 stays one)."""
    c = as_number(b) > as_number(a)
    return where(c, b, a) if isinstance(c, Condition) else (b if c else a)


def select_min(a, b):
    c = as_number(b) < as_number(a)
    return where(c, b, a) if isinstance(c, Condition) else (b if c else a)


def _pow(base, exp, mod=None):
    if mod is not None:
        if traced([base, exp, mod]):
            raise TraceError(f"pow(x, y, mod) on traced values at {user_site()} is not differentiable")
        return builtins.pow(base, exp, mod)
    return base**exp


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


def _number(original):
    """float(c) and int(c) of a traced comparison: the 0/1 step, as numpy computes it."""
    @functools.wraps(original)
    def f(*args, **kw):
        if len(args) == 1 and isinstance(args[0], Condition):
            return args[0].number()
        return original(*args, **kw)
    return f


def _truth(x=False):
    """bool() of a traced number is the condition ``x != 0`` (its truth, as an ``if`` takes it)."""
    if isinstance(x, Condition):
        return x
    if isinstance(x, Value):
        return x != 0.0
    return bool(x)


def _isinstance(obj, classinfo):
    """isinstance(x, np.ndarray) of an array kept as a loop is True, as of the array it stands for."""
    if isinstance(obj, LazyArray) and _names_ndarray(classinfo):
        return True
    return isinstance(obj, classinfo)


def _names_ndarray(classinfo):
    if isinstance(classinfo, tuple):
        return any(_names_ndarray(c) for c in classinfo)
    return isinstance(classinfo, type) and issubclass(np.ndarray, classinfo)


STANDINS = _math()
STANDINS.update({f: s for f, s in ((_own(builtins, "min"), _minmax(builtins.min, select_min)),
                                   (_own(builtins, "max"), _minmax(builtins.max, select_max)),
                                   (_own(builtins, "pow"), _pow), (_own(builtins, "isinstance"), _isinstance))
                 if f is not None})
STANDINS.update({float: _number(float), int: _number(int), bool: _truth})
unshaped.check_table()  # numpy's stand-ins: an argument traced as a scalar for want of shapes=, used as an array
STANDINS.update(registry.TABLE)
STANDINS = {id(k): (k, v) for k, v in STANDINS.items()}
_scipy = []  # scipy.special's stand-ins, added once the user's code has imported it


def _scipy_elements():
    """scipy.special's traced ufunc -> function of elements (registry.element_of asks once
    scipy.special is imported: special.py is imported here, not before)."""
    from . import special
    return special.ufunc_elements()


registry.HOOKS.scipy_elements = _scipy_elements


def standin(f):
    """The stand-in for ``f`` if it has one, else None."""
    hit = STANDINS.get(id(f))
    if hit is None and not _scipy and "scipy.special" in sys.modules:
        from . import special
        _scipy.append(special)
        STANDINS.update({id(k): (k, v) for k, v in special.standins().items()})
        hit = STANDINS.get(id(f))
    if hit is not None and hit[0] is f:
        return hit[1]
    t = type(f)
    if t in _NUMPY_FUNCTIONS or t is types.MethodType and isinstance(f.__self__, type):  # (a class's classmethod)
        return _untraced(f)
    return None


# -- numpy's functions without a traced form ---------------------------------------------------
_NUMPY_FUNCTIONS = (type(np.concatenate), type(np.fft.fft), type(np.frompyfunc), type(_scipy_elements))
# numpy's functions that call the functions they are given: rewrite.py gives them rewritten ones
_CALLS_BACK = {np.frompyfunc, np.apply_along_axis, np.apply_over_axes, np.fromfunction}
_GUARDS = {}  # id(numpy function) (a classmethod: of its function and class) -> (it, its guard)
_INSTEAD = {"numpy.fft": "a discrete Fourier transform of n real values is a product with constant matrices: with "
                         "k = np.arange(n), C = np.cos(2 * np.pi * np.outer(k, k) / n) and S = np.sin(...), "
                         "np.fft.fft(x) is C @ x - 1j * (S @ x): write its real and imaginary parts so",
            "numpy.polynomial": "evaluate the polynomial with np.polyval(coefficients, x) or Horner's rule in Python",
            "numpy.random": "draw the random numbers outside the function and pass them as an argument"}


def _untraced(f):
    """A numpy (or scipy) function symgrad has no stand-in for (np.fft.fft, np.convolve, a numpy
    class's classmethod such as np.polynomial.Polynomial.fit ...), called as it is: numpy's own code on
    traced values, which works where it is made of ufuncs. Where it fails on traced values, the
    error says why at the user's line: a forgotten shapes=, numpy's own error where numpy raises
    it on numbers too (np.insert out of bounds), else that symgrad cannot trace it."""
    method = type(f) is types.MethodType
    key = (id(f.__func__), id(f.__self__)) if method else id(f)
    hit = _GUARDS.get(key)
    if hit is not None and (hit[0] == f if method else hit[0] is f):
        return hit[1]
    owner = f.__self__ if method else None
    module = getattr(owner if method else f, "__module__", None)
    if not isinstance(module, str) or not module.startswith(("numpy", "scipy")) or f in _CALLS_BACK or volatile(f) \
            or not method and not isinstance(getattr(f, "__self__", None), (type(np), type(None))):
        return None
    name = f"{module.split('._')[0]}.{f'{owner.__name__}.' if method else ''}{getattr(f, '__name__', '?')}"
    instead = next((t for m, t in _INSTEAD.items() if name.startswith(m + ".")), None)
    path = unshaped.path_of(f)  # np.any, np.convolve ...: operands that must not be a forgotten shapes=

    @functools.wraps(f)
    def guard(*a, **kw):
        if path is not None:
            unshaped.precheck(name, path, a, kw)
        try:
            return f(*a, **kw)
        except (TypeError, ValueError, IndexError, AttributeError, ArithmeticError, TraceError) as e:
            given = list(a) + list(kw.values())
            if isinstance(e, ScalarUsedAsArray) or not holds_traced(given):
                raise
            unshaped.failed(name, a, kw, e)  # of an argument traced as a scalar: a forgotten shapes=
            if _raises_on_numbers(f, a, kw, e):  # the user's own error (np.insert(x, 10, 1.0) of 3 entries)
                _at(e, f"{name} at {user_site()}")
                raise
            why = str(e).split(" at ", 1)[0] if isinstance(e, TraceError) else f"{type(e).__name__}: {e}"
            msg = (f"{name} of traced values at {user_site()}: symgrad has no traced form of it, and "
                   f"{name.split('.')[0]}'s own code cannot compute it on traced values ({why}), so symgrad cannot "
                   "differentiate it. Write it with what symgrad traces (numpy's ufuncs, np.sum, np.dot, np.where, "
                   "np.linalg.solve ...: docs/tracing.md)" + (f"; {instead}" if instead else ""))
            raise _kind(type(e))(msg) from None
    _GUARDS[key] = (f, guard)
    return guard


def _numbers(x):
    """``x`` with plain numbers (zeros) for its traced values, of the same shapes; plain arrays
    copied (numpy's function may write into them)."""
    if isinstance(x, (Value, Condition)):
        return False if isinstance(x, Condition) else 0.0
    if isinstance(x, LazyArray):
        return np.zeros(x.shape)
    if isinstance(x, np.ndarray):
        return np.array([_numbers(v) for v in x.flat]).reshape(x.shape) if x.dtype == object and x.size else x.copy()
    if type(x) in (list, tuple):
        return type(x)(_numbers(v) for v in x)
    return x


def _raises_on_numbers(f, a, kw, e):
    """Whether numpy's ``f`` raises the error ``e`` (its type and message) on numbers of the same
    shapes as the traced call ``f(*a, **kw)`` had: then it is no failure to trace (run on the error path only)."""
    if isinstance(e, TraceError):
        return False
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(*[_numbers(v) for v in a], **{k: _numbers(v) for k, v in kw.items()})
    except Exception as plain:  # noqa: BLE001 - any error numpy raises on numbers
        return type(plain) is type(e) and str(plain) == str(e)
    return False


def _at(e, where):
    """numpy's error ``e`` with where the user called it appended to its message."""
    if e.args and isinstance(e.args[0], str) and str(e) == e.args[0]:
        e.args = (f"{e.args[0]} ({where})",) + e.args[1:]
    else:
        e.add_note(f"({where})")


def _kind(cls):
    """A TraceError that is numpy's exception ``cls`` too, or one of the builtin class it is of."""
    if issubclass(cls, TraceError):
        return TraceError
    builtin = next((c for c in cls.__mro__ if c.__module__ == "builtins"), Exception)
    return unshaped.both(TraceError, cls) or unshaped.both(TraceError, builtin) or TraceError
