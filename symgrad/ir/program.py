"""The IR: a straight-line program of plain Python data, as the tracer records it.

Node ``k`` is a tuple ``(op, *operands)``: ``("arg", a, j)`` is entry ``j`` (C order) of
argument ``a``, ``("const", tag, payload)`` an exact number, every other op names an
operation (see ops.py) on earlier nodes, by index (nodes.py: the structural ops' layouts and
what the rest of symgrad asks of a node). Identical nodes are shared (value
numbering), so the program is a DAG. Its hash is the cache key of everything compiled
from it; sympy sees it only on a cache miss (edges/to_sympy.py)."""
from __future__ import annotations

import hashlib
import math
import numbers
import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Optional
from fractions import Fraction

import numpy as np

from .ops import SWAPPED


@dataclass(frozen=True)
class Arg:
    name: str
    shape: tuple

    @property
    def size(self):
        return math.prod(self.shape)


@dataclass(frozen=True)
class Output:
    """A result. Plain: ``refs`` is the node of every entry (C order). Map (``loops``): the
    leading axes are the loops ((index variable, extent), ...) and ``refs`` the nodes of the
    trailing entries, bodies over those variables. Scatter (``adds`` not None, ``refs`` ()):
    zeros, then for each (coef, weight, loops, index) of ``adds`` and every point of its loops,
    coef * weight added at entry ``index`` (the gradient by an argument the loops read);
    with ``stores``, each entry is one term's weight, written (coef 1: an array joined by
    np.concatenate, part by part, its zeros' signs kept)."""
    name: str
    shape: tuple
    refs: tuple
    loops: tuple = ()
    adds: Optional[tuple] = None
    stores: bool = False

    @property
    def size(self):
        return math.prod(self.shape)


@dataclass(frozen=True)
class Program:
    args: tuple     # of Arg
    nodes: tuple    # of (op, *operands)
    outputs: tuple  # of Output
    data: tuple = ()  # read-only numpy arrays the loops read (``("read", "d", k, index)``)

    @cached_property
    def key(self) -> str:
        """Hash of everything the program computes: ops, exact constants, shapes, names, and
        the data arrays by content."""
        digests = [(str(d.dtype), d.shape, hashlib.sha256(d.tobytes()).hexdigest()) for d in self.data]
        return hashlib.sha256(repr((self.args, self.nodes, self.outputs, digests)).encode()).hexdigest()

    @cached_property
    def has_loops(self) -> bool:
        """Whether array operations stayed loops (see tracing/lazy.py)."""
        return any(n[0] in ("read", "sum", "extremum") for n in self.nodes) or \
            any(o.loops or o.adds is not None for o in self.outputs)

    def __reduce__(self):  # pickled without its cached key: recomputed where it is loaded
        return Program, (self.args, self.nodes, self.outputs, self.data)

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
            if n[0] == "read":
                if n[1] == "i":
                    lines.append(f"    t{i} = index {index_text(n[3])}")
                    continue
                name = self.args[n[2]].name if n[1] == "a" else f"data{n[2]}"
                lines.append(f"    t{i} = {name}[{index_text(n[3])}]")
            elif n[0] == "sum":
                lines.append(f"    t{i} = sum {ref(n[1])} over {', '.join(f'i{v}<{e}' for v, e in n[2])}"
                             + (" in numpy's order (blocks of {}, runs of {})".format(*n[3]) if len(n) > 3 else ""))
            elif n[0] == "extremum":
                lines.append(f"    t{i} = {n[3]} {'' if n[4] == 0 else 'first index of '}{ref(n[1])} over "
                             f"{', '.join(f'i{v}<{e}' for v, e in n[2])}")
            elif n[0] not in ("const", "arg"):
                lines.append(f"    t{i} = {n[0]} {' '.join(ref(j) for j in n[1:])}")
        for o in self.outputs:
            if o.loops:
                lines.append(f"    {o.name}[{', '.join(f'i{v}<{e}' for v, e in o.loops)}] = "
                             f"[{', '.join(ref(j) for j in o.refs)}]")
                continue
            if o.adds is not None:
                lines.append(f"    {o.name}{list(o.shape)} = 0")
                for coef, w, loops, index in o.adds:
                    over = f" over {', '.join(f'i{v}<{e}' for v, e in loops)}" if loops else ""
                    lines.append(f"    {o.name}[{index_text(index)}] " +
                                 (f"= {ref(w)}{over}" if o.stores else f"+= {ref(coef)} * {ref(w)}{over}"))
                continue
            refs = ", ".join(ref(j) for j in o.refs)
            lines.append(f"    {o.name}{list(o.shape) if o.shape else ''} = "
                         + (refs if o.shape == () else f"[{refs}]"))
        return "\n".join(lines) + " }"

    def count_ops(self):
        return sum(1 for n in self.nodes if n[0] not in ("const", "arg"))


def index_text(index):
    """An affine index (tracing/lazy.py) as text: ``3*i1 + 2``, gathers as ``data4[i2]``."""
    c, terms = index
    parts = [(f"i{t}" if isinstance(t, int) else f"data{t[1]}[{index_text(t[2])}]") + ("" if k == 1 else f"*{k}")
             for t, k in terms]
    return " + ".join(parts + ([str(c)] if c or not parts else []))


