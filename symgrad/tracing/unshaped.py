"""A forgotten ``shapes=``: every argument is a scalar unless shapes= says otherwise, so a
function written for a vector and compiled without shapes= computes another function (the sum
of a scalar is the scalar: ``np.sum(np.exp(x)) / np.sum(x)`` at [1, 2, 3] would be a batch of
three quotients). Where shapes= was not given (tracing/__init__ records which arguments are so,
as ``Builder.unshaped``), numpy treating a 0-d traced value (a number, a comparison, a 0-d array
of one) that depends on such an argument as an array raises ScalarUsedAsArray at the user's
line, naming it:

- a numpy function that reduces, contracts, indexes or flattens an operand (np.sum, np.mean,
  np.any, np.linalg.norm, np.dot, np.outer, np.kron, np.tensordot, np.convolve, np.take,
  np.ravel, np.reshape(x, -1), np.gradient: ``ARRAYS``), given one for it;
- a ufunc's reduce/accumulate/reduceat/at/outer or a gufunc (``@``, np.vecdot) given one,
  wherever the call is made (``np.asarray(x).sum()``, ``np.add.reduce(x)``, the reductions in
  scipy.special.logsumexp: ufuncs.array_ufunc asks);
- a numpy function that raises (TypeError, ValueError, IndexError) given one (np.diff(x),
  np.trace(x), np.trapezoid(x), np.polyval(x, 2.0), np.einsum('i->', x)): the forgotten shapes=
  is said, as a ScalarUsedAsArray that is numpy's exception too (so a helper for a scalar or an
  array that catches numpy's ValueError still does).

np.shape, np.size and np.ndim answer for a scalar as numpy does (a helper taking a scalar or an
array asks them), and deliberate 1-entry arrays are arrays (np.atleast_1d(x), np.array([x]),
np.hstack([x])). An array is never refused (``np.sum(x * w)``, ``np.sum([x, y])``), nor anything
where shapes= was given (``shapes=[()]`` says the argument is a scalar)."""
from __future__ import annotations

import functools
import linecache
import sys

import numpy as np

from ..errors import ScalarUsedAsArray, TraceError
from ..ir.nodes import is_arg, operands
from . import registry
from .usercode import is_user_code
from .values import UNREWRITTEN, Condition, Value

# numpy's functions -> the parameters they take as arrays (reduced, contracted, indexed, flattened)
ARRAYS = {**dict.fromkeys(("sum", "prod", "mean", "average", "var", "std", "max", "min", "amax", "amin", "ptp",
                           "cumsum", "cumprod", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                           "nanstd", "nancumsum", "nancumprod", "any", "all", "count_nonzero", "take", "ravel",
                           "reshape"), ("a",)),
          **dict.fromkeys(("dot", "vdot", "inner", "outer", "kron", "tensordot"), ("a", "b")),
          "linalg.norm": ("x",), "gradient": ("f",), "ediff1d": ("ary",), "convolve": ("a", "v"),
          "correlate": ("a", "v"), "matmul": ("x1", "x2")}  # (np.diff, np.trace, np.polyval ...: numpy raises)
_PRODUCTS = {"dot", "vdot", "inner", "outer", "kron", "tensordot", "matmul", "convolve", "correlate"}
_FAILURES = (TypeError, ValueError, IndexError, AttributeError)  # numpy's errors on a 0-d array it wants 1-d


def _bare(x):
    """The traced value that ``x`` is if it is a 0-d one (a Value or Condition, or a 0-d array of
    one), else None."""
    t = type(x)
    if t is Value or t is Condition:
        return x
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype == object and type(x[()]) in (Value, Condition):
        return x[()]
    return None


def _arguments(v, wanted):
    """The indices among ``wanted`` of the arguments traced value ``v`` depends on."""
    nodes, todo, seen, found = v.b.nodes, [v.i], set(), set()
    while todo:
        j = todo.pop()
        if j in seen:
            continue
        seen.add(j)
        n = nodes[j]
        if is_arg(n):
            if n[1] in wanted:
                found.add(n[1])
        else:  # (a read's are its index: none; a sum's its body)
            todo.extend(operands(n))
    return sorted(found)


