"""Code that does not consult the overlay (overlay.py) must not see its slots while it holds
something: it would read the value from before the trace, a wrong derivative, silently.

From the overlay's first entry until the trace ends ``watch`` is this thread's profile
function (chained to a profiler set before, restored after): user code that runs as Python
calls it, not rewritten (an operator or other special method, a dataclass's generated method,
code without source), is refused at its call if it loads a name the overlay holds (an
attribute of that name of anything, a global of its module, a cell of that name), or is given
an object, class or module the overlay holds something of and loads a name of what reads an
object's attributes by itself (``__dict__``, vars, getattr, copy, dataclasses.astuple ...). Library code that rewritten code
calls with such an object (copy.copy, vars, dataclasses.astuple, pickle) is refused at the
call (``guard``), and so is reading such an object's ``__dict__`` (overlay_names.getattr_). A refusal
swallowed by the code around it still fails the trace (overlay.end raises it)."""
from __future__ import annotations

import collections
import dis
import linecache
import types

import numpy as np

from ..errors import TraceError
from .overlay import MISSING, OPAQUE_TYPES, PLAIN_TYPES, TRACED_TYPES, WATCH
from .usercode import is_user_code
from .values import SYMGRAD_DIR, state, user_site

# -- ---------------------------------------------------------
MADE = set()  # the code objects the rewriter made (rewrite.py): they consult it
_names = {}  # code -> None (not watched) or (its global names, its other names, its free variables)
_NAME_OPS = frozenset(dis.opmap[o] for o in ("LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "LOAD_NAME",
                                             "STORE_NAME", "DELETE_NAME") if o in dis.opmap)
_HAS_NAME = frozenset(dis.hasname)
_REFLECTIVE = frozenset({"__dict__", "vars", "getattr", "__getattribute__", "__getattr__", "attrgetter", "copy",
                         "deepcopy", "asdict", "astuple", "fields", "replace", "dump", "dumps", "__reduce__",
                         "__reduce_ex__", "__getstate__"})  # names of what reads an object's attributes by itself


def _watched(frame):
    code = frame.f_code
    fn = code.co_filename
    if code in MADE or fn.startswith(SYMGRAD_DIR) or fn.startswith("<frozen"):
        return None
    if not fn.startswith("<") and not is_user_code(frame.f_globals.get("__name__"), fn):
        return None  # (library code: refused where rewritten code hands it such an object, see guard)
    glob, other = set(), set()
    for ins in dis.get_instructions(code):
        if ins.opcode in _HAS_NAME and isinstance(ins.argval, str):
            (glob if ins.opcode in _NAME_OPS else other).add(ins.argval)
    return frozenset(glob), frozenset(other), frozenset(code.co_freevars)


def watch(frame, event, arg):
    """The tracing thread's profile function while its overlay holds something."""
    ov = getattr(state, "overlay", None)
    if event != "call":
        if ov is not None and ov.chain is not None:
            ov.chain(frame, event, arg)
        return
    if ov is not None and ov.bad is None and ov.dirty:
        code = frame.f_code
        seen = _names.get(code, MISSING)
        if seen is MISSING:
            seen = _names[code] = _watched(frame)
        if seen is not None:
            what = _reads(ov, frame, *seen)
            if what is not None:
                ov.bad = TraceError(
                    f"{code.co_qualname if hasattr(code, 'co_qualname') else code.co_name}() in {code.co_filename}, "
                    f"line {code.co_firstlineno}, called at {_site(frame.f_back)}, runs as Python calls it (an "
                    "operator or other special method, or code symgrad does not rewrite) while the traced function "
                    f"keeps a traced value in {what} for itself: it would read the value from before the trace "
                    "(a wrong derivative). "
                    "Create the object inside the traced function, or pass the value as an argument (or return "
                    "it) instead of storing it there")
                raise ov.bad
    c = ov.chain if ov is not None else None
    if c is not None:
        c(frame, event, arg)


def _site(f):
    """user_site() from frame ``f`` out."""
    while f is not None and f.f_code.co_filename.startswith(SYMGRAD_DIR):
        f = f.f_back
    if f is None:
        return "an unknown place"
    fn = f.f_code.co_filename
    return f"{f.f_code.co_name}() in {fn}, line {f.f_lineno}: `{linecache.getline(fn, f.f_lineno).strip()}`"


def _reads(ov, frame, glob, other, free):
    """What overlaid slot the code of ``frame`` may read or write, or None."""
    attrs = ov.attrs
    for name in other:
        if attrs.get(name):
            return f"an attribute `.{name}`"
    g = frame.f_globals
    for name in glob:
        d = attrs.get(name)
        if d and id(g) in d and type(g) is dict:  # (a proxy of nosource.py reads the overlay)
            return f"the global `{name}`"
    for name in free:
        if name in ov.cellnames:
            return f"the closure variable `{name}`"
    if ov.owners and (glob & _REFLECTIVE or other & _REFLECTIVE):  # it may read the object's slots by
        code = frame.f_code  # other means than a name it loads (a method that reads none, `len`'s, is free)
        n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
        loc = frame.f_locals
        for name in code.co_varnames[:n]:
            x = loc.get(name)
            if x is not None and _holds(ov, x):
                return f"the {type(x).__name__} it is given as `{name}`"
    return None


def _holds(ov, x, limit=10_000):
    """Whether ``x``, or what it holds, is an object, class or module the overlay keeps
    something of (True past ``limit`` objects: not looked through)."""
    owners, stack, seen = ov.owners, [x], set()
    while stack:
        x = stack.pop()
        t = type(x)
        if t in PLAIN_TYPES or id(x) in seen:
            continue
        if id(x) in owners:
            return True
        seen.add(id(x))
        if len(seen) > limit:
            return True
        if t is types.ModuleType:
            if id(x.__dict__) in owners:
                return True
            continue
        for c in (x.__mro__ if isinstance(x, type) else t.__mro__):
            if id(c) in owners:
                return True
        if isinstance(x, (list, tuple, set, frozenset, collections.deque)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif not isinstance(x, (np.ndarray, np.generic, type, *OPAQUE_TYPES, *TRACED_TYPES)) and id(x) not in ov.fresh:
            d = getattr(x, "__dict__", None)
            if type(d) is dict:
                stack.extend(d.values())
    return False


_HARMLESS = {id(f) for f in (isinstance, issubclass, type, id, callable, len, hash, iter, next, repr, str, format,
                             print, bool, int, float, complex, list, tuple, set, frozenset, dict, sorted, min,
                             max, sum, abs, round, super, zip, enumerate, reversed, range, divmod, pow, any,
                             all, object)}  # they reach an object only through methods _watch sees


def guard(f):
    """``f``, code that does not consult the overlay, as rewritten code calls it while the
    overlay keeps something of an object: refused if it is given one."""
    if id(f) in _HARMLESS:
        return f

    def call(*a, **k):
        ov = state.overlay
        if ov is not None and ov.owners:
            me = getattr(f, "__self__", None)
            for x in (*a, *k.values(), *(() if me is None or isinstance(me, types.ModuleType) else (me,))):
                if _holds(ov, x):
                    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
                    mod = getattr(f, "__module__", None)
                    raise TraceError(
                        f"{mod + '.' if mod and mod != 'builtins' else ''}{name}() is given a "
                        f"{type(x).__name__} at {user_site()} while the traced function keeps a traced value in "
                        "it (or in something it holds) for itself: that code reads the object as it was before "
                        "the trace (a wrong derivative). Create the object inside the traced function, or pass "
                        "the value as an argument (or return it) instead of storing it there")
        return f(*a, **k)
    return call


WATCH[0] = watch
