"""Derivatives of a Program, IR -> IR: reverse accumulation (gradients, Jacobian rows),
forward accumulation (Hessian-vector products over a gradient, n-th derivatives), and edge
pushing (Hessians: one reverse sweep, each symmetric entry once).

Each node's local partials come from its op's rule (ir/ops.py). A product with a select one
of whose branches is 0 (an adjoint through np.where, a step's 0/1) moves inside the select,
so the branch not taken stays 0 even where the other factor is NaN or inf there:
d/dx where(x > 0, sqrt(x), 0) at x = -1 is 0, however many times it is differentiated."""
from __future__ import annotations

from collections import defaultdict

from ..ir.graph import Graph
from ..ir.ops import OPS
from ..program import Program


def partials(g: Graph, t):
    """{operand: its local partial node} of node ``t`` (repeated operands summed; zeros left out)."""
    memo = g.__dict__.setdefault("_partials", {})
    hit = memo.get(t)
    if hit is None:
        n = g.nodes[t]
        rule = OPS[n[0]].partials if n[0] in OPS else None
        hit = {}
        if rule is not None:
            for s, p in zip(n[1:], rule(g, t, *n[1:])):
                if p is None or g.is_zero(p) or g.nodes[s][0] == "const":
                    continue
                hit[s] = g.add(hit[s], p) if s in hit else p
        memo[t] = hit
    return hit


def _zero_select(g, i):
    """(condition, branch k holding a value, that value) if node ``i`` is a select whose
    other branch is 0, else None."""
    n = g.nodes[i] if i is not None else ("",)
    if n[0] == "select":
        if g.is_zero(n[3]):
            return n[1], 0, n[2]
        if g.is_zero(n[2]):
            return n[1], 1, n[3]
    return None


