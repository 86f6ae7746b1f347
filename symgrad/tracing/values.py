"""The traced value types: a real number (``Value``), a comparison (``Condition``) and an
array of them (``TracedArray``). Every operation appends one node to the program being
recorded (program.Builder); nothing here knows sympy."""
from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np

from . import names as ops
from ..errors import TraceError
from . import registry
from .site import SYMGRAD_DIR, UNREWRITTEN, Leaving, Poison, builder, keeps_values, leaves, state, user_site  # noqa: F401

CASTS = SimpleNamespace()  # numpy's casts of traced values to int64 and bool: dtypes.py fills it (it imports this)


_BIG = 2 ** 1023  # past it an int may have no double (float() decides)


def _check_double(x):
    """Raise, as Python does, where a number in float arithmetic has no double (2**2000)."""
    try:
        float(x)
    except OverflowError:
        raise OverflowError(f"{type(x).__name__} too large to convert to float in arithmetic with a traced value "
                            f"at {user_site()} (as Python raises with a float: symgrad computes in doubles)") \
            from None


def ref(b, x):
    """Node index of ``x`` (a Value of this trace or a number) in builder ``b``, or None."""
    if isinstance(x, Poison):
        x.fail()
    if isinstance(x, Value):
        if x.b is not b:
            raise TraceError(f"a traced value of another trace is used at {user_site()}: a value "
                             "kept from an earlier trace (in a global, a default, a cache) cannot "
                             "be reused; compute it inside the function")
        return x.i
    if isinstance(x, (complex, np.complexfloating)):
        raise TraceError(f"complex number {x!r} combined with a traced value at {user_site()}: "
                         "symgrad differentiates real functions")
    return b.const(x)


def apply(op, *xs):
    """The traced result of ``op`` on traced values and numbers (at least one traced)."""
    x0 = xs[0]
    if op not in _WANTS_CONDITION:  # the common cases: arithmetic on values and floats
        t0 = type(x0)
        if t0 is Value and len(xs) == 1:
            b = x0.b
            return Value(b, b.node(op, x0.i)) if op not in ops.COMPARE else Condition(b, b.node(op, x0.i))
        if len(xs) == 2:
            x1 = xs[1]
            t1 = type(x1)
            i = None
            if t0 is Value and (t1 is Value and x1.b is x0.b or t1 is float):
                b = x0.b
                i = b.node(op, x0.i, x1.i if t1 is Value else b.const(x1))
            elif t0 is float and t1 is Value:
                b = x1.b
                i = b.node(op, b.const(x0), x1.i)
            if i is not None:
                return Condition(b, i) if op in ops.COMPARE else Value(b, i)
    b = next((x.b for x in xs if isinstance(x, (Value, Condition))), None)
    if b is None:
        raise TraceError(f"{op} of {', '.join(type(x).__name__ for x in xs)} at {user_site()}: expected a "
                         "traced value among the arguments")
    refs, arithmetic = [], op != "select" and op not in ops.COMPARE and op not in ops.LOGIC
    for k, x in enumerate(xs):
        if arithmetic and isinstance(x, (int, Fraction)) and not -_BIG <= x <= _BIG:
            _check_double(x)  # (a comparison with it is exact: program.Builder; a select keeps it)
        wants_condition = op in ops.LOGIC or (op == "select" and k == 0)
        if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "biufO":
            x = x[()]  # a number numpy gave as a 0-d array (np.where of constants), as math takes it
        if isinstance(x, Condition) and not wants_condition:
            x = x.number()  # a comparison as a number: 0/1, as numpy computes True * 2.5
        elif isinstance(x, Value) and wants_condition:
            x = apply("ne", x, 0.0)  # a number as a truth value: x != 0
        r = x.i if isinstance(x, Condition) and x.b is b else ref(b, x)
        if r is None:
            raise TraceError(f"expected a number or traced value, got {type(x).__name__} {x!r} "
                             f"at {user_site()}")
        refs.append(r)
    i = b.node(op, *refs)
    return Condition(b, i) if op in ops.COMPARE or op in ops.LOGIC else Value(b, i)


_WANTS_CONDITION = set(ops.LOGIC) | {"select"}  # ops that take truth values (select: its first)


def _is_nan(x):
    return isinstance(x, (float, np.floating)) and math.isnan(x)


# Arithmetic of a traced value with a list, tuple or array is numpy's, elementwise (an entry
# of a traced array behaves as numpy's scalars do).
_UFUNCS = {op: getattr(np, ops.OPS[op].numpy[0]) for op in ("add", "sub", "mul", "div", "pow", "mod", "floordiv",
                                                            *ops.SWAPPED)}


def _sequence(other):
    return isinstance(other, (list, tuple)) or (isinstance(other, np.ndarray) and other.ndim > 0)


