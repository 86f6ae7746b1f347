"""Sparsity patterns read off a program (no derivative built), and the derivative programs
that compute exactly the entries of a pattern.

A Jacobian entry d y_r / d x_c is structurally non-zero where y_r depends on x_c through
operations whose partial by that operand is not identically zero (each op's own rule,
ir/ops/: floor, sign and comparisons pass nothing on). A Hessian entry (i, j) is where a
node with a non-zero adjoint has a non-zero second partial by two operands that depend on
x_i and x_j ("nonlinear interaction": the Hessian is the sum over nodes t of adjoint(t) times
t's second partials times the gradients of its operands). The pattern is structural: it holds
for every input, and an entry of it may still be 0 at a point (x*y at y = 0).

Columns are the entries of the arguments ``argnums`` flattened and concatenated in order;
Jacobian rows are the entries of every result, flattened and concatenated. Patterns are in
CSR order (by row, then column); a Hessian's is its lower triangle (row >= column), the
kernel computes each symmetric entry once. A Jacobian or Hessian of a program whose arrays stayed
loops is sparsity_loops.py's where that is exact; any other program with loops is traced element by
element first."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..errors import CompileError
from ..ir.graph import Graph
from ..ir.nodes import is_leaf, is_loop
from ..ir.program import Program
from .derive import arg_nodes, check_scalar, partials, reverse
from . import sparsity_loops
from .hessian import second_partials, edge_push, operand_shape, template


@dataclass(frozen=True, eq=False)
class Pattern:
    """The structural non-zeros of a derivative: entry k is (rows[k], cols[k]) of a
    ``shape`` matrix, in CSR order; ``lower``: a symmetric matrix's lower triangle.
    ``views``: the forms callers made of it (sparse.py), kept with it."""
    rows: np.ndarray
    cols: np.ndarray
    shape: tuple
    lower: bool = False
    views: dict = field(default_factory=dict, repr=False)

    @property
    def nnz(self):
        return len(self.rows)

    def full(self):
        """(rows, cols, take) of the whole symmetric matrix in CSR order: entry k of it is entry
        take[k] of this lower triangle (the identity of a pattern that is not symmetric)."""
        if not self.lower:
            return self.rows, self.cols, np.arange(self.nnz)
        off = self.rows != self.cols
        rows = np.concatenate([self.rows, self.cols[off]])
        cols = np.concatenate([self.cols, self.rows[off]])
        take = np.concatenate([np.arange(self.nnz), np.nonzero(off)[0]])
        order = np.lexsort((cols, rows))
        return rows[order], cols[order], take[order]


def _bits(x):
    """The positions of the set bits of int ``x``, ascending."""
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out


# A set of columns (a node's dependencies, a Hessian row) is an int bitset, as wide as its
# highest column. Past _SETS_PAST columns that made a pattern quadratic in them (collocation at
# 4000 nodes: each of 80,000 nodes carried a 12,000-bit int, 5.5x the time at 1000): there a set
# is a frozenset while it has at most _SMALL columns, an int past that (a row masked to a lower
# triangle may be an int of fewer). Below, bitsets stay: sets made a 30-atom energy's patterns
# 1.2-1.9x slower, a Hessian of many nodes of 32 columns 5.5x (a hostile review, measured).
_SETS_PAST = 2048
_SMALL = 32
_EMPTY = frozenset()


def _bitset(s):
    if type(s) is int:
        return s
    lo, x = min(s), 0
    for c in s:  # (shifts of small ints, one of the wide one: 1 << c is as wide as c)
        x |= 1 << (c - lo)
    return x << lo


def _union(a, b):
    """The columns of ``a`` or ``b`` (either representation)."""
    if not a or a is b:
        return b
    if not b:
        return a
    if type(a) is int or type(b) is int:
        return _bitset(a) | _bitset(b)
    u = a | b
    return u if len(u) <= _SMALL else _bitset(u)


def _columns_of(s):
    """The columns of set ``s``, ascending."""
    return _bits(s) if type(s) is int else sorted(s)


def _upto(s, c):
    """The columns of set ``s`` at most ``c`` (a lower triangle's row ``c``)."""
    if type(s) is int:
        return s if s.bit_length() <= c + 1 else s & ((2 << c) - 1)
    return s if max(s) <= c else frozenset(x for x in s if x <= c)


@lru_cache(maxsize=1 << 14)  # (a program with many distinct constants: bounded)
def _support(shape):
    """The operands of a node of ``shape`` (hessian.operand_shape) whose partial its op's rule does not
    make 0 (floor's none, a select's branches, copysign's first), found once per op and
    pattern of constant operands on a template (hessian.template): building each node's
    partials was most of a pattern's time."""
    h, root, ops = template(shape)
    keys = set(partials(h, root)) if h.nodes[root][0] == shape[0] else set(ops)
    return tuple(k for k, o in enumerate(ops) if o in keys and shape[1 + k] is None)


@lru_cache(maxsize=1 << 14)
def _second_support(shape):
    """The pairs (i, j) of operands of a node of ``shape`` with a second partial not 0 (as _support)."""
    h, root, _ = template(shape)
    return tuple(second_partials(h, root)) if h.nodes[root][0] == shape[0] else ()


def _columns(g, argnums):
    """(the node of every column (None: never read), the columns every node of the program
    depends on through non-zero partials (a set of columns: _union), the key of every node's
    template (hessian.operand_shape; None for leaves))."""
    wrt = arg_nodes(g, argnums)
    nodes = g.prog.nodes
    sets = len(wrt) > _SETS_PAST
    deps = [_EMPTY if sets else 0] * len(nodes)
    shapes = [None] * len(nodes)
    for c, w in enumerate(wrt):
        if w is not None:
            deps[w] = _union(deps[w], frozenset((c,))) if sets else deps[w] | 1 << c
    for t, n in enumerate(nodes):
        if is_loop(n):
            raise CompileError("a sparsity pattern of a program with loops (a bug in symgrad: the sparse kinds "
                               "take the function traced element by element)")
        if is_leaf(n):
            continue
        shape = shapes[t] = operand_shape(g, t)
        support = _support(shape)
        if len(support) == 1:
            deps[t] = deps[n[1 + support[0]]]
        elif sets:
            d = _EMPTY
            for k in support:
                d = _union(d, deps[n[1 + k]])
            deps[t] = d
        else:
            d = 0
            for k in support:
                d |= deps[n[1 + k]]
            deps[t] = d
    return wrt, deps, shapes


def _pattern(rows, shape, lower=False):
    """A Pattern of {row: set of its columns}."""
    r, c = [], []
    for i in sorted(rows):
        cs = _columns_of(rows[i])
        r += [i] * len(cs)
        c += cs
    return Pattern(np.array(r, dtype=np.int64), np.array(c, dtype=np.int64), shape, lower)


def _ncols(prog, argnums):
    return sum(prog.args[i].size for i in argnums)


def jacobian_pattern(prog: Program, argnums) -> Pattern:
    if prog.has_loops:
        rows, cols = sparsity_loops.jacobian_pattern(prog, argnums)
        nrows = sum(o.size for o in prog.outputs)
        return Pattern(rows.astype(np.int64), cols.astype(np.int64), (nrows, _ncols(prog, argnums)))
    g = Graph(prog)
    _, deps, _ = _columns(g, argnums)
    refs = [r for o in prog.outputs for r in o.refs]
    rows = {i: deps[r] for i, r in enumerate(refs) if r is not None and deps[r]}
    return _pattern(rows, (len(refs), _ncols(prog, argnums)))


def hessian_pattern(prog: Program, argnums) -> Pattern:
    check_scalar(prog, "the Hessian")
    if prog.has_loops:
        rows, cols, n = sparsity_loops.hessian_pattern(prog, argnums)
        return Pattern(rows.astype(np.int64), cols.astype(np.int64), (n, n), lower=True)
    g = Graph(prog)
    _, deps, shapes = _columns(g, argnums)
    y = prog.outputs[0].refs[0]
    n = _ncols(prog, argnums)
    sets = n > _SETS_PAST  # (as _columns)
    live, rows, nodes = {y}, {}, prog.nodes
    for t in range(y, -1, -1):
        if t not in live:
            continue
        shape = shapes[t]
        if shape is None:  # a leaf
            continue
        node = nodes[t]
        for k in _support(shape):
            if deps[node[1 + k]]:
                live.add(node[1 + k])
        for i, j in _second_support(shape):
            a, b = deps[node[1 + i]], deps[node[1 + j]]
            if not a or not b:
                continue
            if not sets:  # bitsets only: _union and _upto inlined
                for c in _bits(a):
                    rows[c] = rows.get(c, 0) | (b if b.bit_length() <= c + 1 else b & ((2 << c) - 1))
                if a != b:  # (a == b: the same pairs again)
                    for c in _bits(b):
                        rows[c] = rows.get(c, 0) | (a if a.bit_length() <= c + 1 else a & ((2 << c) - 1))
                continue
            if type(a) is not int is not type(b) and len(a) * len(b) > _SMALL:  # (pairs of sets: quadratic)
                a, b = _bitset(a), _bitset(b)
            for c in _columns_of(a):
                rows[c] = _union(rows.get(c, _EMPTY), _upto(b, c))
            if a != b:
                for c in _columns_of(b):
                    rows[c] = _union(rows.get(c, _EMPTY), _upto(a, c))
    return _pattern({i: r for i, r in rows.items() if r}, (n, n), lower=True)


def jacobian(prog: Program, argnums, pattern: Pattern) -> Program:
    """The entries of ``pattern`` of the Jacobian of every result by ``argnums`` (one result,
    ``jac_nonzeros``): each row by one reverse sweep over its own columns only."""
    if prog.has_loops:
        return sparsity_loops.jacobian(prog, argnums, pattern)
    g = Graph(prog)
    wrt = arg_nodes(g, argnums)
    refs = [r for o in prog.outputs for r in o.refs]
    values, k = [], 0
    while k < pattern.nnz:
        r = int(pattern.rows[k])
        end = k
        while end < pattern.nnz and pattern.rows[end] == r:
            end += 1
        values += reverse(g, refs[r], [wrt[int(c)] for c in pattern.cols[k:end]])
        k = end
    return g.program([("jac_nonzeros", (pattern.nnz,), values)])


def hessian(prog: Program, argnums, pattern: Pattern) -> Program:
    """The entries of ``pattern`` (a lower triangle) of the Hessian by ``argnums`` (one result,
    ``hess_nonzeros``), by the edge pushing of the dense Hessian (hessian.py): the same
    nodes, the same bits. An entry it finds outside the pattern is a bug, refused."""
    check_scalar(prog, "the Hessian")
    if prog.has_loops:
        return sparsity_loops.hessian(prog, argnums, pattern)
    g = Graph(prog)
    wrt = arg_nodes(g, argnums)
    y = prog.outputs[0].refs[0]
    W = edge_push(g, y, wrt) if y is not None else {}
    col = {w: c for c, w in enumerate(wrt) if w is not None}
    entries = {}
    for (u, v), terms in W.items():
        if u in col and v in col:
            i, j = col[u], col[v]
            entries[max(i, j), min(i, j)] = g.sum(terms)
    inside = set(zip(pattern.rows.tolist(), pattern.cols.tolist()))
    stray = [e for e, v in entries.items() if v is not None and e not in inside]
    if stray:
        raise CompileError(f"the Hessian has entries {stray[:3]} outside its sparsity pattern (a bug in symgrad)")
    return g.program([("hess_nonzeros", (pattern.nnz,),
                       [entries.get(e) for e in zip(pattern.rows.tolist(), pattern.cols.tolist())])])
