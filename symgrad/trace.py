"""Tracing: run a plain Python function once on traced values and record a Program.

A ``Value`` stands for one real number. Every operation on it appends one
assignment ``t_k = op(...)`` to the current program (identical right-hand sides are
shared), so tracing costs time linear in the operations the function performs."""
from __future__ import annotations

import linecache
import numbers
import os
import sys
import threading
from fractions import Fraction

import numpy as np
import sympy as sp

from sympy.logic.boolalg import BooleanAtom, BooleanFunction

from . import mathfns
from .errors import TraceError
from .program import Arg, Output, Program
from .signature import traced_params

_HERE = os.path.dirname(os.path.abspath(__file__))
_state = threading.local()


def user_site():
    """'func() in file, line N: `source`' for the innermost frame outside symgrad and numpy."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_HERE) and f"{os.sep}numpy{os.sep}" not in fn:
            src = linecache.getline(fn, f.f_lineno).strip()
            return f"{f.f_code.co_name}() in {fn}, line {f.f_lineno}: `{src}`"
        f = f.f_back
    return "an unknown place"


class Tracer:
    """The program being recorded: assignments in order, with value numbering."""

    def __init__(self):
        self.body, self.memo = [], {}

    def record(self, expr):
        if expr.is_Atom:
            return expr
        t = self.memo.get(expr)
        if t is None:
            t = sp.Symbol(f"t.{len(self.body)}", real=True)  # never a Python name
            self.body.append((t, expr))
            self.memo[expr] = t
        return t


def const(c):
    """A Python/numpy number as an exact sympy number, or None."""
    if isinstance(c, (bool, np.bool_)):
        return sp.Integer(int(c))
    if isinstance(c, numbers.Integral):
        return sp.Integer(int(c))
    if isinstance(c, Fraction):
        return sp.Rational(c.numerator, c.denominator)
    if isinstance(c, numbers.Real):
        return sp.Float(float(c))
    return None


def _sym(x):
    if isinstance(x, Value):
        return x.e
    c = const(x)
    if c is None:
        raise TraceError(f"expected a number or traced value, got {type(x).__name__} {x!r} at {user_site()}")
    return c


def apply(fn, *args):
    """Apply a sympy constructor to traced/number arguments and record the result."""
    e = fn(*[_sym(a) for a in args])
    if isinstance(e, (sp.core.relational.Relational, BooleanAtom, BooleanFunction)):
        return Condition(e)
    return Value(_state.tracer.record(e))


def _other(other):
    if isinstance(other, (complex, np.complexfloating)):
        raise TraceError(f"complex number {other!r} combined with a traced value at {user_site()}: "
                         "symgrad differentiates real functions")
    return isinstance(other, Value) or const(other) is not None


def _binary(fn):
    def op(self, other):
        return apply(fn, self, other) if _other(other) else NotImplemented
    return op


def _rbinary(fn):
    def op(self, other):
        return apply(fn, other, self) if _other(other) else NotImplemented
    return op


def _leaves(what):
    def op(self, *a):
        raise TraceError(
            f"{what} of a traced value at {user_site()}: the result would be a constant and "
            "its derivative silently lost. Keep the value symbolic: use math/numpy functions "
            "on it, symgrad.where(cond, a, b) for branches, an object array (dtype=object) "
            "instead of a float array to store it.")
    return op


class Value:
    """A traced real number: a sympy atom (input, temporary or constant)."""

    __slots__ = ("e",)
    __array_priority__ = 1000

    def __init__(self, e):
        self.e = e

    __add__, __radd__ = _binary(lambda a, b: a + b), _rbinary(lambda a, b: a + b)
    __sub__, __rsub__ = _binary(lambda a, b: a - b), _rbinary(lambda a, b: a - b)
    __mul__, __rmul__ = _binary(lambda a, b: a * b), _rbinary(lambda a, b: a * b)
    __truediv__, __rtruediv__ = _binary(lambda a, b: a / b), _rbinary(lambda a, b: a / b)
    __pow__, __rpow__ = _binary(lambda a, b: a**b), _rbinary(lambda a, b: a**b)
    __lt__, __le__ = _binary(sp.Lt), _binary(sp.Le)
    __gt__, __ge__ = _binary(sp.Gt), _binary(sp.Ge)
    __eq__, __ne__ = _binary(sp.Eq), _binary(sp.Ne)
    __hash__ = object.__hash__

    def __neg__(self):
        return apply(lambda a: -a, self)

    def __pos__(self):
        return self

    def __abs__(self):
        return apply(sp.Abs, self)

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
    rint = _leaves("numpy rounding (np.round/np.rint)")
    __mod__ = __rmod__ = _leaves("% (modulo)")
    __bool__ = _leaves("truth value (if/while/and/or)")

    def __array_ufunc__(self, ufunc, method, *args, **kw):
        from .shims import numpy_ufunc
        out = _object_out(ufunc, kw.pop("out", None))
        if method != "__call__" or kw:
            return NotImplemented
        res = numpy_ufunc(ufunc)(*[a.view(np.ndarray) if isinstance(a, TracedArray) else a for a in args])
        if out is not None:
            out[...] = res
            return out
        return res

    def __repr__(self):
        return f"Value({self.e})"

    def conjugate(self):
        return self

    @property
    def real(self):
        return self


def _method(name):
    return lambda self, *a: apply(mathfns.NUMPY[name], self, *a)


# numpy calls these methods on the elements of object arrays (np.sin(array_of_values)).
for _name in mathfns.NUMPY:
    if not hasattr(Value, _name):
        setattr(Value, _name, _method(_name))


class TracedArray(np.ndarray):
    """An array argument as traced code sees it: an object array of Values whose numpy
    ufuncs (comparisons, np.maximum, reductions such as np.max) go through symgrad."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        from .shims import numpy_ufunc
        out = _object_out(ufunc, kw.pop("out", None))
        plain = [x.view(np.ndarray) if isinstance(x, TracedArray) else x for x in inputs]
        shim = numpy_ufunc(ufunc)
        if not hasattr(shim, "_obj"):  # no stand-in (np.matmul ...): numpy's object loop
            res = getattr(ufunc, method)(*plain, **kw)
        elif method == "__call__":
            res = shim(*plain, **kw)
        elif method == "reduce":
            res = _reduce(shim, ufunc, plain[0], **kw)
        else:
            res = getattr(shim._obj, method)(*plain, **kw)
        if out is not None:  # numpy's own code (np.mean) writing into an object array: fine
            out[...] = res
            return out.view(TracedArray)
        return res.view(TracedArray) if isinstance(res, np.ndarray) and res.dtype == object else res


