"""Traced stand-ins for ``math``, ``numpy`` and builtins, and the rewriting that installs them.

``rewrite(fn)`` returns a copy of ``fn`` whose globals, closure cells and defaults
refer to the stand-ins instead of the originals, recursively through helper
functions and user modules, however they were imported (``import math as m``,
``from math import pow as p``). Nothing global is patched, so other threads see
the real modules. Each stand-in calls the original when no argument is traced."""
from __future__ import annotations

import builtins
import contextlib
import enum
import functools
import math
import sys
import threading
import types

import numpy as np
import sympy as sp

from . import mathfns
from .errors import TraceError
from .trace import Condition, Value, apply, select_max, select_min, user_site, where
from .usercode import is_library, is_user_module


def _traced(args):
    return any(isinstance(a, (Value, Condition)) or
               (isinstance(a, np.ndarray) and a.dtype == object) for a in args)


def _shim(original, sym):
    @functools.wraps(original)
    def shim(*args):
        if not _traced(args):
            return original(*args)
        return apply(sym, *args)
    return shim


def _unsupported(name, original):
    @functools.wraps(original)
    def shim(*args, **kw):
        if _traced(args):
            raise TraceError(f"math.{name} on a traced value at {user_site()} is not differentiable "
                             "or not supported by symgrad")
        return original(*args, **kw)
    return shim


def _reduce(name, original, combine, start):
    @functools.wraps(original)
    def shim(iterable, *a, **kw):
        xs = list(iterable)
        if not _traced(xs + list(a) + list(kw.values())):
            return original(xs, *a, **kw)
        return functools.reduce(combine, xs, a[0] if a else kw.get("start", start))
    return shim


def _math_module():
    m = types.ModuleType("math", "symgrad's traced stand-in for the math module")
    for k in dir(math):
        if not k.startswith("_"):
            setattr(m, k, getattr(math, k))
    for name, sym in mathfns.MATH.items():
        if hasattr(math, name):
            setattr(m, name, _shim(getattr(math, name), sym))
    for name in ("isnan", "isinf", "isfinite", "isclose", "fmod", "remainder", "modf", "frexp",
                 "factorial", "comb", "perm", "gcd", "lcm", "isqrt", "nextafter", "ulp"):
        if hasattr(math, name):
            setattr(m, name, _unsupported(name, getattr(math, name)))
    m.fsum = _reduce("fsum", math.fsum, lambda a, b: a + b, 0)
    m.prod = _reduce("prod", math.prod, lambda a, b: a * b, 1)
    m.dist = lambda p, q: m.hypot(*[a - b for a, b in zip(p, q)]) if _traced(list(p) + list(q)) else math.dist(p, q)
    m.trunc = lambda x: apply(lambda e: sp.sign(e) * mathfns.Floor(abs(e)), x) if isinstance(x, Value) else math.trunc(x)
    return m


def _minmax(original, pick):
    @functools.wraps(original)
    def shim(*args, **kw):
        xs = list(args[0]) if len(args) == 1 else list(args)
        if not _traced(xs):
            return original(*args, **kw)
        if kw.get("key") is not None:
            raise TraceError(f"{original.__name__}(..., key=...) over traced values at {user_site()}: "
                             "write the comparison with symgrad.where")
        if not xs:
            if "default" in kw:
                return kw["default"]
            raise ValueError(f"{original.__name__}() arg is an empty sequence")
        return functools.reduce(pick, xs)
    return shim


def _pow(x, y, mod=None):
    if mod is not None:
        if _traced([x, y, mod]):
            raise TraceError(f"pow(x, y, mod) on traced values at {user_site()} is not differentiable")
        return builtins.pow(x, y, mod)
    return x**y


class _Ufunc:
    """A numpy ufunc that also works on traced values and object arrays of them."""

    def __init__(self, ufunc, traced):
        """``traced(*elements)``: the result for elements of which at least one is traced."""
        self._ufunc, self._traced = ufunc, traced
        self._obj = np.frompyfunc(self._element, ufunc.nin, 1)
        functools.update_wrapper(self, ufunc)

    def _element(self, *args):
        return self._traced(*args) if _traced(args) else self._ufunc(*args)

    def __call__(self, *args, **kw):
        if kw or not _traced(args):
            return self._ufunc(*args, **kw)
        return elementwise(self._obj, args)

    def __getattr__(self, k):
        return getattr(self._ufunc, k)


def _boxed(a):
    if isinstance(a, np.ndarray):
        return a.view(np.ndarray)  # a TracedArray would send the frompyfunc back to us
    box = np.empty((), dtype=object)
    box[()] = a
    return box


