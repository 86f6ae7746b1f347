"""Tracing: run a plain Python function once on traced values and record its Program.

Every operation on a traced value appends one node to a program.Builder (values.py);
calls reach traced stand-ins for math, builtins and numpy through rewritten copies of
the user's functions (rewrite.py, standins.py). Tracing costs time linear in the
operations the function performs and needs no sympy."""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..program import Arg, Builder, Output
from ..signature import traced_params
from .rewrite import intercept
from .values import Condition, Poison, TracedArray, Value, state, where

__all__ = ["trace", "where", "TraceError"]


def trace(fn, shapes=None):
    """Run ``fn`` once on traced arguments and return its Program."""
    names, shapes = traced_params(fn, shapes)
    b = Builder()
    args, values = [], []
    for k, (name, shape) in enumerate(zip(names, shapes)):
        args.append(Arg(name, shape))
        if shape == ():
            values.append(Value(b, b.node("arg", k, 0)))
        else:
            arr = np.empty(args[-1].size, dtype=object)
            arr[:] = [Value(b, b.node("arg", k, j)) for j in range(args[-1].size)]
            values.append(arr.reshape(shape).view(TracedArray))
    outer, frames = getattr(state, "builder", None), getattr(state, "branch_frames", None)
    state.builder, state.branch_frames = b, []
    try:
        result = intercept(fn)(*values)
    except RecursionError:
        raise TraceError(f"tracing {getattr(fn, '__qualname__', fn)!r} exceeded Python's recursion limit: a "
                         "recursion whose end is decided by an `if` on a traced value runs both branches, "
                         "so it never ends. Recurse a fixed number of times (or loop over a range)") from None
    finally:
        state.builder, state.branch_frames = outer, frames
    return b.program(args, [_output(b, result, fn)])


def _output(b, result, fn):
    name = getattr(fn, "__name__", "f")
    if isinstance(result, Poison):
        result.returned(name)
    if isinstance(result, Value):
        return Output("out", (), (result.i,))
    arr = np.asarray(result, dtype=object)
    refs = []
    for r in arr.flat:
        if isinstance(r, (np.ndarray, list, tuple)):
            raise TraceError(f"{name} returned a ragged structure; return a scalar, "
                             "a tuple of scalars or a rectangular array")
        if isinstance(r, Poison):
            r.returned(name)
        if isinstance(r, Condition):
            raise TraceError(f"{name} returned a comparison; return numbers (use symgrad.where)")
        i = r.i if isinstance(r, Value) and r.b is b else None if isinstance(r, Value) else b.const(r)
        if i is None:
            raise TraceError(f"{name} returned {type(r).__name__} {r!r}; expected numbers "
                             "or traced values (a scalar, a tuple of scalars or an array)")
        refs.append(i)
    return Output("out", arr.shape, tuple(refs))
