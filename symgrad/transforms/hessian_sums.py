"""Dense Hessians of a scalar built from sums over loops, by arguments read entry by entry,
with symbolic work independent of the number of entries: the Hessian of ridge regression's
sum((X @ w - y)**2) is one loop nest over (row, j, k) adding 2 * X[i, j] * X[i, k] into
H[j, k], not d^2 accumulators of one loop (which GCC took minutes over at d = 50).

Two sweeps of edge pushing (hessian.py), as sparsity_loops.py takes sparse Hessians: the
first from y to the arguments' entries with each sum as a leaf gives the terms outside the
loops and each sum's adjoint; where y is not linear in its sums, W(S, S') times the outer
product of their gradients (a sum per entry: d^2 terms outside the loops). The second runs
over a sum's body down to its frontier F: the nodes linear in the arguments (each partial by
an argument-dependent operand free of the arguments, no pick: sums, products by data, the
arguments' entries) that a nonlinear node reads. The body is a function of F, each f in F
has Jacobian J_f (row coefficients, no second derivative), so the body's Hessian is the sum
over pairs (u, v) of F of W(u, v) J_u J_v^T. A J_f whose coefficients are one expression of
reads at offsets moving with the argument's entry (X[i, j] for w[j]) rolls into one node over
a new loop variable (families.py): the term is a scatter over (row, j, k). Not taken (None:
the Jacobian of the gradient, or the unrolled trace): a maximum over a loop, a body reading a
value of the arguments computed outside its loop, y nonlinear in a sum by an argument the
loops read."""
from __future__ import annotations

import math

from ..ir.graph import Graph
from ..ir.nodes import (argument_of, is_additive, is_extremum, is_leaf, is_mul, is_neg, is_passive, is_pick, is_read,
                        is_sum, looped_argument, reads_data)
from ..ir.program import Program, index_vars
from .derive import active, arg_nodes, check_scalar, partials
from .families import Families, Renamer
from .guards import guarded, times
from .hessian import edge_push
from .sparsity_loops import body_region


def hessian_of_sums(prog: Program, argnums):
    """The Hessian program (one scatter result per pair of arguments of ``argnums``), or None
    where this form does not apply (a body reading a value of the arguments computed outside
    its loop; y nonlinear in a sum by an argument the loops read). The arguments' entries are leaves of the sweeps:
    ``arg`` nodes (by constant index) and reads of an argument by a loop (x[i + 1]), whose
    terms scatter at the entries their indices give at each point."""
    found = _outer(prog, argnums)
    if found is None:
        return None
    g, W, sums, adjoints, where, plain = found
    sizes = [prog.args[i].size for i in argnums]
    adds = {(p, q): [] for p in range(len(argnums)) for q in range(len(argnums))}
    one = g.const(1)
    for (u, v), ts in W.items():  # the terms outside the loops
        e = g.sum(ts)
        if e is None:
            continue
        # W(u, v) times the gradients of u and v: a leaf's is its entry, a sum's its partials (a
        # sum per entry the body reads: y nonlinear in sums costs d^2 terms here, not in a loop)
        gu, gv = (partials(g, x) if x in sums else {x: one} for x in (u, v))
        for a, pa in gu.items():
            for b, pb in gv.items():
                (p, (j, _)), (q, (k, _)) = where[a], where[b]
                term = times(g, times(g, e, pa), pb)
                adds[p, q].append((one, term, (), (j * sizes[q] + k, ())))
                if u != v:
                    adds[q, p].append((one, term, (), (k * sizes[p] + j, ())))
    rename = Renamer(g, _first_free_var(prog))
    for s in sums:
        a = adjoints.get(s)
        if a is None:
            continue
        terms = _body_terms(g, s, plain, where, sizes, rename)
        if terms is None:
            return None
        for (p, q), coef_terms in terms.items():
            adds[p, q].extend((a, w, loops, index) for w, loops, index in coef_terms)
    outs = []
    for p, i in enumerate(argnums):
        for q, j in enumerate(argnums):
            A, B = prog.args[i], prog.args[j]
            outs.append((f"d2_{A.name}_{B.name}", A.shape + B.shape, [], (), adds[p, q]))
    return g.program(outs)


