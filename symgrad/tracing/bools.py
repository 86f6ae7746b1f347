"""numpy's bools on traced values: entries of bool arrays (what numpy's comparisons give) are
NpConditions, whose arithmetic is numpy's: ``bool + bool`` is logical or, ``bool * bool``
logical and, ``bool - bool`` and ``-bool`` TypeErrors, ``~bool`` logical not; ``~`` and the
bitwise ufuncs of a traced number are refused (the element functions of numpy's ufuncs,
whatever the array's size). Casts to bool and other dtypes: dtypes.py."""
from __future__ import annotations

import numpy as np

from . import names as ops
from ..errors import TraceError
from .values import Condition, Value, apply, user_site

_SUB = ("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, "
        "or the logical_xor function instead.")
_NEG = "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logical_not " \
       "function instead."


def numpy_bool(c):
    """``c`` as numpy's bool if it is a traced comparison (an NpCondition), else as it is."""
    return NpCondition(c.b, c.i) if type(c) is Condition else c


class NpCondition(Condition):
    """A traced comparison numpy made (an entry of a bool array, what np.greater gives): a
    np.bool_, whose arithmetic with bools is numpy's: bool + bool is logical or, bool * bool
    logical and, bool - bool and -bool raise TypeError as numpy does; with numbers it is the
    0/1 number (as a Condition). A comparison of traced scalars stays a Condition: Python's
    bools add as ints (True + True == 2)."""

    __slots__ = ()

    def __add__(self, o):
        return numpy_bool(self | o) if boolish(o) else Condition.__add__(self, o)

    def __radd__(self, o):
        return numpy_bool(self | o) if boolish(o) else Condition.__radd__(self, o)

    def __mul__(self, o):
        return numpy_bool(self & o) if boolish(o) else Condition.__mul__(self, o)

    def __rmul__(self, o):
        return numpy_bool(self & o) if boolish(o) else Condition.__rmul__(self, o)

    def __sub__(self, o):
        if boolish(o):
            raise TypeError(_SUB)
        return Condition.__sub__(self, o)

    def __rsub__(self, o):
        if boolish(o):
            raise TypeError(_SUB)
        return Condition.__rsub__(self, o)

    def __neg__(self):
        raise TypeError(_NEG)

    def __pos__(self):
        raise TypeError("ufunc 'positive' did not contain a loop with signature matching types "
                        "<class 'numpy.dtypes.BoolDType'> -> None")

    def __abs__(self):
        return self

    def __and__(self, o):
        return numpy_bool(Condition.__and__(self, o))

    def __or__(self, o):
        return numpy_bool(Condition.__or__(self, o))

    def __xor__(self, o):
        return numpy_bool(Condition.__xor__(self, o))

    def __invert__(self):
        return numpy_bool(Condition.__invert__(self))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__


def boolish(x):
    """Whether ``x`` is a bool: a comparison (traced or not), Python's or numpy's bool."""
    return isinstance(x, (Condition, bool, np.bool_))


def any_traced(xs):
    """Whether any of ``xs`` is a traced number or comparison."""
    return any(isinstance(x, (Value, Condition)) for x in xs)


def _bitwise(name, logical):
    def element(a, b):
        if boolish(a) and boolish(b):
            return numpy_bool(logical(a, b)) if any_traced((a, b)) else getattr(np, name)(a, b)
        if any_traced((a, b)):
            raise TraceError(f"numpy.{name} of a traced number at {user_site()}: numpy's is bitwise on integers "
                             "(a TypeError on floats), which symgrad, computing in double, does not trace; on "
                             "comparisons it is logical (write `&`, `|`, `^` of comparisons)")
        return getattr(np, name)(a, b)
    return element


def _invert(x):
    if isinstance(x, Condition):
        return numpy_bool(~x)
    if isinstance(x, Value):
        raise TraceError(f"~ (numpy.invert) of a traced number at {user_site()}: numpy's ~ of an integer is "
                         "bitwise (-x - 1) and of a float a TypeError, and symgrad, computing in double, cannot "
                         "tell them apart; write -x - 1 for integers, or ~ / np.logical_not of a comparison")
    return np.invert(x)


