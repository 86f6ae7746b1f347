"""Products by a select with a 0 branch, taken inside it: an adjoint through np.where or a
step's 0/1 times a partial. select(C, v, 0) * p is select(C, v * p, 0), so the branch not
taken stays 0 even where the other factor is NaN or inf there: d/dx where(x > 0, sqrt(x), 0)
at x = -1 is 0, however many times it is differentiated (derive.py's sweeps multiply here)."""
from __future__ import annotations

from ..ir.nodes import is_additive, is_junction, is_neg, is_negation, is_select


def _zero_select(g, i):
    """(condition, branch k holding a value, that value) if node ``i`` is a select whose
    other branch is 0, else None."""
    if i is None:
        return None
    n = g.nodes[i]
    if is_select(n):
        if g.is_zero(n[3]):
            return n[1], 0, n[2]
        if g.is_zero(n[2]):
            return n[1], 1, n[3]
    return None


def guarded(g, x):
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
        deps = [z[2]] if z is not None else list(n[1:]) if is_neg(n) or is_additive(n) else []
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
        elif is_neg(n) and memo[n[1]] is not None:
            memo[i] = (memo[n[1]][0], g.neg(memo[n[1]][1]))
        elif is_additive(n) and memo[n[1]] is not None and memo[n[2]] is not None:
            c1, c2 = memo[n[1]][0], memo[n[2]][0]
            memo[i] = (c1 if c1 == c2 else g.node("or", c1, c2), i)
        else:
            memo[i] = None
    return memo[x]


def _within(g, x, c, k):
    """``x`` where condition ``c`` takes branch k: a select of the same condition is its branch."""
    n = g.nodes[x]
    while is_select(n) and n[1] == c:
        x = n[2 + k]
        n = g.nodes[x]
    return x


def _guard(g, c, v):
    """select(c, v, 0), written select(b, 0, v) where c is not(b)."""
    n = g.nodes[c]
    return g.select(n[1], None, v) if is_negation(n) else g.select(c, v, None)


def times(g, a, p):
    """a * p, a product by a select with a 0 branch taken inside it (see the module's note):
    select(C, v, 0) * p is select(C, v * p, 0), C the conjunction of the conditions of nested
    such selects (guarded), so each product costs O(1) nodes and no NaN of a branch not taken,
    however deep, reaches the result."""
    zeros, ones = g.zeros, g.ones
    if a is None or p is None or a in zeros or p in zeros:
        return None
    if a in ones:
        return p
    if p in ones:
        return a
    data = [x for x in (a, p) if g.data_only(x)] if g.prog.data else ()
    if data:  # a number of the data alone is a constant of the trace element by element, where
        c = g.node("ne", data[0], g.const(0))  # a 0 takes the term away: inf * 0 is no NaN there
        if len(data) > 1:
            c = g.node("and", c, g.node("ne", data[1], g.const(0)))
        return _guard(g, c, _times(g, a, p))
    return _times(g, a, p)


def _times(g, a, p):
    if not g.selects:  # no select anywhere: neither factor is one
        return g.mul(a, p)
    ga, gp = guarded(g, a), guarded(g, p)
    if ga is None and gp is None:
        return g.mul(a, p)
    if ga is not None and gp is not None:
        c = ga[0] if ga[0] == gp[0] else g.node("and", ga[0], gp[0])
        return _guard(g, c, g.mul(ga[1], gp[1]))
    (c, v), y = (ga, p) if ga is not None else (gp, a)
    n = g.nodes[c]
    if not is_junction(n):  # y where c holds: a select of the same condition is its branch
        y = _within(g, y, n[1], 1) if is_negation(n) else _within(g, y, c, 0)
    return _guard(g, c, g.mul(v, y))