def takes(prog: Program, argnums) -> bool:
    """Whether hessian_of_sums gives the Hessian of ``prog`` (its first sweep, and each
    body reading the arguments only by entry), without building it."""
    found = _outer(prog, argnums)
    if found is None:
        return False
    g, _, sums, adjoints, _, plain = found
    return all(_reads_only_entries(g, s, plain) for s in sums if adjoints.get(s) is not None)


def _outer(prog, argnums):
    """The first sweep: (graph, its second-order terms, the sums, their adjoints, where
    each leaf's entry is, the leaves), or None where y is not linear in its sums."""
    check_scalar(prog, "the Hessian")
    if not any(map(is_sum, prog.nodes)) or any(map(is_extremum, prog.nodes)):
        return None  # (a maximum over a loop: the Jacobian of the gradient, hessian.py)
    g = Graph(prog)
    y = prog.outputs[0].refs[0]
    if y is None:
        return None
    wrt = arg_nodes(g, argnums)
    args = [w for w in wrt if w is not None]
    cone = g.cone([y])
    position = {i: p for p, i in enumerate(argnums)}
    where = {}  # leaf -> (position in argnums, affine index of its entry)
    for w in args:
        where[w] = (position[argument_of(g.nodes[w])], (g.nodes[w][2], ()))
    reads = [t for t in cone if looped_argument(g.nodes[t]) in position]
    for r in reads:
        if not g.loop_vars(r):
            return None  # (a read outside every loop: never made, entries by constant index are args)
        where[r] = (position[looped_argument(g.nodes[r])], g.nodes[r][3])
    act = active(g, cone, args + reads)
    sums = [t for t in cone if is_sum(g.nodes[t]) and t in act]
    if not sums:
        return None
    adjoints = {}
    W = edge_push(g, y, args + sums, adjoints=adjoints)
    summed = set(sums)
    if reads and any(u in summed or v in summed for u, v in W):
        return None  # y not linear in a sum by an argument the loops read (whose gradient is a scatter)
    if any(x not in where and x not in summed for uv in W for x in uv):
        return None  # a second-order term through a loop node that is no sum (a maximum over a loop)
    if any(x in summed and not set(partials(g, x)) <= set(args) for uv in W for x in uv):
        return None  # a sum y is not linear in, whose body reads a computed value of the arguments
    return g, W, sums, adjoints, where, set(args) | set(reads)


def _first_free_var(prog):
    """A loop variable above every one ``prog`` uses."""
    top = -1
    for n in prog.nodes:
        if is_sum(n):
            top = max([top] + [v for v, _ in n[2]])
        elif is_read(n):
            top = max([top] + list(index_vars(n[3])))
    for o in prog.outputs:
        top = max([top] + [v for v, _ in o.loops])
        for _, _, loops, index in o.adds or ():
            top = max([top] + [v for v, _ in loops] + list(index_vars(index)))
    return top + 1


def _reads_only_entries(g, s, plain):
    """Whether sum ``s``'s body depends on the arguments only through their entries (no
    value of them computed outside its loop: a mean it subtracts)."""
    _, outside = body_region(g, s)
    act = active(g, g.cone([g.nodes[s][1]]), list(plain))
    return not any(t in act and t not in plain for t in outside)