def elementwise(pyfunc, args):
    """Apply a frompyfunc over traced scalars/arrays (Values boxed, so numpy does not re-dispatch)."""
    if not any(isinstance(a, np.ndarray) for a in args):
        return _call_element(pyfunc, args)
    out = pyfunc(*[_boxed(a) for a in args])
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _call_element(pyfunc, args):
    out = pyfunc(*[_boxed(a) for a in args])
    return out[()] if isinstance(out, np.ndarray) else out


def _npwhere(cond, *ab):
    if len(ab) == 2 and _traced([cond, *ab]):
        return where(cond, *ab)
    return np.where(cond, *ab)


_PICKS = {"maximum": select_max, "fmax": select_max, "minimum": select_min, "fmin": select_min}


class _NumpyProxy(types.ModuleType):
    """numpy, with ufuncs that accept traced values and a traced ``where``/``clip``."""

    def __init__(self):
        super().__init__("numpy")
        self.where = _npwhere
        self.clip = lambda a, lo, hi, **kw: self.minimum(self.maximum(a, lo), hi) if _traced([a, lo, hi]) else np.clip(a, lo, hi, **kw)

    def __getattr__(self, k):
        v = getattr(np, k)
        if isinstance(v, np.ufunc):
            v = numpy_ufunc(v)
            setattr(self, k, v)
        return v


@functools.lru_cache(maxsize=None)
def numpy_ufunc(ufunc):
    name = ufunc.__name__
    if name in _PICKS:
        return _Ufunc(ufunc, _PICKS[name])
    relations = {"greater": "Gt", "greater_equal": "Ge", "less": "Lt", "less_equal": "Le",
                 "equal": "Eq", "not_equal": "Ne"}
    sym = getattr(sp, relations[name]) if name in relations else mathfns.NUMPY.get(name)
    if sym is None:
        def fail(*args, **kw):
            if _traced(args):
                raise TraceError(f"numpy.{name} on traced values at {user_site()} is not supported by symgrad")
            return ufunc(*args, **kw)
        return fail
    return _Ufunc(ufunc, lambda *args: apply(sym, *args))


MATH = _math_module()
NUMPY = _NumpyProxy()
BUILTINS = dict(builtins.__dict__)
BUILTINS.update(min=_minmax(builtins.min, select_min), max=_minmax(builtins.max, select_max), pow=_pow)

# Originals (by identity) -> stand-ins, for names bound directly: `from math import pow`.
_DIRECT = {id(math): MATH, id(np): NUMPY}
for _k, _v in vars(math).items():
    if callable(_v):
        _DIRECT[id(_v)] = getattr(MATH, _k)
for _k in ("min", "max", "pow"):
    _DIRECT[id(getattr(builtins, _k))] = BUILTINS[_k]
for _k in dir(np):
    _v = getattr(np, _k, None)
    if isinstance(_v, np.ufunc):
        _DIRECT.setdefault(id(_v), numpy_ufunc(_v))
_DIRECT[id(np.where)] = _npwhere

class _LazyModule(types.ModuleType):
    """A user module whose attributes are rewritten on first access."""

    def __init__(self, original, rewriter):
        super().__init__(original.__name__, original.__doc__)
        self.__dict__["_sg"] = (original, rewriter)

    def __getattr__(self, k):
        original, rewriter = self.__dict__["_sg"]
        v = rewriter.value(getattr(original, k))
        setattr(self, k, v)
        return v


# Containers up to this size are rewritten element by element (tables of functions).
_MAX_CONTAINER = 10_000


