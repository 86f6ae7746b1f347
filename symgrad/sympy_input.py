"""sympy expressions a user already has -> Program (the tracer's output, by another road).

The expression tree is turned into a straight-line program bottom-up, with identical
subexpressions shared, so models from sympy.physics.mechanics (whose trees repeat
subterms many times) become programs of the size of their DAG."""
from __future__ import annotations

import re

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef

from .program import Arg, Output, Program
from .trace import Tracer


def _leaves(item):
    """An argument as a flat list of sympy leaves and its shape."""
    if isinstance(item, (sp.MatrixBase, sp.NDimArray)):
        arr = np.array(item.tolist(), dtype=object)
        if isinstance(item, sp.MatrixBase) and 1 in arr.shape:
            arr = arr.reshape(-1)  # a column or row vector is a vector
        return list(arr.flat), arr.shape
    if isinstance(item, (list, tuple)):
        arr = np.empty(len(item), dtype=object)
        arr[:] = list(item)
        return list(arr.flat), arr.shape
    return [item], ()


def _name(leaf):
    if isinstance(leaf, AppliedUndef):  # a dynamicsymbol q(t)
        return leaf.func.__name__
    return str(leaf)


def _output_array(exprs):
    if isinstance(exprs, sp.MatrixBase):
        arr = np.array(exprs.tolist(), dtype=object)
        return arr.reshape(-1) if 1 in arr.shape else arr
    if isinstance(exprs, sp.NDimArray):
        return np.array(exprs.tolist(), dtype=object)
    if isinstance(exprs, (list, tuple)):
        return np.array([_output_array(e) if isinstance(e, (list, tuple, sp.MatrixBase)) else e
                         for e in exprs], dtype=object)
    return np.array(exprs, dtype=object)


def program_from_sympy(exprs, args):
    """Program evaluating ``exprs`` as a function of ``args`` (symbols, dynamicsymbols, or
    lists/Matrices of them for array arguments)."""
    if not isinstance(args, (list, tuple)):
        raise TypeError("args must be a list: one entry per argument (a symbol, or a list of symbols)")
    replace, prog_args, taken = {}, [], set()
    for i, item in enumerate(args):
        leaves, shape = _leaves(item)
        symbols = []
        for leaf in leaves:
            leaf = sp.sympify(leaf)
            if not (isinstance(leaf, (sp.Symbol, AppliedUndef))):
                raise TypeError(f"argument {i}: {leaf} is not a symbol or dynamicsymbol")
            if leaf in replace:
                raise ValueError(f"{leaf} appears twice in args")
            base = re.sub(r"\W", "_", _name(leaf)) or "s"
            name = base
            while name in taken:
                name += "_"
            taken.add(name)
            replace[leaf] = sp.Symbol(name, real=True)
            symbols.append(replace[leaf])
        arg_name = symbols[0].name if shape == () else f"arg{i}"
        prog_args.append(Arg(arg_name, tuple(shape), tuple(symbols)))
    arr = _output_array(exprs)
    flat = [sp.sympify(e).xreplace(replace) for e in arr.flat]
    known = set(replace.values())
    for e in flat:
        bad = e.atoms(sp.Derivative) | {s for s in e.free_symbols if s not in known}
        bad |= {f for f in e.atoms(AppliedUndef)}
        if bad:
            listed = ", ".join(sorted(map(str, bad))[:8])
            raise ValueError(f"the expressions depend on {listed}, which are not in args: pass them as "
                             "arguments, or substitute numbers first (expr.subs({...}))")
    tracer = Tracer()
    memo = {}
    outs = [_record(e, tracer, memo) for e in flat]
    return Program(tuple(prog_args), tuple(tracer.body), (Output("out", arr.shape, tuple(outs)),))


def _record(root, tracer, memo):
    """Post-order walk: each distinct subexpression becomes one assignment."""
    stack = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if e in memo:
            continue
        if e.is_Atom:
            memo[e] = e
        elif not ready:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args if a not in memo)
        else:
            args = [memo[a] for a in e.args]
            new = e if all(a is b for a, b in zip(args, e.args)) else e.func(*args)
            # only numbers become assignments: conditions and Piecewise pairs stay inline
            value = isinstance(new, sp.Expr) and not isinstance(new, sp.functions.elementary.piecewise.ExprCondPair)
            memo[e] = tracer.record(new) if value else new
    return memo[root]
