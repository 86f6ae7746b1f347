"""How traced code reaches the stand-ins, without changing anything anyone else can see.

A user function is recompiled from its source with every call ``f(a, ...)`` turned into
``__symgrad_call__(f)(a, ...)``: at the moment of the call, ``intercept`` maps the callee
(whatever it is then: a replaced ``math.sin`` included) to its traced stand-in, to a
rewritten copy of a user function, or leaves it alone. The copy shares the original's
globals, closure cells and defaults, and the call still happens in the user's frame, so
writes, ``sys._getframe`` and zero-argument ``super()`` behave as in Python. Nothing is
patched: other threads keep running the original code, and a traced value the copy stores
where they could read it (a global, a cell, an attribute of an object the trace did not
create) stays in the trace's overlay (overlay.py, overlay_ast.py). The source is used only if
it compiles to exactly the code that is running (recompile.py); otherwise the function runs as
it is."""
from __future__ import annotations

import ast
import builtins
import inspect
import functools
import sys
import types

from .. import forksafe
from ..errors import TraceError
from . import overlay, overlay_items, overlay_watch, registry, selects, values
from .branch_checks import effects
from .nosource import PROXY as _PROXY, Globals as _Globals, reads_globals_only as _reads_globals_only, takes_callbacks as _takes_callbacks, with_callbacks as _with_callbacks
from .recompile import NoSource, compile_node, find
from .rewrite_calls import CALL
from .standins import standin, volatile
from .usercode import STDLIB, LIBRARIES, is_user_code, module_file as _module_file  # noqa: F401

# -- the call interceptor ----------------------------------------------------------------------
_codes = {}  # original code -> (rewritten code, closure indices), or None: run the original
_effects = {}  # original code -> what it changes outside itself (see selects.effects)
_lock = forksafe.RLock()


def intercept(f):
    """What a call of ``f`` in rewritten code calls (the hot path of tracing)."""
    if getattr(values.state, "builder", None) is None:
        return f  # a rewritten copy run outside a trace behaves as the original
    if selects.in_branch():
        caller = sys._getframe(1)
        _in_branch(f, caller)
        return selects.no_out(_guard(f, _callee(f)), caller)
    g = _callee(f)
    return _guard(f, g) if g is f and overlay.HOLDING else g


def _guard(f, g):
    """``g`` is ``f`` itself (code that does not read the overlay): refused where it is given an
    object the overlay keeps something of (overlay.guard)."""
    if g is f and overlay.HOLDING and values.state.overlay.owners:
        return overlay_watch.guard(f)
    return g


registry.HOOKS.intercept = intercept


def _callee(f):
    s = standin(f)
    if s is not None:
        return s
    why = volatile(f)
    if why is not None:
        raise TraceError(f"{why}() is called at {values.user_site()}: its result changes from call to "
                         "call, but a traced function is traced once and its result would be frozen "
                         "into the compiled code. Pass the value as an argument instead.")
    t = type(f)
    if t is types.FunctionType:
        return function(f)
    if t is types.MethodType:
        fn = f.__func__
        if type(fn) is types.FunctionType:
            new = function(fn)
            return f if new is fn else types.MethodType(new, f.__self__)
    if t is functools.partial:
        return functools.partial(intercept(f.func), *f.args, **f.keywords)
    if t is _CACHED or t is types.MethodType and type(f.__func__) is _CACHED:
        return _uncached(f)
    if _takes_callbacks(f):
        return _with_callbacks(f)
    if isinstance(f, type):
        return _constructor(f)
    if t is types.BuiltinFunctionType and _foreign(getattr(f, "__self__", None)):
        return _compiled(f)
    if t.__module__ != "builtins":
        call = inspect.getattr_static(t, "__call__", None)  # as Python finds it: static, class or plain
        if isinstance(call, staticmethod):
            return intercept(call.__func__)
        if isinstance(call, classmethod):
            return types.MethodType(intercept(call.__func__), t)
        if type(call) is types.FunctionType:
            new = function(call)
            if new is not call:
                return types.MethodType(new, f)
    return overlay_items.object_method(f) or f


_CACHED = type(functools.lru_cache(None)(len))


def _uncached(f):
    """A functools.lru_cache/cache function: called past its cache with a traced argument, or while
    this trace keeps values private (a result would stay in the cache after the trace)."""
    fn = f.__func__ if type(f) is types.MethodType else f

    def call(*a, **k):
        ov = getattr(values.state, "overlay", None)
        if overlay.traced(a) or overlay.traced(k) or ov is not None and ov.dirty:
            g = intercept(fn.__wrapped__)
            return g(f.__self__, *a, **k) if fn is not f else g(*a, **k)
        return f(*a, **k)
    return call


