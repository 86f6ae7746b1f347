"""The IR: a straight-line program of plain Python data, as the tracer records it.

Node ``k`` is a tuple ``(op, *operands)``: ``("arg", a, j)`` is entry ``j`` (C order) of
argument ``a``, ``("const", tag, payload)`` an exact number, every other op names an
operation (see ops.py) on earlier nodes, by index. Identical nodes are shared (value
numbering), so the program is a DAG. Its hash is the cache key of everything compiled
from it; sympy sees it only on a cache miss (symbolic.py)."""
from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass
from functools import cached_property
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class Arg:
    name: str
    shape: tuple

    @property
    def size(self):
        return math.prod(self.shape)


@dataclass(frozen=True)
class Output:
    name: str
    shape: tuple
    refs: tuple  # node indices, C order

    @property
    def size(self):
        return math.prod(self.shape)


@dataclass(frozen=True)
class Program:
    args: tuple     # of Arg
    nodes: tuple    # of (op, *operands)
    outputs: tuple  # of Output

    @cached_property
    def key(self) -> str:
        """Hash of everything the program computes: ops, exact constants, shapes, names."""
        return hashlib.sha256(repr((self.args, self.nodes, self.outputs)).encode()).hexdigest()

    def __reduce__(self):  # pickled without its cached key: recomputed where it is loaded
        return Program, (self.args, self.nodes, self.outputs)

    def __str__(self):
        """One assignment a line, like a jaxpr: ``t3 = mul t1 t2``."""
        def ref(i):
            n = self.nodes[i]
            if n[0] == "const":
                return repr(const_value(n))
            if n[0] == "arg":
                a = self.args[n[1]]
                return a.name if a.shape == () else f"{a.name}[{n[2]}]"
            return f"t{i}"
        sig = ", ".join(f"{a.name}{list(a.shape) if a.shape else ''}" for a in self.args)
        lines = [f"{{ lambda {sig} ."]
        for i, n in enumerate(self.nodes):
            if n[0] not in ("const", "arg"):
                lines.append(f"    t{i} = {n[0]} {' '.join(ref(j) for j in n[1:])}")
        for o in self.outputs:
            refs = ", ".join(ref(j) for j in o.refs)
            lines.append(f"    {o.name}{list(o.shape) if o.shape else ''} = "
                         + (refs if o.shape == () else f"[{refs}]"))
        return "\n".join(lines) + " }"

    def count_ops(self):
        return sum(1 for n in self.nodes if n[0] not in ("const", "arg"))


def const_key(c):
    """The exact node of a Python/numpy number, or None: floats by their bits (-0.0 and
    nan stay themselves), integers and fractions exactly."""
    if isinstance(c, (bool, np.bool_)):  # Python's and numpy's booleans
        return ("const", "i", int(c))
    if isinstance(c, numbers.Integral):
        return ("const", "i", int(c))
    if isinstance(c, float):  # float subclasses too: their value is what arithmetic uses
        return ("const", "f", float.hex(float.__float__(c)))
    if isinstance(c, Fraction):
        return ("const", "q", c.numerator, c.denominator)
    if isinstance(c, numbers.Real):  # numpy scalars, longdouble
        try:
            f = float(c)
        except (TypeError, ValueError, OverflowError):
            return None
        if not math.isfinite(f) or Fraction(f) == _exact(c):
            return ("const", "f", float.hex(f))
        q = _exact(c)
        return ("const", "q", q.numerator, q.denominator)
    return None


def _exact(c):
    try:
        return Fraction(*c.as_integer_ratio())
    except (AttributeError, TypeError, ValueError, OverflowError):
        return Fraction(float(c))


def const_value(node):
    """The Python number a const node stands for."""
    _, tag, *payload = node
    if tag == "i":
        return payload[0]
    if tag == "f":
        return float.fromhex(payload[0])
    if tag == "q":
        return Fraction(payload[0], payload[1])
    return payload[0]  # "s": a named constant (pi, E, ...), from sympy input


class Builder:
    """Records nodes with value numbering; ``node(...)`` returns the index."""

    def __init__(self):
        self.nodes, self.index = [], {}

    def node(self, *n):
        i = self.index.get(n)
        if i is None:
            i = self.index[n] = len(self.nodes)
            self.nodes.append(n)
        return i

    def const(self, c):
        """Node of a number, or None if ``c`` is not a real number."""
        k = const_key(c)
        return None if k is None else self.node(*k)

    def program(self, args, outputs):
        return Program(tuple(args), tuple(self.nodes), tuple(outputs))


def tangent_names(names, argnums):
    """Names of the tangent arguments of a Hessian-vector product (``v_x`` for ``x``), made
    unique against the function's own argument names."""
    taken, out = set(names), []
    for i in argnums:
        t = f"v_{names[i]}"
        while t in taken:
            t = "_" + t
        taken.add(t)
        out.append(t)
    return out