def _logical_xor(a, b):
    if not any_traced((a, b)):
        return np.logical_xor(a, b)
    t = [x if boolish(x) else (apply("ne", x, 0.0) if isinstance(x, Value) else bool(x != 0)) for x in (a, b)]
    if not isinstance(t[0], Condition):
        t.reverse()
    return numpy_bool(t[0] ^ t[1])


def _bool_rule(element, rule, op=None):
    """``element`` (a ufunc's function of elements) where an operand is a number; numpy's rule
    of that ufunc's bool loop where every operand is a bool. ``op``: the IR op ``element``
    applies to traced operands (numpy's arithmetic of a traced number: at once)."""
    def f(*xs):
        for x in xs:
            if type(x) is Value:  # a number among them (most calls): the ufunc's arithmetic
                return apply(op, *xs) if op is not None else element(*xs)
        if all(boolish(x) for x in xs) and any_traced(xs):
            return rule(*xs)
        return element(*xs)
    return f


def _raise(message):
    def f(*xs):
        raise TypeError(message)
    return f


def _or(a, b):
    return numpy_bool(a | b) if isinstance(a, Condition) else numpy_bool(b | a)


def _and(a, b):
    return numpy_bool(a & b) if isinstance(a, Condition) else numpy_bool(b & a)


_ARITHMETIC = ("add", "multiply", "subtract", "negative")  # their elements: apply(ops.NUMPY[name], ...)
_RULES = {"add": _or, "multiply": _and, "maximum": _or, "minimum": _and, "fmax": _or, "fmin": _and,
          "subtract": _raise(_SUB), "negative": _raise(_NEG),
          "positive": _raise("ufunc 'positive' did not contain a loop with signature matching types "
                             "<class 'numpy.dtypes.BoolDType'> -> None"),
          "absolute": numpy_bool}


def numpy_bools(table, conditions):
    """Give the elements of numpy's ufuncs in ``table`` (name -> function of elements)
    numpy's bool rules: the ufuncs of ``conditions`` give numpy's bools (NpCondition),
    arithmetic of bools is logical (see the module's note), ~ and the bitwise ufuncs are
    logical on bools and refused on traced numbers."""
    for name in conditions:
        if name in table:
            table[name] = (lambda f: lambda *xs: numpy_bool(f(*xs)))(table[name])
    for name, rule in _RULES.items():
        if name in table:
            table[name] = _bool_rule(table[name], rule, ops.NUMPY[name] if name in _ARITHMETIC else None)
    table.update(invert=_invert, logical_xor=_logical_xor,
                 bitwise_and=_bitwise("bitwise_and", lambda a, b: _and(a, b)),
                 bitwise_or=_bitwise("bitwise_or", lambda a, b: _or(a, b)),
                 bitwise_xor=_bitwise("bitwise_xor", lambda a, b: _logical_xor(a, b)))
    return table


def logical(x):
    """Whether object array ``x`` is numpy's bool array: every entry a bool or a comparison."""
    return isinstance(x, np.ndarray) and x.dtype == object and x.size > 0 and all(boolish(v) for v in x.flat)


def numbers(x):
    """An object array (or list) that mixes comparisons with numbers as numpy holds it: a float
    array, the comparisons 0/1 numbers; one of comparisons (a bool array) or of numbers as it is."""
    if not isinstance(x, np.ndarray) or x.dtype != object or not x.size:
        return x
    flat = x.reshape(-1)
    conds = [j for j, v in enumerate(flat) if isinstance(v, Condition)]
    if not conds or len(conds) == flat.size or all(boolish(v) for v in flat):
        return x
    out = x.copy()
    oflat = out.reshape(-1)
    for j in conds:
        oflat[j] = oflat[j].number()
    return out
