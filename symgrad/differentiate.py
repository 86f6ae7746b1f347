"""Derivatives of a Program: gradient, Jacobian, Hessian, n-th derivative.

Two strategies, chosen by size. Small programs are inlined into closed-form
expressions and differentiated by sympy (whole-expression algebra, then CSE).
Larger ones are differentiated in place by reverse accumulation over the
straight-line body: sympy only computes each assignment's local partials, so the
derivative program grows in proportion to the function's program. Their Hessians
take one more reverse sweep (edge pushing) that computes each symmetric entry once."""
from __future__ import annotations

from collections import defaultdict

import sympy as sp

from .program import tangent_names
from .symbolic import SymArg, SymOutput, SymProgram, arg_symbols, split


def _wrt(prog, argnums):
    return [s for i in argnums for s in prog.args[i].symbols]


def _check_scalar(prog, what):
    out = prog.outputs[0]
    if len(prog.outputs) != 1 or out.shape != ():
        raise ValueError(f"{what} needs a scalar-valued function, but it returns shape {out.shape}; "
                         "use .jacobian for vector-valued functions")


class _Emitter:
    """Appends assignments to a body, sharing identical right-hand sides."""

    def __init__(self, body):
        self.body = list(body)
        self.memo = {e: t for t, e in self.body}
        self.defs = dict(self.body)
        self.zero_selects = {t for t, e in self.body if self._zero_select(e) is not None}

    def __call__(self, e):
        if e.is_Atom:
            return e
        e = self.guard(e)
        if e.is_Atom:
            return e
        t = self.memo.get(e)
        if t is None:
            t = sp.Symbol(f"d.{len(self.body)}", real=True)  # never a Python name
            self.body.append((t, e))
            self.memo[e] = t
            self.defs[t] = e
            if isinstance(e, sp.Piecewise) and self._zero_select(e) is not None:
                self.zero_selects.add(t)
        return t

    def _zero_select(self, e):
        """The select ``e`` is (literally or as a temporary) if one of its branches is 0."""
        p = self.defs.get(e, e) if e.is_Symbol else e
        if isinstance(p, sp.Piecewise) and any(v == 0 for v, _ in p.args):
            return p
        return None

    def guard(self, e):
        """``e`` with every product by a select with a branch 0 moved inside it (and sums of such
        selects with the same conditions merged first), so that a branch not taken
        stays 0 even where the other factors are NaN or inf there: d/dy of
        where(c, sqrt(y**2.5), 0.3*y) at y < 0 is 0.3 however many times it is differentiated."""
        if e.is_Atom or not (e.is_Add or e.is_Mul or isinstance(e, sp.Piecewise)):
            return e
        if not e.has(sp.Piecewise) and not (e.free_symbols & self.zero_selects):
            return e  # no select in it: nothing to move (most expressions)
        if isinstance(e, sp.Piecewise):
            return sp.Piecewise(*[(self.guard(v), c) for v, c in e.args], evaluate=False)
        args = [self.guard(a) for a in e.args]
        if e.is_Add:
            groups, rest = {}, []
            for a in args:
                p = self._zero_select(a)
                if p is None:
                    rest.append(a)
                else:
                    groups.setdefault(tuple(c for _, c in p.args), []).append((a, p))
            for conds, ps in groups.items():
                if len(ps) == 1:
                    rest.append(ps[0][0])
                    continue
                # in branch k each term is its value there: a temporary is itself where not 0
                value = lambda a, p, k: (0 if p.args[k].expr == 0 else a) if a.is_Symbol else p.args[k].expr  # noqa: E731
                rest.append(sp.Piecewise(*[(sp.Add(*[value(a, p, k) for a, p in ps]), c)
                                           for k, c in enumerate(conds)], evaluate=False))
            return sp.Add(*rest)
        for k, a in enumerate(args):
            p = self._zero_select(a)
            if p is not None and any(not b.is_Number for j, b in enumerate(args) if j != k):
                others = sp.Mul(*args[:k], *args[k + 1:])
                if a.is_Symbol:  # a temporary holding the select: multiplied as it is, inside
                    branches = [(v if v == 0 else others * a, c) for v, c in p.args]
                else:
                    branches = [(v if v == 0 else self.guard(others * v), c) for v, c in p.args]
                return sp.Piecewise(*branches, evaluate=False)
        return sp.Mul(*args)

    def times(self, a, p):
        """a * p; where either is a select with a zero branch (an adjoint through np.where),
        the product goes inside its branches, so that the branch not taken stays 0 even
        where the other factor is NaN there (d/dy where(c, log(y), 0) at y < 0 is 0)."""
        for x, y in ((p, a), (a, p)):  # the local partial first: a 0/1 step becomes a select of a
            e = self.defs.get(x, x)
            if isinstance(e, sp.Piecewise) and any(v == 0 for v, _ in e.args):
                # each branch value as a temporary: a chain of selects (np.max) stays linear
                conds = tuple(c for _, c in e.args)
                branches = [self(self.within(v, conds, k)) * self.within(y, conds, k)
                            for k, (v, _) in enumerate(e.args)]
                if all(b == 0 for b in branches):
                    return sp.S.Zero
                return sp.Piecewise(*zip(branches, conds), evaluate=False)
        return a * p

    def within(self, x, conds, k):
        """``x`` where the select of conditions ``conds`` takes branch k: every select of the
        same conditions in it (written out or a temporary holding a number or a symbol
        there) is that branch. Products of selects on opposite branches are then 0, not a
        temporary that is NaN where it is not used (whose derivatives would be NaN too)."""
        if x.is_Symbol:
            e = self.defs.get(x)
            if isinstance(e, sp.Piecewise) and tuple(c for _, c in e.args) == conds and e.args[k].expr.is_Atom:
                return e.args[k].expr
            return x
        if isinstance(x, sp.Piecewise) and tuple(c for _, c in x.args) == conds:
            return self.within(x.args[k].expr, conds, k)
        if x.is_Mul or x.is_Add:
            return x.func(*[self.within(a, conds, k) for a in x.args])
        return x


