"""What code converted by rewrite_branches.py calls at run time, through one builtin (``__symgrad_if__``).

An ``if`` asks ``test``/``traced`` whether its condition is traced; if so both branches run
(``paths`` marks the frame as inside them) and ``merge`` makes each variable a select
of its two values; a variable without a single value becomes a Poison that raises where it
is used. ``ifexp``, ``and_``, ``or_``, ``not_`` and ``chain`` are the expressions, with
Python's short-circuit where the operands are plain."""
from __future__ import annotations

import builtins
import operator
import sys

import numpy as np

from ..errors import TraceError
from . import values
from . import lazy
from .values import Condition, Poison, TracedArray, Value, where

HOOK = "__symgrad_if__"
RESULT = "__symgrad_r__"  # the value a converted branch returns
MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
    "popitem", "add", "discard", "appendleft", "extendleft", "popleft", "rotate", "difference_update",
    "intersection_update", "symmetric_difference_update", "fill", "put", "itemset", "resize", "partition",
    "setfield", "setflags", "byteswap", "__setitem__", "__delitem__", "__setattr__", "copyto", "place",
    "putmask", "fill_diagonal", "write", "writelines"})


class _Unbound:
    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()


def test(c):
    """The condition of an ``if``: a Condition when it is traced (a traced number means
    ``x != 0``), else the object itself, whose truth Python then takes as usual."""
    if isinstance(c, Value):
        return c != 0.0
    return c


def traced(c):
    return isinstance(c, Condition)


def paths(c):
    """The branches a converted ``if`` runs: the one Python would take, or both (True first)
    when its condition is traced; while both run, the caller's frame is in a branch."""
    if not isinstance(c, Condition):
        yield bool(c)
        return
    frames = getattr(values.state, "branch_frames", None)
    if frames is None:
        frames = values.state.branch_frames = []
    frame = sys._getframe(1)
    frames.append(frame)
    try:
        yield True
        yield False
    finally:  # the loop ended, or an exception left it (CPython closes the generator then)
        for k in range(len(frames) - 1, -1, -1):
            if frames[k] is frame:
                del frames[k]
                break


def both():
    """Whether the caller's frame is running both branches of an ``if`` (a ``return`` there
    keeps its value for the merge)."""
    return both_at(sys._getframe(1))


def plain(c, what, why):
    """The test of a loop, or of an ``if`` that cannot be converted: refused when traced."""
    if isinstance(c, (Condition, Value)):
        raise TraceError(f"{what} at {values.user_site()} depends on a traced value{why}. symgrad "
                         "converts an `if` whose branches only assign variables or return values; write "
                         "this one as values, e.g. `y = symgrad.where(cond, a, b)`")
    return c


def merge(c, t, f, name, site):
    """The value of variable ``name`` after an ``if`` on traced ``c`` that gave it ``t`` in
    one branch and ``f`` in the other."""
    if t is f:
        return t
    if name == RESULT:
        name = "the value returned"
    else:
        name = repr(name)
    if t is UNBOUND or f is UNBOUND:
        which = "the `if` branch" if f is UNBOUND else "the `else` branch"
        return Poison(f"{name} is assigned only in {which} of the `if` at {site}, whose condition is "
                      "traced; assign it in both branches (or before the `if`)")
    return _select(c, t, f, name, site)


def _is_condition(x):
    return isinstance(x, (Condition, bool, np.bool_))


def _select(c, t, f, name, site):
    for x in (t, f):
        if isinstance(x, Poison):
            return x
    if _is_condition(t) and _is_condition(f):
        return (c & t) | (~c & f)
    if _number(t) and _number(f):
        return where(c, t, f)
    if isinstance(t, (list, tuple)) and type(t) is type(f) and len(t) == len(f) and type(t) in (list, tuple):
        return type(t)(_select(c, a, b, f"{name}[{k}]", site) for k, (a, b) in enumerate(zip(t, f)))
    if isinstance(t, lazy.LazyArray) or isinstance(f, lazy.LazyArray):
        if np.shape(t) != np.shape(f):
            raise lazy.Unrollable(f"{name} is given arrays of shapes {np.shape(t)} and {np.shape(f)} by the `if` "
                                  f"at {site}")
        return lazy.elementwise(where, (c, t, f))
    if isinstance(t, np.ndarray) or isinstance(f, np.ndarray):
        if np.shape(t) == np.shape(f):
            r = where(c, _obj(t), _obj(f))
            return r.view(TracedArray) if isinstance(r, np.ndarray) else r
    else:
        try:
            if type(t) is type(f) and bool(t == f):
                return t
        except Exception:  # noqa: BLE001  (objects that do not compare: different)
            pass
    # not a select: refused now, not where it is used (`v is None`, isinstance(v, str) cannot be
    # caught there)
    raise TraceError(f"{name} is given {_kind(t)} in one branch and {_kind(f)} in the other by the `if` at {site}, "
                     "whose condition is traced: symgrad can only select between numbers, conditions, or "
                     "lists, tuples and arrays of the same shape of them. Give it values of one kind in "
                     "both branches")


def _kind(x):
    if x is None:
        return "None"
    if isinstance(x, (str, bytes, int, float)):
        return f"{type(x).__name__} {x!r}"
    if isinstance(x, np.ndarray):
        return f"an array of shape {x.shape}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of length {len(x)}"
    return f"a {type(x).__name__}"