def _guarded(g, x):
    """(C, v) where node ``x`` equals select(C, v, 0) at run time, v no such select: nested
    selects with a 0 branch (adjoints through np.where, np.max chains) give the conjunction of
    their conditions, a negation (-v) or a sum or difference of such (itself, under the disjunction:
    where no term's condition holds every term is 0) is one too. Each condition is a node,
    memoised: a chain costs one node a link. None where ``x`` is not such a node."""
    memo = g.__dict__.setdefault("_guards", {})
    stack = [x]
    while stack:
        i = stack[-1]
        if i in memo:
            stack.pop()
            continue
        n = g.nodes[i]
        z = _zero_select(g, i)
        deps = [z[2]] if z is not None else list(n[1:]) if n[0] in ("neg", "add", "sub") else []
        todo = [d for d in deps if d not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        if z is not None:
            c, k, v = z
            taken = c if k == 0 else g.node("not", c)
            inner = memo[v]
            memo[i] = (taken, v) if inner is None else (g.node("and", taken, inner[0]), inner[1])
        elif n[0] == "neg" and memo[n[1]] is not None:
            memo[i] = (memo[n[1]][0], g.neg(memo[n[1]][1]))
        elif n[0] in ("add", "sub") and memo[n[1]] is not None and memo[n[2]] is not None:
            c1, c2 = memo[n[1]][0], memo[n[2]][0]
            memo[i] = (c1 if c1 == c2 else g.node("or", c1, c2), i)
        else:
            memo[i] = None
    return memo[x]


def _within(g, x, c, k):
    """``x`` where condition ``c`` takes branch k: a select of the same condition is its branch."""
    n = g.nodes[x]
    while n[0] == "select" and n[1] == c:
        x = n[2 + k]
        n = g.nodes[x]
    return x


def _guard(g, c, v):
    """select(c, v, 0), written select(b, 0, v) where c is not(b)."""
    n = g.nodes[c]
    return g.select(n[1], None, v) if n[0] == "not" else g.select(c, v, None)


def times(g, a, p):
    """a * p, a product by a select with a 0 branch taken inside it (see the module's note):
    select(C, v, 0) * p is select(C, v * p, 0), C the conjunction of the conditions of nested
    such selects (_guarded), so each product costs O(1) nodes and no NaN of a branch not taken,
    however deep, reaches the result."""
    if g.is_zero(a) or g.is_zero(p):
        return None
    if g.is_one(a) or g.is_one(p):
        return p if g.is_one(a) else a
    ga, gp = _guarded(g, a), _guarded(g, p)
    if ga is None and gp is None:
        return g.mul(a, p)
    if ga is not None and gp is not None:
        c = ga[0] if ga[0] == gp[0] else g.node("and", ga[0], gp[0])
        return _guard(g, c, g.mul(ga[1], gp[1]))
    (c, v), y = (ga, p) if ga is not None else (gp, a)
    n = g.nodes[c]
    if n[0] not in ("and", "or"):  # y where c holds: a select of the same condition is its branch
        y = _within(g, y, n[1], 1) if n[0] == "not" else _within(g, y, c, 0)
    return _guard(g, c, g.mul(v, y))


def active(g, order, wrt):
    """The nodes of ``order`` (ascending) that depend on the nodes ``wrt`` through numbers."""
    act = set(wrt)
    for i in order:
        n = g.nodes[i]
        if n[0] not in ("const", "arg") and not OPS[n[0]].condition and any(s in act for s in n[1:]):
            act.add(i)
    return act


def arg_nodes(g, argnums):
    """The node of every entry of arguments ``argnums`` (None where the program never reads it)."""
    return [g.index.get(("arg", a, j)) for a in argnums for j in range(g.args[a].size)]


def reverse(g, y, wrt):
    """d y / d w for each node w of ``wrt`` (None: 0), by one reverse sweep from node ``y``."""
    if y is None:
        return [None] * len(wrt)
    order = g.cone([y])
    act = active(g, order, [w for w in wrt if w is not None])
    adj = defaultdict(list)
    adj[y].append(g.const(1))
    done = {}
    for t in reversed(order):
        terms = adj.pop(t, None)
        if not terms or t not in act:
            continue
        a = g.sum(terms)
        if a is None:
            continue
        if g.nodes[t][0] == "arg":
            done[t] = a
            continue
        for s, p in partials(g, t).items():
            if s in act:
                adj[s].append(times(g, a, p))
    return [done.get(w) if w is not None else None for w in wrt]


def forward(g, refs, dots):
    """Directional derivatives of the nodes ``refs`` along ``dots`` ({node: tangent node}),
    by one forward sweep; returns the tangent of each ref (None: 0)."""
    dots = dict(dots)
    for t in g.cone(refs):
        if t in dots or g.nodes[t][0] in ("const", "arg"):
            continue
        d = g.sum([times(g, dots[s], p) for s, p in partials(g, t).items() if s in dots])
        if d is not None:
            dots[t] = d
    return [dots.get(r) if r is not None else None for r in refs]


def _local(g, p, s, leaves, memo):
    """d p / d s for a node ``p`` built from ``leaves`` (taken as independent)."""
    if p == s:
        return g.const(1)
    if p in leaves or g.nodes[p][0] in ("const", "arg"):
        return None
    if p not in memo:
        memo[p] = g.sum([times(g, d, q) for o, q in partials(g, p).items()
                         for d in [_local(g, o, s, leaves, memo)] if d is not None])
    return memo[p]


def _second(g, t):
    """{(i, j): node} of the second partials of node ``t`` by its operands i <= j (positions of
    operands that are not constants), built on a template of the op whose operands are fresh
    leaves (so a partial rule that rebuilds one operand from another, atan2(x, x*x) building
    x*x, is never mistaken for that operand), then instantiated with ``t``'s own operands."""
    n = g.nodes[t]
    memo = g.__dict__.setdefault("_seconds", {})
    shape = (n[0],) + tuple(g.nodes[o] if g.nodes[o][0] == "const" else None for o in n[1:])
    tpl = memo.get(shape)
    if tpl is None:
        from ..program import Arg, Program
        h = Graph(Program((), (), ()))
        ops = [h.node(*c) if c is not None else h.node("arg", k, 0) for k, c in enumerate(shape[1:])]
        h.args = [Arg(f"o{k}", ()) for k in range(len(ops))]
        root = h.node(n[0], *ops)
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
            if m[0] == "arg":
                cache[j] = leaf_of[j]
                stack.pop()
                continue
            if m[0] == "const":
                cache[j] = g.node(*m)
                stack.pop()
                continue
            todo = [k for k in m[1:] if k not in cache]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            cache[j] = g.node(m[0], *[cache[k] for k in m[1:]])
        return cache[i]
    return {(i, j): inst(v) for (i, j), v in out.items()}


def edge_push(g, y, wrt):
    """The Hessian of node ``y`` by edge pushing (Gower & Mello 2012): one reverse sweep that
    carries, beside each node's adjoint, the symmetric second-order weights W(u, v) between
    it and the nodes still ahead, pushed through each node's first partials and created from
    its second ones. Returns {(u, v): terms}, u >= v, over the nodes of ``wrt``."""
    order = g.cone([y])
    act = active(g, order, [w for w in wrt if w is not None])
    W, near, adj = {}, defaultdict(set), defaultdict(list)
    adj[y].append(g.const(1))
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
        if t not in act or g.nodes[t][0] == "arg":
            continue
        a = g.sum(adj.pop(t, ()))
        if a is None and t not in near:
            continue
        d = {s: p for s, p in partials(g, t).items() if s in act}
        ops = sorted(d, key=key)
        self_w = W.pop((t, t), ())
        others = [(p, W.pop((t, p))) for p in sorted(near.pop(t, ()), key=key) if p != t]
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
            for (i, j), second in _second(g, t).items():
                s, s2 = operands[i], operands[j]
                if s in act and s2 in act:
                    edge(s, s2, times(g, a, g.add(second, second) if s == s2 and i != j else second))
            for s in ops:
                adj[s].append(times(g, a, d[s]))
    return W


# -- the derivative kinds, Program -> Program ------------------------------------------------
def _check_scalar(prog, what):
    out = prog.outputs[0]
    if len(prog.outputs) != 1 or out.shape != ():
        raise ValueError(f"{what} needs a scalar-valued function, but it returns shape {out.shape}; "
                         "use .jacobian for vector-valued functions")


def _split(flat, argnums, args):
    out, k = [], 0
    for i in argnums:
        out.append(flat[k:k + args[i].size])
        k += args[i].size
    return out


def grad(prog: Program, argnums, with_value=False) -> Program:
    _check_scalar(prog, "grad")
    g = Graph(prog)
    y = prog.outputs[0].refs[0]
    rows = reverse(g, y, arg_nodes(g, argnums))
    outs = [("value", (), [y])] if with_value else []
    outs += [("d_" + prog.args[i].name, prog.args[i].shape, r) for i, r in zip(argnums, _split(rows, argnums, prog.args))]
    return g.program(outs)


def without_value(prog: Program) -> Program:
    """The gradient program of a value_and_grad program: its value dropped (dead code goes)."""
    return Graph(prog).program([(o.name, o.shape, list(o.refs)) for o in prog.outputs[1:]])


def jacobian(prog: Program, argnums, stack=False) -> Program:
    """d outputs / d arguments ``argnums``: one result per (output, argument), of shape output
    shape + argument shape; ``stack``: one per output, the arguments flattened and concatenated."""
    g = Graph(prog)
    wrt = arg_nodes(g, argnums)
    outs = []
    for o in prog.outputs:
        rows = [reverse(g, y, wrt) for y in o.refs]
        if stack:
            outs.append((f"jac_{o.name}", o.shape + (len(wrt),), [e for r in rows for e in r]))
            continue
        k = 0
        for i in argnums:
            a = prog.args[i]
            name = f"jac_{o.name}_{a.name}" if len(prog.outputs) > 1 else f"jac_{a.name}"
            outs.append((name, o.shape + a.shape, [r[j] for r in rows for j in range(k, k + a.size)]))
            k += a.size
    return g.program(outs)


def hessian(prog: Program, argnums) -> Program:
    _check_scalar(prog, "hessian")
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


def hvp(prog: Program, argnums, tangents, gradient=None) -> Program:
    """H @ v, forward over reverse: the directional derivative of the gradient program along
    the tangents (new arguments named ``tangents``, after the program's)."""
    _check_scalar(prog, "hvp")
    gp = gradient if gradient is not None else grad(prog, argnums)
    g = Graph(gp)
    base = len(prog.args)
    for t, i in zip(tangents, argnums):
        g.args.append(type(prog.args[i])(t, prog.args[i].shape))
    dots = {}
    for k, i in enumerate(argnums):
        for j in range(prog.args[i].size):
            n = g.index.get(("arg", i, j))
            if n is not None:
                dots[n] = g.node("arg", base + k, j)
    refs = [r for o in gp.outputs for r in o.refs]
    ds = forward(g, refs, dots)
    outs, k = [], 0
    for o in gp.outputs:
        outs.append((f"hvp_{o.name[2:]}", o.shape, ds[k:k + o.size]))
        k += o.size
    return g.program(outs)


def nth(prog: Program, n, argnum) -> Program:
    """The n-th derivative of every output w.r.t. one scalar argument (n forward sweeps)."""
    a = prog.args[argnum]
    if a.shape != ():
        raise ValueError(f"derivative(n) needs a scalar argument, but {a.name!r} has shape {a.shape}; "
                         "use .jacobian or .hessian for array arguments")
    if n < 0:
        raise ValueError(f"derivative order must be >= 0, got {n}")
    cur = prog
    for _ in range(n):
        g = Graph(cur)
        x = g.index.get(("arg", argnum, 0))
        refs = [r for o in cur.outputs for r in o.refs]
        ds = forward(g, refs, {x: g.const(1)} if x is not None else {})
        outs, k = [], 0
        for o in cur.outputs:
            outs.append((o.name, o.shape, ds[k:k + o.size]))
            k += o.size
        cur = g.program(outs)
    g = Graph(cur)
    return g.program([(f"d{n}_{o.name}", o.shape, list(o.refs)) for o in cur.outputs])
