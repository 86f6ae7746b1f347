"""Hessians, IR -> IR: edge pushing (Gower & Mello 2012: one reverse sweep, each symmetric
entry once), with second partials of each op taken on a template of it; a program with sums
over loops takes the Jacobian of its gradient (the partials of a sum are sums)."""
from __future__ import annotations

from collections import defaultdict

from ..ir.graph import Graph
from ..ir.nodes import is_arg, is_atom, is_const, is_reduction, op_name
from ..ir.program import Program
from .derive import check_scalar, active, arg_nodes, grad, partials, reverse, times


def _local(g, p, s, leaves, memo):
    """d p / d s for a node ``p`` built from ``leaves`` (taken as independent)."""
    if p == s:
        return g.const(1)
    if p in leaves or is_atom(g.nodes[p]):
        return None
    if p not in memo:
        memo[p] = g.sum([times(g, d, q) for o, q in partials(g, p).items()
                         for d in [_local(g, o, s, leaves, memo)] if d is not None])
    return memo[p]


def template(shape):
    """(graph, node, operands) of op ``shape[0]`` whose operands are ``shape[1:]``: a constant's
    node where given, else a fresh leaf (argument k); the node is not of that op where its
    operands fold."""
    from ..ir.program import Arg, Program
    h = Graph(Program((), (), ()))
    ops = [h.node(*c) if c is not None else h.node("arg", k, 0) for k, c in enumerate(shape[1:])]
    h.args = [Arg(f"o{k}", ()) for k in range(len(ops))]
    return h, h.node(shape[0], *ops), ops


def operand_shape(g, t):
    """Node ``t``'s op and operands, a constant as its node and any other as None: the key of
    its template."""
    nodes, consts = g.nodes, g.consts
    n = nodes[t]
    if len(n) == 3:  # most nodes: binary
        a, b = n[1], n[2]
        return n[0], nodes[a] if a in consts else None, nodes[b] if b in consts else None
    return (n[0],) + tuple(nodes[o] if o in consts else None for o in n[1:])


def second_partials(g, t):
    """{(i, j): node} of the second partials of node ``t`` by its operands i <= j (positions of
    operands that are not constants), built on a template of the op whose operands are fresh
    leaves (so a partial rule that rebuilds one operand from another, atan2(x, x*x) building
    x*x, is never mistaken for that operand), then instantiated with ``t``'s own operands."""
    n = g.nodes[t]
    memo = g.__dict__.setdefault("_seconds", {})
    shape = operand_shape(g, t)
    tpl = memo.get(shape)
    if tpl is None:
        h, root, ops = template(shape)
        leaves = {o for o, c in zip(ops, shape[1:]) if c is None}
        first = partials(h, root) if h.nodes[root][0] == n[0] else {}
        pos = {o: k for k, o in enumerate(ops) if o in leaves}
        out = {}
        for s, d in first.items():
            if s not in pos:
                continue
            for s2 in pos:
                if pos[s2] >= pos[s]:
                    v = _local(h, d, s2, leaves, {})
                    if not h.is_zero(v):
                        out[pos[s], pos[s2]] = v
        tpl = memo[shape] = (h, root, out)
    h, root, out = tpl
    if not out:  # a linear op (add, sub, neg, a product by a constant): nothing to instantiate
        return out
    leaf_of = {h.index[("arg", k, 0)]: o for k, o in enumerate(n[1:]) if ("arg", k, 0) in h.index}
    cache = {root: t}

    def inst(i):
        stack = [i]
        while stack:
            j = stack[-1]
            if j in cache:
                stack.pop()
                continue
            m = h.nodes[j]
            if is_arg(m):
                cache[j] = leaf_of[j]
                stack.pop()
                continue
            if is_const(m):
                cache[j] = g.node(*m)
                stack.pop()
                continue
            todo = [k for k in m[1:] if k not in cache]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            cache[j] = g.node(op_name(m), *[cache[k] for k in m[1:]])
        return cache[i]
    return {(i, j): inst(v) for (i, j), v in out.items()}