def _number(x):
    return isinstance(x, (Value, Condition, int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _obj(x):
    return x.astype(object) if isinstance(x, np.ndarray) and x.dtype != object else x


def ifexp(c, a, b, site):
    """``a() if c else b()``."""
    c = test(c)
    if not traced(c):
        return a() if c else b()
    return _select(c, a(), b(), "the conditional expression", site)


def and_(v, *rest):
    """``v and r1() and r2() ...``: as Python where ``v`` is plain; a traced ``v`` takes the
    rest as a select (all of them, or their conjunction when they are comparisons)."""
    for r in rest:
        c = test(v)
        if traced(c):
            w = r()
            v = c & w if _is_condition(w) and isinstance(v, Condition) else _select(c, w, v, "`and`", "")
        elif not v:
            return v
        else:
            v = r()
    return v


def or_(v, *rest):
    """``v or r1() or r2() ...``."""
    for r in rest:
        c = test(v)
        if traced(c):
            w = r()
            v = c | w if _is_condition(w) and isinstance(v, Condition) else _select(c, v, w, "`or`", "")
        elif v:
            return v
        else:
            v = r()
    return v


def not_(v):
    if isinstance(v, Condition):
        return ~v
    if isinstance(v, Value):
        return v == 0.0
    return not v


_COMPARE = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge, "Eq": operator.eq,
            "NotEq": operator.ne, "Is": operator.is_, "IsNot": operator.is_not,
            "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b}


def chain(left, *pairs):
    """``left op1 b op2 c ...`` with each operand evaluated once, in order, only as needed."""
    acc, r = None, True
    for op, thunk in zip(pairs[::2], pairs[1::2]):
        right = thunk()
        r = _COMPARE[op](left, right)
        if isinstance(r, Condition):
            acc = r if acc is None else acc & r
        elif not r:
            return r
        left = right
    return r if acc is None else acc


_INPLACE = {"Add": "__iadd__", "Sub": "__isub__", "Mult": "__imul__", "Div": "__itruediv__",
            "FloorDiv": "__ifloordiv__", "Mod": "__imod__", "Pow": "__ipow__", "MatMult": "__imatmul__",
            "BitOr": "__ior__", "BitAnd": "__iand__", "BitXor": "__ixor__", "LShift": "__ilshift__",
            "RShift": "__irshift__"}


def inplace(v, op, name, site):
    """Before ``name op= ...`` in a converted branch: refused while both branches run if ``v``
    would change in place (a list, array, set, dict): the change would happen twice."""
    if hasattr(type(v), _INPLACE[op]) and both_at(sys._getframe(1)):
        if isinstance(v, lazy.LazyArray):  # refused as the unrolled trace refuses it
            raise lazy.Unrollable(f"`{name} {_SYMBOL.get(op, op)}= ...` in a branch at {site}")
        raise TraceError(f"`{name} {_SYMBOL.get(op, op)}= ...` at {site} changes a {type(v).__name__} in place "
                         "inside a branch of an `if` whose condition is traced: both branches run, so the "
                         f"change would happen twice. Write `{name} = {name} {_SYMBOL.get(op, op)} ...` (a new "
                         "object)")


_SYMBOL = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**",
           "MatMult": "@", "BitOr": "|", "BitAnd": "&", "BitXor": "^", "LShift": "<<", "RShift": ">>"}


def both_at(frame):
    return any(f is frame for f in getattr(values.state, "branch_frames", ()))


def no_out(f, caller):
    """``f`` as called from ``caller``: where that frame runs both branches of an ``if``, a
    call that writes into an ``out=`` array is refused (it would be written twice)."""
    if not both_at(caller):
        return f

    def call(*a, **kw):
        if kw.get("out") is not None:
            raise TraceError(f"a call with out= inside a branch of an `if` whose condition is traced, at "
                             f"{values.user_site()}: both branches run, so the array would be written twice. "
                             "Assign the result to a variable instead")
        return f(*a, **kw)
    return call


class _Hook:
    """What converted code calls, as one builtin (no name of the user's module changes)."""
    test, traced, plain, merge = staticmethod(test), staticmethod(traced), staticmethod(plain), staticmethod(merge)
    paths, both, inplace = staticmethod(paths), staticmethod(both), staticmethod(inplace)
    ifexp, and_, or_, not_, chain = staticmethod(ifexp), staticmethod(and_), staticmethod(or_), \
        staticmethod(not_), staticmethod(chain)
    UNBOUND = UNBOUND


setattr(builtins, HOOK, _Hook())


def in_branch():
    """Whether a branch of an ``if`` on a traced value is running (both of them will)."""
    return bool(getattr(values.state, "branch_frames", None))


_CONTAINERS = (list, dict, set, bytearray, np.ndarray)


def check_call(f, caller):
    """Refuse a call, made in a converted branch (or in a function it calls), that would change
    an object both branches see: a mutating method of a list, dict, set or array called in
    the branch itself, or a user function that changes what it was given (see ``effects``)."""
    frames = values.state.branch_frames
    if any(fr is caller for fr in frames):
        if f is builtins.next:
            raise TraceError(f"next() inside a branch of an `if` whose condition is traced, at "
                             f"{values.user_site()}: both branches run, so the iterator would advance twice. "
                             "Take the value before the `if`")
        owner = getattr(f, "__self__", None)
        name = getattr(f, "__name__", "")
        if name in MUTATORS and (isinstance(owner, _CONTAINERS) or type(owner).__name__ == "deque"):
            raise TraceError(f".{name}() changes a {type(owner).__name__} inside a branch of an `if` whose "
                             f"condition is traced, at {values.user_site()}: both branches run, so the change "
                             "would happen twice. Compute the values into variables in each branch")


