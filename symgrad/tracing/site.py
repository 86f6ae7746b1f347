"""Where a trace stands: the program being recorded in this thread (``builder``), the user's
line a message names (``user_site``), and the ways a traced value refuses to become something
it is not (``Leaving``: a Python number; ``Poison``: a variable with no single value;
``keeps_values``: a narrower float)."""
from __future__ import annotations

import linecache
import os
import sys
import threading

import numpy as np

from ..errors import TraceError

SYMGRAD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
state = threading.local()  # .builder: the program being recorded in this thread, if any
UNREWRITTEN = {}  # code object -> why symgrad could not read its source (see rewrite.py)
def builder():
    return getattr(state, "builder", None)


def user_site():
    """'func() in file, line N: `source`' for the innermost frame outside symgrad and numpy."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(SYMGRAD_DIR) and f"{os.sep}numpy{os.sep}" not in fn:
            src = linecache.getline(fn, f.f_lineno).strip()
            why = UNREWRITTEN.get(f.f_code)
            note = f" (symgrad could not read the source of {f.f_code.co_name}: {why})" if why else ""
            return f"{f.f_code.co_name}() in {fn}, line {f.f_lineno}: `{src}`{note}"
        f = f.f_back
    return "an unknown place"


def keeps_values(dtype):
    """Whether a cast of traced values to ``dtype`` keeps them as they are (float64, longdouble,
    object: symgrad computes in double); a narrower float raises TraceError: the rounding it
    would make inside the function is not traced."""
    dt = np.dtype(dtype)
    if dt.kind == "O" or (dt.kind == "f" and dt.itemsize >= 8):
        return True
    if dt.kind == "f":
        raise TraceError(f"a cast of traced values to {dt} at {user_site()}: symgrad computes in double and "
                         f"does not trace the rounding to {dt} inside the function; keep float64 there, and "
                         f"compile with dtype='float32' for float32 arguments and results")
    return False


class Leaving(TraceError):
    """A traced value asked to become a Python number (``what``: "float()", ...)."""

    def __init__(self, message, what):
        super().__init__(message)
        self.what = what


def leaves(what, instead="Keep the value symbolic: use math/numpy functions on it, symgrad.where(cond, a, b) "
            "for branches, an object array (dtype=object) instead of a float array to store it."):
    def f(self, *a):
        raise Leaving(f"{what} of a traced value at {user_site()}: the result would be a constant and its "
                      f"derivative silently lost. {instead}", what)
    return f


class Poison:
    """A variable with no single value after an ``if`` on a traced condition (assigned in one
    branch only, or to values of different kinds): any use of it raises, saying why."""

    __slots__ = ("why",)

    def __init__(self, why):
        self.why = why

    def fail(self, *a, **k):
        raise TraceError(f"{self.why}; it is used at {user_site()}")

    def returned(self, fn_name):
        raise TraceError(f"{self.why}; {fn_name} returns it")

    __bool__ = __float__ = __int__ = __index__ = __iter__ = __len__ = __call__ = fail
    __getitem__ = __setitem__ = __neg__ = __pos__ = __abs__ = __array__ = __array_ufunc__ = fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = fail
    __pow__ = __rpow__ = __mod__ = __rmod__ = __floordiv__ = __rfloordiv__ = __matmul__ = __rmatmul__ = fail
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __hash__ = fail

    def __getattr__(self, name):
        self.fail()

    @property
    def __class__(self):  # isinstance(p, str) asks this (isinstance(p, Poison) does not)
        self.fail()

    def __repr__(self):
        return f"<no value: {self.why}>"