def edge_push(g, y, wrt, seed=None, adjoints=None):
    """The Hessian of node ``y`` by edge pushing (Gower & Mello 2012): one reverse sweep that
    carries, beside each node's adjoint, the symmetric second-order weights W(u, v) between
    it and the nodes still ahead, pushed through each node's first partials and created from
    its second ones. Returns {(u, v): terms}, u >= v, over the nodes of ``wrt`` (leaves of the
    sweep, whatever their op). ``seed``: y's adjoint (a node; default 1); ``adjoints``: a dict
    given each node of ``wrt``'s adjoint (None: 0)."""
    order = g.cone([y])
    act = active(g, order, [w for w in wrt if w is not None])
    W, near, adj = {}, defaultdict(set), defaultdict(list)
    adj[y].append(g.const(1) if seed is None else seed)
    # the arguments come before every other node (a node's index may be below an argument's)
    pos = {w: k - len(wrt) for k, w in enumerate(wrt) if w is not None}
    key = lambda i: pos.get(i, i)  # noqa: E731

    def edge(u, v, term):
        if g.is_zero(term):
            return
        if key(u) < key(v):
            u, v = v, u
        W.setdefault((u, v), []).append(term)
        near[u].add(v)
        near[v].add(u)

    for t in reversed(order):
        if t not in act:
            continue
        if t in pos or is_arg(g.nodes[t]):
            if adjoints is not None and t in pos:
                adjoints[t] = g.sum(adj.pop(t, ()))
            continue
        a = g.sum(adj.pop(t, ()))
        if a is None and t not in near:
            continue
        d = {s: p for s, p in partials(g, t).items() if s in act}
        ops = sorted(d, key=key) if len(d) > 1 else list(d)
        self_w = W.pop((t, t), ())
        ahead = near.pop(t, ())
        others = [(p, W.pop((t, p))) for p in sorted(ahead, key=key) if p != t] if ahead else ()
        for p, _ in others:
            near[p].discard(t)
        for p, terms in others:
            w = g.sum(terms)
            for s in ops:
                term = times(g, w, d[s])
                edge(p, s, g.add(term, term) if s == p else term)
        if self_w:
            w = g.sum(self_w)
            for i, s in enumerate(ops):
                ws = times(g, w, d[s])
                for s2 in ops[i:]:
                    edge(s, s2, times(g, ws, d[s2]))
        if a is not None:
            operands = g.nodes[t][1:]
            for (i, j), second in second_partials(g, t).items():
                s, s2 = operands[i], operands[j]
                if s in act and s2 in act:
                    edge(s, s2, times(g, a, g.add(second, second) if s == s2 and i != j else second))
            for s in ops:
                adj[s].append(times(g, a, d[s]))
    return W


def hessian(prog: Program, argnums) -> Program:
    check_scalar(prog, "the Hessian")
    if any(map(is_reduction, prog.nodes)):  # the Jacobian of the gradient: the partials of a
        gp = grad(prog, argnums)  # sum are sums, differentiated again as they are
        g = Graph(gp)
        wrt = arg_nodes(g, argnums)
        flat = [reverse(g, r, wrt) for o in gp.outputs for r in o.refs]
    else:
        g = Graph(prog)
        wrt = arg_nodes(g, argnums)
        y = prog.outputs[0].refs[0]
        W = edge_push(g, y, wrt) if y is not None else {}

        def entry(u, v):
            if u is None or v is None:
                return None
            return g.sum(W.get((u, v), W.get((v, u), ())))
        flat = [[entry(u, v) for v in wrt] for u in wrt]
    outs, starts = [], [0]
    for i in argnums:
        starts.append(starts[-1] + prog.args[i].size)
    for gi, ai in enumerate(argnums):
        for gj, aj in enumerate(argnums):
            a, b = prog.args[ai], prog.args[aj]
            outs.append((f"d2_{a.name}_{b.name}", a.shape + b.shape,
                         [flat[r][c] for r in range(starts[gi], starts[gi + 1]) for c in range(starts[gj], starts[gj + 1])]))
    return g.program(outs)
