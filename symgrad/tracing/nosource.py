"""Code symgrad cannot rewrite, called in traced code (rewrite.py): library functions that call
the functions they are given get rewritten ones; a function without source runs its own code
on a view of its globals that maps what it reads (stand-ins for math and builtins, views of
modules and of the user's callable objects, globals overlaid by the trace: overlay.py)."""
from __future__ import annotations

import builtins
import functools
import itertools
import types

import numpy as np

from . import overlay, overlay_names, registry
from .standins import standin
from .usercode import is_user_code, module_file as _module_file


def intercept(f):
    return registry.HOOKS.intercept(f)


CALLBACKS = {map, filter, sorted, functools.reduce, np.vectorize, np.frompyfunc, np.apply_along_axis,
              np.apply_over_axes, np.fromfunction, np.piecewise, itertools.starmap, itertools.accumulate,
              itertools.filterfalse, itertools.takewhile, itertools.dropwhile, itertools.groupby,
              functools.cmp_to_key, functools.lru_cache, functools.cache}


def takes_callbacks(f):
    try:
        return f in CALLBACKS or getattr(f, "__name__", None) == "sort"
    except TypeError:
        return False


def with_callbacks(f):
    """A library function that calls the functions it is given: give it rewritten ones."""
    def call(*a, **k):
        return f(*[_callable(x) for x in a], **{n: _callable(x) for n, x in k.items()})
    return call


def _callable(x):
    return intercept(x) if isinstance(x, (types.FunctionType, types.MethodType, functools.partial)) else x


# -- functions without source: the same code, with its global names mapped as they are read --
PROXY = object()
_WRITES = {"STORE_GLOBAL", "DELETE_GLOBAL"}
_DYNAMIC = {"globals", "vars", "locals", "dir", "eval", "exec"}


def reads_globals_only(code):
    """True if ``code`` (and code nested in it) never writes a global or lists its
    namespace: then it can run on a view of its globals that maps what it reads."""
    import dis
    if _DYNAMIC & set(code.co_names):
        return False
    if any(i.opname in _WRITES for i in dis.get_instructions(code)):
        return False
    return all(reads_globals_only(c) for c in code.co_consts if isinstance(c, types.CodeType))


class Globals(dict):
    """A function's globals as traced code without source sees them: every read goes to
    the real namespace (live), math/builtins functions come back as stand-ins, modules as
    views that do the same for their attributes. It is never written to (the code has no
    global writes)."""

    def __init__(self, real):
        super().__init__()
        self.real = real
        dict.__setitem__(self, "__builtins__", _Builtins(real.get("__builtins__", builtins)))

    def __getitem__(self, k):
        return _view(overlay_names.global_value(self.real, k) if overlay.HOLDING else self.real[k])


class _Builtins(dict):
    def __init__(self, real):
        super().__init__()
        self.real = real if isinstance(real, dict) else vars(real)

    def __getitem__(self, k):
        return _view(self.real[k])


class _ModuleView:
    """A module whose functions are read through ``intercept``; writes go to the module (traced
    values to the trace's overlay)."""

    def __init__(self, module):
        object.__setattr__(self, "_module", module)

    def __getattr__(self, k):
        return _view(overlay_names.getattr_(object.__getattribute__(self, "_module"), k))

    def __setattr__(self, k, v):
        overlay_names.setattr_(object.__getattribute__(self, "_module"), k, v)

    def __delattr__(self, k):
        overlay_names.delattr_(object.__getattribute__(self, "_module"), k)


class _CallableView:
    """A callable object of the user's, called through ``intercept``; its attributes, writes
    and isinstance are the object's."""

    def __init__(self, obj):
        object.__setattr__(self, "_obj", obj)

    @property
    def __class__(self):
        return type(object.__getattribute__(self, "_obj"))

    def __call__(self, *a, **k):
        obj = object.__getattribute__(self, "_obj")
        return intercept(obj)(*a, **k)

    def __getattr__(self, k):
        return overlay_names.getattr_(object.__getattribute__(self, "_obj"), k)

    def __setattr__(self, k, v):
        overlay_names.setattr_(object.__getattribute__(self, "_obj"), k, v)


def _view(v):
    """What code without source reads for a global value: functions through ``intercept``,
    callable objects of the user's through a view that calls them so (classes stay classes)."""
    if isinstance(v, types.ModuleType):
        return _ModuleView(v)
    if isinstance(v, type):  # float, bool: still types (dtype=float, isinstance(x, float))
        return v
    if isinstance(v, (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial,
                      np.ufunc)) or standin(v) is not None or takes_callbacks(v):
        return intercept(v)
    if not isinstance(v, type) and callable(v) and is_user_code(type(v).__module__, _module_file(type(v))):
        return _CallableView(v)
    return v
