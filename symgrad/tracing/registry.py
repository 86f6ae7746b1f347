"""The table of stand-ins for numpy's functions (and scipy.special's), each called exactly as
the original is: arguments bound by the original's own signature, so every keyword numpy
takes (``np.swapaxes(x, axis1=0, axis2=1)``, ``np.stack(arrays=...)``) works, and a wrong
call is numpy's TypeError. Only the library's own functions are registered: one the user
replaced before symgrad was imported is traced as whatever it is.

Also the leaf that lower modules of tracing/ read and higher ones fill at their import (so
that no import goes both ways): the ufuncs' functions of elements, and HOOKS."""
from __future__ import annotations

import functools
import inspect
import sys
import types

TABLE = {}  # original function -> stand-in
ELEMENTS = {}  # numpy's traced ufunc -> its function of elements (traced or plain): filled by ufuncs.py
LAZY = {}  # numpy function -> its form on arrays kept as loops: filled by lazy_numpy.py

# Entry points of higher modules that lower ones call, each set once at the defining module's import:
HOOKS = types.SimpleNamespace(
    array_ufunc=None,  # ufuncs.array_ufunc: __array_ufunc__ of values.py's classes (ufuncs imports values)
    elementwise=None,  # ufuncs.elementwise: values.where over arrays (ufuncs imports values)
    intercept=None,  # rewrite.intercept: numpy_fns' np.piecewise traces the user's functions (rewrite imports numpy_fns)
    scipy_elements=None,  # standins: special.ufunc_elements, importing special.py (imports ufuncs) only when asked
    lazy_sum=None, lazy_matmul=None,  # lazy_sum.py's sums and matrix products of lazy.py's arrays (it imports lazy)
    lazy_index=None, lazy_reshape=None, lazy_transpose=None,  # lazy_index.py's, of lazy.py's arrays (it imports lazy)
    lazy_extremum=None,  # lazy_extremum.py's max and min of lazy.py's arrays (it imports lazy)
)


def element_of(ufunc):
    """The function of elements of a ufunc symgrad traces (numpy's, or scipy.special's once
    the user's code has imported it), or None."""
    fn = ELEMENTS.get(ufunc)
    if fn is None and "scipy.special" in sys.modules:
        fn = HOOKS.scipy_elements().get(ufunc)
    return fn


def ufunc_name(ufunc):
    """``numpy.sin``, ``scipy.special.erf``: where a ufunc is found, for messages."""
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        return f"scipy.special.{ufunc.__name__}"
    return f"numpy.{ufunc.__name__}"


def genuine(module, path):
    """The function at ``path`` ("linalg.det") of ``module`` if it is the module's own (its
    name is the one it is found under, its module the library's), else None."""
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part, None)
    root = module.__name__.split(".")[0]
    if obj is None or getattr(obj, "__name__", None) != path.rsplit(".", 1)[-1]:
        return None
    owner = getattr(obj, "__module__", None)
    return obj if owner is None or owner.split(".")[0] == root else None


def like(original, impl, bound=False):
    """``impl`` called as ``original`` is called: the arguments bound by its signature, then
    passed on as ``impl(*args, **kwargs)`` (so ``impl`` takes the original's parameter names),
    or, with ``bound``, as one ``inspect.BoundArguments`` (for stand-ins that pass most of them
    to the original). The signature is read at the first call (reading all 142 at import took
    12 ms of a 0.17 s cold first call)."""
    where = getattr(original, "__module__", None) or "numpy"
    name = f"{where.split('._')[0]}.{getattr(original, '__name__', original)}"
    sig = []

    @functools.wraps(original)
    def f(*a, **kw):
        if not sig:
            try:
                sig.append(inspect.signature(original))
            except (TypeError, ValueError):
                sig.append(None)
        if sig[0] is None:
            return impl(*a, **kw)
        try:
            b = sig[0].bind(*a, **kw)
        except TypeError as e:
            raise TypeError(f"{name}() {e}") from None
        return impl(b) if bound else impl(*b.args, **b.kwargs)
    f.impl, f.bound = impl, bound
    return f


def register(module, *paths, bound=False):
    """Decorator: ``impl`` is the stand-in of each of ``module``'s functions at ``paths``."""
    def deco(impl):
        for path in paths:
            o = genuine(module, path)
            if o is not None:
                TABLE[o] = like(o, impl, bound)
        return impl
    return deco
