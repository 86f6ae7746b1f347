"""Derivatives of a Program, IR -> IR: reverse accumulation (gradients, Jacobian rows) and
forward accumulation (the same where its program costs less: pick_rows; Hessian-vector
products over a gradient, n-th derivatives); Hessians are hessian.py's. A sum over loops is
differentiated as any op: its partial by what its body reads is the sum of the body's
partial (body_partials), and a gradient by an argument the loops read is a scatter of the
body's partials by its reads.

Each node's local partials come from its op's rule (ir/ops/); an adjoint times a partial is
guards.times (a select with a 0 branch keeps its 0 where the other factor is NaN or inf)."""
from __future__ import annotations

import math
from collections import defaultdict

from ..errors import CompileError
from ..ir.graph import Graph, double
from ..ir.nodes import (argument_of, extremum_value, is_add, is_arg, is_const, is_leaf, is_passive,
                        is_polynomial, is_pow, is_read, is_reduction, is_sum, looped_argument, op_of, reads_data)
from ..ir.program import Program
from .guards import times


def partials(g: Graph, t):
    """{operand: its local partial node} of node ``t`` (repeated operands summed; zeros left out)."""
    memo = g.__dict__.get("_partials")
    if memo is None:
        memo = g.__dict__["_partials"] = {}
    hit = memo.get(t)
    if hit is None:
        n = g.nodes[t]
        rule = op_of(n).partials
        hit = {}
        if is_reduction(n):  # by what its body reads that stays put over its loops: the sum of the
            for s, p in body_partials(g, t).items():  # body's partial (reads: scatters, reverse)
                if not is_read(g.nodes[s]):
                    q = g.summed(picked(g, t, p), n[2])
                    if q is not None:
                        hit[s] = q
        elif rule is not None:
            zeros, consts, nodes = g.zeros, g.consts, g.nodes
            seen = False
            for s, p in zip(n[1:], rule(g, t, *n[1:])):
                if p is None or p in zeros:
                    continue
                if is_add(nodes[s]):
                    s = _past_zero(g, s)
                    seen = True
                if s in consts:
                    continue
                hit[s] = g.add(hit[s], p) if s in hit else p
            if seen:  # (x - (0.0 + x): 1 + -1, a structural 0)
                hit = {s: p for s, p in hit.items() if p not in zeros}
        memo[t] = hit
    return hit


def _past_zero(g, s):
    """The operand ``x`` of node ``s`` if ``s`` adds a zero constant to it (0.0 + x: numpy's sum
    of one entry, which starts from 0.0), else ``s``. The partial of 0.0 + x by x is 1 exactly,
    so the partial of a node by ``s`` is its partial by x: taken so, x - (0.0 + x) has the
    structural partial 0 by x (the gradient of np.std over one entry is 0, not 0 * inf)."""
    nodes, zeros = g.nodes, g.zeros
    n = nodes[s]
    while is_add(n):
        if n[1] in zeros:
            s = n[2]
        elif n[2] in zeros:
            s = n[1]
        else:
            break
        n = nodes[s]
    return s


def picked(g, t, p):
    """Node ``p`` (a partial of reduction ``t``'s body, over its loops) as ``t``'s own: of a sum
    ``p``; of an extremum's value ``p`` at the entry the chain picked and 0 elsewhere (its first
    extremum: the pick rule's tie goes to the first operand, so a result never depends on
    Options.loop_min_size); of an extremum's index None (a step function of the body)."""
    n = g.nodes[t]
    if is_sum(n):
        return p
    if not extremum_value(n):
        return None
    flat, stride = [], 1
    for v, e in reversed(n[2]):
        flat.append((v, stride))
        stride *= e
    at = g.node("read", "i", 0, (0, tuple(sorted(flat, key=repr))))
    index = g.node("extremum", n[1], n[2], n[3], 1)
    return g.select(g.node("eq", at, index), p, None)


