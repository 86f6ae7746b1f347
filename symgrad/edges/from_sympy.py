"""sympy expressions a user already has -> Program (the tracer's output, by another road).

The expression tree is turned into the same plain-data program the tracer records,
bottom-up, with identical subexpressions shared, so models from sympy.physics.mechanics
(whose trees repeat subterms many times) become programs of the size of their DAG, and
cache, pickle and differentiate like traced functions."""
from __future__ import annotations

import re
import sys

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.logic.boolalg import ITE

from sympy.codegen import cfunctions as cf

from . import realfns as R
from ..ir.nodes import is_const, is_neg
from ..ir.ops import CONSTANTS, OPS
from ..ir.program import Arg, Builder, Output, no_double


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


def program_from_sympy(exprs, args, cse_nodes=0):
    """Program evaluating ``exprs`` as a function of ``args`` (symbols, dynamicsymbols, or
    lists/Matrices of them for array arguments); through sympy's cse where the expressions
    have at most ``cse_nodes`` distinct subexpressions (Options.sympy_cse_nodes)."""
    if not isinstance(args, (list, tuple)):
        raise TypeError("args must be a list: one entry per argument (a symbol, or a list of symbols)")
    b = Builder()
    memo, prog_args, taken = {}, [], set()
    for i, item in enumerate(args):
        leaves, shape = _leaves(item)
        for j, leaf in enumerate(leaves):
            leaf = sp.sympify(leaf)
            if not (isinstance(leaf, (sp.Symbol, AppliedUndef))):
                raise TypeError(f"argument {i}: {leaf} is not a symbol or dynamicsymbol")
            if leaf in memo:
                raise ValueError(f"{leaf} appears twice in args")
            memo[leaf] = b.node("arg", i, j)  # read as written: no substitution (sympy would
            # evaluate the whole expression again, its assumptions exponential in nested depth)
        base = re.sub(r"\W", "_", _name(sp.sympify(leaves[0])) if shape == () else _common(leaves, i)) or "s"
        name = base
        while name in taken:
            name += "_"
        taken.add(name)
        prog_args.append(Arg(name, tuple(shape)))
    arr = _output_array(exprs)
    flat = [sp.sympify(e) for e in arr.flat]
    bad = {e for e in _subexpressions(flat, stop=memo) if isinstance(e, (sp.Derivative, AppliedUndef, sp.Symbol))}
    if bad:
        listed = ", ".join(sorted(map(str, bad))[:8])
        raise ValueError(f"the expressions depend on {listed}, which are not in args: pass them as "
                         "arguments, or substitute numbers first (expr.subs({...}))")
    distinct, tree = _sizes(flat) if cse_nodes else (0, 0)
    if 0 < distinct <= cse_nodes and tree <= TREE_PER_NODE * cse_nodes:
        shared, reduced = sp.cse(flat, symbols=sp.numbered_symbols(cls=sp.Dummy))
        try:
            cse_memo = dict(memo)
            for sym, e in shared:
                cse_memo[sym] = _record(e, b, cse_memo)
            outs = tuple(_record(e, b, cse_memo) for e in reduced)
            return b.program(prog_args, [Output("out", arr.shape, outs)])
        except ValueError:  # raised again below, naming what cannot be read as the user wrote it
            pass
    outs = tuple(_record(e, b, memo) for e in flat)
    return b.program(prog_args, [Output("out", arr.shape, outs)])


def _common(leaves, i):
    """An array argument's name: its symbols' common stem (q for q0, q1, ...), else argI."""
    names = [_name(sp.sympify(x)) for x in leaves]
    stem = re.match(r"[A-Za-z_]+", names[0])
    stem = stem.group(0).rstrip("_") if stem else ""
    return stem if stem and all(n.startswith(stem) for n in names) else f"arg{i}"


# sympy function -> op, and the named constants, read off the op registry
_READS = [(f, name, o.condition) for name, o in OPS.items() if o.reads for f in o.reads(sys.modules[__name__])]
_FUNCS = {f: name for f, name, condition in _READS if not condition}
_ARITHMETIC = (sp.Mul, sp.Add, sp.Pow)
_RELATIONS = {f: name for f, name, condition in _READS if condition}
_NAMED = {form(sp): name for name, (_, form) in CONSTANTS.items()}


def _number(e, b):
    if e in _NAMED:
        return b.node("const", "s", _NAMED[e])
    if e.is_Integer:
        return b.const(int(e))
    if e.is_Rational:
        return b.node("const", "q", int(e.p), int(e.q))
    if e is sp.nan or e.is_infinite:
        return b.const(float(e))
    if e.is_Float:
        v = float(e)
        return b.const(v) if sp.Float(v, e._prec) == e else b.node("const", "q", *sp.Rational(e).as_numer_denom())
    if e is sp.true or e is sp.false:
        return b.const(int(bool(e)))
    raise ValueError(f"from_sympy cannot evaluate the number {e} ({type(e).__name__})")


