"""A symgrad Function called on traced values: its program replayed into the trace.

``symgrad.compile(lambda x: g(h(x)))`` with ``g``, ``h`` Functions (compiled, a derivative
verb such as ``F.grad``, or ``from_sympy``): the call reaches ``Function._call`` (the C
entry point passes traced arguments on to it), which hands it here while a trace runs. The
Function's program (its own: a derivative's program for ``F.grad``) is replayed node by
node through ``Builder.node`` with its argument nodes mapped to the traced arguments, so
value numbering and the tracer's folds apply and the outer program differentiates through
it. The results nest as the Function's kernel returns them (structure.nest)."""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir.nodes import is_arg, is_condition, is_const, is_loop, op_name
from ..structure import nest
from . import values
from .lazy import LazyArray, Unrollable
from .ufuncs import holds_traced
from .values import Condition, TracedArray, Value, user_site


def tracing_call(args):
    """Whether a call with positional ``args`` is made on values of the running trace."""
    b = getattr(values.state, "builder", None)
    return b is not None and holds_traced(list(args))


def inline(prog, structure, what, args):
    """The traced results of Program ``prog`` (a Function's: ``what`` names it in messages)
    called with positional ``args``, nested as ``structure`` (structure.nest)."""
    b = values.state.builder
    if len(args) != len(prog.args):
        raise TraceError(f"{what} takes {len(prog.args)} arguments, got {len(args)} at {user_site()}")
    if prog.has_loops or prog.data:
        raise TraceError(f"{what} is called on traced values at {user_site()}, but its program keeps arrays "
                         "as loops (data read by pointer), which cannot be inlined into another trace: "
                         "compile the inner function with options=symgrad.Options(loop_min_size=0), or call "
                         "it outside the traced function and pass its result in")
    entries = [_entries(b, a, x, what) for a, x in zip(prog.args, args)]
    m = [None] * len(prog.nodes)
    for i, n in enumerate(prog.nodes):
        if is_arg(n):
            m[i] = entries[n[1]][n[2]]
        elif is_const(n):
            m[i] = b.node(*n)
        elif not is_loop(n) and all(isinstance(j, int) for j in n[1:]):
            m[i] = b.node(op_name(n), *(m[j] for j in n[1:]))
        else:
            raise TraceError(f"{what}: its program's operation {op_name(n)!r} cannot be inlined into another trace "
                             f"(at {user_site()}); call it outside the traced function and pass its result in")
    outs = []
    for o in prog.outputs:
        vals = [_result(b, m[j]) for j in o.refs]
        if o.shape == ():
            outs.append(vals[0])
        else:
            arr = np.empty(len(vals), dtype=object)
            arr[:] = vals
            outs.append(arr.reshape(o.shape).view(TracedArray))
    return nest(structure, outs)


def _result(b, i):
    n = b.nodes[i]
    return Condition(b, i) if is_condition(n) else Value(b, i)


def _entries(b, arg, x, what):
    """The node of every entry (C order) of argument ``x`` given for ``arg`` (core shape only:
    a batch of traced values is not broadcast)."""
    if isinstance(x, LazyArray):
        raise Unrollable(f"{what} called on an array kept as loops at {user_site()}")
    if isinstance(x, (list, tuple)) or isinstance(x, np.ndarray):
        arr = np.asarray(x, dtype=object) if not isinstance(x, np.ndarray) else x
    else:
        arr = np.empty((), dtype=object)
        arr[()] = x
    if arr.shape != tuple(arg.shape) and not (arg.shape == () and arr.size == 1 and arr.ndim <= 1):
        raise TraceError(f"{what}: argument {arg.name!r} has shape {tuple(arg.shape)}, got shape {arr.shape} "
                         f"at {user_site()}: a symgrad Function called on traced values takes its arguments' "
                         "own shapes (no batch)")
    out = []
    for v in arr.reshape(-1):
        if isinstance(v, Condition):
            v = v.number()
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = v[()]
        r = values.ref(b, v)
        if r is None:
            raise TraceError(f"{what}: argument {arg.name!r} holds {type(v).__name__} {v!r} at {user_site()}: "
                             "expected numbers or traced values")
        out.append(r)
    return out