def body_partials(g, s):
    """{leaf: d body / d leaf} of sum node ``s``, by a reverse sweep over its body alone: the
    leaves are what the body reads that does not vary with the sum's loop variables, and its
    reads of arguments (a data array's entries are constants)."""
    memo = g.__dict__.setdefault("_bodies", {})
    hit = memo.get(s)
    if hit is None:
        body, bound = g.nodes[s][1], {v for v, _ in g.nodes[s][2]}
        inside, stack = set(), [body]
        while stack:
            i = stack.pop()
            n = g.nodes[i]
            if i in inside or is_leaf(n) or not g.loop_vars(i) & bound:
                continue
            if is_reduction(n):
                raise CompileError("a sum inside another sum's loop (a bug in symgrad)")
            inside.add(i)
            stack.extend(n[1:])
        adj = defaultdict(list)
        adj[body].append(g.const(1))
        for t in sorted(inside, reverse=True):
            a = g.sum(adj.pop(t, ()))
            if a is not None:
                for o, p in partials(g, t).items():
                    adj[o].append(times(g, a, p))
        hit = {}
        for o, terms in adj.items():
            n = g.nodes[o]
            v = g.sum(terms)
            if v is not None and not reads_data(n):
                hit[o] = v
        memo[s] = hit
    return hit


def active(g, order, wrt):
    """The nodes of ``order`` (ascending) that depend on the nodes ``wrt`` through numbers."""
    act, nodes = set(wrt), g.nodes
    for i in order:
        n = nodes[i]
        if is_reduction(n):
            if n[1] in act and (is_sum(n) or extremum_value(n)):
                act.add(i)
        elif not is_passive(n):
            for s in n[1:]:
                if s in act:
                    act.add(i)
                    break
    return act


def arg_nodes(g, argnums):
    """The node of every entry of arguments ``argnums`` (None where the program never reads it)."""
    return [g.index.get(("arg", a, j)) for a in argnums for j in range(g.args[a].size)]


CHAIN_MIN = 8  # adjoints of more terms than this are one running sum (reverse)


def reverse(g, y, wrt, scatter=None, seed=None, stop=()):
    """d y / d w for each node w of ``wrt`` (None: 0), by one reverse sweep from node ``y``.
    ``scatter``: {argument: []} of arguments the loops read, each list given the
    (coef, weight, loops, index) terms of its gradient (program.Output.adds). ``seed``: y's
    adjoint (a node; default 1); ``stop``: nodes of ``wrt`` taken as leaves whatever their op
    (a loop's reads, a sum: transforms/sparsity_loops.py)."""
    if y is None:
        return [None] * len(wrt)
    order = g.cone([y])
    seeds = [w for w in wrt if w is not None]
    if scatter:
        seeds += [i for i in order if argument_of(g.nodes[i]) in scatter]
    act = active(g, order, seeds)
    adj = defaultdict(list)
    adj[y].append(g.const(1) if seed is None else seed)
    done = {}
    for t in reversed(order):
        terms = adj.pop(t, None)
        if not terms or t not in act:
            continue
        # Few terms: a balanced tree (short dependency chains); many (a value read by the
        # iterations of a traced loop): one running sum in the readers' order, as
        # hand-written adjoint code accumulates, which rolls into the loop's body.
        a = g.sum(terms) if len(terms) <= CHAIN_MIN else g.chain(reversed(terms))
        if a is None:
            continue
        n = g.nodes[t]
        if t in stop:
            done[t] = a
            continue
        if is_arg(n):
            if scatter and n[1] in scatter:
                scatter[n[1]].append((a, g.const(1), (), (n[2], ())))
            done[t] = a
            continue
        if is_read(n):
            raise CompileError("a derivative of an array result by an argument the loops read (a bug in symgrad: "
                               "transforms/kinds.py should have refused it)")
        if is_reduction(n) and scatter:
            for s, p in body_partials(g, t).items():
                m = g.nodes[s]
                if looped_argument(m) in scatter and picked(g, t, p) is not None:
                    scatter[m[2]].append((a, picked(g, t, p), n[2], m[3]))
        for s, p in partials(g, t).items():
            if s in act:
                adj[s].append(times(g, a, p))
    return [done.get(w) if w is not None else None for w in wrt]