def local_partial(e, s):
    """d e / d s for one small assignment: the product/sum/power rules directly where they
    apply (most assignments of a traced program), sympy's diff otherwise."""
    if e == s:
        return sp.S.One
    if e.is_Add:
        return sp.Add(*[local_partial(a, s) for a in e.args if a == s or (a.args and a.has(s))])
    if e.is_Mul:
        hits = [i for i, a in enumerate(e.args) if a == s or (a.args and a.has(s))]
        if len(hits) == 1:
            i = hits[0]
            return sp.Mul(*e.args[:i], *e.args[i + 1:]) * local_partial(e.args[i], s)
    elif e.is_Pow and e.base == s and not e.exp.has(s):
        return e.exp * s ** (e.exp - 1)
    elif isinstance(e, sp.Piecewise):  # as sympy's diff: the branches (a step's own derivative is 0)
        parts = [(local_partial(v, s) if v == s or (v.args and v.has(s)) else sp.S.Zero, c) for v, c in e.args]
        if all(p == parts[0][0] for p, _ in parts):
            return parts[0][0]
        return sp.Piecewise(*parts, evaluate=False)
    elif isinstance(e, sp.Function) and s in e.args and sum(a == s or a.has(s) for a in e.args) == 1:
        return e.fdiff(e.args.index(s) + 1)  # f(.., s, ..): the chain rule's one factor, without diff
    return sp.diff(e, s)


# Chains of at least this many selects take their derivative through an index (_pick_chains).
PICK_CHAIN = 3


def _value_symbols(e):
    """The symbols ``e`` uses as values (not only inside the conditions of selects)."""
    if isinstance(e, sp.Piecewise):
        return set().union(*[_value_symbols(v) for v, _ in e.args])
    if isinstance(e, (sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction,
                      sp.logic.boolalg.BooleanAtom)):
        return set()
    return e.free_symbols


