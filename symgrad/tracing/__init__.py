"""Tracing: run a plain Python function once on traced values and record its Program.

Every operation on a traced value appends one node to a program.Builder (values.py);
calls reach traced stand-ins for math, builtins and numpy through rewritten copies of
the user's functions (rewrite.py, standins.py). Tracing costs time linear in the
operations the function performs and needs no sympy."""
from __future__ import annotations

import numpy as np

import linecache
import os

from ..errors import ScalarUsedAsArray, TraceError
from ..ir.program import Arg, Builder, Output
from ..signature import TRACED, call_arguments, traced_params
from . import affine, lazy, lazy_extremum, lazy_numpy, overlay, pieces  # noqa: F401  (they fill registry.LAZY)
from .lazy import Unrollable
from .rewrite import intercept
from .site import SYMGRAD_DIR
from .values import Condition, Poison, TracedArray, Value, state, where

__all__ = ["trace", "where", "TraceError"]


def trace(fn, shapes=None, prefix=(), spec=(), consts=None, loop_min=0, dtype="float64"):
    """Run ``fn`` once on traced arguments and return its Program. ``prefix``: bound leading
    arguments (a method's ``self``); ``spec``/``consts``: defaulted parameters a call passes
    (signature.bind): TRACED ones are further scalar arguments, the others constants.
    Arrays of at least ``loop_min`` entries (0: none) stay loops (lazy.py) where the
    operations on them allow; where not, the function is traced again unrolled. ``dtype``:
    the kernel's, for what numpy derives from an array's dtype (np.nan_to_num's largest value)."""
    if loop_min:
        try:
            return _trace(fn, shapes, prefix, spec, consts, loop_min, dtype)
        except Unrollable as e:
            if e.large and not getattr(e, "quiet", False):  # small arrays: unrolled is what they would be anyway
                import logging  # the logger of source.progress: a fallback is slow
                logging.getLogger("symgrad.progress").warning("symgrad: %s: %s, which symgrad cannot keep as a loop: "
                                                              "its arrays are traced element by element (compile "
                                                              "time grows with their size)",
                                                              getattr(fn, "__qualname__", fn), e.args[0])
    return _trace(fn, shapes, prefix, spec, consts, 0, dtype)


def _trace(fn, shapes, prefix, spec, consts, loop_min, dtype):
    given = shapes is not None
    names, shapes = traced_params(fn, shapes, skip=len(prefix))
    n = len(names)
    extra = [name for name, how in spec if how == TRACED]
    names, shapes = names + extra, shapes + [()] * len(extra)
    b = Builder(loop_min, dtype)
    b.unshaped = {} if given else dict(enumerate(names))  # scalars because shapes= was not given (unshaped.py)
    args, values = [], []
    for k, (name, shape) in enumerate(zip(names, shapes)):
        args.append(Arg(name, shape))
        if loop_min and shape != ():  # reads of its entries: by constant index, as unrolled
            values.append(lazy.argument(b, k, shape))
        elif shape == ():
            values.append(Value(b, b.node("arg", k, 0)))
        else:
            arr = np.empty(args[-1].size, dtype=object)
            arr[:] = [Value(b, b.node("arg", k, j)) for j in range(args[-1].size)]
            values.append(arr.reshape(shape).view(TracedArray))
    outer, frames = getattr(state, "builder", None), getattr(state, "branch_frames", None)
    state.builder, state.branch_frames, private = b, [], overlay.begin()
    try:
        positional, keywords = call_arguments(fn, prefix, n, values, spec, consts or {})
        result = intercept(fn)(*positional, **keywords)
    except Unrollable as e:
        e.large = b.large
        raise
    except RecursionError:
        raise TraceError(f"tracing {getattr(fn, '__qualname__', fn)!r} exceeded Python's recursion limit: a "
                         "recursion whose end is decided by an `if` on a traced value runs both branches, "
                         "so it never ends. Recurse a fixed number of times (or loop over a range)") from None
    except (TypeError, AttributeError) as e:
        hint = _array_hint(e, args)
        if hint is None:
            raise
        raise hint from None
    finally:
        state.builder, state.branch_frames = outer, frames
        overlay.end(private)  # what the trace kept from other threads vanishes
    try:
        prog = b.program(args, [_output(b, result, fn)])
    except Unrollable as e:
        e.large = b.large
        raise
    if prog.data:  # the arrays the data was copied from: a later trace checks they still hold it
        object.__setattr__(prog, "originals", tuple(o for _, o in b.data))
    return prog


