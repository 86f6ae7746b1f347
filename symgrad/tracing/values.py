"""The traced value types: a real number (``Value``), a comparison (``Condition``) and an
array of them (``TracedArray``). Every operation appends one node to the program being
recorded (program.Builder); nothing here knows sympy."""
from __future__ import annotations

import linecache
import math
import os
import sys
import threading

import numpy as np

from .. import ops
from ..errors import TraceError

_SYMGRAD = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
state = threading.local()  # .builder: the program being recorded in this thread, if any
UNREWRITTEN = {}  # code object -> why symgrad could not read its source (see rewrite.py)


def builder():
    return getattr(state, "builder", None)


def user_site():
    """'func() in file, line N: `source`' for the innermost frame outside symgrad and numpy."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_SYMGRAD) and f"{os.sep}numpy{os.sep}" not in fn:
            src = linecache.getline(fn, f.f_lineno).strip()
            why = UNREWRITTEN.get(f.f_code)
            note = f" (symgrad could not read the source of {f.f_code.co_name}: {why})" if why else ""
            return f"{f.f_code.co_name}() in {fn}, line {f.f_lineno}: `{src}`{note}"
        f = f.f_back
    return "an unknown place"


def ref(b, x):
    """Node index of ``x`` (a Value of this trace or a number) in builder ``b``, or None."""
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
    b = next((x.b for x in xs if isinstance(x, (Value, Condition))), None)
    if b is None:
        raise TraceError(f"{op} of {', '.join(type(x).__name__ for x in xs)} at {user_site()}: expected a "
                         "traced value among the arguments")
    refs = []
    for x in xs:
        r = x.i if isinstance(x, Condition) and x.b is b else ref(b, x)
        if r is None:
            raise TraceError(f"expected a number or traced value, got {type(x).__name__} {x!r} "
                             f"at {user_site()}")
        refs.append(r)
    i = b.node(op, *refs)
    return Condition(b, i) if op in ops.COMPARE or op in ops.LOGIC else Value(b, i)


def _is_nan(x):
    return isinstance(x, (float, np.floating)) and math.isnan(x)


def _binary(op, reflected=False):
    def f(self, other):
        if ref(self.b, other) is None:
            return NotImplemented
        return apply(op, other, self) if reflected else apply(op, self, other)
    return f


def _compare(op):
    def f(self, other):
        if _is_nan(other):  # as in Python: every comparison with nan is False, but !=
            return op == "ne"
        if ref(self.b, other) is None:
            return NotImplemented
        return apply(op, self, other)
    return f


def _leaves(what):
    def f(self, *a):
        raise TraceError(
            f"{what} of a traced value at {user_site()}: the result would be a constant and "
            "its derivative silently lost. Keep the value symbolic: use math/numpy functions "
            "on it, symgrad.where(cond, a, b) for branches, an object array (dtype=object) "
            "instead of a float array to store it.")
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

    __float__ = _leaves("float()")
    __int__ = __index__ = _leaves("int()")
    __complex__ = _leaves("complex()")
    __round__ = _leaves("round()")
    __trunc__ = _leaves("math.trunc()")
    __floor__ = _leaves("math.floor()")
    __ceil__ = _leaves("math.ceil()")
    __floordiv__ = __rfloordiv__ = _leaves("// (floor division)")
    __divmod__ = __rdivmod__ = _leaves("divmod()")
    __format__ = _leaves("format() / f-string formatting")
    __mod__ = __rmod__ = _leaves("% (modulo)")
    rint = _leaves("numpy rounding (np.round/np.rint)")
    __bool__ = _leaves("truth value (if/while/and/or)")

    def __array_ufunc__(self, ufunc, method, *args, **kw):
        from .standins import array_ufunc
        return array_ufunc(ufunc, method, args, kw)

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


class Condition:
    """A traced comparison; it cannot become a Python bool (that would fix a branch)."""

    __slots__ = ("b", "i")

    def __init__(self, b, i):
        self.b, self.i = b, i

    def __bool__(self):
        raise TraceError(
            f"a Python branch depends on a traced value at {user_site()}. symgrad traces one "
            "path and cannot follow data-dependent `if`, `while`, `and`, `or` or `min`/`max` "
            "with a key. Write symgrad.where(cond, a, b) instead, e.g. "
            "`y = symgrad.where(x > 0, x, -x)`.")

    def _arith(self, *a):
        raise TraceError(f"arithmetic on a traced comparison at {user_site()}: write "
                         "symgrad.where(cond, 1.0, 0.0) to turn a condition into a number")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _arith
    __neg__ = __float__ = __int__ = __index__ = __pow__ = __rpow__ = _arith

    def __and__(self, o):
        return apply("and", self, _cond(self.b, o))

    def __or__(self, o):
        return apply("or", self, _cond(self.b, o))

    def __invert__(self):
        return apply("not", self)

    __rand__, __ror__ = __and__, __or__

    def __array_ufunc__(self, ufunc, method, *args, **kw):
        from .standins import array_ufunc
        return array_ufunc(ufunc, method, args, kw)

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
        from .standins import array_ufunc
        return array_ufunc(ufunc, method, inputs, kw)


# numpy calls these methods on the elements of object arrays (np.sin(array_of_values)).
def _method(op):
    return lambda self, *a: apply(op, self, *a)


for _name, _op in ops.NUMPY.items():
    if not hasattr(Value, _name):
        setattr(Value, _name, _method(_op))


def where(cond, a, b):
    """Traced select: ``a`` where ``cond`` holds, else ``b``; elementwise on arrays."""
    if isinstance(cond, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        from .standins import elementwise
        return elementwise(_WHERE, (cond, a, b))
    if not isinstance(cond, Condition):
        return a if cond else b
    return apply("select", cond, a, b)


_WHERE = np.frompyfunc(where, 3, 1)


def select_max(a, b):
    """Python's max(a, b): b if b > a else a (the first at a tie, nan as Python has it)."""
    c = b > a
    return where(c, b, a) if isinstance(c, Condition) else (b if c else a)


def select_min(a, b):
    c = b < a
    return where(c, b, a) if isinstance(c, Condition) else (b if c else a)
