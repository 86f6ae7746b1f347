"""Attributes and globals as rewritten code reads and writes them (overlay_ast.py makes the
calls): a traced value stored where other threads could read it goes to the trace's overlay
(overlay.py), reads consult it first, and anything else reads and writes as Python does
(a read-modify-write of a plain number runs no Python code between its read and its write)."""
from __future__ import annotations

import builtins
import sys
import types

from ..errors import TraceError
from . import registry
from .overlay import IN_PLACE_OPS, CONTAINER_TYPES, MISSING, PLAIN_TYPES, HOLDING, drop_entry, this_overlay, owner_of, put_entry, share_value, traced
from .values import state, user_site


def _overlaid(owner, name):
    ov = getattr(state, "overlay", None)
    d = ov.attrs.get(name) if ov is not None else None
    return d is not None and id(owner_of(owner)) in d


def _class_attr(cls, name):
    for c in cls.__mro__:
        if name in c.__dict__:
            return c.__dict__[name]
    return MISSING


# -- attributes ----------------------------------------------------------------------------------
def getattr_(obj, name, default=MISSING, generic=False):
    """``obj.name`` as the tracing thread sees it (``getattr`` in traced code; ``generic``:
    ``object.__getattribute__``'s, past a __getattribute__ of the class)."""
    get = object.__getattribute__ if generic else getattr
    if not HOLDING:
        return get(obj, name) if default is MISSING else getattr(obj, name, default)
    ov = getattr(state, "overlay", None)
    if name == "__dict__" and ov is not None and id(owner_of(obj)) in ov.owners:
        raise TraceError(f"`.__dict__` of a {type(obj).__name__} is read at {user_site()} while the traced function "
                         "keeps a traced value in it for itself: the dict holds the value from before the trace. "
                         "Read the attribute by name. Create the object inside the traced function, or pass the "
                         "value as an argument (or return it) instead of storing it there")
    d = ov.attrs.get(name) if ov is not None else None
    if d:
        v = d.get(id(owner_of(obj)), MISSING)
        if v is not MISSING:
            return v
        if isinstance(obj, type):
            mro = obj.__mro__
        else:
            mro = () if name in getattr(obj, "__dict__", ()) else type(obj).__mro__
        for c in mro:
            v = d.get(id(c), MISSING)
            if v is not MISSING:
                return v
    if ov is not None and ov.dirty and not isinstance(obj, type):
        p = _class_attr(type(obj), name)
        if type(p) is property and p.fget is not None:  # its reads consult the overlay too
            return registry.HOOKS.intercept(p.fget)(obj)
    return get(obj, name) if default is MISSING else getattr(obj, name, default)


def hasattr_(obj, name):
    try:
        getattr_(obj, name)
    except AttributeError:
        return False
    return True


def setattr_(obj, name, v, generic=False):
    """``obj.name = v`` in traced code (``generic``: object.__setattr__'s, no __setattr__ of the class)."""
    ov = this_overlay()
    if ov is not None and id(obj) in ov.fresh:  # an object this trace made: written as Python writes
        (object.__setattr__ if generic else setattr)(obj, name, v)
        return
    if v.__class__ in PLAIN_TYPES or not traced(v):
        (object.__setattr__ if generic else setattr)(obj, name, v)
        if HOLDING:
            drop_entry(owner_of(obj), name)
        if v.__class__ not in PLAIN_TYPES and ov is not None:
            share_value(v, ov)
        return
    ov = this_overlay()
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
    put_entry(ov, name, owner_of(obj), v)  # (a setter symgrad cannot trace: the value itself is kept)


def delattr_(obj, name):
    had = drop_entry(owner_of(obj), name) if HOLDING else False
    try:
        delattr(obj, name)
    except AttributeError:
        if not had:
            raise


def augattr(obj, name, op, rhs):
    """``obj.name op= rhs`` while something is overlaid, or with a traced ``rhs``."""
    d = getattr(obj, "__dict__", None)
    if rhs.__class__ in PLAIN_TYPES and type(d) is dict and name in d and type(obj).__setattr__ is object.__setattr__ \
            and not hasattr(type(_class_attr(type(obj), name)), "__set__") and not _overlaid(obj, name):
        cur = d[name]  # read, combine, write: no call between them (see the module's doc)
        if op == "Add":
            cur += rhs
        elif op == "Sub":
            cur -= rhs
        elif op == "Mult":
            cur *= rhs
        else:
            cur = IN_PLACE_OPS[op](cur, rhs)
        if cur.__class__ in PLAIN_TYPES:
            d[name] = cur
            return
    else:
        cur = getattr_(obj, name)
        inplace(cur, rhs, f"`.{name} {SYMBOLS[op]}= ...`", lambda: is_shared(cur, "attr", obj))
        cur = IN_PLACE_OPS[op](cur, rhs)
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
            v = d.get(id(g), MISSING)
            if v is not MISSING:
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
    if type(v) in PLAIN_TYPES or not traced(v) or this_overlay() is None:
        if HOLDING:
            drop_entry(g, name)
        g[name] = v
        ov = this_overlay()
        if ov is not None and type(v) not in PLAIN_TYPES:
            share_value(v, ov)
        return v
    put_entry(this_overlay(), name, g, v)
    return v


def augglobal(name, op, rhs):
    f = sys._getframe(1)
    g = f.f_globals
    if rhs.__class__ in PLAIN_TYPES and name in g and not _overlaid(g, name):
        cur = g[name]  # read, combine, write: no call between them
        if op == "Add":
            cur += rhs
        elif op == "Sub":
            cur -= rhs
        elif op == "Mult":
            cur *= rhs
        else:
            cur = IN_PLACE_OPS[op](cur, rhs)
        if cur.__class__ in PLAIN_TYPES:
            g[name] = cur
            return
    else:
        cur = global_value(g, name, f.f_builtins)
        inplace(cur, rhs, f"`{name} {SYMBOLS[op]}= ...`", lambda: True)
        cur = IN_PLACE_OPS[op](cur, rhs)
    setglobal(name, cur, g)


def delglobal(name):
    g = sys._getframe(1).f_globals
    had = drop_entry(g, name) if HOLDING else False
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
    if type(cur) in CONTAINER_TYPES and type(rhs) not in PLAIN_TYPES and traced(rhs) and shared():
        raise refuse(what, cur)
