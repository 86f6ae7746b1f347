"""What traced code writes into state other threads can read, kept in the tracing thread.

Rewritten code (rewrite.py, overlay_ast.py) stores into globals, module attributes, attributes
of objects and closure cells through ``HOOK`` (attributes and globals: overlay_names.py; items
and containers: overlay_items.py; here, the overlay itself). A traced value stored into an
object not created in this trace, a module, a class, a global or a cell goes to the trace's
overlay (``values.state.overlay``: this thread, this trace), which the tracing thread's
rewritten reads consult; it vanishes when the trace ends, so the object never holds it and no
other thread sees it. Anything else writes through, as Python does (``COUNT += 1`` counts, and
a read-modify-write of a plain number runs no Python code between its read and its write, so
another thread's increments are not lost). A traced value put into a container that exists
outside the trace (a global list, a default, a closure's list, an attribute of an object the
trace did not create) cannot be kept private: that raises a TraceError.

Code that does not consult the overlay is refused where it could read those slots while
they hold something (overlay_watch.py): never the value from before the trace.

Reads cost nothing while no trace in any thread has an overlay: rewritten code tests the
builtin list ``DIRTY`` (empty then) before each global or attribute-chain read."""
from __future__ import annotations

import collections
import functools
import operator
import os
import sys
import types

import numpy as np

from .lazy import LazyArray
from .values import Condition, Poison, Value, state

HOOK, DIRTY, PLAIN = "__symgrad_shared__", "__symgrad_dirty__", "__symgrad_plain__"  # builtins (overlay_items)
HOLDING = []  # one entry per trace (any thread) whose overlay holds something
WATCH = [None]  # the profile function of a thread whose overlay holds something (overlay_watch.py)
MISSING = object()
PLAIN_TYPES = frozenset({float, int, bool, str, bytes, complex, type(None), range, type(Ellipsis), np.float64,
                    np.float32, np.int64, np.int32, np.bool_, np.dtype})
OPAQUE_TYPES = (types.ModuleType, type, types.BuiltinFunctionType, types.CodeType, np.ufunc)
TRACED_TYPES = (Value, Condition, Poison, LazyArray)
CONTAINER_TYPES = frozenset({list, dict, set, bytearray, collections.deque, collections.OrderedDict,
                         collections.defaultdict, np.ndarray})
IN_PLACE_OPS = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul, "Div": operator.itruediv,
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
            HOLDING.append(self)
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
        HOLDING.remove(ov)
    state.overlay = outer
    if ov is not None and ov.bad is not None:
        raise ov.bad  # (refused where it ran, but the code around it went on: the trace fails)


def _forked():  # in a forked child only this thread's trace can still run
    HOLDING[:] = [ov for ov in HOLDING if ov is getattr(state, "overlay", None)]


os.register_at_fork(after_in_child=_forked)


def this_overlay():
    """This thread's trace's overlay (None outside a trace)."""
    try:
        return state.overlay
    except AttributeError:  # (a thread that never traced)
        return None


def traced(v):
    """Whether ``v`` is, or holds at any depth, a traced value."""
    if type(v) in PLAIN_TYPES:
        return False
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        t = type(x)
        if t in PLAIN_TYPES:
            continue
        if isinstance(x, TRACED_TYPES):
            return True
        if id(x) in seen or isinstance(x, OPAQUE_TYPES):
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


def share_value(v, ov):
    """``v`` was written where other threads see it: neither it nor what it holds is this
    trace's alone any more."""
    stack, seen = [v], set()
    while stack and len(seen) < 10_000:
        x = stack.pop()
        if type(x) in PLAIN_TYPES or isinstance(x, OPAQUE_TYPES) or id(x) in seen:
            continue
        seen.add(id(x))
        ov.fresh.discard(id(x))
        if type(x) in CONTAINER_TYPES and id(x) not in ov.shared:
            ov.shared.add(id(x))
            ov.keep.append(x)
        if isinstance(x, (list, tuple, set, frozenset, collections.deque)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif not isinstance(x, np.ndarray):
            stack.extend(getattr(x, "__dict__", {}).values())


def owner_of(obj):
    return obj.__dict__ if isinstance(obj, types.ModuleType) else obj


def put_entry(ov, name, owner, v):
    d = ov.attrs.get(name)
    if d is None:
        d = ov.attrs[name] = {}
    if id(owner) not in d:
        ov.keep.append(owner)
    d[id(owner)] = v
    ov.owners.add(id(owner))
    ov.touch()


def drop_entry(owner, name):
    ov = getattr(state, "overlay", None)
    if ov is not None:
        d = ov.attrs.get(name)
        if d:
            return d.pop(id(owner), MISSING) is not MISSING
    return False