def _body_terms(g, s, plain, where, sizes, rename):
    """{(p, q): [(weight, loops, index)]} of sum ``s``'s body's Hessian (times its adjoint:
    the caller's coefficient), or None where the body reads an argument-dependent value
    computed outside its loop."""
    if not _reads_only_entries(g, s, plain):
        return None
    inside, outside = body_region(g, s)
    inside = sorted(inside)
    body, loops = g.nodes[s][1], g.nodes[s][2]
    act = active(g, g.cone([body]), list(plain))
    live = [t for t in inside if t in act]
    linear = {t: True for t in outside if t in plain}
    users = {}
    for t in live:
        ps = partials(g, t)
        # (a pick, np.maximum or a select, is linear piece by piece, but taken as such its coefficients
        # carry its conditions: a softmax's max over classes made every class read every weight)
        ok = not is_pick(g.nodes[t]) and all(linear.get(o, False) and not _depends(g, p, plain)
                                             for o, p in ps.items() if o in act)
        linear[t] = ok
        for o in ps:
            if o in act:
                users.setdefault(o, []).append(t)
    frontier = [t for t, lin in linear.items() if lin and (t == body or any(not linear[u] for u in users.get(t, ())))]
    if not frontier or linear.get(body):
        return {}  # a body linear in the arguments: no second derivative
    W = edge_push(g, body, frontier)
    fams = Families(g, loops, rename)
    J = {f: fams.of(_jacobian(g, f, linear, act), where) for f in frontier}
    out = {}
    for (u, v), ts in W.items():
        e = g.sum(ts)
        if e is None:
            continue
        pairs = [(A, B) for A in J[u] for B in J[v]]
        if u != v:
            pairs += [(B, A) for A in J[u] for B in J[v]]
        for A, B in pairs:
            rows, tA, tB, sub = rename.nest(loops, A.length, B.length)
            cA, cB = A.node(tA, sub), B.node(tB, sub)
            weight = _product(g, rename.node(e, sub), cA, cB, tA, tB)
            if weight is None:
                continue
            index = _plus(_scaled(A.index(tA, sub), sizes[B.arg]), B.index(tB, sub))
            lp = tuple(rows) + tuple((t, n) for t, n in ((tA, A.length), (tB, B.length)) if t is not None)
            out.setdefault((A.arg, B.arg), []).append((weight, lp, index))
    return out


def _product(g, e, a, b, ta, tb):
    """e * a * b, a and b the coefficients of two families over variables ``ta`` and ``tb``,
    in the order the loop nest hoists best: e and the factors of a and b that vary with
    neither variable first (once per row), then a's own factor (once per j), then b's (the
    innermost loop). Products are guarded (guards.times: a 0 of the data keeps the term 0
    where the weight is inf or NaN, as the trace element by element folds it away) where
    that can happen (_times)."""
    ra, pa = _split(g, a, ta)
    rb, pb = _split(g, b, tb)
    w = e
    for f in ra + rb:
        w = _times(g, w, f)
    for f in pa:
        w = _times(g, w, f)
    for f in pb:
        w = _times(g, w, f)
    return w


def _times(g, w, f):
    """w * f, guarded where needed (guards.times): f is a factor of a coefficient, maybe under
    a select's guard (select(C, v, 0): the product stays beneath it). v and w bounded by the
    data (a product of constants and finite data's entries below FINITE: never inf or NaN)
    multiply plainly, as a 0 of either is the term's 0; v so bounded alone is guarded by
    v != 0 (w may be inf: a 0 of the data keeps the term 0, as the trace element by element
    folds it away); anything else is guards.times."""
    if w is None or f is None:
        return None
    found = guarded(g, f)
    cond, v = found if found is not None and found[1] is not None else (None, f)
    bw, bv = _bound(g, w), _bound(g, v)
    if bv is not None and bw is not None and bw * bv < FINITE:
        prod = g.mul(w, v)
    elif bv is not None and g.data_only(v):
        prod = g.select(g.node("ne", v, g.const(0)), g.mul(w, v), g.const(0))
    else:
        return times(g, w, f)
    return prod if cond is None else g.select(cond, prod, g.const(0))


