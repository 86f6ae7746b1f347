"""A Program's nodes opened for growth: the builder every transform writes derivatives with.

Value numbering (an identical node is the same node) makes CSE free; constructors fold what
is exact: arithmetic of finite constants is done in rationals and rounded once when printed
(``("const", "q", p, q)``), multiplication by 1 and -1, addition of a structural 0, double
negation. A primal node (what the user's code computes) is never rewritten: only what a
transform builds is simplified, so the value keeps the bits Python and numpy compute."""
from __future__ import annotations

import math
from fractions import Fraction

from .fold import finite, fold, in_range
from .program import Output, Program, const_key, const_value, index_vars
from .ops import CONSTANTS
from .nodes import REDUCTIONS

LEAVES = ("const", "arg", "read")  # nodes with no operand nodes (a read's are its index)
_MUL_SPECIAL = frozenset({"const", "div", "neg"})  # the operands Graph.mul may rewrite a product of
_NAMED = {name: v for name, (v, _) in CONSTANTS.items()}


def number(node):
    """The float or Fraction a const node stands for (named constants as doubles)."""
    v = const_value(node)
    return _NAMED[v] if isinstance(v, str) else v


def double(node):
    """The double a const node is printed as: its number rounded once, +-inf past the largest
    (an exact 2**2000 of from_sympy)."""
    v = number(node)
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def cone(nodes, refs):
    """The indices of ``nodes`` that nodes ``refs`` depend on (None entries are 0), ascending."""
    seen, stack = set(), [r for r in refs if r is not None]
    pop, push, extend, see = stack.pop, stack.append, stack.extend, seen.add
    while stack:
        i = pop()
        if i in seen:
            continue
        see(i)
        n = nodes[i]
        op = n[0]
        if op in REDUCTIONS:
            push(n[1])
        elif op not in LEAVES:
            extend(n[1:])
    return sorted(seen)


