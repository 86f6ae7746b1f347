"""What traced code writes into state other threads can read, kept in the tracing thread.

Rewritten code (rewrite.py, overlay_ast.py) stores into globals, module attributes,
attributes of objects and closure cells through ``HOOK``. A traced value stored into an
object not created in this trace, a module, a class, a global or a cell goes to the trace's
overlay (``values.state.overlay``: this thread, this trace), which the tracing thread's
rewritten reads consult; it vanishes when the trace ends, so the object never holds it and
no other thread sees it. Anything else writes through, as Python does (``COUNT += 1`` counts,
and a read-modify-write of a plain number runs no Python code between its read and its
write, so another thread's increments are not lost). A traced value put into a container
that exists outside the trace (a global list, a default, a closure's list, an attribute of
an object the trace did not create) cannot be kept private: that raises a TraceError.

Code that does not consult the overlay is refused where it could read those slots while
they hold something (overlay_watch.py): never the value from before the trace.

Reads cost nothing while no trace in any thread has an overlay: rewritten code tests the
builtin list ``DIRTY`` (empty then) before each global or attribute-chain read."""
from __future__ import annotations

import builtins
import collections
import functools
import operator
import os
import sys
import types

import numpy as np

from ..errors import TraceError
from . import registry
from .lazy import LazyArray
from .values import Condition, Poison, Value, state, user_site

HOOK, DIRTY, PLAIN = "__symgrad_shared__", "__symgrad_dirty__", "__symgrad_plain__"  # builtins (overlay_items)
_dirty = []  # one entry per trace (any thread) whose overlay holds something
WATCH = [None]  # the profile function of a thread whose overlay holds something (overlay_watch.py)
_MISS = object()
_PLAIN = frozenset({float, int, bool, str, bytes, complex, type(None), range, type(Ellipsis), np.float64,
                    np.float32, np.int64, np.int32, np.bool_, np.dtype})
_OPAQUE = (types.ModuleType, type, types.BuiltinFunctionType, types.CodeType, np.ufunc)
_TRACED = (Value, Condition, Poison, LazyArray)
_CONTAINERS = frozenset({list, dict, set, bytearray, collections.deque, collections.OrderedDict,
                         collections.defaultdict, np.ndarray})
_IOPS = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul, "Div": operator.itruediv,
         "FloorDiv": operator.ifloordiv, "Mod": operator.imod, "Pow": operator.ipow, "MatMult": operator.imatmul,
         "BitOr": operator.ior, "BitAnd": operator.iand, "BitXor": operator.ixor, "LShift": operator.ilshift,
         "RShift": operator.irshift}
INSERTERS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "appendleft", "extendleft",
                       "__setitem__", "put", "fill", "itemset", "setfield"})


class Overlay:
    """One trace's private state: ``attrs`` name -> {id(owner): value} (an owner is an object,
    a class, or a module's namespace), ``cells`` id(cell) -> value, ``keep`` what those ids
    refer to, ``fresh`` ids of objects this trace created (written as Python writes), ``shared``
    ids of containers other code holds (a traced value is refused there)."""
    __slots__ = ("attrs", "cells", "keep", "fresh", "shared", "held", "dirty", "owners", "cellnames", "prev",
                 "chain", "bad")

    def __init__(self):
        self.attrs, self.cells, self.keep, self.fresh, self.shared, self.held = {}, {}, [], set(), set(), set()
        self.dirty, self.owners, self.cellnames, self.prev, self.chain, self.bad = False, set(), set(), None, None, None

    def touch(self):
        if not self.dirty:
            self.dirty = True
            _dirty.append(self)
            self.prev = sys.getprofile()  # (this thread's)
            self.chain = self.prev if callable(self.prev) and self.prev is not WATCH[0] else None
            sys.setprofile(WATCH[0])


def begin():
    """A trace starts in this thread: it gets an empty overlay (returned: what to restore)."""
    outer = getattr(state, "overlay", None)
    state.overlay = Overlay()
    return outer


def end(outer):
    """The trace ended (or failed): its overlay vanishes."""
    ov = getattr(state, "overlay", None)
    if ov is not None and ov.dirty:
        sys.setprofile(ov.prev)
        _dirty.remove(ov)
    state.overlay = outer
    if ov is not None and ov.bad is not None:
        raise ov.bad  # (refused where it ran, but the code around it went on: the trace fails)



def _forked():  # in a forked child only this thread's trace can still run
    _dirty[:] = [ov for ov in _dirty if ov is getattr(state, "overlay", None)]


os.register_at_fork(after_in_child=_forked)


def _ov():
    """This thread's trace's overlay (None outside a trace)."""
    try:
        return state.overlay
    except AttributeError:  # (a thread that never traced)
        return None


