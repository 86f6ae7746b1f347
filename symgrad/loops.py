"""Programs whose array operations stayed loops (tracing/lazy.py), in sympy, and their
derivatives: what render/loops.py prints.

A sum over index variables is an atom of the closed-form expressions, a sympy function of
its slots (the loop-invariant values its body reads: arguments' entries, other sums) whose
partial derivative by slot i is the sum of the body's partial derivative, another such atom
(``fdiff``). So sympy's own chain rule differentiates through sums, to any order, and the
work is proportional to the body, not to the data. The gradient by a large argument (one
the loops read entry by entry) is a scatter: adjoint of the sum times the body's partial
derivative by each read, added at the entry read. Derivatives the loop form does not cover
(transforms/kinds.supports) are taken of the program traced again unrolled (Function)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import sympy as sp

from .program import Arg
from .symbolic import arg_symbols, node_expr, number


class Reduction:
    """``sum over loops of body``: body in slot symbols and read symbols."""

    def __init__(self, k, loops, body, slots, reads):
        self.k, self.loops, self.body, self.slots, self.reads = k, loops, body, slots, reads
        self.classes = {}

    def atom(self, alpha=()):
        """The sympy function class of d^alpha sum / d slots^alpha (alpha: sorted slot indices)."""
        alpha = tuple(sorted(alpha))
        cls = self.classes.get(alpha)
        if cls is None:
            red = self

            def fdiff(self, argindex=1):
                if argindex > len(red.slots):  # the last argument is the sum's number
                    return sp.S.Zero
                return red.atom(alpha + (argindex - 1,))(*self.args)
            name = f"sg_sum{self.k}" + "".join(f"_{a}" for a in alpha)
            cls = type(name, (sp.Function,), {"fdiff": fdiff, "red": self, "alpha": alpha,
                                              "nargs": len(self.slots) + 1, "is_real": True})
            self.classes[alpha] = cls
        return cls

    def derivative(self, alpha):
        """The body's derivative by the slots ``alpha``."""
        e = self.body
        for a in alpha:
            e = sp.diff(e, self.slots[a])
        return e

    def arg_reads(self, a):
        """Read symbols of large argument ``a``."""
        return sorted((s for s, (kind, i, _) in self.reads.items() if kind == "a" and i == a), key=str)


def atoms(e):
    """The sum atoms in ``e``, nested ones included."""
    return {f for f in e.atoms(sp.Function) if hasattr(f.func, "red")}


@dataclass(frozen=True)
class LoopOut:
    """A result: plain (``exprs``: every entry), map (``loops`` over the leading axes, ``exprs``:
    each entry of the trailing shape, in read symbols), or scatter (a large argument's
    gradient: ``exprs`` the (entry, expr) pairs of its explicit part, ``scatter`` the
    (adjoint, sum atom) pairs whose read partials add in)."""
    name: str
    shape: tuple
    exprs: tuple
    loops: tuple = ()
    scatter: tuple = ()
    arg: int = -1

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def kind(self):
        return "map" if self.loops else "scatter" if self.arg >= 0 else "plain"


@dataclass(frozen=True)
class LoopProgram:
    args: tuple      # of program.Arg
    large: tuple     # per argument: read by the loops (no symbols but those of constant reads)
    symbols: tuple   # per argument: its symbols (small), {entry: symbol} (large)
    outputs: tuple   # of LoopOut
    reads: dict      # read symbol -> ("a" | "d", argument or data index, affine index)
    data: tuple = field(default=())

    def with_outputs(self, outputs, args=None, large=None, symbols=None):
        return LoopProgram(args or self.args, large or self.large, symbols or self.symbols, tuple(outputs),
                           self.reads, self.data)

    def count_ops(self):
        return sum(sp.count_ops(e) for o in self.outputs for e in _exprs(o))


def _exprs(o):
    if o.kind == "scatter":
        return [e for _, e in o.exprs] + [a for a, _ in o.scatter]
    return list(o.exprs)


class NotLoopable(Exception):
    """A derivative the loop form does not cover."""


def from_program(prog) -> LoopProgram:
    """The traced program with loops in sympy: closed forms (array code's top level is small)."""
    large = [False] * len(prog.args)
    for n in prog.nodes:
        if n[0] == "read" and n[1] == "a":
            large[n[2]] = True
    symbols = [{} if big else arg_symbols(a) for a, big in zip(prog.args, large)]
    reads, val, reductions = {}, [], []
    for i, node in enumerate(prog.nodes):
        op = node[0]
        if op == "arg":
            a, j = node[1], node[2]
            if large[a]:
                if j not in symbols[a]:
                    symbols[a][j] = arg_symbols(Arg(prog.args[a].name, prog.args[a].shape))[j] \
                        if prog.args[a].size <= 64 else sp.Symbol(f"{prog.args[a].name}[{j}]", real=True)
                val.append(symbols[a][j])
            else:
                val.append(symbols[a][j])
        elif op == "const":
            val.append(number(node))
        elif op == "read":
            s = sp.Symbol(f"sg_r{i}", real=True)
            reads[s] = node[1:]
            val.append(s)
        elif op == "sum":
            body = val[node[1]]
            inner = sorted(atoms(body), key=str)
            outer_atoms = [f for f in inner if not any(f != g and g.has(f) for g in inner)]
            values = outer_atoms + sorted((s for s in body.xreplace({f: sp.S.Zero for f in outer_atoms}).free_symbols
                                           if s not in reads), key=str)
            slots = tuple(sp.Symbol(f"sg_s{len(reductions)}_{k}", real=True) for k in range(len(values)))
            sub = dict(zip(values, slots))
            body_s = body.xreplace(sub)
            red = Reduction(len(reductions), node[2], body_s, slots,
                            {s: reads[s] for s in body_s.free_symbols if s in reads})
            reductions.append(red)
            val.append(red.atom()(*values, sp.Integer(red.k)))
        else:
            val.append(node_expr(prog, node, [val[j] for j in node[1:]]))
    outputs = []
    for o in prog.outputs:
        if o.loops:
            outputs.append(LoopOut(o.name, o.shape, (val[o.refs[0]],), o.loops))
        else:
            outputs.append(LoopOut(o.name, o.shape, tuple(val[r] for r in o.refs)))
    return LoopProgram(tuple(prog.args), tuple(large), tuple(symbols), tuple(outputs), reads, tuple(prog.data))