def _coefficient(g, a, p):
    """a * p along a linear form's chain: a select's 0 kept outermost (select(C, v, 0) * p is
    select(C, v * p, 0), guards.py), no guard for the data (the products by the weight add
    it: _times), so that the coefficients of w[0], w[1], ... stay one expression."""
    ga, gp = guarded(g, a), guarded(g, p)
    if ga is None and gp is None:
        return g.mul(a, p)
    conds = [x[0] for x in (ga, gp) if x is not None]
    c = conds[0] if len(conds) == 1 or conds[0] == conds[1] else g.node("and", *conds)
    return g.select(c, g.mul(ga[1] if ga else a, gp[1] if gp else p), g.const(0))


FINITE = 1e38  # a bound on |x| below which no product overflows, in double or in float (float32_math)


def _bound(g, x):
    """A bound on |x| where node ``x`` is a product, sum or negation of constants and
    entries of finite data arrays (their largest |entry|), else None."""
    memo = g.__dict__.setdefault("_bounds", {})
    if x in memo:
        return memo[x]
    n = g.nodes[x]
    b = None
    if g.is_const(x):
        v = abs(g.value(x))
        b = float(v) if math.isfinite(v) else None
    elif reads_data(n):
        b = _largest(g, n[2])
    elif is_mul(n) or is_additive(n) or is_neg(n):
        parts = [_bound(g, o) for o in n[1:]]
        if None not in parts:
            b = math.prod(parts) if is_mul(n) else sum(parts)
            b = b if b < FINITE else None
    memo[x] = b
    return b


def _largest(g, k):
    """The largest |entry| of data array ``k`` (None where one is inf or NaN), read once."""
    memo = g.__dict__.setdefault("_largest", {})
    if k not in memo:
        d = g.prog.data[k]
        m = float(max(d.max(initial=0), -d.min(initial=0))) if d.size else 0.0  # (NaN: the max is NaN)
        memo[k] = m if math.isfinite(m) else None
    return memo[k]


def _split(g, c, t):
    """(factors of coefficient ``c`` free of variable ``t``, those that vary with it): c's
    product tree split."""
    if t is None:
        return [c], []
    free, bound, stack = [], [], [c]
    while stack:
        x = stack.pop()
        n = g.nodes[x]
        if t not in g.loop_vars(x):
            free.append(x)
        elif is_mul(n):
            stack.extend(n[1:])
        else:
            bound.append(x)
    return free, bound


def _depends(g, t, plain):
    """Whether node ``t`` varies with the arguments' entries ``plain`` through numbers (not
    through a condition: a select's partial by data or by a comparison is free of them)."""
    memo = g.__dict__.setdefault("_depends", {})
    if t not in memo:
        order = [i for i in g.cone([t]) if i not in memo]
        act = active(g, order, [w for w in order if w in plain])
        for i in order:  # (a node of ``order`` reads only nodes of it or memo's)
            n = g.nodes[i]
            memo[i] = i in act or (not is_passive(n) and not is_sum(n) and any(memo.get(o) for o in n[1:]))
    return memo[t]


def _jacobian(g, f, linear, act):
    """{argument entry: coefficient node} of linear node ``f``: a reverse sweep through the
    linear nodes below it."""
    adj, out = {f: [g.const(1)]}, {}
    todo = {f}
    while todo:
        t = max(todo)
        todo.discard(t)
        a = g.sum(adj.pop(t))
        if a is None:
            continue
        if is_leaf(g.nodes[t]):  # an argument's entry (a leaf may come before its last reader)
            out[t] = g.add(out[t], a) if t in out else a
            continue
        ps = {o: p for o, p in partials(g, t).items() if o in act}
        for o, p in ps.items():
            adj.setdefault(o, []).append(_coefficient(g, a, p))
            todo.add(o)
    return out


def _scaled(index, k):
    return (index[0] * k, tuple((t, c * k) for t, c in index[1]))


def _plus(a, b):
    """The sum of two affine indices (program.index_text), its terms in one order."""
    terms = dict(a[1])
    for t, c in b[1]:
        terms[t] = terms.get(t, 0) + c
    return (a[0] + b[0], tuple(sorted(((t, c) for t, c in terms.items() if c), key=repr)))