def traced(v):
    """Whether ``v`` is, or holds at any depth, a traced value."""
    if type(v) in _PLAIN:
        return False
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        t = type(x)
        if t in _PLAIN:
            continue
        if isinstance(x, _TRACED):
            return True
        if id(x) in seen or isinstance(x, _OPAQUE):
            continue
        seen.add(id(x))
        if len(seen) > 100_000:
            return True  # (too large to look through: kept private)
        if isinstance(x, (list, tuple, set, frozenset, collections.deque)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, np.ndarray):
            if x.dtype == object:
                stack.extend(x.ravel().tolist())
        elif isinstance(x, np.generic):
            continue
        elif t is types.FunctionType:
            stack.extend(x.__defaults__ or ())
            stack.extend((x.__kwdefaults__ or {}).values())
            for c in x.__closure__ or ():
                try:
                    stack.append(c.cell_contents)
                except ValueError:
                    pass
        elif t is types.MethodType:
            stack += [x.__self__, x.__func__]
        elif t is functools.partial:
            stack += [x.func, *x.args, *x.keywords.values()]
        else:
            stack.extend(getattr(x, "__dict__", {}).values())
            for cls in t.__mro__:
                for name in cls.__dict__.get("__slots__", ()):
                    stack.append(getattr(x, name, None))
    return False