def index_vars(index, out=None):
    """The loop variables an affine index depends on."""
    out = set() if out is None else out
    for t, _ in index[1]:
        if isinstance(t, int):
            out.add(t)
        else:
            index_vars(t[2], out)
    return out


_BELOW = {"lt": "le", "le": "le", "gt": "gt", "ge": "gt"}  # x op c as x op' (the largest double below c)
_IDENTITIES = frozenset({"mul", "div", "add", "sub"})  # ops with an identity Builder.node folds
_FLIP = SWAPPED  # c op x is x op' c


def no_double(node):
    """Whether const ``node`` is an int or fraction past the doubles (2**2000: float() overflows)."""
    if node[1] not in ("i", "q"):
        return False
    try:
        float(Fraction(*node[2:]))
    except OverflowError:
        return True
    return False


def _inexact(node):
    """The number of const ``node`` where a comparison with it is not one with a double: an int
    past the doubles (2**2000), a fraction no double equals (1/3); else None. An int such as
    2**53 + 1 is compared rounded, as numpy does (np.int64 constants, array entries)."""
    if node[1] == "i":
        return node[2] if no_double(node) else None
    if node[1] != "q":
        return None
    v = Fraction(*node[2:])
    return None if not no_double(node) and float(v) == v else v


def _exact_comparison(b, n):
    """Comparison node ``n`` (a double with a number _inexact finds) as Python compares them,
    exactly: a comparison with the largest double below the number, or a
    constant (no double equals it: == never holds, != always). None where both are doubles."""
    op, x, c = n
    if b.nodes[x][0] == "const" and b.nodes[c][0] == "const":  # (numbers alone: as they are)
        return None
    v = _inexact(b.nodes[c])
    if v is None:
        v = _inexact(b.nodes[x])
        if v is None:
            return None
        op, x = _FLIP[op], c
    if op in ("eq", "ne"):
        return b.const(int(op == "ne"))
    if v > sys.float_info.max:
        below = sys.float_info.max
    elif v < -sys.float_info.max:
        below = -math.inf
    else:
        below = float(v) if float(v) < v else math.nextafter(float(v), -math.inf)
    return b.node(_BELOW[op], x, b.const(below))


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

    def __init__(self, loop_min=0, dtype="float64"):
        self.nodes, self.index = [], {}
        self.loop_min = loop_min  # arrays of at least this many entries stay loops (0: never)
        self.dtype = np.dtype(dtype)  # the kernel's: the dtype numpy code would see of an array
        self.data, self._data_ids, self.vars = [], {}, 0
        self.large = False  # whether the trace met an array of at least loop_min entries

    def add_data(self, arr):
        """Index of a read-only copy of numeric array ``arr`` among the program's data."""
        k = self._data_ids.get(id(arr))
        if k is not None and self.data[k][1] is arr:
            return k
        exact = arr.dtype.kind in "bi" or (arr.dtype.kind == "u" and (arr.size == 0 or arr.max() < 2 ** 63))
        copy = np.array(arr, dtype=np.int64 if exact else np.float64, order="C")  # as numpy's float arithmetic
        copy.setflags(write=False)
        self._data_ids[id(arr)] = len(self.data)
        self.data.append((copy, arr))
        return len(self.data) - 1

    def new_var(self):
        self.vars += 1
        return self.vars - 1

    def node(self, *n):
        i = self.index.get(n)
        if i is None:
            op = n[0]
            if op in _FLIP:  # a comparison with 2**2000 or 1/3: Python's exact one
                exact = _exact_comparison(self, n)
                if exact is not None:
                    return exact
            elif op in _IDENTITIES:
                same = self._identity(n)
                if same is not None:
                    return same
            i = self.index[n] = len(self.nodes)
            self.nodes.append(n)
        return i

    def _identity(self, n):
        """The operand that ``n`` equals bit for bit whatever it is (IEEE: nan, +-0.0 and +-inf
        included): x*1, 1*x, x/1, x - 0.0, x + -0.0; else None. Folding them keeps the value
        and lets a derivative see through (x - x/1.0 is x - x, whose partial is a structural 0:
        np.std of one entry). x + 0.0 stays (-0.0 + 0.0 is 0.0), so does x - x (nan at inf)."""
        op, a, c = n
        nodes = self.nodes
        if op in ("mul", "add") and nodes[a][0] == "const":  # (both commute)
            a, c = c, a
        x, k = nodes[a], nodes[c]
        if k[0] != "const" or x[0] == "const" or x[0] == "read" and x[1] == "d":  # (an int data entry
            return None  # times 1 is a double in C: numpy's type, kept)
        v = const_value(k)
        if isinstance(v, str) or v != 0 and v != 1:
            return None
        if op in ("mul", "div"):
            return a if v == 1 else None
        if v != 0:
            return None
        negative = isinstance(v, float) and math.copysign(1.0, v) < 0
        return a if negative == (op == "add") else None

    def const(self, c):
        """Node of a number, or None if ``c`` is not a real number."""
        k = const_key(c)
        return None if k is None else self.node(*k)

    def program(self, args, outputs):
        loops = any(o.loops for o in outputs) or any(n[0] in ("read", "sum", "extremum") for n in self.nodes)
        return Program(tuple(args), tuple(self.nodes), tuple(outputs),
                       tuple(d for d, _ in self.data) if loops else ())


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
