"""Containers in traced code (overlay.py's rules), and the builtin hook rewritten code calls.

``c[k] = v`` and the methods that put values into a container (``.append`` ...) go through
here: a traced value put into a container that exists outside the trace raises a TraceError
(another thread would see it, and it would stay after the trace); a module's namespace dict
is its globals (overlaid). ``object.__new__`` in traced code marks the object as this trace's."""
from __future__ import annotations

import builtins
import functools
import sys
import types

from . import standins
from .overlay import CONTAINER_TYPES, IN_PLACE_OPS, MISSING, PLAIN_TYPES, DIRTY, HOOK, PLAIN, HOLDING, drop_entry, this_overlay, traced
from .overlay_names import SYMBOLS, augattr, augglobal, delattr_, delglobal, getattr_, global_, hasattr_, inplace, is_shared, refuse, setattr_, setglobal
from .values import state


def born(obj):
    """``obj`` was created by this trace (a user class called in traced code)."""
    try:
        state.overlay.fresh.add(id(obj))  # (an id outlives its object only for objects created later: fresh too)
    except AttributeError:  # (outside a trace)
        pass


def held(f):
    """The containers ``f``'s defaults and closure hold exist outside the trace."""
    ov = this_overlay()
    if ov is None or id(f) in ov.held:
        return
    ov.held.add(id(f))
    ov.keep.append(f)
    found = list(f.__defaults__ or ()) + list((f.__kwdefaults__ or {}).values())
    for c in f.__closure__ or ():
        try:
            found.append(c.cell_contents)
        except ValueError:
            pass
    for v in found:
        if type(v) in CONTAINER_TYPES and id(v) not in ov.shared:
            ov.shared.add(id(v))
            ov.keep.append(v)


# -- closure cells (names some function of the file declares nonlocal) ------------------------------
def cell(c, name):
    ov = getattr(state, "overlay", None)
    if ov is not None:
        v = ov.cells.get(id(c), MISSING)
        if v is not MISSING:
            return v
    try:
        return c.cell_contents
    except ValueError:
        raise NameError(f"cannot access free variable {name!r} where it is not associated with a value in "
                        "enclosing scope", name=name) from None


def setcell(c, name, v):
    ov = this_overlay()
    if ov is None or type(v) in PLAIN_TYPES or not traced(v):
        if ov is not None:
            ov.cells.pop(id(c), None)
        c.cell_contents = v
        return v
    if id(c) not in ov.cells:
        ov.keep.append(c)
    ov.cells[id(c)] = v
    ov.cellnames.add(name)
    ov.touch()
    return v


def delcell(c):
    """Before ``del name`` of a cell: whether the overlay held its value (then it is gone)."""
    ov = getattr(state, "overlay", None)
    return ov is not None and ov.cells.pop(id(c), MISSING) is not MISSING


def augcell(c, name, op, rhs):
    ov = getattr(state, "overlay", None)
    if rhs.__class__ in PLAIN_TYPES and (ov is None or id(c) not in ov.cells):
        try:
            cur = c.cell_contents  # read, combine, write: no call between them
        except ValueError:
            cur = cell(c, name)  # (raises)
        if op == "Add":
            cur += rhs
        elif op == "Sub":
            cur -= rhs
        elif op == "Mult":
            cur *= rhs
        else:
            cur = IN_PLACE_OPS[op](cur, rhs)
        if cur.__class__ in PLAIN_TYPES:
            c.cell_contents = cur
            return
    else:
        cur = cell(c, name)
        inplace(cur, rhs, f"`{name} {SYMBOLS[op]}= ...`", lambda: is_shared(cur, "free", None))
        cur = IN_PLACE_OPS[op](cur, rhs)
    setcell(c, name, cur)


# -- containers ------------------------------------------------------------------------------------------
def _namespace(c):
    """The module whose namespace dict ``c`` is, or None."""
    m = sys.modules.get(c.get("__name__")) if type(c) is dict and type(c.get("__name__")) is str else None
    return m if m is not None and getattr(m, "__dict__", None) is c else None