def _pick_chains(body, exprs):
    """Find chains of selects m_k = select(c_k, v_k, m_(k-1)) (np.max, max(), np.min over n
    entries; nested np.where) whose links feed nothing else, and add beside each link an index
    i_k = select(c_k, k + 1, i_(k-1)): the entry the chain picked. The chain's adjoint A then
    reaches entry k as select(i_n == k + 1, A, 0), one select each, instead of through the
    reversed chain, which keeps every c_k alive until the reverse pass (compile time grows
    superlinearly in n). Returns (body with the indices, {end of chain: (values, index)})."""
    links = {t: e.args for t, e in body if isinstance(e, sp.Piecewise) and len(e.args) == 2
             and e.args[1].cond == sp.true}
    uses = defaultdict(int)
    for e in [e for _, e in body] + list(exprs):
        for x in _value_symbols(e):
            uses[x] += 1
    inner = {}  # link -> the link it continues
    for t, ((v, c), (b, _)) in links.items():
        if b in links and uses[b] == 1 and b not in _value_symbols(v):
            inner[b] = t
    chains, extra = {}, defaultdict(list)
    for t in links:
        if t in inner or not uses[t]:
            continue
        chain = [t]
        while links[chain[-1]][1].expr in inner:
            chain.append(links[chain[-1]][1].expr)
        if len(chain) < PICK_CHAIN:
            continue
        chain.reverse()
        values = [links[chain[0]][1].expr] + [links[m][0].expr for m in chain]
        prev = sp.S.One
        for k, m in enumerate(chain, 1):
            i = sp.Symbol(f"d.{len(body)}.{m.name}", real=True)  # never a Python name
            extra[m].append((i, sp.Piecewise((sp.Integer(k + 1), links[m][0].cond), (prev, True), evaluate=False)))
            prev = i
        chains[t] = (values, prev)
    if not chains:
        return body, chains
    return [a for t, e in body for a in [(t, e)] + extra.get(t, [])], chains


def _reverse_rows(prog, exprs, wrt):
    """d exprs[i] / d wrt[j] by reverse accumulation; returns (body, rows)."""
    body, chains = _pick_chains(prog.body, exprs)
    emit = _Emitter(body)
    defs = dict(prog.body)
    partial = {}
    wrt_set = set(wrt)
    order = [t for t, _ in prog.body]
    rows = []
    for y in exprs:
        adj = defaultdict(list)
        for s in y.free_symbols:
            adj[s].append(emit(sp.diff(y, s)))
        for t in reversed(order):
            terms = adj.pop(t, None)
            if not terms:
                continue
            a = emit(sp.Add(*terms))
            if a == 0:
                continue
            if t in chains:  # entry k of a chain of selects: its adjoint where the chain picked it
                values, index = chains[t]
                for k, v in enumerate(values, 1):
                    picked = emit(sp.Piecewise((a, sp.Eq(index, k, evaluate=False)), (0, True), evaluate=False))
                    for s in v.free_symbols:
                        if s in defs or s in wrt_set:
                            adj[s].append(emit(emit.times(picked, emit(local_partial(v, s)))))
                continue
            e = defs[t]
            for s in e.free_symbols:
                if s not in defs and s not in wrt_set:
                    continue
                key = (t, s)
                if key not in partial:
                    partial[key] = emit(local_partial(e, s))
                if partial[key] != 0:
                    adj[s].append(emit(emit.times(a, partial[key])))
        rows.append([emit(sp.Add(*adj.get(w, ()))) for w in wrt])
    return emit.body, rows


def _rows(prog, wrt, limit):
    """(body, Jacobian rows of the outputs w.r.t. symbols ``wrt``, the outputs as differentiated).

    Programs whose closed form has at most ``limit`` operations (None: any) are
    differentiated as whole expressions, larger ones by reverse accumulation."""
    closed = prog.inlined(limit) if limit != 0 else None
    if closed is not None:
        return (), [[sp.diff(y, w) for w in wrt] for y in closed], closed
    exprs = prog.output_exprs()
    return (*_reverse_rows(prog, exprs, wrt), exprs)


def choose(prog, limit):
    """'expression' for programs small enough to inline, else 'reverse'."""
    return "expression" if limit != 0 and prog.inlined(limit) is not None else "reverse"


def grad(prog, argnums, limit):
    _check_scalar(prog, "grad")
    body, rows, _ = _rows(prog, _wrt(prog, argnums), limit)
    outs = [prog.args[i] for i in argnums]
    outputs = split(rows[0], [SymOutput("d_" + a.name, a.shape, ()) for a in outs])
    return SymProgram(prog.args, tuple(body), outputs)


