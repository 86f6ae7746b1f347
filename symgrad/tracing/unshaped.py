"""A forgotten ``shapes=``: every argument is a scalar unless shapes= says otherwise, so a
function written for a vector and compiled without shapes= computes another function (the sum
of a scalar is the scalar: ``np.sum(np.exp(x)) / np.sum(x)`` at [1, 2, 3] would be a batch of
three quotients). Where shapes= was not given (tracing/__init__ records which arguments are so,
as ``Builder.unshaped``), a reduction (np.sum, np.mean, np.max, np.linalg.norm ...), a
measurement (np.shape, np.size, np.ndim) or a product with ``@``/np.dot of a 0-d traced value
that depends on such an argument raises ScalarUsedAsArray at the user's line, naming it. A
reduction of an array is never refused (``np.sum(x * w)``, ``np.sum([x, y])``), nor anything
where shapes= was given (``shapes=[()]`` says the argument is a scalar)."""
from __future__ import annotations

import functools

import numpy as np

from ..errors import ScalarUsedAsArray
from . import registry
from .values import Value, user_site

# numpy's functions that reduce their first argument (or, with 2, multiply their first two)
REDUCING = {**dict.fromkeys(("sum", "prod", "mean", "average", "var", "std", "max", "min", "amax", "amin", "ptp",
                             "cumsum", "cumprod", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                             "nanstd", "nancumsum", "nancumprod", "linalg.norm", "shape", "size", "ndim"), 1),
            **dict.fromkeys(("dot", "vdot", "inner", "matmul"), 2)}
_OPERANDS = ("a", "b", "x", "x1", "x2")  # the names numpy gives those operands


def _bare(x):
    """The Value that ``x`` is if it is a 0-d traced value (a Value or a 0-d array of one), else None."""
    if type(x) is Value:
        return x
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype == object and type(x[()]) is Value:
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
        if n[0] == "arg":
            if n[1] in wanted:
                found.add(n[1])
        elif n[0] not in ("const", "read"):  # (a read's operands are an array's index and entry)
            todo.extend(r for r in n[1:] if type(r) is int)
    return sorted(found)


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
            f"{what} of {'argument' if len(names) == 1 else 'arguments'} {which} at {user_site()}: shapes= was "
            f"not given, so {which} {'is' if len(names) == 1 else 'are'} traced as a scalar (an array passed for "
            f"it is a batch of scalars, each computed alone) and {what} would see one number. Pass shapes= with "
            f"one core shape per argument (shapes=[(3,)] for a vector of 3), or shapes=[{scalars}] if {which} "
            f"{'is' if len(names) == 1 else 'are'} meant to be scalar", names)


def _checking(name, n, standin, original):
    what = f"np.{name}" if name not in ("dot", "vdot", "inner", "matmul") else f"np.{name} (a product of arrays)"

    @functools.wraps(standin)
    def f(*a, **kw):
        ops = a[:n] + tuple(kw[k] for k in _OPERANDS if k in kw)
        if any(_bare(x) is not None for x in ops):
            check(what, ops)
        return standin(*a, **kw)
    f.__wrapped__ = original
    return f


def checked_table():
    """Check the operands of numpy's reductions and products in registry.TABLE (the stand-ins'
    table, filled by numpy_fns, nanfuncs and linalg before this is called); and stand-ins that
    only check for np.shape, np.size and np.ndim (numpy's own results otherwise), returned."""
    measures = {}
    for name, n in REDUCING.items():
        original = registry.genuine(np, name)
        if original is not None and original in registry.TABLE:
            registry.TABLE[original] = _checking(name, n, registry.TABLE[original], original)
        elif original is not None:
            measures[original] = _checking(name, n, original, original)
    return measures


def check_matmul(inputs):
    """``@`` (numpy's matmul ufunc) of a 0-d traced value of an argument traced as a scalar."""
    if any(_bare(x) is not None for x in inputs):
        check("@ (a product of arrays)", inputs)