def _reduce(shim, ufunc, arr, axis=0, dtype=None, keepdims=False, initial=np._NoValue, where=True):
    """ufunc.reduce over traced values, one axis at a time (np.sum(X), np.max(X, axis=(0, 1)))."""
    if where is not True:
        raise TraceError(f"numpy.{ufunc.__name__}.reduce(..., where=...) on traced values at {user_site()} "
                         "is not supported")
    axes = range(arr.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    axes = sorted({a % max(arr.ndim, 1) for a in axes}, reverse=True)
    res = arr
    for a in axes:
        res = shim._obj.reduce(res, axis=a)
    if initial is not np._NoValue:
        res = shim(res, initial)
    if keepdims:
        res = np.asarray(res, dtype=object).reshape([1 if k in axes else n for k, n in enumerate(arr.shape)])
    return res


def _object_out(ufunc, out):
    """The out= array of a ufunc on traced values: only object arrays can hold them."""
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o is not None]
    if not outs:
        return None
    if len(outs) == 1 and isinstance(outs[0], np.ndarray) and outs[0].dtype == object:
        return outs[0].view(np.ndarray)
    raise TraceError(f"numpy.{ufunc.__name__}(..., out=...) or an in-place operation stores a traced "
                     f"value into a float array at {user_site()}: build an object array "
                     "(dtype=object) or a list instead")