def _share(v, ov):
    """``v`` was written where other threads see it: neither it nor what it holds is this
    trace's alone any more."""
    stack, seen = [v], set()
    while stack and len(seen) < 10_000:
        x = stack.pop()
        if type(x) in _PLAIN or isinstance(x, _OPAQUE) or id(x) in seen:
            continue
        seen.add(id(x))
        ov.fresh.discard(id(x))
        if type(x) in _CONTAINERS and id(x) not in ov.shared:
            ov.shared.add(id(x))
            ov.keep.append(x)
        if isinstance(x, (list, tuple, set, frozenset, collections.deque)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif not isinstance(x, np.ndarray):
            stack.extend(getattr(x, "__dict__", {}).values())


def _owner(obj):
    return obj.__dict__ if isinstance(obj, types.ModuleType) else obj


def _put(ov, name, owner, v):
    d = ov.attrs.get(name)
    if d is None:
        d = ov.attrs[name] = {}
    if id(owner) not in d:
        ov.keep.append(owner)
    d[id(owner)] = v
    ov.owners.add(id(owner))
    ov.touch()


def _overlaid(owner, name):
    ov = getattr(state, "overlay", None)
    d = ov.attrs.get(name) if ov is not None else None
    return d is not None and id(_owner(owner)) in d


def _drop(owner, name):
    ov = getattr(state, "overlay", None)
    if ov is not None:
        d = ov.attrs.get(name)
        if d:
            return d.pop(id(owner), _MISS) is not _MISS
    return False


def _class_attr(cls, name):
    for c in cls.__mro__:
        if name in c.__dict__:
            return c.__dict__[name]
    return _MISS


# -- attributes ----------------------------------------------------------------------------------
def getattr_(obj, name, default=_MISS, generic=False):
    """``obj.name`` as the tracing thread sees it (``getattr`` in traced code; ``generic``:
    ``object.__getattribute__``'s, past a __getattribute__ of the class)."""
    get = object.__getattribute__ if generic else getattr
    if not _dirty:
        return get(obj, name) if default is _MISS else getattr(obj, name, default)
    ov = getattr(state, "overlay", None)
    if name == "__dict__" and ov is not None and id(_owner(obj)) in ov.owners:
        raise TraceError(f"`.__dict__` of a {type(obj).__name__} is read at {user_site()} while the traced function "
                         "keeps a traced value in it for itself: the dict holds the value from before the trace. "
                         "Read the attribute by name. Create the object inside the traced function, or pass the "
                         "value as an argument (or return it) instead of storing it there")
    d = ov.attrs.get(name) if ov is not None else None
    if d:
        v = d.get(id(_owner(obj)), _MISS)
        if v is not _MISS:
            return v
        if isinstance(obj, type):
            mro = obj.__mro__
        else:
            mro = () if name in getattr(obj, "__dict__", ()) else type(obj).__mro__
        for c in mro:
            v = d.get(id(c), _MISS)
            if v is not _MISS:
                return v
    if ov is not None and ov.dirty and not isinstance(obj, type):
        p = _class_attr(type(obj), name)
        if type(p) is property and p.fget is not None:  # its reads consult the overlay too
            return registry.HOOKS.intercept(p.fget)(obj)
    return get(obj, name) if default is _MISS else getattr(obj, name, default)


def hasattr_(obj, name):
    try:
        getattr_(obj, name)
    except AttributeError:
        return False
    return True


def setattr_(obj, name, v, generic=False):
    """``obj.name = v`` in traced code (``generic``: object.__setattr__'s, no __setattr__ of the class)."""
    ov = _ov()
    if ov is not None and id(obj) in ov.fresh:  # an object this trace made: written as Python writes
        (object.__setattr__ if generic else setattr)(obj, name, v)
        return
    if v.__class__ in _PLAIN or not traced(v):
        (object.__setattr__ if generic else setattr)(obj, name, v)
        if _dirty:
            _drop(_owner(obj), name)
        if v.__class__ not in _PLAIN and ov is not None:
            _share(v, ov)
        return
    ov = _ov()
    if ov is None:  # (outside a trace)
        setattr(obj, name, v)
        return
    if not isinstance(obj, (type, types.ModuleType)):
        cls = type(obj)
        custom = cls.__setattr__
        if not generic and type(custom) is types.FunctionType:  # the class's own, traced (its stores come here)
            traced_ = registry.HOOKS.intercept(custom)
            if traced_ is not custom:
                traced_(obj, name, v)
                return
        p = _class_attr(cls, name)
        if type(p) is property:
            if p.fset is None:
                setattr(obj, name, v)  # Python's AttributeError
            traced_ = registry.HOOKS.intercept(p.fset)
            if traced_ is not p.fset:
                traced_(obj, v)
                return
    _put(ov, name, _owner(obj), v)  # (a setter symgrad cannot trace: the value itself is kept)


def delattr_(obj, name):
    had = _drop(_owner(obj), name) if _dirty else False
    try:
        delattr(obj, name)
    except AttributeError:
        if not had:
            raise


def augattr(obj, name, op, rhs):
    """``obj.name op= rhs`` while something is overlaid, or with a traced ``rhs``."""
    d = getattr(obj, "__dict__", None)
    if rhs.__class__ in _PLAIN and type(d) is dict and name in d and type(obj).__setattr__ is object.__setattr__ \
            and not hasattr(type(_class_attr(type(obj), name)), "__set__") and not _overlaid(obj, name):
        cur = d[name]  # read, combine, write: no call between them (see the module's doc)
        if op == "Add":
            cur += rhs
        elif op == "Sub":
            cur -= rhs
        elif op == "Mult":
            cur *= rhs
        else:
            cur = _IOPS[op](cur, rhs)
        if cur.__class__ in _PLAIN:
            d[name] = cur
            return
    else:
        cur = getattr_(obj, name)
        inplace(cur, rhs, f"`.{name} {SYMBOLS[op]}= ...`", lambda: is_shared(cur, "attr", obj))
        cur = _IOPS[op](cur, rhs)
    setattr_(obj, name, cur)


# -- globals (the caller's module) ------------------------------------------------------------------
def global_(name):
    """A global (or builtin) name read while some trace has an overlay."""
    f = sys._getframe(1)
    return global_value(f.f_globals, name, f.f_builtins)


def global_value(g, name, builtins_=None):
    ov = getattr(state, "overlay", None)
    if ov is not None:
        d = ov.attrs.get(name)
        if d:
            v = d.get(id(g), _MISS)
            if v is not _MISS:
                return v
    try:
        return g[name]
    except KeyError:
        pass
    b = builtins_ if builtins_ is not None else g.get("__builtins__", builtins)
    try:
        return (b if isinstance(b, dict) else vars(b))[name]
    except KeyError:
        raise NameError(f"name {name!r} is not defined", name=name) from None


def setglobal(name, v, g=None):
    g = sys._getframe(1).f_globals if g is None else g
    if type(v) in _PLAIN or not traced(v) or _ov() is None:
        if _dirty:
            _drop(g, name)
        g[name] = v
        ov = _ov()
        if ov is not None and type(v) not in _PLAIN:
            _share(v, ov)
        return v
    _put(_ov(), name, g, v)
    return v


def augglobal(name, op, rhs):
    f = sys._getframe(1)
    g = f.f_globals
    if rhs.__class__ in _PLAIN and name in g and not _overlaid(g, name):
        cur = g[name]  # read, combine, write: no call between them
        if op == "Add":
            cur += rhs
        elif op == "Sub":
            cur -= rhs
        elif op == "Mult":
            cur *= rhs
        else:
            cur = _IOPS[op](cur, rhs)
        if cur.__class__ in _PLAIN:
            g[name] = cur
            return
    else:
        cur = global_value(g, name, f.f_builtins)
        inplace(cur, rhs, f"`{name} {SYMBOLS[op]}= ...`", lambda: True)
        cur = _IOPS[op](cur, rhs)
    setglobal(name, cur, g)


def delglobal(name):
    g = sys._getframe(1).f_globals
    had = _drop(g, name) if _dirty else False
    try:
        del g[name]
    except KeyError:
        if not had:
            raise NameError(f"name {name!r} is not defined", name=name) from None


SYMBOLS = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**",
           "MatMult": "@", "BitOr": "|", "BitAnd": "&", "BitXor": "^", "LShift": "<<", "RShift": ">>"}


def is_shared(c, kind, owner):
    """Whether container ``c``, reached as ``kind`` says (a global, an attribute of ``owner``, a
    closure's or a local), is seen outside this trace."""
    if kind == "global":
        return True
    ov = getattr(state, "overlay", None)
    if ov is not None and id(c) in ov.shared:
        return True
    return kind == "attr" and not (ov is not None and id(owner) in ov.fresh)


def refuse(what, c):
    kind = type(c).__name__
    return TraceError(f"{what} puts a traced value into a {kind} that exists outside the traced function, at "
                      f"{user_site()}: other threads would see it, and it would stay there after the trace. "
                      f"Build a new {kind} inside the function (or return the values) instead")


def inplace(cur, rhs, what, shared):
    if type(cur) in _CONTAINERS and type(rhs) not in _PLAIN and traced(rhs) and shared():
        raise refuse(what, cur)