# -- derivatives --------------------------------------------------------------------------
# Closed forms (loop bodies and the straight-line code) are sympy trees: a program whose trees
# would exceed this many operations (an array updated step after step reads itself 3^k times)
# is taken of the unrolled trace, whose straight-line body shares them.
def _scalar(lp, what):
    if len(lp.outputs) != 1 or lp.outputs[0].kind != "plain" or lp.outputs[0].shape != ():
        raise NotLoopable(f"{what} of a function with loops needs one scalar result")
    return lp.outputs[0].exprs[0]


def _small(lp, nums, what):
    for i in nums:
        if lp.large[i]:
            raise NotLoopable(f"{what} by the large argument {lp.args[i].name!r}")


def _grad_out(lp, e, i, name):
    a = lp.args[i]
    if not lp.large[i]:
        return LoopOut(name, a.shape, tuple(sp.diff(e, s) for s in lp.symbols[i]))
    explicit = tuple((j, sp.diff(e, s)) for j, s in sorted(lp.symbols[i].items()) if e.has(s))
    scatter = []
    for f in sorted(atoms(e), key=str):
        red = f.func.red
        if not red.arg_reads(i):
            continue
        if f.func.alpha:
            raise NotLoopable("a second derivative by a large argument")
        rho = sp.Dummy("rho", real=True)
        adj = sp.diff(e.xreplace({f: rho}), rho).xreplace({rho: f})
        if adj != 0:
            scatter.append((adj, f))
    return LoopOut(name, a.shape, explicit, scatter=tuple(scatter), arg=i)


def derive(lp, kind, nums, tangents=()):
    """The LoopProgram of one derivative step (Function._steps) of ``lp``."""
    if kind in ("grad", "value_and_grad"):
        e = _scalar(lp, kind)
        outs = [_grad_out(lp, e, i, "d_" + lp.args[i].name) for i in nums]
        return lp.with_outputs(([LoopOut("value", (), (e,))] if kind == "value_and_grad" else []) + outs)
    if kind == "jacobian":
        outs = []
        for o in lp.outputs:
            for i in nums:
                a, name = lp.args[i], f"jac_{o.name}_{lp.args[i].name}" if len(lp.outputs) > 1 else \
                    f"jac_{lp.args[i].name}"
                if o.kind == "scatter":
                    raise NotLoopable("a second derivative by a large argument")
                if lp.large[i]:
                    if o.kind != "plain" or o.shape != ():
                        raise NotLoopable("the Jacobian of an array result by a large argument")
                    outs.append(_grad_out(lp, o.exprs[0], i, name))
                    continue
                exprs = tuple(sp.diff(e, s) for e in o.exprs for s in lp.symbols[i])
                outs.append(LoopOut(name, o.shape + a.shape, exprs, o.loops))
        return lp.with_outputs(outs)
    if kind == "hessian":
        e = _scalar(lp, kind)
        _small(lp, nums, kind)
        g = {i: [sp.diff(e, s) for s in lp.symbols[i]] for i in nums}
        outs = [LoopOut(f"d2_{lp.args[i].name}_{lp.args[j].name}", lp.args[i].shape + lp.args[j].shape,
                        tuple(sp.diff(d, t) for d in g[i] for t in lp.symbols[j])) for i in nums for j in nums]
        return lp.with_outputs(outs)
    if kind == "hvp":
        e = _scalar(lp, kind)
        _small(lp, nums, kind)
        vs = [arg_symbols(Arg(t, lp.args[i].shape)) for t, i in zip(tangents, nums)]
        outs = []
        for i in nums:
            rows = [sp.diff(e, s) for s in lp.symbols[i]]
            outs.append(LoopOut(f"hvp_{lp.args[i].name}", lp.args[i].shape, tuple(
                sp.Add(*[sp.diff(r, t) * v for j, vj in zip(nums, vs) for t, v in zip(lp.symbols[j], vj)])
                for r in rows)))
        args = lp.args + tuple(Arg(t, lp.args[i].shape) for t, i in zip(tangents, nums))
        return lp.with_outputs(outs, args, lp.large + (False,) * len(nums), lp.symbols + tuple(vs))
    if kind.startswith("d") and kind[1:].isdigit():
        i = nums[0]
        _small(lp, nums, kind)
        (s,) = lp.symbols[i]
        return lp.with_outputs([LoopOut(o.name, o.shape, tuple(sp.diff(e, s, int(kind[1:])) for e in o.exprs),
                                        o.loops) for o in lp.outputs])
    raise NotLoopable(f"{kind} of a function with loops")