def with_value(prog, g, limit):
    """The gradient program ``g`` of ``prog`` with the value as a first result: a gradient by
    reverse accumulation holds the forward body that computes it; a closed-form one (no
    body) gets the closed form, which fitted the limit when ``g`` was made."""
    value = prog.output_exprs()[0] if g.body else prog.inlined()[0]
    return g.with_outputs((SymOutput("value", (), (value,)),) + tuple(g.outputs))


def jacobian(prog, argnums, limit, prefix="jac_", stack=False):
    """d outputs / d arguments ``argnums``: one result per (output, argument), of shape
    output shape + argument shape; ``stack``: one per output, the arguments flattened and
    concatenated (output shape + (their total size,))."""
    wrt = _wrt(prog, argnums)
    outputs = []
    body, rows, _ = _rows(prog, wrt, limit)
    for out_index, out in enumerate(prog.outputs):
        start = sum(o.size for o in prog.outputs[:out_index])
        block = rows[start:start + out.size]
        if stack:
            outputs.append(SymOutput(f"{prefix}{out.name}", out.shape + (len(wrt),),
                                     tuple(e for r in block for e in r)))
            continue
        k = 0
        for i in argnums:
            a = prog.args[i]
            flat = [r[j] for r in block for j in range(k, k + a.size)]
            outputs.append(SymOutput(f"{prefix}{out.name}_{a.name}" if len(prog.outputs) > 1
                                     else f"{prefix}{a.name}", out.shape + a.shape, tuple(flat)))
            k += a.size
    return SymProgram(prog.args, tuple(body), tuple(outputs))


def hessian(prog, argnums, limit, g=None):
    """Second derivatives. A closed-form gradient ``g`` (no body) is differentiated in closed
    form again; a program with chains of selects (np.max) reverse over reverse; any other by
    edge pushing (_edge_push), which starts from the body of ``g`` (made here unless given)."""
    _check_scalar(prog, "hessian")
    g = grad(prog, argnums, limit) if g is None else g
    wrt = _wrt(prog, argnums)
    if not g.body or _pick_chains(prog.body, prog.output_exprs())[1]:
        h = jacobian(g, argnums, 0 if g.body else None, prefix="d2_", stack=True)
        body, flat = h.body, [e for o in h.outputs for e in o.exprs]
    else:
        emit = _Emitter(g.body)
        W = _edge_push(prog, prog.output_exprs()[0], wrt, emit)
        flat = [emit(sp.Add(*W.get((u, v), W.get((v, u), ())))) for u in wrt for v in wrt]
        body = emit.body
    n, outs, starts = len(wrt), [], [0]
    for i in argnums:
        starts.append(starts[-1] + prog.args[i].size)
    for gi, ai in enumerate(argnums):
        for gj, aj in enumerate(argnums):
            a, b = prog.args[ai], prog.args[aj]
            exprs = tuple(flat[r * n + c] for r in range(starts[gi], starts[gi + 1])
                          for c in range(starts[gj], starts[gj + 1]))
            outs.append(SymOutput(f"d2_{a.name}_{b.name}", a.shape + b.shape, exprs))
    return SymProgram(prog.args, tuple(body), tuple(outs))