def forward(g, refs, dots):
    """Directional derivatives of the nodes ``refs`` along ``dots`` ({node: tangent node}),
    by one forward sweep; returns the tangent of each ref (None: 0)."""
    dots = dict(dots)
    for t in g.cone(refs):
        n = g.nodes[t]
        if t in dots or is_leaf(n):
            continue
        if is_reduction(n):  # the sum of the body's tangent (an extremum's: at the entry picked)
            d = g.summed(picked(g, t, dots[n[1]]), n[2]) if n[1] in dots else None
        else:
            d = g.sum([times(g, dots[s], p) for s, p in partials(g, t).items() if s in dots])
        if d is not None:
            dots[t] = d
    return [dots.get(r) if r is not None else None for r in refs]


# -- the derivative kinds, Program -> Program ------------------------------------------------
def check_scalar(prog, what):
    out = prog.outputs[0]
    if len(prog.outputs) != 1 or out.shape != () or out.adds is not None:
        raise ValueError(f"{what} needs a scalar-valued function, but it returns shape {out.shape}; "
                         "use .jacobian for vector-valued functions")


def _split(flat, argnums, args):
    out, k = [], 0
    for i in argnums:
        out.append(flat[k:k + args[i].size])
        k += args[i].size
    return out


def looped_args(prog):
    """The arguments the program's loops read entry by entry (their gradients are scatters)."""
    return {a for a in map(looped_argument, prog.nodes) if a is not None}


# Forward accumulation is tried for polynomials only (sums and products of the arguments and
# constants, integer powers): a tangent of anything else can overflow or underflow where the
# adjoint does not (d/dx log(exp(-x/1e20)) at 7e22: an underflowed tangent, -0.0; a review
# found 14 such functions of 1800 for 3 the other way), and for at most FORWARD_ENTRIES
# argument entries (more only for a Jacobian of at least twice as many rows) whose sweeps
# (one per entry) visit at most FORWARD_WORK nodes in all: the trial costs about what the
# reverse sweep does. A 22-state pendulum's Jacobian, lj6's gradient: forward cost 1.7x and
# 1.9x reverse's.
FORWARD_ENTRIES, FORWARD_WORK = 4, 20_000


def _polynomial(prog):
    """Whether ``prog`` computes polynomials of its arguments: its nodes are sums, products,
    negations and integer powers (0 to 64) of arguments and finite constants."""
    for n in prog.nodes:
        if not is_polynomial(n):
            return False
        if is_const(n) and not math.isfinite(double(n)):
            return False
        if is_pow(n):
            e = prog.nodes[n[2]]
            if not is_const(e) or not double(e).is_integer() or not 0 <= double(e) <= 64:
                return False
    return True


def cost(g, refs):
    """The arithmetic of a polynomial program's nodes ``refs`` need (what pick_rows compares):
    one an operation, two an integer power (printed as multiplications)."""
    nodes = g.nodes
    return sum(1 + is_pow(nodes[i]) for i in g.cone(refs) if not is_leaf(nodes[i]))


def pick_rows(prog: Program, ys, argnums):
    """(graph, rows): rows[k][j] is d ys[k] / d (entry j of the arguments ``argnums``) (None:
    0), by reverse accumulation (a sweep per y) or, where the program it builds costs less
    (cost), by forward accumulation (a sweep per entry) of a polynomial of few entries: its
    tangents near the arguments are constants that fold (d/dx of 8*x is 8), where every
    adjoint is a product of what lies downstream (the founding function's gradient: 0.7x the
    time per point). The graph is a new one of ``prog`` either way."""
    g = Graph(prog)
    wrt = arg_nodes(g, argnums)
    rev = [reverse(g, y, wrt) for y in ys]
    live = [w for w in wrt if w is not None]
    if not live or (len(live) > FORWARD_ENTRIES and 2 * len(live) > len(ys)) or \
            len(live) * len(prog.nodes) > FORWARD_WORK or not _polynomial(prog) or \
            any(o.loops or o.adds is not None for o in prog.outputs):
        return g, rev
    f = Graph(prog)
    cols = [forward(f, ys, {w: f.const(1)}) if w is not None else [None] * len(ys) for w in arg_nodes(f, argnums)]
    fwd = [[col[k] for col in cols] for k in range(len(ys))]
    if cost(f, [d for row in fwd for d in row if d is not None]) < cost(g, [d for row in rev for d in row if d is not None]):
        return f, fwd
    return g, rev