class Graph:
    """Nodes of ``prog`` and any built after them (value numbered)."""

    def __init__(self, prog: Program):
        self.prog = prog
        self.nodes = list(prog.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.args = list(prog.args)
        self._numbers = {}  # const node -> its number, read once (the rules ask it again and again)
        self.selects = any(n[0] == "select" for n in self.nodes)  # whether any node is one (so far)
        self.consts, self.zeros, self.ones = set(), set(), set()  # const nodes; those = 0, = 1 (read-only outside)
        self._folded, self._ints = {}, {}  # node of constants -> its folded node (or None); int -> node
        self._recips = {}  # rational const node -> its reciprocal as a float node (or None): _divisor
        self._scales = {}  # (const, const) -> whether mul folds c * (k * y) to (c*k) * y
        for i, n in enumerate(self.nodes):
            if n[0] == "const":
                self._known(i)

    def _known(self, i):
        self.consts.add(i)
        v = self.value(i)
        if v == 0:
            self.zeros.add(i)
        elif v == 1:
            self.ones.add(i)

    # -- nodes ---------------------------------------------------------------------------
    def node(self, *n):
        i = self.index.get(n)
        if i is None:
            if None in n:  # (an op's name is a str)
                raise TypeError(f"an operand of {n[0]} is a structural 0 (None): a bug in symgrad's rules")
            op, consts = n[0], self.consts
            if op not in LEAVES and op not in REDUCTIONS:
                for j in n[1:]:
                    if j not in consts:
                        break
                else:  # every operand a constant
                    folded = self._folded.get(n, self._folded)
                    if folded is self._folded:  # each node of constants folded once (in rationals: slow)
                        folded = self._folded[n] = fold(self, n)
                    if folded is not None:
                        return folded
            i = self.index[n] = len(self.nodes)
            self.nodes.append(n)
            if op == "const":
                self._known(i)
            elif op == "select":
                self.selects = True
        return i

    def const(self, c):
        if type(c) is int:  # the rules' 0, 1, -1, 2 ...: looked up, not keyed again
            i = self._ints.get(c)
            if i is None:
                i = self._ints[c] = self.node(*const_key(c))
            return i
        return self.node(*const_key(c))

    def is_const(self, i):
        return i in self.consts

    def value(self, i):
        v = self._numbers.get(i)
        if v is None:
            v = self._numbers[i] = number(self.nodes[i])
        return v

    def is_zero(self, i):
        return i is None or i in self.zeros

    def is_one(self, i):
        return i in self.ones

    # -- simplifying constructors (for what transforms build) -----------------------------
    def add(self, a, b):
        zeros = self.zeros
        if a is None or a in zeros:
            return b
        if b is None or b in zeros:
            return a
        na, nb = self.nodes[a], self.nodes[b]
        if na[0] == "select" and nb[0] == "select" and na[1] == nb[1]:  # one select of the sums:
            return self.select(na[1], self.add(na[2], nb[2]), self.add(na[3], nb[3]))  # same bits
        if nb[0] == "neg":
            return self.sub(a, nb[1])
        return self.node("add", a, b) if a < b else self.node("add", b, a)

    def sub(self, a, b):
        if self.is_zero(b):
            return a
        if self.is_zero(a):
            return self.neg(b)
        if self.nodes[b][0] == "neg":
            return self.add(a, self.nodes[b][1])
        return self.node("sub", a, b)

    def neg(self, a):
        if a is None:
            return None
        if self.nodes[a][0] == "neg":
            return self.nodes[a][1]
        return self.node("neg", a)

    def mul(self, a, b):
        zeros, consts, ones = self.zeros, self.consts, self.ones
        if a is None or b is None or a in zeros or b in zeros:
            return None
        if b in consts and a not in consts:
            a, b = b, a
        if a in ones:
            return b
        if b in ones:
            return a
        nodes = self.nodes
        na, nb = nodes[a], nodes[b]
        if na[0] not in _MUL_SPECIAL and nb[0] not in _MUL_SPECIAL:  # none of the rules below
            return self.node("mul", a, b) if a < b else self.node("mul", b, a)
        a_const = a in consts
        if a_const and self.value(a) == -1:
            return self.neg(b)
        for x, n, y in ((a, na, b), (b, nb, a)):
            if n[0] == "div":
                if n[1] in ones:  # y * (1/r) is y / r: one rounding, the division as written
                    return self.div(y, n[2])
                if n[2] == y:  # y * (p/y) is p: derivatives of x*log(x) at 1e300
                    return n[1]  # (x * ((1/x)/x) underflows)
            elif n[0] == "const":
                r = self._divisor(x)
                if r is not None:  # a rational 1/r, r a float: y / r
                    return self.div(y, r)
            elif n[0] == "neg":
                m = nodes[n[1]]
                if m[0] == "div" and m[2] == y:
                    return self.neg(m[1])
        if na[0] == "neg" and nb[0] == "neg":
            return self.mul(na[1], nb[1])
        if nb[0] == "neg":
            return self.neg(self.mul(a, nb[1]))
        if na[0] == "neg":
            return self.neg(self.mul(na[1], b))
        if a_const and b not in consts:
            c = self.value(a)
            if nb[0] == "mul" and nb[1] in consts:  # c * (k * y) is (c*k) * y, c*k exact (and a double)
                key = (a, nb[1])
                ok = self._scales.get(key)
                if ok is None:  # once per pair of constants (rationals: slow)
                    k = self.value(nb[1])
                    ok = self._scales[key] = finite(c) and finite(k) and in_range(Fraction(c) * Fraction(k))
                if ok:
                    return self.mul(self.node("mul", a, nb[1]), nb[2])
            if not isinstance(c, float) or math.isfinite(c):
                if c < 0:  # -c * y, negated: shared with c * y
                    return self.neg(self.mul(self.const(-c), b))
        return self.node("mul", a, b) if a_const or a < b else self.node("mul", b, a)

    def _divisor(self, x):
        """The float node r where constant ``x`` is 1/r, a rational which is not a float
        itself (1/3, folded exactly from 1/3.0); else None. (A division of 1: mul's own test.)"""
        n = self.nodes[x]
        if n[1] == "q":
            r = self._recips.get(x, self._recips)
            if r is self._recips:  # once per constant (rationals: slow)
                q = 1 / Fraction(n[2], n[3])
                r = self._recips[x] = self.const(float(q)) if q.denominator & (q.denominator - 1) == 0 and \
                    float(q) == q else None
            return r
        return None

    def div(self, a, b):
        if self.is_zero(a):
            return None
        if self.is_one(b):
            return a
        return self.node("div", a, b)

    def pow(self, a, b):
        if self.is_const(b) and self.value(b) == 1:
            return a
        if self.is_const(b) and self.value(b) == 0:
            return self.const(1)
        return self.node("pow", a, b)

    def call(self, name, *xs):
        return self.node(name, *xs)

    def select(self, c, a, b):
        if a == b:
            return a
        if self.is_const(c):
            return a if self.value(c) else b
        return self.node("select", c, self.zero_node(a), self.zero_node(b))

    def zero_node(self, i):
        return self.const(0) if i is None else i

    def const_add(self, i, k):
        return self.const(self.value(i) + k)

    def const_sub(self, i, k):
        """The constant ``i`` - k, exactly: a float stays a float where the difference is one
        (an exponent 0.5 - 1 is the float -0.5: pow, as Python computes x ** -0.5)."""
        v = self.value(i)
        if isinstance(v, float) and math.isfinite(v):
            r = Fraction(v) - k
            return self.const(float(r) if float(r) == r else r)
        return self.const(v - k)

    def sum(self, terms):
        """The sum of the sequence ``terms`` (None entries are 0) in a balanced tree; None if
        all are 0."""
        if len(terms) == 1:  # most adjoints: one term
            t = terms[0]
            return None if t is None or t in self.zeros else t
        terms = [t for t in terms if not self.is_zero(t)]
        if not terms:
            return None
        while len(terms) > 1:
            terms = [self.add(terms[k], terms[k + 1]) if k + 1 < len(terms) else terms[k]
                     for k in range(0, len(terms), 2)]
        return terms[0]

    def chain(self, terms):
        """The sum of ``terms`` (None entries are 0) added one by one in their order, as
        ``g[i] += t`` accumulates (None if all are 0): each partial sum is read by the next
        addition only, so the repeated work of a loop's iterations carries its running sums
        (render/schedule.py rolls it)."""
        acc = None
        for t in terms:
            if not self.is_zero(t):
                acc = t if acc is None else self.add(acc, t)
        return acc

    def cone(self, refs):
        """The nodes ``refs`` depend on (None entries are 0), ascending."""
        return cone(self.nodes, refs)

    def loop_vars(self, i):
        """The loop variables node ``i`` varies with (a sum's own are bound by it)."""
        memo = self.__dict__.setdefault("_vars", [])
        for k in range(len(memo), i + 1):
            n = self.nodes[k]
            if n[0] == "read":
                memo.append(frozenset(index_vars(n[3])))
            elif n[0] in REDUCTIONS:
                memo.append(memo[n[1]] - {v for v, _ in n[2]})
            elif n[0] in LEAVES:
                memo.append(frozenset())
            else:
                memo.append(frozenset().union(*[memo[j] for j in n[1:]]))
        return memo[i]

    def data_only(self, i):
        """Whether node ``i`` is a number of data arrays alone that varies with loops (an entry
        read, or what is computed of entries and constants): a constant, traced element by element."""
        memo = self.__dict__.setdefault("_data", [])
        for k in range(len(memo), i + 1):
            n = self.nodes[k]
            if n[0] in ("read", "const", "arg"):
                memo.append(n[0] == "read" and n[1] != "a" or (n[0] == "const" and None))  # (data, index)
            elif n[0] in REDUCTIONS:
                memo.append(bool(memo[n[1]]))
            else:
                ops = [memo[j] for j in n[1:]]
                memo.append(all(o is not False for o in ops) and any(ops))
        return bool(memo[i])

    def summed(self, p, loops):
        """The sum of node ``p`` over ``loops``: a sum node, or where ``p`` does not vary with
        them, p times the number of points (None: 0)."""
        if self.is_zero(p):
            return None
        if not self.loop_vars(p) & {v for v, _ in loops}:
            return self.mul(p, self.const(math.prod(e for _, e in loops)))
        return self.node("sum", p, loops)

    # -- the result -----------------------------------------------------------------------
    def program(self, outputs, args=None):
        """A Program of the nodes ``outputs`` need ((name, shape, refs[, loops[, adds[, stores]]])
        each, as program.Output; a ref None is 0), renumbered in order: dead code is gone."""
        outs = []
        for name, shape, refs, *rest in outputs:
            loops, adds, stores = (tuple(rest) + ((), None, False)[len(rest):])
            if adds is not None:  # (a store of 0 is written all the same)
                adds = [(self.zero_node(c), self.zero_node(w), lp, ix) for c, w, lp, ix in adds
                        if stores or (not self.is_zero(c) and not self.is_zero(w))]
            entries = math.prod(shape[len(loops):])
            if (adds is None and len(refs) != entries) or (adds is not None and (refs or loops)):
                raise ValueError(f"result {name!r} of shape {tuple(shape)} given {len(refs)} entries"
                                 f"{' and scatter terms' if adds is not None else ''} (a bug in symgrad)")
            outs.append((name, tuple(shape), [self.zero_node(r) for r in refs], tuple(loops), adds, stores))
        used = [r for o in outs for r in o[2]] + [x for o in outs for a in (o[4] or ()) for x in a[:2]]
        new, nodes, old = {}, [], self.nodes
        for i in self.cone(used):
            n = old[i]
            op = n[0]
            if op in REDUCTIONS:
                n = (op, new[n[1]], *n[2:])  # (its order: numpy's, tracing/lazy_sum.py)
            elif len(n) == 3 and op not in LEAVES:  # (most nodes: binary)
                n = (op, new[n[1]], new[n[2]])
            elif op not in LEAVES:
                n = (op, *[new[j] for j in n[1:]])
            new[i] = len(nodes)
            nodes.append(n)
        return Program(tuple(args if args is not None else self.args), tuple(nodes), tuple(
            Output(name, shape, tuple(new[r] for r in refs), loops,
                   None if adds is None else tuple((new[c], new[w], lp, ix) for c, w, lp, ix in adds), stores)
            for name, shape, refs, loops, adds, stores in outs), self.prog.data)

    def outputs_of(self, prog):
        """``prog``'s outputs as Graph.program takes them."""
        return [(o.name, o.shape, list(o.refs), o.loops, o.adds, o.stores) for o in prog.outputs]