class _Rewriter:
    def __init__(self):
        self.memo, self.globals_memo = {}, {}
        self.patched, self.restore = set(), []  # user classes whose methods are rewritten
        self.builtins = dict(BUILTINS, __import__=self._import)

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        """`import` run by traced code: the imported module is rewritten like a global."""
        return self.value(builtins.__import__(name, globals, locals, fromlist, level))

    def value(self, v):
        hit = _DIRECT.get(id(v))
        if hit is not None:
            return hit
        if id(v) in self.memo:
            return self.memo[id(v)]
        if isinstance(v, types.FunctionType) and not is_library(v.__module__):
            return self.function(v)
        if isinstance(v, types.MethodType) and isinstance(v.__func__, types.FunctionType):
            new = self.memo[id(v)] = types.MethodType(self.value(v.__func__), v.__self__)
        elif isinstance(v, functools.partial):
            new = self.memo[id(v)] = functools.partial(
                self.value(v.func), *map(self.value, v.args),
                **{k: self.value(x) for k, x in v.keywords.items()})
        elif isinstance(v, types.ModuleType) and is_user_module(v):
            new = self.memo[id(v)] = _LazyModule(v, self)
        elif type(v) in (tuple, list, dict) and len(v) <= _MAX_CONTAINER:
            self.memo[id(v)] = v  # a container that holds itself
            items = list(v.items()) if isinstance(v, dict) else list(v)
            new_items = [(k, self.value(x)) for k, x in items] if isinstance(v, dict) else \
                [self.value(x) for x in items]
            same = all(a is b for a, b in zip(
                [x for _, x in items] if isinstance(v, dict) else items,
                [x for _, x in new_items] if isinstance(v, dict) else new_items))
            new = v if same else (dict(new_items) if isinstance(v, dict) else type(v)(new_items)
                                  if type(v) in (tuple, list) else v)
            self.memo[id(v)] = new
        elif isinstance(v, type) and _is_user_class(v):
            self.patch_class(v)
            return v
        elif _is_user_object(v):
            self.patch_class(type(v))
            self.patch_attributes(v)
            return v
        else:
            return v
        return new

    def patch_class(self, cls):
        """Rewrite the methods of a user class in place, for the duration of the trace.

        The class stays the same object (isinstance, type(self) is C, super(), class state
        and instances made during the trace all behave as in Python); its methods see the
        traced stand-ins. Stand-ins fall back to the originals on plain numbers, so another
        thread calling these methods meanwhile gets the same results."""
        for klass in cls.__mro__:
            if klass in self.patched or klass is object or not _is_user_class(klass):
                continue
            self.patched.add(klass)
            if issubclass(klass, enum.Enum):
                continue
            for k, a in list(vars(klass).items()):
                if isinstance(a, types.FunctionType):
                    new = self.value(a)
                elif isinstance(a, (staticmethod, classmethod)) and isinstance(a.__func__, types.FunctionType):
                    new = type(a)(self.value(a.__func__))
                elif isinstance(a, property):
                    new = property(*[self.value(f) if f else None for f in (a.fget, a.fset, a.fdel)], a.__doc__)
                else:
                    continue
                try:
                    type.__setattr__(klass, k, new)
                    self.restore.append((klass, k, a))
                except (TypeError, AttributeError):  # a class that refuses: left as it is
                    pass

    def patch_attributes(self, obj):
        """Functions stored on a user object (self.activation = math.tanh), rewritten in place."""
        if id(obj) in self.memo or not isinstance(getattr(obj, "__dict__", None), dict):
            return
        self.memo[id(obj)] = obj
        for k, a in list(obj.__dict__.items()):
            new = self.value(a)
            if new is not a:
                obj.__dict__[k] = new
                self.restore.append((obj.__dict__, k, a))

    def undo(self):
        for owner, k, a in reversed(self.restore):
            if isinstance(owner, dict):
                owner[k] = a
            else:
                type.__setattr__(owner, k, a)
        self.restore.clear()

    def function(self, fn):
        # Register the copy before filling its globals and cells: recursion finds it.
        g, fresh = self.globals_memo.get(id(fn.__globals__)), False
        if g is None:
            g, fresh = {"__builtins__": self.builtins}, True
            self.globals_memo[id(fn.__globals__)] = g
        cells = tuple(types.CellType() for _ in fn.__closure__ or ())
        new = types.FunctionType(fn.__code__, g, fn.__name__, None, cells or None)
        self.memo[id(fn)] = new
        new.__qualname__, new.__module__ = fn.__qualname__, fn.__module__
        new.__dict__.update(fn.__dict__)
        if fresh:
            for k, v in fn.__globals__.items():
                if k != "__builtins__":
                    g[k] = self.value(v)
        for old, cell in zip(fn.__closure__ or (), cells):
            try:
                cell.cell_contents = self.value(old.cell_contents)
            except ValueError:  # an empty cell (a name assigned later in the outer function)
                pass
        if fn.__defaults__:
            new.__defaults__ = tuple(map(self.value, fn.__defaults__))
        if fn.__kwdefaults__:
            new.__kwdefaults__ = {k: self.value(v) for k, v in fn.__kwdefaults__.items()}
        return new


def _is_user_class(cls):
    mod = sys.modules.get(cls.__module__)
    return mod is not None and is_user_module(mod)


def _is_user_object(v):
    """An instance of a class defined in user code (its methods may call math)."""
    return not isinstance(v, (type, types.ModuleType, types.FunctionType)) and _is_user_class(type(v))


@contextlib.contextmanager
def rewritten(fn):
    """``fn`` with math/numpy/builtins replaced by traced stand-ins, recursively; the
    methods of user classes it reaches are rewritten in place until the block ends."""
    with _PATCH_LOCK:
        r = _Rewriter()
        try:
            yield r.function(fn) if isinstance(fn, types.FunctionType) else r.value(fn)
        finally:
            r.undo()


_PATCH_LOCK = threading.RLock()
