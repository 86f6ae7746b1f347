"""Sparse Jacobians and Hessians of programs whose arrays stayed loops, without tracing them
element by element: the symbolic work is linear in the program, not in the arrays (1000
collocation nodes or 4000 take the same; only the index arrays grow).

Hessian: a scalar y built from sums S over loops (tracing/lazy.py) and entries of the
arguments is taken in two sweeps of edge pushing (hessian.py). The first runs from y to the
arguments' entries with each sum as a leaf: the terms outside the loops and each sum's
adjoint. The second runs over each sum's body from that adjoint to what the body reads: its
second-order weights between two reads (x[i + 1], x[i]) are terms at every point of the loop,
at the entries those reads index there. Jacobian: each result entry (a map's body, a joined
array's part, a plain entry) by one reverse sweep to the reads it makes, a sum it reads by
its body's sweep from the sum's adjoint. The kernel scatters each term into the values
vector at its entry's position in the pattern (an integer array per term, data of the
program), so entries several points reach add up.

Taken only where this is exact: y linear in each sum with coefficients free of the arguments,
each body reading the arguments only by entry (no value of them computed outside its loop),
no entry over loops whose derivative passes through a sum (a dense block). Else ``supported``
/ ``jacobian_supported`` say no and the function is traced element by element. Values equal
the element-by-element kernel's to rounding: the same operations, but that trace folds the
data's numbers into constants (3 * D[i] one number), several points' terms of one entry add
in loop order, an adjoint that reads a sum scales a loop's terms after it, and libm's scalar
functions and libmvec's vector ones can differ in the last bit."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import CompileError
from ..ir.evaluate import evaluate
from ..ir.graph import Graph
from ..ir.nodes import is_conjunction, is_const, is_extremum, is_junction, is_leaf, is_read, is_sum, looped_argument
from ..ir.program import Program
from .derive import active, arg_nodes, reverse
from .guards import guarded
from .hessian import edge_push


def _offsets(prog, argnums):
    """The first column of each argument of ``argnums``."""
    out, k = {}, 0
    for i in argnums:
        out[i] = k
        k += prog.args[i].size
    return out, k


def body_region(g, s):
    """The nodes of sum ``s``'s body that vary with its loop variables, and what they read
    that does not (the body's leaves)."""
    bound = {v for v, _ in g.nodes[s][2]}
    inside, outside, stack = set(), set(), [g.nodes[s][1]]
    while stack:
        i = stack.pop()
        if i in inside or i in outside:
            continue
        n = g.nodes[i]
        if is_leaf(n) or not g.loop_vars(i) & bound:
            outside.add(i)
            if is_read(n):
                inside.add(i)
            continue
        inside.add(i)
        stack.extend(n[1:])
    return inside, outside - inside


def _reads(g, t, offsets):
    """Whether node ``t`` reads an entry of an argument of ``offsets`` at a loop index."""
    a = looped_argument(g.nodes[t])
    return a is not None and a in offsets


def _taken(found):
    if found is None:
        raise CompileError("a sparse derivative of loops that the loop form does not take (a bug in symgrad: "
                           "transforms/kinds.py should have traced the function element by element)")
    return found


def _terms(prog, argnums):
    """(graph, [(coef, node, loops, rows, cols, twice, keep)]) of every term of the lower
    triangle's Hessian (coef * node; coef None: 1): rows and cols arrays over the loop's points
    (C order of ``loops``), ``twice`` where two leaves of a term are one entry (x[i] and x[0]
    at i = 0; else None), ``keep`` the points where it is not 0 by the data (_masked); None
    where the loop form is not exact (see the module's note). Found anew each time it is asked
    (check, pattern, build): kept on the program, its Graph would refer back to it, a cycle
    for the garbage collector."""
    return _find_terms(prog, tuple(argnums))


def _find_terms(prog, argnums):
    g = Graph(prog)
    out = prog.outputs[0]
    if len(prog.outputs) != 1 or out.shape != () or out.adds is not None or out.refs[0] is None:
        return None
    y = out.refs[0]
    offsets, _ = _offsets(prog, argnums)
    args = [w for w in arg_nodes(g, argnums) if w is not None]
    cone = g.cone([y])
    sums = [t for t in cone if is_sum(g.nodes[t])]
    reads = [t for t in cone if _reads(g, t, offsets)]
    act = active(g, cone, args + reads)
    reads = set(reads)
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
            terms.append((None, e, (), np.array(max(col[u], col[v])), np.array(min(col[u], col[v])), None))
    plain = set(args)
    for s in sums:
        a = adjoints.get(s)
        if a is None:
            continue
        inside, leaves = body_region(g, s)
        if any(t in act and t not in plain for t in leaves):
            return None  # the body reads a value of the arguments computed outside its loop
        loops = g.nodes[s][2]
        own = [t for t in sorted(inside) if t in reads]
        seed, coef = _seed(g, a, loops)
        W = edge_push(g, g.nodes[s][1], args + own, seed=seed)
        at = _grid(loops)
        for (u, v), ts in W.items():
            e = g.sum(ts)
            if e is None:
                continue
            cu, cv = (_columns(g, w, col, offsets, at, prog.data) for w in (u, v))
            cu, cv = np.broadcast_arrays(cu, cv, at[loops[0][0]])[:2]
            twice = (cu == cv) if u != v else None  # two leaves, one entry there: W(u, v) + W(v, u)
            terms.append((coef, e, loops, np.maximum(cu, cv), np.minimum(cu, cv),
                          twice if twice is not None and twice.any() else None))
    return g, [_masked(g, prog, t) for t in terms]


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
    """Whether the Hessian of ``prog`` by ``argnums`` is taken in the loop form (the module's note;
    not of a max or min over loops: the function is traced element by element)."""
    return not any(map(is_extremum, prog.nodes)) and _terms(prog, argnums) is not None


def hessian_pattern(prog: Program, argnums):
    """(rows, cols, n): the lower triangle's entries of the n x n Hessian, in CSR order."""
    _, n = _offsets(prog, argnums)
    return _pattern(_taken(_terms(prog, argnums))[1], n) + (n,)


def hessian(prog: Program, argnums, pattern) -> Program:
    """The values of ``pattern``'s entries (one result, ``hess_nonzeros``): each term scattered
    into the entries its points reach."""
    _, n = _offsets(prog, argnums)
    g, terms = _taken(_terms(prog, argnums))
    return _values(prog, g, terms, pattern, n, "hess_nonzeros")


# -- Jacobians ----------------------------------------------------------------------------------
def _sweep(g, y, leaves, seed=None):
    """{leaf: d y / d leaf} by one reverse sweep from node ``y`` (adjoint ``seed``, default 1)
    that stops at ``leaves`` (derive.reverse: its sums and products, so its bits)."""
    wrt = sorted(leaves)
    return {w: d for w, d in zip(wrt, reverse(g, y, wrt, seed=seed, stop=leaves)) if d is not None}


def _seed(g, a, loops):
    """(seed, coef) of a sweep over the body of a sum whose adjoint is ``a``: the adjoint as
    the seed (the products in the order of the element-by-element sweep, so its bits), or,
    where it reads a sum (sign(S) of abs(S); S2 of S1 * S2, whose loop reads S1 in turn), as
    the coefficient that scales the loop's scatter once every loop is done."""
    if any(is_sum(g.nodes[t]) for t in g.cone([a])):
        return None, a
    return a, None


def _grid(loops):
    """Each loop variable's value at every point of ``loops`` (C order)."""
    if not loops:
        return {}
    return {v: x for (v, _), x in zip(loops, np.indices([e for _, e in loops]).reshape(len(loops), -1))}


def _entries(prog, g):
    """(node, loops, rows) of every entry of the results: rows an array over the points."""
    out, row0 = [], 0
    for o in prog.outputs:
        if o.adds is not None:
            if not o.stores:
                return None
            out += [(w, loops, row0 + _index(index, _grid(loops), prog.data)) for _, w, loops, index in o.adds]
        elif o.loops:
            tail, at = len(o.refs), _grid(o.loops)
            flat = _index((0, tuple(zip([v for v, _ in o.loops],
                                        np.cumprod([1] + [e for _, e in o.loops[:0:-1]])[::-1] * tail))), at, ())
            out += [(r, o.loops, row0 + flat + k) for k, r in enumerate(o.refs)]
        else:
            out += [(r, (), np.array(row0 + k)) for k, r in enumerate(o.refs)]
        row0 += o.size
    return out


def _jacobian_terms(prog, argnums):
    """As _terms, for the Jacobian: found anew each time it is asked."""
    return _find_jacobian_terms(prog, tuple(argnums))


def _find_jacobian_terms(prog, argnums):
    """(graph, [(coef, node, loops, rows, cols, None)]) of the Jacobian's terms, or None: an entry over
    loops whose derivative passes through a sum, a sum's body reading a value of the arguments
    computed outside its loop (the Hessian's conditions), a result scattered."""
    g = Graph(prog)
    entries = _entries(prog, g)
    if entries is None:
        return None
    offsets, _ = _offsets(prog, argnums)
    args = [w for w in arg_nodes(g, argnums) if w is not None]
    col = {w: offsets[g.nodes[w][1]] + g.nodes[w][2] for w in args}
    nodes, terms = g.nodes, []

    def add(parts, loops, rows, coef=None):
        at = _grid(loops) if loops else {}
        for w, d in parts.items():
            if w in col or _reads(g, w, offsets):
                cols = _columns(g, w, col, offsets, at, prog.data)
                r, c = np.broadcast_arrays(rows, cols)
                terms.append((coef, d, loops, r, c, None))
    for y, loops, rows in entries:
        if y is None or is_const(nodes[y]):
            continue
        cone = g.cone([y])
        reads = {t for t in cone if _reads(g, t, offsets)}
        sums = [t for t in cone if is_sum(nodes[t])]
        act = active(g, cone, args + sorted(reads))
        sums = [t for t in sums if t in act]
        if sums and loops:
            return None  # an entry per point times a sum's gradient: a dense block
        parts = _sweep(g, y, set(args) | reads | set(sums))
        add({w: d for w, d in parts.items() if not is_sum(nodes[w])}, loops, rows)
        for s in sums:
            if s not in parts:
                continue
            inside, leaves = body_region(g, s)
            if any(t in act and t not in col for t in leaves):
                return None
            seed, coef = _seed(g, parts[s], nodes[s][2])
            body_parts = _sweep(g, nodes[s][1], set(args) | {t for t in inside if _reads(g, t, offsets)}, seed=seed)
            rows_s = np.broadcast_to(rows, (np.prod([e for _, e in nodes[s][2]], dtype=np.int64),))
            add(body_parts, nodes[s][2], rows_s, coef)
    return g, [_masked(g, prog, t) for t in terms]


def jacobian_supported(prog: Program, argnums) -> bool:
    """Whether the Jacobian of ``prog`` by ``argnums`` is taken in the loop form (not of a max or
    min over loops)."""
    return not any(map(is_extremum, prog.nodes)) and _jacobian_terms(prog, argnums) is not None


def jacobian_pattern(prog: Program, argnums):
    """(rows, cols): the Jacobian's structural non-zeros, in CSR order."""
    _, n = _offsets(prog, argnums)
    return _pattern(_taken(_jacobian_terms(prog, argnums))[1], n)


def jacobian(prog: Program, argnums, pattern) -> Program:
    """The values of ``pattern``'s entries (one result, ``jac_nonzeros``)."""
    _, n = _offsets(prog, argnums)
    g, terms = _taken(_jacobian_terms(prog, argnums))
    return _values(prog, g, terms, pattern, n, "jac_nonzeros")


# -- patterns and values --------------------------------------------------------------------------
def _masked(g, prog, term):
    """``term`` and the points where it is not 0 whatever the arguments (None: all of them): a
    term that is a number of the data alone, or a product by one (derive.times guards it:
    select(data != 0, v, 0)), is 0 where the data make it so, and its entry there is no
    structural non-zero (as for the function traced element by element, whose data are numbers)."""
    coef, e, loops, rows, cols, twice = term
    if not loops:
        return term + (None,)
    guard = None if g.data_only(e) else guarded(g, e)  # e = select(C, v, 0): 0 where C fails
    node = e if g.data_only(e) else _data_part(g, guard[0]) if guard is not None else None
    if node is None:
        return term + (None,)
    p = g.program([("m", tuple(x for _, x in loops), [node], loops)])
    keep = evaluate(p, *[np.zeros(a.shape) for a in p.args])[0].reshape(-1) != 0
    return term + (None if keep.all() else keep,)


def _data_part(g, c):
    """A condition of the data alone that condition node ``c`` implies (None: none found):
    and(data != 0, x < 0.3) implies data != 0; an or implies the or of its sides' parts."""
    if g.data_only(c):
        return c
    n = g.nodes[c]
    if not is_junction(n):
        return None
    a, b = _data_part(g, n[1]), _data_part(g, n[2])
    if is_conjunction(n):
        return a if b is None else b if a is None else g.node("and", a, b)
    return None if a is None or b is None else g.node("or", a, b)


def _pattern(terms, n):
    keys = [(r * n + c).reshape(-1) if keep is None else (r * n + c).reshape(-1)[keep]
            for _, _, _, r, c, _, keep in terms]
    keys = np.unique(np.concatenate(keys or [np.zeros(0, np.int64)]))
    return keys // n, keys % n


def _values(prog, g, terms, pattern, n, name):
    """One result of ``pattern``'s values: each term's weight added at its entries' positions
    (index arrays, data of the kernel after the program's own)."""
    keys = pattern.rows * n + pattern.cols
    data, adds = list(prog.data), []

    def add_data(arr):
        arr.setflags(write=False)
        data.append(arr)
        return len(data) - 1
    for coef, e, loops, rows, cols, twice, keep in terms:
        where = np.searchsorted(keys, (rows * n + cols).reshape(-1))
        if keep is not None:  # its zeros added to an entry it reaches elsewhere (x + 0 is x)
            if not keep.any():
                continue
            where[~keep] = where[keep][0]
        coef = g.const(1) if coef is None else coef
        if not loops:
            adds.append((coef, e, (), (int(where[0]), ())))
            continue
        strides = np.cumprod([1] + [x for _, x in loops[:0:-1]])[::-1]  # C order
        point = (0, tuple((v, int(k)) for (v, _), k in zip(loops, strides)))
        if twice is not None:  # 2 at those points, 1 elsewhere (exact products)
            e = g.mul(e, g.node("read", "d", add_data(np.where(twice.reshape(-1), 2.0, 1.0)), point))
        index = (0, ((("g", add_data(where.astype(np.int64)), point), 1),))  # where[point]
        adds.append((coef, e, loops, index))
    result = g.program([(name, (pattern.nnz,), [], (), adds)])
    return replace(result, data=tuple(data))