def setitem(c, k, v, kind, owner):
    """``c[k] = v`` in traced code."""
    if kind != "global" and kind != "attr" and type(c) is not dict:  # (the common case: the function's own)
        ov = getattr(state, "overlay", None)
        if ov is None or id(c) not in ov.shared:
            c[k] = v
            return
    if type(v) not in PLAIN_TYPES and (type(c) is dict or is_shared(c, kind, owner)) and traced(v):
        if _namespace(c) is not None:
            setglobal(k, v, c)
            return
        if is_shared(c, kind, owner):
            raise refuse("an item assignment", c)
    elif HOLDING and type(c) is dict and _namespace(c) is not None:
        drop_entry(c, k)
    c[k] = v


def augitem(c, k, op, rhs, kind, owner):
    cur = c[k]
    inplace(cur, rhs, f"`[...] {SYMBOLS[op]}= ...`", lambda: is_shared(c, kind, owner))
    setitem(c, k, IN_PLACE_OPS[op](cur, rhs), kind, owner)


class _Guarded:
    """A method that puts values into a shared container: refused with a traced argument."""

    def __init__(self, method, c, name):
        self.__self__, self.__name__, self._method = c, name, method

    def __call__(self, *a, **k):
        if self.__name__ in ("extend", "update", "extendleft") and a and not isinstance(a[0], (list, tuple, dict)):
            a = (list(a[0].items()) if hasattr(a[0], "keys") else list(a[0]),) + a[1:]
        if traced(a) or traced(k):
            raise refuse(f".{self.__name__}()", self.__self__)
        return self._method(*a, **k)


def method(c, name, kind, owner):
    """``c.name`` for a method that puts values into ``c`` (append, update, ...)."""
    m = getattr_(c, name) if HOLDING else getattr(c, name)
    if kind != "global" and kind != "attr":
        ov = getattr(state, "overlay", None)
        if ov is None or id(c) not in ov.shared:
            return m
    if type(m) in (types.BuiltinMethodType, types.MethodWrapperType) and is_shared(c, kind, owner):
        return _Guarded(m, c, name)
    return m


def _new(cls, *a, **k):
    """``object.__new__`` in traced code: the object is this trace's."""
    obj = object.__new__(cls, *a, **k)
    born(obj)
    return obj


class _Hook:
    """What rewritten code calls, as one builtin (short names: the code is generated)."""
    a, sa, da, aa = staticmethod(getattr_), staticmethod(setattr_), staticmethod(delattr_), staticmethod(augattr)
    g, sg, ag, dg = staticmethod(global_), staticmethod(setglobal), staticmethod(augglobal), staticmethod(delglobal)
    c, sc, ac, dc = staticmethod(cell), staticmethod(setcell), staticmethod(augcell), staticmethod(delcell)
    si, ai, m = staticmethod(setitem), staticmethod(augitem), staticmethod(method)


setattr(builtins, HOOK, _Hook())
setattr(builtins, DIRTY, HOLDING)
setattr(builtins, PLAIN, PLAIN_TYPES)
# the builtins that read or write attributes, as traced code calls them
for _f, _s in ((getattr, getattr_), (setattr, setattr_), (hasattr, hasattr_), (delattr, delattr_)):
    standins.STANDINS[id(_f)] = (_f, _s)
_OBJECT = {id(f): (f, s) for f, s in ((object.__setattr__, functools.partial(setattr_, generic=True)),
                                      (object.__getattribute__, functools.partial(getattr_, generic=True)),
                                      (object.__new__, _new))}
_WRAPPER = type(object().__setattr__)


def object_method(f):
    """What a call of object's own __setattr__, __getattribute__ or __new__ becomes (or None)."""
    hit = _OBJECT.get(id(f))
    if hit is not None and hit[0] is f:
        return hit[1]
    if type(f) is _WRAPPER and f.__qualname__ == "object.__setattr__":  # super().__setattr__(name, value)
        return functools.partial(setattr_, f.__self__, generic=True)
    return None
