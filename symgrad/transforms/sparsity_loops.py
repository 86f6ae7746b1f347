"""Sparse Hessians of programs whose arrays stayed loops, without tracing them element by
element: the work is linear in the program, not in the arrays (1000 collocation nodes or
4000 take the same symbolic work; only the index arrays grow).

A scalar y built from sums S over loops (tracing/lazy.py) and entries of the arguments is
taken in two sweeps of edge pushing (hessian.py). The first runs from y to the arguments'
entries with each sum as a leaf: it gives the Hessian's terms outside the loops and each
sum's adjoint. The second runs over each sum's body from that adjoint to what the body
reads: its second-order weights between two reads (x[i + 1], x[i]) are the Hessian's terms
at every point of the loop, at the entries those reads index there. The kernel scatters
each term into the values vector at its entry's position in the pattern (an integer array
per term, data of the program), so entries several points reach add up.

Taken only where this is exact: y linear in each sum with coefficients that do not depend
on the arguments (no weight between a sum and anything), and each body reading the
arguments only through their entries (no value of them computed outside the loop). Else
``supported`` says no and the Hessian is taken of the function traced element by element."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir.graph import LEAVES, Graph
from ..program import Program
from .derive import active, arg_nodes
from .hessian import edge_push


def _offsets(prog, argnums):
    """The first column of each argument of ``argnums``."""
    out, k = {}, 0
    for i in argnums:
        out[i] = k
        k += prog.args[i].size
    return out, k


def _region(g, s):
    """The nodes of sum ``s``'s body that vary with its loop variables, and what they read
    that does not (the body's leaves)."""
    bound = {v for v, _ in g.nodes[s][2]}
    inside, outside, stack = set(), set(), [g.nodes[s][1]]
    while stack:
        i = stack.pop()
        if i in inside or i in outside:
            continue
        n = g.nodes[i]
        if n[0] in LEAVES or not g.loop_vars(i) & bound:
            outside.add(i)
            if n[0] == "read":
                inside.add(i)
            continue
        inside.add(i)
        stack.extend(n[1:])
    return inside, outside - inside


def _terms(prog, argnums):
    """(graph, [(node, loops, rows, cols, twice)]) of every term of the lower triangle's Hessian,
    rows and cols arrays over the loop's points (C order of ``loops``), ``twice`` where two
    leaves of a term are one entry (x[i] and x[0] at i = 0; else None), or None where the loop form
    is not exact (see the module's note). Made once per program and argnums."""
    memo = prog.__dict__.setdefault("_hessian_terms", {})
    key = tuple(argnums)
    if key not in memo:
        memo[key] = _find_terms(prog, key)
    return memo[key]


def _find_terms(prog, argnums):
    g = Graph(prog)
    out = prog.outputs[0]
    if len(prog.outputs) != 1 or out.shape != () or out.adds is not None or out.refs[0] is None:
        return None
    y = out.refs[0]
    offsets, _ = _offsets(prog, argnums)
    args = [w for w in arg_nodes(g, argnums) if w is not None]
    cone = g.cone([y])
    sums = [t for t in cone if g.nodes[t][0] == "sum"]
    reads = [t for t in cone if g.nodes[t][0] == "read" and g.nodes[t][1] == "a" and g.nodes[t][2] in offsets]
    act = active(g, cone, args + reads)
    sums = [s for s in sums if s in act]
    adjoints = {}
    W = edge_push(g, y, args + sums, adjoints=adjoints)
    summed = set(sums)
    if any(u in summed or v in summed for u, v in W):
        return None  # y is not linear in a sum
    col = {w: offsets[g.nodes[w][1]] + g.nodes[w][2] for w in args}
    terms = []
    for (u, v), ts in W.items():
        e = g.sum(ts)
        if e is not None:
            terms.append((e, (), np.array(max(col[u], col[v])), np.array(min(col[u], col[v])), None))
    plain = set(args)
    for s in sums:
        a = adjoints.get(s)
        if a is None:
            continue
        inside, leaves = _region(g, s)
        if any(t in act and t not in plain for t in leaves):
            return None  # the body reads a value of the arguments computed outside its loop
        loops = g.nodes[s][2]
        own = [t for t in sorted(inside) if t in reads]
        W = edge_push(g, g.nodes[s][1], args + own, seed=a)
        grid = np.indices([e for _, e in loops]).reshape(len(loops), -1) if loops else None
        at = {v: grid[k] for k, (v, _) in enumerate(loops)}
        for (u, v), ts in W.items():
            e = g.sum(ts)
            if e is None:
                continue
            cu, cv = (_columns(g, w, col, offsets, at, prog.data) for w in (u, v))
            cu, cv = np.broadcast_arrays(cu, cv, grid[0])[:2]
            twice = (cu == cv) if u != v else None  # two leaves, one entry there: W(u, v) + W(v, u)
            terms.append((e, loops, np.maximum(cu, cv), np.minimum(cu, cv),
                          twice if twice is not None and twice.any() else None))
    return g, terms


def _columns(g, w, col, offsets, at, data):
    """The column of leaf ``w`` (an argument's entry, or a read of one) at every point."""
    if w in col:
        return np.array(col[w])
    _, _, k, index = g.nodes[w]
    return offsets[k] + _index(index, at, data)


def _index(index, at, data):
    """An affine index (tracing/affine.py) at every point (``at``: each variable's values)."""
    c, parts = index
    r = np.int64(c)
    for t, k in parts:
        r = r + k * (at[t] if isinstance(t, int) else data[t[1]].reshape(-1)[_index(t[2], at, data)])
    return r


def supported(prog: Program, argnums) -> bool:
    """Whether the Hessian of ``prog`` by ``argnums`` is taken in the loop form (the module's note)."""
    return _terms(prog, argnums) is not None


def hessian_pattern(prog: Program, argnums):
    """(rows, cols, n): the lower triangle's entries of the n x n Hessian, in CSR order."""
    _, n = _offsets(prog, argnums)
    _, terms = _terms(prog, argnums)
    keys = np.unique(np.concatenate([(r * n + c).reshape(-1) for _, _, r, c, _ in terms] or [np.zeros(0, np.int64)]))
    return keys // n, keys % n, n


def hessian(prog: Program, argnums, pattern) -> Program:
    """The values of ``pattern``'s entries (one result, ``hess_nonzeros``): each term scattered
    into the entries its points reach."""
    _, n = _offsets(prog, argnums)
    g, terms = _terms(prog, argnums)
    keys = pattern.rows * n + pattern.cols
    data, adds = list(prog.data), []
    def add_data(arr):
        arr.setflags(write=False)
        data.append(arr)
        return len(data) - 1
    for e, loops, rows, cols, twice in terms:
        where = np.searchsorted(keys, (rows * n + cols).reshape(-1))
        if not loops:
            adds.append((g.const(1), e, (), (int(where[0]), ())))
            continue
        strides = np.cumprod([1] + [x for _, x in loops[:0:-1]])[::-1]  # C order
        point = (0, tuple((v, int(k)) for (v, _), k in zip(loops, strides)))
        if twice is not None:  # 2 at those points, 1 elsewhere (exact products)
            e = g.mul(e, g.node("read", "d", add_data(np.where(twice.reshape(-1), 2.0, 1.0)), point))
        index = (0, ((("g", add_data(where.astype(np.int64)), point), 1),))  # where[point]
        adds.append((g.const(1), e, loops, index))
    result = g.program([("hess_nonzeros", (pattern.nnz,), [], (), adds)])
    return replace(result, data=tuple(data))
