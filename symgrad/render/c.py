"""Program -> C expressions: which nodes become statements, and one printer that spells
each node through the op table (ir/ops/). No sympy.

``lower`` decides, in one pass over the program, which nodes are printed inside the
expression that uses them (a node used once, while that expression stays small; constants,
negations) and which become statements (``const double tK = ...;``). The result has the
shape the schedule reads (arguments with their input references, a body of statements,
outputs of expressions); ``Printer.doprint`` turns one expression into text for a Target."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..ir.graph import number
from ..ir.nodes import is_additive, is_arg, is_atom, is_call, is_const, is_neg, is_pick, is_pow, is_select, op_name, op_of
from ..ir.ops import CALLS, OPS
from .target import VECTOR_FUNCTIONS


class Ref(int):
    """An input entry the kernel names: a negative int with the entry's label (``x[3]``). A
    statement's temporary is named by its node's index, a plain int."""

    def __new__(cls, i, name):
        r = super().__new__(cls, i)
        r.name = name
        return r


class Expr:
    """One node as printed where it is used: its own text, with the inlined nodes under it.
    ``free_symbols``: the named nodes it reads, in the order the text first reads them;
    ``form`` (of a program lowered with links): its text with those names abstracted, as a
    small int, or (int, the place in free_symbols of each name the text reads) where it
    reads one twice: equal forms print alike (render/roll.py rolls them)."""

    __slots__ = ("low", "node", "free_symbols", "define", "form")

    def __init__(self, low, node, free, define=False, form=None):
        self.low, self.node, self.free_symbols, self.define, self.form = low, node, free, define, form


class _View:
    """What printing an expression reads of its Lowered program. Not the program itself: its
    statements' Exprs pointing back at it would make a reference cycle of every statement,
    which only the cyclic collector frees (lj40: 25 ms, after a stage that pauses it)."""

    __slots__ = ("nodes", "inline", "refs", "ref_of")

    def __init__(self, nodes, inline, refs, ref_of):
        self.nodes, self.inline, self.refs, self.ref_of = nodes, inline, refs, ref_of


class _Arg:
    def __init__(self, arg, symbols):
        self.name, self.shape, self.size, self.symbols = arg.name, arg.shape, arg.size, symbols


class _Out:
    def __init__(self, out, exprs):
        self.name, self.shape, self.size, self.exprs = out.name, out.shape, out.size, tuple(exprs)


def integer_power(nodes, b):
    n = nodes[b]
    if not is_const(n):
        return None
    v = number(n)
    if isinstance(v, Fraction) and v.denominator == 1:
        v = v.numerator
    if isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) < 2 ** 31:
        v = int(v)
    return v if isinstance(v, int) else None


def _labels(arg):
    """The name of each entry of an argument, as the user indexes it: x, x[3], A[1, 2]."""
    if arg.shape == ():
        return [arg.name]
    if len(arg.shape) == 1:
        return [f"{arg.name}[{j}]" for j in range(arg.size)]
    index = zip(*(i.tolist() for i in np.unravel_index(np.arange(arg.size), arg.shape)))
    return [f"{arg.name}[{', '.join(map(str, t))}]" for t in index]


class Lowered:
    """A Program laid out for printing: ``args`` (with ``symbols``: the Ref of every entry),
    ``body`` ((temporary, Expr) statements in order), ``outputs`` (with ``exprs``)."""

    def __init__(self, prog, options, links=False):
        self.prog, self.nodes = prog, prog.nodes
        nodes = prog.nodes
        uses = [0] * len(nodes)
        for n in nodes:
            if not is_atom(n):
                for j in n[1:]:
                    uses[j] += 1
        for o in prog.outputs:
            for r in o.refs:
                uses[r] += 1
        pinned = set()  # nodes that must be statements whatever their uses
        for n in nodes:
            if is_pow(n) and (integer_power(nodes, n[2]) or 0) not in (0, 1, -1):
                pinned.add(n[1])  # a base multiplied by itself: printed once
            elif is_pick(n):  # a chain of selects or picks (np.max) nested into one expression
                for j in n[1:]:     # would keep every condition alive to its end
                    if is_pick(nodes[j]):
                        pinned.add(j)
            elif links and is_additive(n):  # a running sum's links: statements, to roll
                for j in n[1:]:
                    if is_additive(nodes[j]):
                        pinned.add(j)
        if links:  # its last link too, written to the result by a statement of its own
            pinned.update(r for o in prog.outputs for r in o.refs
                          if is_additive(nodes[r]) and any(is_additive(nodes[j]) for j in nodes[r][1:]))
        self.refs = {}
        self.args = []
        for a, arg in enumerate(prog.args):
            syms = []
            for j, label in enumerate(_labels(arg)):
                syms.append(Ref(-1 - len(self.refs), label))
                self.refs[("arg", a, j)] = syms[-1]
            self.args.append(_Arg(arg, tuple(syms)))
        # reads[i]: the named nodes node i prints, in printing order with repeats (its own
        # name where it is a statement); size[i]: the nodes printed inside it (0 for a
        # statement, a constant, an input); part[i] (with links): what node i adds to the
        # form of an expression printing it (-1 for a name; its form's number if printed in)
        inline = self.inline = [False] * len(nodes)
        size = [0] * len(nodes)
        reads = [None] * len(nodes)
        part = [-1] * len(nodes) if links else None
        forms = {}  # a form (op, part of each operand) -> its number
        ref_of = self.ref_of = {}
        body, calls, ops, refs, empty = [], 0, 0, self.refs, ()
        view = _View(nodes, inline, refs, ref_of)
        limit = options.max_inlined_nodes
        for i, n in enumerate(nodes):
            if is_const(n):
                inline[i], reads[i] = True, empty
                if links:
                    part[i] = forms.setdefault(n, len(forms))
                continue
            if is_arg(n):
                ref = ref_of[i] = refs[n]
                inline[i], reads[i] = True, (ref,)
                continue
            op = op_name(n)
            ops += 1
            if is_call(n) or (is_pow(n) and integer_power(nodes, n[2]) is None):
                calls += 1
            if len(n) == 3:
                a, b = n[1], n[2]
                if a == b and not size[a] and reads[a]:  # x * x of a name (a statement, an input):
                    # read once, its form says twice
                    rs, sz = reads[a], 1
                    if links:
                        form = forms.setdefault((op, -1, -2), len(forms))
                else:
                    rs, sz = reads[a] + reads[b], 1 + size[a] + size[b]
                    if links:
                        form = forms.setdefault((op, part[a], part[b]), len(forms))
            else:
                rs, sz = sum([reads[j] for j in n[1:]], ()), 1 + sum([size[j] for j in n[1:]])
                if links:
                    form = forms.setdefault((op, *[part[j] for j in n[1:]]), len(forms))
            if is_neg(n) or (uses[i] == 1 and sz <= limit and i not in pinned):
                inline[i], reads[i], size[i] = True, rs, sz
                if links:
                    part[i] = form
                continue
            ref = ref_of[i] = i  # (a temporary: its node's index; inputs' Refs are negative)
            body.append((ref, _expr(view, i, rs, True, form if links else None)))
            reads[i] = (ref,)
        self.calls, self.ops = calls, ops
        self.body = tuple(body)
        self.outputs = tuple(_Out(o, [_expr(view, r, reads[r], False, part[r] if links else None) for r in o.refs])
                             for o in prog.outputs)

    def count_ops(self):
        return self.ops

    def count_calls(self):
        return self.calls


def _expr(view, i, reads, define, form):
    """The Expr of node ``i`` that prints ``reads`` (with repeats) in its form ``form``."""
    if len(reads) < 2 or (len(reads) == 2 and reads[0] != reads[1]):  # (most: each name read once)
        return Expr(view, i, reads, define, form)
    free = tuple(dict.fromkeys(reads))
    if form is not None and len(free) < len(reads):  # a name read twice: where, in the form
        form = (form, tuple(map(free.index, reads)))
    return Expr(view, i, free, define, form)


def lower(prog, options, links=False) -> Lowered:
    """``links``: every sum read by a sum is a statement (a running sum's links, which
    schedule.py can roll), not nested into its reader's expression."""
    return Lowered(prog, options, links)