def site():
    """'func() in file, line N: `source`' for the innermost frame of the user's code (outside
    symgrad, numpy, scipy and other libraries: scipy's logsumexp reduces for the user's call)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if is_user_code(f.f_globals.get("__name__"), fn):
            why = UNREWRITTEN.get(f.f_code)
            note = f" (symgrad could not read the source of {f.f_code.co_name}: {why})" if why else ""
            return f"{f.f_code.co_name}() in {fn}, line {f.f_lineno}: `{linecache.getline(fn, f.f_lineno).strip()}`" \
                   f"{note}"
        f = f.f_back
    return "an unknown place"


def check(what, operands):
    """Raise ScalarUsedAsArray if one of ``operands`` is a 0-d traced value depending on an
    argument traced as a scalar because shapes= was not given; ``what``: the operation."""
    for x in operands:
        v = _bare(x)
        unshaped = getattr(v.b, "unshaped", None) if v is not None else None
        if not unshaped:
            continue
        found = _arguments(v, unshaped)
        if not found:
            continue
        names = [unshaped[k] for k in found]
        which = ", ".join(repr(n) for n in names)
        scalars = ", ".join("()" for _ in unshaped)
        raise ScalarUsedAsArray(
            f"{what} of {'argument' if len(names) == 1 else 'arguments'} {which} at {site()}: shapes= was "
            f"not given, so {which} {'is' if len(names) == 1 else 'are'} traced as a scalar (an array passed for "
            f"it is a batch of scalars, each computed alone) and {what} would see one number. Pass shapes= with "
            f"one core shape per argument (shapes=[(3,)] for a vector of 3), or shapes=[{scalars}] if {which} "
            f"{'is' if len(names) == 1 else 'are'} meant to be scalar", names)


def _given(params, a, kw):
    """The arguments a call ``(*a, **kw)`` passes for ``params`` (names, in order)."""
    return [a[k] if k < len(a) else kw.get(p) for k, p in enumerate(params)]


def precheck(name, path, a, kw):
    """Before numpy's function at ``path`` (ARRAYS) is called as ``name(*a, **kw)``: its array
    operands must not be 0-d values of an argument traced as a scalar (np.reshape: to shape -1)."""
    ops = _given(ARRAYS[path], a, kw)
    if path == "reshape":
        shape = a[1] if len(a) > 1 else kw.get("shape", kw.get("newshape"))
        shape = shape if isinstance(shape, (tuple, list)) else (shape,)
        if not any(isinstance(s, (int, np.integer)) and s == -1 for s in shape):
            return
    if any(_bare(x) is not None for x in ops):
        check(f"{name} (a product of arrays)" if path in _PRODUCTS else name, ops)


def failed(name, a, kw, error):
    """numpy's ``name`` raised ``error`` on the call ``(*a, **kw)``: where a 0-d value of an argument
    traced as a scalar is among its arguments, the forgotten shapes= is the error, raised here as
    a ScalarUsedAsArray that is numpy's exception too (a helper's `except ValueError` holds)."""
    ops = list(a) + list(kw.values())
    if any(_bare(x) is not None for x in ops):
        try:
            check(name, ops)
        except ScalarUsedAsArray as e:
            k = both(ScalarUsedAsArray, type(error))
            raise (e if k is None else k(e.args[0], e.scalars)) from None


def _checking(name, path, standin, original):
    """``standin`` (of numpy's ``original``) called after ``precheck`` where ``path`` is in
    ARRAYS, and through ``failed`` where it raises."""
    @functools.wraps(standin)
    def f(*a, **kw):
        if path is not None:
            precheck(name, path, a, kw)
        try:
            return standin(*a, **kw)
        except _FAILURES as e:
            if not isinstance(e, TraceError):
                failed(name, a, kw, e)
            raise
    f.__wrapped__ = original
    return f


def paths():
    """id(numpy function) -> (it, its path in ARRAYS)."""
    found = {}
    for path in ARRAYS:
        o = registry.genuine(np, path)
        if o is not None:
            found[id(o)] = (o, path)
    return found


PATHS = paths()


def path_of(f):
    """The path in ARRAYS of numpy's function ``f``, or None."""
    hit = PATHS.get(id(f))
    return hit[1] if hit is not None and hit[0] is f else None


def check_table():
    """Check numpy's stand-ins in registry.TABLE (filled by numpy_fns, nanfuncs and linalg
    before this is called): ``precheck`` before ARRAYS' functions, ``failed`` on every error."""
    for original, standin in list(registry.TABLE.items()):
        module = getattr(original, "__module__", None) or "numpy"
        if module.split(".")[0] != "numpy":
            continue
        name = f"np{module[5:] if '._' not in module else ''}.{getattr(original, '__name__', '?')}"
        registry.TABLE[original] = _checking(name, path_of(original), standin, original)


def check_ufunc(ufunc, method, inputs):
    """(ufuncs.array_ufunc, for a method other than __call__ or a gufunc) A reduction,
    accumulation or outer product by a ufunc (``np.asarray(x).sum()``, ``np.add.reduce(x)``),
    or ``@``/np.vecdot, of a 0-d traced value of an argument traced as a scalar."""
    if method == "__call__":
        what = "@ (a product of arrays)" if ufunc is np.matmul else f"numpy.{ufunc.__name__} (a product of arrays)"
        ops = inputs
    else:
        kind = {"accumulate": "an accumulation", "outer": "an outer product", "at": "an indexed update"}
        what = f"{kind.get(method, 'a reduction')} (numpy.{ufunc.__name__}.{method})"
        ops = inputs if method == "outer" else inputs[:1]
    if any(_bare(x) is not None for x in ops):
        check(what, ops)


_BOTH = {}  # (symgrad's exception class, another) -> one that is both, or None


def _message_only(self, message, scalars=()):
    BaseException.__init__(self, message)  # (not numpy's __init__: _UFuncInputCastingError takes five)
    self.scalars = tuple(scalars)  # (ScalarUsedAsArray's)


def both(base, cls):
    """A ``base`` (TraceError, ScalarUsedAsArray) that is a ``cls`` too (numpy's exception: a
    caller's `except TypeError` holds), made from a message alone, or None where Python cannot
    make one (a class that cannot be a base, or one that needs more to be made)."""
    key = (base, cls)
    if key not in _BOTH:
        try:
            k = type(base.__name__, (base, cls), {"__module__": base.__module__, "__init__": _message_only,
                                                  "__str__": BaseException.__str__,
                                                  "__reduce__": lambda e: (base, e.args)})  # (pickled: a base)
            _BOTH[key] = k if str(k("m")) == "m" else None
        except Exception:  # noqa: BLE001 - any class numpy defines
            _BOTH[key] = None
    return _BOTH[key]
