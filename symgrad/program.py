"""The IR: a straight-line program that every stage after tracing reads and writes.

Inputs are sympy symbols grouped into arguments, ``body`` is a list of single
assignments ``t = expr`` (expr over inputs and earlier temporaries), outputs are
expressions over both. Differentiating this form costs time proportional to the
program, where differentiating the expanded expression tree can swell."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import sympy as sp


@dataclass(frozen=True)
class Arg:
    name: str
    shape: tuple
    symbols: tuple  # flat, C order

    @property
    def size(self):
        return prod(self.shape)


@dataclass(frozen=True)
class Output:
    name: str
    shape: tuple
    exprs: tuple  # flat, C order

    @property
    def size(self):
        return prod(self.shape)


@dataclass(frozen=True)
class Program:
    args: tuple  # of Arg
    body: tuple  # of (Symbol, Expr)
    outputs: tuple  # of Output

    def input_symbols(self):
        return [s for a in self.args for s in a.symbols]

    def output_exprs(self):
        return [e for o in self.outputs for e in o.exprs]

    def with_outputs(self, outputs, body=None):
        return Program(self.args, self.body if body is None else tuple(body), tuple(outputs))

    def inlined(self, limit=None):
        """Output expressions with every temporary substituted away (closed form).

        With ``limit``, returns None as soon as the expanded trees would exceed
        ``limit`` operations in all (the DAG may expand exponentially)."""
        env, size = {}, {}
        for t, e in self.body:
            if limit is not None:
                size[t] = _nodes(e) + sum(size.get(s, 0) for s in e.free_symbols)
                if size[t] > limit:
                    return None
            env[t] = e.xreplace(env)
        outs = [e for o in self.outputs for e in o.exprs]
        if limit is not None:
            total = sum(_nodes(e) + sum(size.get(s, 0) for s in e.free_symbols) for e in outs)
            if total > limit:
                return None
        return [e.xreplace(env) for e in outs]

    def count_ops(self):
        return sum(_nodes(e) for _, e in self.body) + sum(_nodes(e) for e in self.output_exprs())


def _nodes(e):
    """Operation count of one expression (cheap: no sympy.count_ops)."""
    n = 0
    stack = [e]
    while stack:
        x = stack.pop()
        if x.args:
            n += max(1, len(x.args) - 1)
            stack.extend(x.args)
    return n


def split(exprs, outputs_like):
    """Regroup a flat list of expressions into Outputs shaped like ``outputs_like``."""
    res, k = [], 0
    for o in outputs_like:
        res.append(Output(o.name, o.shape, tuple(sp.sympify(e) for e in exprs[k:k + o.size])))
        k += o.size
    return tuple(res)