def _foreign(module):
    """Whether a C function of ``module`` is one that cannot take traced values (cmath's, or a
    third-party extension's): the standard library's (sys._getframe, warnings.warn: they look
    at the caller's frame, so they are never wrapped) and numpy's are not."""
    if not isinstance(module, types.ModuleType):
        return False
    name = module.__name__
    if name == "cmath":
        return True
    path = getattr(module, "__file__", None) or ""
    return bool(path) and not path.startswith(STDLIB) and name.split(".")[0] not in ("numpy", "symgrad", "_cffi_backend")


def _compiled(f):
    """A module's C function (cmath.sin, a replacement of math.sin, an extension's), called as it
    is: it cannot be traced into, so where it asks a traced value for its float() the error names it."""
    def call(*a, **k):
        try:
            return f(*a, **k)
        except values.Leaving as e:
            if e.__traceback__.tb_next is None or e.__traceback__.tb_next.tb_next is not None:
                raise  # not asked by f itself (by Python code f called back)
            name = f"{f.__self__.__name__}.{f.__name__}"
            raise TraceError(f"{name}() takes {e.what} of a traced value at {values.user_site()}: it is compiled "
                             "code, which symgrad cannot trace into, and it would make the value a constant (its "
                             f"derivative lost). Call a function symgrad traces instead (math, numpy, "
                             f"scipy.special, or Python code); if {name} replaced one of those, restore it") from None
    return call


def _in_branch(f, caller):
    """A call made while both branches of an ``if`` on a traced value run: refused if it
    would change an object both branches see (a user function's own check is in function())."""
    selects.check_call(f, caller)


def _effects_in_branch(f):
    why = _effects.get(f.__code__)
    if why and selects.in_branch():
        raise TraceError(f"{f.__qualname__}() is called inside a branch of an `if` whose condition is traced, "
                         f"at {values.user_site()}, and it changes something outside itself ({why}): both "
                         "branches run, so the change would happen twice. Return the values instead")


def function(f):
    """``f`` recompiled with its calls intercepted, or ``f`` itself (library code, code the
    rewriter made, or no source that matches the running code)."""
    code = f.__code__
    if code in _made:
        return f  # a function defined inside rewritten code: already rewritten
    hit = _codes.get(code, False)
    if hit is False:
        with _lock:
            hit = _codes[code] = _rewrite(f)
    if hit is None:
        return f
    _effects_in_branch(f)
    if f.__defaults__ is not None or f.__closure__ is not None or f.__kwdefaults__ is not None:
        overlay_items.held(f)  # the containers they hold are not this trace's
    if hit is _PROXY:
        g = types.FunctionType(code, _Globals(f.__globals__), f.__name__, f.__defaults__, f.__closure__)
    else:
        g = types.FunctionType(hit, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


# The rewritten code calls the interceptor by this name, found among the builtins: no local,
# no cell, no global of the user's module changes (locals() and co_freevars stay as written).
setattr(builtins, CALL, intercept)
_made = overlay_watch.MADE  # code objects the rewriter made (nested ones included)


def _remember(code):
    _made.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _remember(c)


def _constructor(cls):
    """A user class called in traced code: ``__new__`` and ``__init__`` rewritten, as
    ``type.__call__`` would call them."""
    if type(cls).__call__ is not type.__call__ or not is_user_code(cls.__module__, _module_file(cls)):
        return cls

    def construct(*a, **k):
        new = cls.__new__
        if new is object.__new__:
            if (a or k) and cls.__init__ is object.__init__:
                raise TypeError(f"{cls.__name__}() takes no arguments")
            obj = object.__new__(cls)
            overlay_items.born(obj)
        else:
            obj = intercept(new)(cls, *a, **k)
        if isinstance(obj, cls) and type(obj).__init__ is not object.__init__:
            intercept(type(obj).__init__)(obj, *a, **k)
        return obj
    return construct


# -- rewriting one function (its source and how it is compiled again: recompile.py) -----------------
def _rewrite(f):
    code = f.__code__
    module = getattr(f, "__module__", None)
    if not is_user_code(module, code.co_filename):
        return None
    try:
        if CALL not in getattr(f, "__builtins__", vars(builtins)):
            raise NoSource("it runs with builtins of its own")
        text, node, imports = find(code, f.__globals__)
        new = compile_node(text, node, code, transform=True, imports=imports)
        if not isinstance(node, ast.Lambda):
            g = f.__globals__
            why = effects(node, lambda name: isinstance(g.get(name), types.ModuleType))
            if why:
                _effects[code] = why
    except NoSource as e:
        if _reads_globals_only(code):
            return _PROXY
        values.UNREWRITTEN[code] = str(e)
        return None
    _remember(new)
    return new