class Printer:
    """Spells expressions of a Lowered program in C for one Target, through the op table.
    ``one_lane``: for the one-point copy of a CPU kernel (Options.one_point), whose maths
    calls take the variant of the target's blocks (VECTOR_FUNCTIONS)."""

    def __init__(self, names, target, options, one_lane=False):
        self.names, self.target, self.options = names, target, options
        self.math = target.math
        self.suffix = "f" if target.math == "float" else ""
        self.one_lane = one_lane

    def call(self, fn, args):
        """A call of C maths function ``fn`` (double's name) on argument texts ``args``."""
        if self.one_lane and fn in VECTOR_FUNCTIONS:
            return f"symgrad_one_{fn}{self.suffix}_{self.target.block}({', '.join(args)})"
        return f"{fn}{self.suffix}({', '.join(args)})"

    def literal(self, v):
        """A number as a C literal of the arithmetic type (exactly rounded once)."""
        if isinstance(v, (int, Fraction)):  # exact: rounded once (past the largest double: inf)
            try:
                v = float(v)
            except OverflowError:
                v = math.inf if v > 0 else -math.inf
        v = float(v)
        if self.suffix:  # the arithmetic is float: the constant as a float (past its range: inf)
            with np.errstate(over="ignore"):
                v = float(np.float32(v))
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "(-INFINITY)"
        text = repr(v) + ("F" if self.suffix else "")
        if "e" not in text and "." not in text:
            text = text.replace("F", "") + ".0" + ("F" if self.suffix else "")
        return f"({text})" if text.startswith("-") else text

    def one(self):
        return self.literal(1.0)

    def doprint(self, e):
        return self._node(e.low, e.node, top=e.define)

    def operand(self, low, j):
        if not low.inline[j]:
            return self.names[low.ref_of[j]]
        return self._node(low, j)

    def _node(self, low, i, top=False):
        n = low.nodes[i]
        if is_const(n):
            return self.literal(number(n))
        if is_arg(n):
            return self.names[low.refs[n]]
        if not top and not low.inline[i]:
            return self.names[low.ref_of[i]]
        if is_pow(n):
            return self._pow(low, n[1], n[2])
        a = [self.operand(low, j) for j in n[1:]]
        c = op_of(n).c
        if isinstance(c, str):
            return f"{c}({', '.join(a)})" if c in ("isnan", "isinf", "isfinite") else self.call(c, a)
        if isinstance(c, tuple):
            kind, s = c
            return f"({a[0]} {s} {a[1]})" if kind == "infix" else f"({s}{a[0]})"
        return c(a, self)

    def _pow(self, low, b, x):
        base = self.operand(low, b)
        k = integer_power(low.nodes, x)
        if k is not None and abs(k) <= self.options.max_mul_pow:
            if k == 0:
                return self.one()
            s = self._ipow(base, abs(k))
            return s if k > 0 else f"({self.one()}/{s})"
        v = number(low.nodes[x]) if is_const(low.nodes[x]) else None
        if isinstance(v, Fraction) and v.denominator == 2 and abs(v.numerator) <= self.options.max_mul_pow:
            s = self._ipow(f"sqrt{self.suffix}({base})", abs(v.numerator))
            return s if v > 0 else f"({self.one()}/{s})"
        return self.call("pow", [base, self.operand(low, x)])

    def _ipow(self, base, n):
        return ipow(base, n)


def ipow(base, n):
    """base**n by repeated squaring, as C text; the C compiler shares the repeated subterms."""
    if n == 1:
        return base
    half = ipow(base, n // 2)
    sq = f"({half}*{half})"
    return f"({sq}*{base})" if n % 2 else sq