def _node(e, args, b):
    """The node of sympy expression ``e`` whose arguments have nodes ``args``."""
    f = e.func
    if f in _ARITHMETIC or f in _FUNCS:
        for a, n in zip(e.args, args):
            if is_const(b.nodes[n]) and no_double(b.nodes[n]):
                raise ValueError(f"from_sympy: the number {a.evalf(5)} (in a {f.__name__}) has no double (past "
                                 f"{sys.float_info.max:.4g}): the kernel would compute inf or nan where the "
                                 "expression is finite (2**2000*x at x = 0); scale the expression")
    if f is sp.Mul:
        return _chain(b, "mul", args)
    if f is sp.Add:  # in sympy's order; a later term -x is subtracted (a + (-x) is a - x exactly)
        acc = args[0]
        for a in args[1:]:
            acc = b.node("sub", acc, b.nodes[a][1]) if is_neg(b.nodes[a]) else b.node("add", acc, a)
        return acc
    if f is sp.Pow:
        return b.node("pow", *args)
    if f in _FUNCS:
        return b.node(_FUNCS[f], *args)
    if f in _RELATIONS:
        return b.node(_RELATIONS[f], *args)
    if f in (sp.And, sp.Or):
        acc = args[0]
        for a in args[1:]:
            acc = b.node("and" if f is sp.And else "or", acc, a)
        return acc
    if f is sp.Not:
        return b.node("not", *args)
    if f is ITE:  # if-then-else of conditions (sympy makes them of nested Piecewise conditions)
        return b.node("select", *args)
    if f in (sp.Max, sp.Min):  # n-ary, as a chain of numpy's maximum (minimum): the first at a tie
        acc = args[0]
        for a in args[1:]:
            acc = b.node("maximum" if f is sp.Max else "minimum", acc, a)
        return acc
    if f is sp.Piecewise:
        acc = b.const(float("nan"))
        for value, cond in reversed(list(zip(args[::2], args[1::2]))):
            acc = b.node("select", cond, value, acc)
        return acc
    raise ValueError(f"from_sympy cannot evaluate {f.__name__} (in {e}): write it with functions "
                     "symgrad knows (elementary functions, Piecewise, Min/Max)")


def _chain(b, op, args):
    """args[0] op args[1] op ...; a product with coefficient -1 is a negation (exact)."""
    if op == "mul" and len(args) > 1 and b.nodes[args[0]] == ("const", "i", -1):
        return b.node("neg", _chain(b, op, args[1:]))
    acc = args[0]
    for a in args[1:]:
        acc = b.node(op, acc, a)
    return acc


def _subexpressions(roots, stop=()):
    """The distinct subexpressions of ``roots`` but those in ``stop`` and inside them: each
    once, so that a deep expression sharing its parts costs its size, not that of its tree
    (sympy's atoms and free_symbols walk the tree: exponential in the depth of such sharing)."""
    seen, stack = set(), [e for e in roots if e not in stop]
    while stack:
        e = stack.pop()
        if e not in seen:
            seen.add(e)
            stack.extend(a for a in e.args if a not in stop)
    return seen


# sympy's cse orders terms by the size of their tree (every path counted), which nesting that
# shares its parts makes exponential: past this many tree nodes per allowed distinct node, no cse
# (an 11-link pendulum's Jacobian: 14x; sin(e)*e - e*y + k nested 12 deep: 2 million, 1.5 s).
TREE_PER_NODE = 20


def _sizes(roots):
    """(distinct subexpressions, nodes of the trees) of ``roots``: shared parts once in the
    first, at every use in the second; one walk over the distinct ones."""
    size = {}
    for root in roots:
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if e in size:
                continue
            if not ready:
                stack.append((e, True))
                stack.extend((a, False) for a in e.args if a not in size)
            else:
                size[e] = 1 + sum(size[a] for a in e.args)
    return len(size), sum(size[e] for e in roots)


def _record(root, b, memo):
    """Post-order walk: each distinct subexpression becomes one node."""
    stack = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if e in memo:
            continue
        if e.is_Number or e in _NAMED or e is sp.true or e is sp.false:
            memo[e] = _number(e, b)
        elif not ready:
            stack.append((e, True))
            stack.extend((a, False) for a in e.args if a not in memo)
        else:
            args = []
            for a in e.args:
                v = memo[a]
                args.extend(v) if isinstance(v, list) else args.append(v)
            memo[e] = _node(e, args, b) if e.func is not sp.functions.elementary.piecewise.ExprCondPair \
                else args
    return memo[root]