class Condition:
    """A traced comparison; it cannot become a Python bool (that would fix a branch)."""

    __slots__ = ("e",)

    def __init__(self, e):
        self.e = e

    def __bool__(self):
        raise TraceError(
            f"a Python branch depends on a traced value at {user_site()} (condition {self.e}). "
            "symgrad traces one path and cannot follow data-dependent `if`, `while`, `and`, "
            "`or` or `min`/`max` with a key. Write symgrad.where(cond, a, b) instead, e.g. "
            "`y = symgrad.where(x > 0, x, -x)`.")

    def _arith(self, *a):
        raise TraceError(f"arithmetic on a traced comparison at {user_site()} (condition {self.e}): "
                         "write symgrad.where(cond, 1.0, 0.0) to turn a condition into a number")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _arith
    __neg__ = __float__ = __int__ = __index__ = __pow__ = __rpow__ = _arith

    def __and__(self, o):
        return Condition(sp.And(self.e, _cond(o)))

    def __or__(self, o):
        return Condition(sp.Or(self.e, _cond(o)))

    def __invert__(self):
        return Condition(sp.Not(self.e))

    __rand__, __ror__ = __and__, __or__

    def __repr__(self):
        return f"Condition({self.e})"


def _cond(c):
    if isinstance(c, Condition):
        return c.e
    if isinstance(c, (bool, np.bool_)):
        return sp.true if c else sp.false
    raise TraceError(f"expected a condition (a comparison of traced values), got {c!r} at {user_site()}")


def where(cond, a, b):
    """Traced select: ``a`` where ``cond`` holds, else ``b`` (a Piecewise); elementwise on arrays."""
    if isinstance(cond, np.ndarray) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        from .shims import elementwise
        return elementwise(_WHERE, (cond, a, b))
    if not isinstance(cond, Condition):
        return a if cond else b
    if not isinstance(a, Value) and not isinstance(b, Value) and not hasattr(_state, "tracer"):
        raise TraceError("symgrad.where on traced values is only meaningful inside a traced function")
    return apply(lambda x, y: sp.Piecewise((x, cond.e), (y, True)), a, b)


_WHERE = np.frompyfunc(where, 3, 1)


def select_max(a, b):
    """max(a, b) with Python's tie rule (first argument wins), as a Piecewise."""
    return apply(lambda x, y: sp.Piecewise((y, sp.Gt(y, x)), (x, True)), a, b)


def select_min(a, b):
    return apply(lambda x, y: sp.Piecewise((y, sp.Lt(y, x)), (x, True)), a, b)


def trace(fn, shapes=None):
    """Run ``fn`` once on traced arguments and return its Program."""
    from .shims import rewritten

    names, shapes = traced_params(fn, shapes)
    args, values = [], []
    for name, shape in zip(names, shapes):
        if shape == ():
            syms = (sp.Symbol(name, real=True),)
            values.append(Value(syms[0]))
        else:
            idx = np.ndindex(*shape)
            syms = tuple(sp.Symbol(f"{name}[{', '.join(map(str, i))}]", real=True) for i in idx)
            arr = np.empty(len(syms), dtype=object)
            arr[:] = [Value(s) for s in syms]
            values.append(arr.reshape(shape).view(TracedArray))
        args.append(Arg(name, shape, syms))
    tracer = Tracer()
    prev = getattr(_state, "tracer", None)
    _state.tracer = tracer
    try:
        with rewritten(fn) as traced_fn:
            result = traced_fn(*values)
    finally:
        if prev is None:
            del _state.tracer
        else:
            _state.tracer = prev
    return Program(tuple(args), tuple(tracer.body), (_output(result, fn),))


def _output(result, fn):
    arr = np.asarray(result, dtype=object) if not isinstance(result, Value) else None
    if arr is None:
        return Output("out", (), (result.e,))
    exprs = []
    for r in arr.flat:
        if isinstance(r, (np.ndarray, list, tuple)):
            raise TraceError(f"{fn.__name__} returned a ragged structure; return a scalar, "
                             "a tuple of scalars or a rectangular array")
        if isinstance(r, Condition):
            raise TraceError(f"{fn.__name__} returned a comparison; return numbers (use symgrad.where)")
        try:
            exprs.append(_sym(r))
        except TraceError:
            raise TraceError(f"{fn.__name__} returned {type(r).__name__} {r!r}; expected numbers "
                             "or traced values (a scalar, a tuple of scalars or an array)") from None
    return Output("out", arr.shape, tuple(exprs))