def _gradient(g, y, argnums, prog):
    """[per argument of ``argnums``: its gradient entries, or the adds of a scatter]."""
    large = looped_args(prog)
    small = [i for i in argnums if i not in large]
    scatter = {i: [] for i in argnums if i in large}
    rows = dict(zip(small, _split(reverse(g, y, arg_nodes(g, small), scatter), small, prog.args)))
    return [rows[i] if i in rows else scatter[i] for i in argnums], large


def grad(prog: Program, argnums, with_value=False) -> Program:
    check_scalar(prog, "the gradient")
    y = prog.outputs[0].refs[0]
    if not looped_args(prog):
        g, (row,) = pick_rows(prog, [y], argnums)
        parts, large = _split(row, argnums, prog.args), set()
    else:
        g = Graph(prog)
        parts, large = _gradient(g, y, argnums, prog)
    outs = [("value", (), [y])] if with_value else []
    for i, p in zip(argnums, parts):
        a = prog.args[i]
        outs.append(("d_" + a.name, a.shape, [], (), p) if i in large else ("d_" + a.name, a.shape, p))
    return g.program(outs)


def without_value(prog: Program) -> Program:
    """The gradient program of a value_and_grad program: its value dropped (dead code goes)."""
    g = Graph(prog)
    return g.program(g.outputs_of(prog)[1:])


def jacobian(prog: Program, argnums, stack=False) -> Program:
    """d outputs / d arguments ``argnums``: one result per (output, argument), of shape output
    shape + argument shape; ``stack``: one per output, the arguments flattened and concatenated."""
    large = looped_args(prog) & set(argnums)
    if large:  # (transforms/kinds.py: only of one scalar result)
        check_scalar(prog, "the Jacobian by an argument the loops read")
        g = Graph(prog)
        parts, _ = _gradient(g, prog.outputs[0].refs[0], argnums, prog)
        return g.program([(f"jac_{prog.args[i].name}", prog.args[i].shape, [], (), p) if i in large else
                          (f"jac_{prog.args[i].name}", prog.args[i].shape, p) for i, p in zip(argnums, parts)])
    g, flat = pick_rows(prog, [y for o in prog.outputs for y in o.refs], argnums)
    wrt, outs, at = arg_nodes(g, argnums), [], 0
    for o in prog.outputs:
        rows, at = flat[at:at + len(o.refs)], at + len(o.refs)
        if stack:
            outs.append((f"jac_{o.name}", o.shape + (len(wrt),), [e for r in rows for e in r]))
            continue
        k = 0
        for i in argnums:
            a = prog.args[i]
            name = f"jac_{o.name}_{a.name}" if len(prog.outputs) > 1 else f"jac_{a.name}"
            outs.append((name, o.shape + a.shape, [r[j] for r in rows for j in range(k, k + a.size)], o.loops))
            k += a.size
    return g.program(outs)


def hvp(prog: Program, argnums, tangents, gradient=None) -> Program:
    """H @ v, forward over reverse: the directional derivative of the gradient program along
    the tangents (new arguments named ``tangents``, after the program's)."""
    check_scalar(prog, "a Hessian-vector product")
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
        outs.append((f"hvp_{o.name[2:]}", o.shape, ds[k:k + len(o.refs)]))
        k += len(o.refs)
    return g.program(outs)


def nth(prog: Program, n, argnum, prefix) -> Program:
    """The n-th derivative of every output w.r.t. one scalar argument (n forward sweeps), its
    results named ``prefix``_output."""
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
            outs.append((o.name, o.shape, ds[k:k + len(o.refs)], o.loops))
            k += len(o.refs)
        cur = g.program(outs)
    g = Graph(cur)
    return g.program([(f"{prefix}_{o.name}", o.shape, list(o.refs), o.loops) for o in cur.outputs])