def _edge_push(prog, y, wrt, emit):
    """The Hessian of ``y`` by edge pushing (Gower & Mello 2012): one reverse sweep that
    carries, beside each temporary's adjoint, the symmetric second-order weights W(u, v)
    between the temporaries and arguments still ahead of it, pushed through each assignment's
    first partials and created from its second ones. Each entry of the Hessian is computed
    once (symmetry), and only along pairs that interact (sparsity): a sum of pair terms
    costs what its pairs cost. Returns {(u, v): terms} over ``wrt`` (either order)."""
    pos = {w: k - len(wrt) for k, w in enumerate(wrt)}
    pos.update({t: k for k, (t, _) in enumerate(prog.body)})
    active = set(wrt)  # what depends on the arguments differentiated by
    for t, e in prog.body:
        if not e.free_symbols.isdisjoint(active):
            active.add(t)
    W, near, adj, first = {}, defaultdict(set), defaultdict(list), {}

    def edge(u, v, term):
        if term == 0:
            return
        if pos[u] < pos[v]:
            u, v = v, u
        W.setdefault((u, v), []).append(term)
        near[u].add(v)
        near[v].add(u)

    def visit(t, e, a):
        """Push the weights of ``t`` (= e) to e's operands, create e's own, pass its adjoint a."""
        ops = sorted((s for s in _value_symbols(e) if s in active), key=pos.__getitem__)
        raw = {}
        for s in ops:
            if (t, s) not in first:
                p = local_partial(e, s)
                first[t, s] = (p, emit(p))
            raw[s] = first[t, s]
        ops = [s for s in ops if raw[s][1] != 0]
        d = {s: raw[s][1] for s in ops}
        self_w = others = ()
        if t is not None:
            self_w = W.pop((t, t), ())
            others = [(p, W.pop((t, p))) for p in sorted(near.pop(t, ()), key=pos.__getitem__) if p != t]
            for p, _ in others:
                near[p].discard(t)
        for p, terms in others:
            w = emit(sp.Add(*terms))
            for s in ops:
                term = emit(emit.times(w, d[s]))
                edge(p, s, emit(2 * term) if s == p else term)
        if self_w:
            w = emit(sp.Add(*self_w))
            for i, s in enumerate(ops):
                ws = emit(emit.times(w, d[s]))
                for s2 in ops[i:]:
                    edge(s, s2, emit(emit.times(ws, d[s2])))
        if a != 0:
            for i, s in enumerate(ops):
                for s2 in ops[i:]:
                    second = local_partial(raw[s][0], s2)
                    if second != 0:
                        edge(s, s2, emit(emit.times(a, emit(second))))
                adj[s].append(emit(emit.times(a, d[s])))

    visit(None, y, sp.S.One)
    for t, e in reversed(prog.body):
        if t not in active:
            continue
        a = emit(sp.Add(*adj.pop(t, ())))
        if a != 0 or t in near:
            visit(t, e, a)
    return W


def hvp(prog, argnums, limit, g=None):
    """Hessian-vector products H @ v, forward over reverse: the gradient program ``g`` (made
    here unless given), then the derivative of each of its assignments along the tangents
    ``v_<argument>`` (new arguments after the program's), one local partial per operand:
    linear in the gradient's size."""
    _check_scalar(prog, "hvp")
    g = grad(prog, argnums, limit) if g is None else g
    names = tangent_names([a.name for a in prog.args], argnums)
    tangents = tuple(SymArg(t, prog.args[i].shape, arg_symbols(SymArg(t, prog.args[i].shape, ())))
                     for t, i in zip(names, argnums))
    dot = dict(zip(_wrt(prog, argnums), [s for t in tangents for s in t.symbols]))
    emit = _Emitter(g.body)

    def along(e):  # the directional derivative of e: sum of d e/d s * (d s along v)
        terms = [emit(emit.times(dot[s], emit(local_partial(e, s)))) for s in sorted(e.free_symbols, key=str)
                 if dot.get(s, 0) != 0]
        return emit(sp.Add(*terms)) if terms else sp.S.Zero

    for t, e in g.body:
        d = along(e)
        if d != 0:
            dot[t] = d
    outputs = tuple(SymOutput(f"hvp_{o.name[2:]}", o.shape, tuple(along(e) for e in o.exprs))
                    for o in g.outputs)
    return SymProgram(prog.args + tangents, tuple(emit.body), outputs)


def nth(prog, n, argnum, limit):
    """n-th derivative of every output w.r.t. one scalar argument."""
    a = prog.args[argnum]
    if a.shape != ():
        raise ValueError(f"derivative(n) needs a scalar argument, but {a.name!r} has shape {a.shape}; "
                         "use .jacobian or .hessian for array arguments")
    if n < 0:
        raise ValueError(f"derivative order must be >= 0, got {n}")
    s = a.symbols[0]
    closed = prog.inlined(limit) if limit != 0 else None
    if closed is not None:
        return SymProgram(prog.args, (), split([sp.diff(e, s, n) for e in closed],
                                               [SymOutput(f"d{n}_{o.name}", o.shape, ()) for o in prog.outputs]))
    cur = prog
    for _ in range(n):
        body, rows = _reverse_rows(cur, cur.output_exprs(), [s])
        cur = SymProgram(prog.args, tuple(body), split([r[0] for r in rows], cur.outputs))
    return cur.with_outputs([SymOutput(f"d{n}_{o.name}", o.shape, o.exprs) for o in cur.outputs])