def _binary(op, reflected=False):
    def f(self, other):
        t = type(other)
        if t is float or t is int and -_BIG <= other <= _BIG or t is Value and other.b is self.b:  # apply's
            b = self.b  # fast path: most of a trace
            j = other.i if t is Value else b.const(other)
            return Value(b, b.node(op, j, self.i) if reflected else b.node(op, self.i, j))
        if _sequence(other):
            arr = np.asarray(other)
            return _UFUNCS[op](arr, self) if reflected else _UFUNCS[op](self, arr)
        if ref(self.b, other) is None:
            return NotImplemented
        return apply(op, other, self) if reflected else apply(op, self, other)
    return f


def _compare(op):
    def f(self, other):
        if _is_nan(other):  # as in Python: every comparison with nan is False, but !=
            return op == "ne"
        if _sequence(other):
            return _UFUNCS[op](self, np.asarray(other))
        if ref(self.b, other) is None:
            return NotImplemented
        return apply(op, self, other)
    return f


class Value:
    """A traced real number: node ``i`` of the program recorded by builder ``b``."""

    __slots__ = ("b", "i")
    __array_priority__ = 1000

    def __init__(self, b, i):
        self.b, self.i = b, i

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("div"), _binary("div", True)
    __pow__, __rpow__ = _binary("pow"), _binary("pow", True)
    __lt__, __le__, __gt__, __ge__ = _compare("lt"), _compare("le"), _compare("gt"), _compare("ge")
    __eq__, __ne__ = _compare("eq"), _compare("ne")
    __hash__ = object.__hash__

    def __neg__(self):
        return apply("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return apply("abs", self)

    __mod__, __rmod__ = _binary("mod"), _binary("mod", True)
    __floordiv__, __rfloordiv__ = _binary("floordiv"), _binary("floordiv", True)

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __round__(self, ndigits=None):
        if ndigits is None:
            return apply("round", self)  # half to even, as Python (a number, not an int)
        scale = 10.0 ** ndigits
        return apply("round", self * scale) / scale

    def __trunc__(self):
        return apply("trunc", self)

    def __floor__(self):
        return apply("floor", self)

    def __ceil__(self):
        return apply("ceil", self)

    __float__ = leaves("float()")
    __int__ = __index__ = leaves("int()")
    __complex__ = leaves("complex()")
    __format__ = leaves("format() / f-string formatting")
    __bool__ = leaves("truth value (if/while/and/or)")
    item = tolist = leaves(".item() / .tolist()", "Use the value itself (`x[0]`, not `x[0].item()`): it is "
                            "already a number that arithmetic, math and numpy functions take and a function returns.")

    def __array_ufunc__(self, ufunc, method, *args, **kw):
        return registry.HOOKS.array_ufunc(ufunc, method, args, kw)

    def __repr__(self):
        return f"Value(t{self.i})"

    def conjugate(self):
        return self

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self  # a traced value is immutable: copies are itself

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return 0.0  # a real number's

    def astype(self, dtype, *a, **k):
        if keeps_values(dtype):
            return self
        return CASTS.cast(self, dtype)  # numpy's cast to int64 (a step) or bool; others refused

    def __invert__(self):
        raise TraceError(f"~ of a traced number at {user_site()}: ~ of an integer is bitwise (-x - 1) and of a "
                         "float a TypeError, and symgrad, computing in double, cannot tell them apart; write -x - 1 "
                         "for an integer, or ~ of a comparison (logical not)")


class Condition:
    """A traced comparison; it cannot become a Python bool (that would fix a branch)."""

    __slots__ = ("b", "i")

    def __init__(self, b, i):
        self.b, self.i = b, i

    def __bool__(self):
        raise TraceError(
            f"the truth of a traced comparison is needed at {user_site()} (`any`/`all`, `in`, `sorted` "
            "or `min`/`max` with a key, an `if` in code symgrad does not rewrite, or one nested too deep "
            "to convert): it would fix one path. Write it as values with symgrad.where(cond, a, b), "
            "e.g. `y = symgrad.where(x > 0, x, -x)`.")

    def number(self):
        """The condition as a number, 1.0 or 0.0 (as numpy computes True * 2.5)."""
        return apply("select", self, 1.0, 0.0)

    def _leave(self, *a):
        raise Leaving(f"int() or float() of a traced comparison at {user_site()}: call float(c) or "
                      "int(c) in the traced function itself (it becomes a 0/1 step), or write "
                      "symgrad.where(cond, 1.0, 0.0)", "int() or float()")

    __float__ = __int__ = __index__ = _leave

    def __and__(self, o):
        return apply("and", self, _cond(self.b, o))

    def __or__(self, o):
        return apply("or", self, _cond(self.b, o))

    def __invert__(self):
        return apply("not", self)

    __rand__, __ror__ = __and__, __or__

    def __array_ufunc__(self, ufunc, method, *args, **kw):
        return registry.HOOKS.array_ufunc(ufunc, method, args, kw)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"Condition(t{self.i})"


def _cond(b, c):
    if isinstance(c, Condition):
        return c
    if isinstance(c, (bool, np.bool_)):
        return Condition(b, b.node("const", "i", int(bool(c))))
    raise TraceError(f"expected a condition (a comparison of traced values), got {c!r} at {user_site()}")


class TracedArray(np.ndarray):
    """An array argument as traced code sees it: an object array of Values whose numpy
    ufuncs (comparisons, np.maximum, reductions such as np.max) go through symgrad."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        return registry.HOOKS.array_ufunc(ufunc, method, inputs, kw)

    @staticmethod
    def _index(index):
        """An index as numpy takes it; a traced one is refused (the shape would depend on the data)."""
        parts = list(index) if isinstance(index, tuple) else [index]
        for k, i in enumerate(parts):
            if isinstance(i, Condition) or (isinstance(i, np.ndarray) and i.dtype == object and
                                            any(isinstance(c, (Condition, Value)) for c in i.flat)):
                raise TraceError(f"an array indexed by a traced comparison at {user_site()}: the result's "
                                 "shape would depend on the data. Keep the shape: np.where(cond, x, 0.0) "
                                 "(or x * symgrad.where(cond, 1.0, 0.0)), then reduce")
            if isinstance(i, np.ndarray) and i.dtype == object:  # made in traced code: numbers again
                parts[k] = np.array(i.tolist())
        return tuple(parts) if isinstance(index, tuple) else parts[0]

    def __getitem__(self, index):
        return super().__getitem__(self._index(index))

    def __setitem__(self, index, value):
        if self.size and not isinstance(self.flat[0], (Condition, bool, np.bool_)):
            value = CASTS.stored(value)  # a comparison stored into a float array: numpy's 1.0 / 0.0
        super().__setitem__(self._index(index), value)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """A float cast keeps the values (plain integers among them become floats); with
        ``copy=False`` it is this array itself, as numpy's of a float64 array."""
        if not keeps_values(dtype):
            if not any(isinstance(v, (Value, Condition)) for v in self.flat):
                return super().astype(dtype, order, casting, subok, copy)  # numbers: numpy's
            return CASTS.cast(self.view(np.ndarray), dtype).view(TracedArray)  # int64 (a step: trunc), bool
        if np.dtype(dtype).kind == "O":
            return self if not copy else self.copy(order)
        bools = any(isinstance(v, Condition) for v in self.flat)
        if not copy and not bools:  # float64 to float64, as numpy: the same array
            return self
        flat = [v.number() if isinstance(v, Condition) else v if isinstance(v, Value) else float(v)
                for v in self.flat]  # (a bool array's comparisons as 1.0 / 0.0: they add as numbers)
        out = np.empty(self.shape, dtype=object)
        out.reshape(-1)[:] = flat if out.size else []
        return out.view(TracedArray)


# numpy calls these methods on the elements of object arrays (np.sin(array_of_values)).
def _method(op):
    return lambda self, *a: apply(op, self, *a)


for _name, _op in ops.NUMPY.items():
    if not hasattr(Value, _name):
        setattr(Value, _name, _method(_op))


ARRAYS = (np.ndarray,)  # and lazy.LazyArray, added there


def where(cond, a, b):
    """Traced select: ``a`` where ``cond`` holds, else ``b``; elementwise on arrays."""
    if isinstance(cond, ARRAYS) or isinstance(a, ARRAYS) or isinstance(b, ARRAYS):
        return registry.HOOKS.elementwise(WHERE, (cond, a, b))
    if not isinstance(cond, Condition):
        return a if cond else b
    return apply("select", cond, a, b)


WHERE = np.frompyfunc(where, 3, 1)


def as_number(x):
    """A numpy scalar or 0-d array as the Python number it holds, for a comparison (numpy's
    comparison with a traced value is an array of one object, not a condition)."""
    if isinstance(x, (np.generic, np.ndarray)) and x.ndim == 0 and x.dtype.kind in "biuf":
        return x.item()
    return x


def _as_number(name):
    def f(self, *a):
        return getattr(self.number(), name)(*(x.number() if isinstance(x, Condition) else x for x in a))
    return f


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__pow__", "__rpow__", "__mod__", "__rmod__", "__floordiv__", "__rfloordiv__",
              "__neg__", "__pos__", "__abs__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Condition, _name, _as_number(_name))
Condition.__neg__ = lambda self: apply("select", self, -1.0, 0.0)  # Python's -False is 0 (+0.0), not -0.0


def _equal(self, o):
    """c == d of two conditions (or a condition and a bool): both hold or neither; c == 1.0
    compares the 0/1 step; anything else is not equal, as in Python."""
    if isinstance(o, (Condition, bool, np.bool_)):
        o = _cond(self.b, o)
        return (self & o) | (~self & ~o)
    if isinstance(o, (Value, int, float, np.integer, np.floating)):
        return self.number() == o
    return NotImplemented


def _unequal(self, o):
    r = _equal(self, o)
    return r if r is NotImplemented else ~r


Condition.__eq__, Condition.__ne__, Condition.__xor__, Condition.__rxor__ = _equal, _unequal, _unequal, _unequal
Condition.__hash__ = object.__hash__