def _output(b, result, fn):
    name = getattr(fn, "__name__", "f")
    if isinstance(result, Poison):
        result.returned(name)
    if isinstance(result, Value):
        return Output("out", (), (result.i,))
    if isinstance(result, lazy.LazyArray) and result.size < b.loop_min:
        result = np.array([result.at(tuple(lazy.const(i) for i in idx)) for idx in np.ndindex(*result.shape)],
                          dtype=object).reshape(result.shape)
    if isinstance(result, lazy.LazyArray) and result.parts:  # joined: each part written where it goes
        terms = _stores(b, result, lambda idx: affine.flat(idx, result.shape), name, [])
        if any(loops for _, _, loops, _ in terms):
            return Output("out", result.shape, (), (), tuple(terms), True)
        refs = [None] * result.size  # small parts only: entry by entry, as traced unrolled
        for _, i, _, index in terms:
            refs[index[0]] = i
        return Output("out", result.shape, tuple(refs))
    if isinstance(result, lazy.LazyArray):  # every entry one body over the index variables
        loops = tuple((b.new_var(), n) for n in result.shape)
        body = result.at(tuple(lazy.var(v) for v, _ in loops))
        if isinstance(body, Condition):
            raise TraceError(f"{name} returned comparisons; return numbers (use symgrad.where)")
        i = body.i if isinstance(body, Value) else b.const(body)
        if i is None:
            raise TraceError(f"{name} returned {type(body).__name__} entries; expected numbers")
        return Output("out", result.shape, (i,), loops)
    arr = np.asarray(result, dtype=object)
    refs = []
    for r in arr.flat:
        if isinstance(r, np.ndarray) and r.ndim == 0:  # np.where(...) of constants: a 0-d array
            r = r[()]
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


def _stores(b, arr, place, name, terms):
    """The (1, weight, loops, index) terms that write LazyArray ``arr`` into a result, entry
    ``idx`` of it at flat index ``place(idx)``: a loop a part, small parts entry by entry."""
    if arr.parts:
        for s, p in zip(arr.starts, arr.parts):
            def moved(idx, s=s, a=arr.axis):
                return place(idx[:a] + (lazy.add(idx[a], lazy.const(s)),) + idx[a + 1:])
            _stores(b, p, moved, name, terms)
        return terms
    points = [tuple(lazy.const(i) for i in idx) for idx in np.ndindex(*arr.shape)] if arr.size < b.loop_min else None
    loops = () if points is not None else tuple((b.new_var(), n) for n in arr.shape)
    for idx in points if points is not None else [tuple(lazy.var(v) for v, _ in loops)]:
        body = arr.at(idx)
        if isinstance(body, Condition):
            raise TraceError(f"{name} returned comparisons; return numbers (use symgrad.where)")
        i = body.i if isinstance(body, Value) else b.const(body)
        if i is None:
            raise TraceError(f"{name} returned {type(body).__name__} entries; expected numbers")
        terms.append((b.const(1), i, loops, place(idx)))
    return terms


_AS_ARRAY = ("'Value' object has no len()", "object of type 'Value' has no len()",
             "'Value' object is not subscriptable", "'Value' object is not iterable",
             "argument of type 'Value' is not iterable", "len() of unsized object",
             "for @: 'Value' and 'Value'")
_ARRAY_ATTRIBUTES = {a for a in dir(np.ndarray) if not a.startswith("_")}


def _array_hint(error, args):
    """A ScalarUsedAsArray for Python's TypeError on a traced scalar used as a sequence."""
    text = str(error)
    attr = getattr(error, "name", None) if isinstance(error, AttributeError) else None
    if isinstance(error, AttributeError):
        if not (type(getattr(error, "obj", None)) is Value and attr in _ARRAY_ATTRIBUTES):
            return None
    elif not any(t in text for t in _AS_ARRAY):
        return None
    tb, site = error.__traceback__, "an unknown place"
    while tb is not None:
        code = tb.tb_frame.f_code
        if not code.co_filename.startswith(SYMGRAD_DIR) and f"{os.sep}numpy{os.sep}" not in code.co_filename:
            src = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            site = f"{code.co_name}() in {code.co_filename}, line {tb.tb_lineno}: `{src}`"
        tb = tb.tb_next
    scalars = [a.name for a in args if a.shape == ()]
    return ScalarUsedAsArray(f"a traced scalar is used as an array ({text}) at {site}: every argument "
                             "is a scalar unless shapes= says otherwise; pass shapes=[...] with one core "
                             "shape per argument", scalars)
