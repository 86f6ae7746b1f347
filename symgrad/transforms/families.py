"""Families of nodes that one node over a loop variable stands for: the coefficients of a
linear form by an argument's entries, X[i, 0], X[i, 1], ... for w[0], w[1], ..., roll into
X[i, t] over a new variable t (hessian_sums.py), so that a Hessian's symbolic work does
not grow with the number of entries. Two coefficients belong to one family where they are
one expression whose reads differ only in their index's constant, each constant (and the
entry's position) moving by a fixed step from one member to the next."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import is_leaf, is_read, op_name
from .guards import guarded

WALK_MAX = 256  # nodes of a coefficient's expression compared; a larger one stays alone


@dataclass(frozen=True)
class Family:
    """Entries start + step*t (t < length) of argument ``arg`` (a position in argnums; ``terms``
    the loop variables of a read's index, () for entries by constant index), whose
    coefficients are ``rep`` with each varying read's index constant moved by its step, under
    the guard ``guard`` where they are select(guard, value, 0) (guards.guarded)."""
    arg: int
    start: int
    step: int
    length: int
    rep: int          # the first member's coefficient node (its value, beneath the guard)
    steps: tuple      # per varying read of rep (in walk order): the step of its constant
    rolled: object    # Families, which builds the node over a variable
    terms: tuple = ()
    guard: int = None

    def node(self, t, sub):
        """The member at loop variable ``t`` (None: the family has one member), the loops
        renamed by ``sub``."""
        v = self.rolled.build(self.rep, self.steps, t, sub)
        if self.guard is None:
            return v
        g = self.rolled.g
        return g.select(self.rolled.rename.node(self.guard, sub), v, g.const(0))

    def index(self, t, sub):
        """The affine index of the member at ``t`` (program.index_text), loops renamed."""
        return _renamed((self.start, tuple(sorted(self.terms + (((t, self.step),) if t is not None else ()),
                                                  key=repr))), sub)


class Renamer:
    """Fresh loop variables for the scatter terms of a sum's Hessian: one nest (the sum's
    loops renamed, then a variable per family of more than one member) per shape of term, so
    terms of one shape share a loop nest and no variable is bound by two (the sum itself may
    stay in the program)."""

    def __init__(self, g, first):
        self.g, self.next = g, first
        self._nests, self._nodes = {}, {}

    def fresh(self):
        self.next += 1
        return self.next - 1

    def nest(self, loops, la, lb):
        """(rows, ta, tb, sub) of terms of the sum over ``loops`` between families of ``la``
        and ``lb`` members: the renamed loops, the families' variables (None for one member)
        and {old variable: new}."""
        key = (loops, la, lb)
        if key not in self._nests:
            rows = tuple((self.fresh(), n) for _, n in loops)
            ta, tb = (self.fresh() if la > 1 else None), (self.fresh() if lb > 1 else None)
            self._nests[key] = (rows, ta, tb, {v: w for (v, _), (w, _) in zip(loops, rows)})
        return self._nests[key]

    def node(self, t, sub, moves=None):
        """Node ``t`` with the variables renamed by ``sub`` (and reads moved: rebuild)."""
        return rebuild(self.g, t, sub, moves, self._nodes)


def rebuild(g, t, sub, moves, memo):
    """Node ``t`` with loop variables renamed by ``sub`` and, where ``moves`` is given
    ({read node: (variable, step)}), those reads' indices moved by step * variable."""
    key = (tuple(sorted(sub.items())), tuple(sorted(moves.items())) if moves else ())
    done = memo.setdefault(key, {})
    stack = [t]
    while stack:
        i = stack[-1]
        if i in done:
            stack.pop()
            continue
        n = g.nodes[i]
        if not g.loop_vars(i) & set(sub) and not (moves and i in moves):
            done[i] = i
            stack.pop()
            continue
        if is_read(n):
            index = _renamed(n[3], sub)
            if moves and i in moves and moves[i][0] is not None:
                v, k = moves[i]
                index = (index[0], tuple(sorted(index[1] + ((v, k),), key=repr))) if k else index
            done[i] = g.node(op_name(n), n[1], n[2], index)
            stack.pop()
            continue
        todo = [o for o in _operands(n) if o not in done]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        done[i] = g.node(op_name(n), *[done[o] for o in n[1:]])
    return done[t]


def _operands(n):
    return () if is_leaf(n) else n[1:]


def _renamed(index, sub):
    c, terms = index
    out = []
    for t, k in terms:
        if isinstance(t, int):
            out.append((sub.get(t, t), k))
        else:
            out.append((("g", t[1], _renamed(t[2], sub)), k))
    return (c, tuple(sorted(out, key=repr)))


class Families:
    """The families of a linear form's coefficients, for the body of one sum (``bound``: its
    loop variables; its nodes renamed by ``rename``)."""

    def __init__(self, g, loops, rename):
        self.g, self.loops, self.rename = g, loops, rename
        self.bound = {v for v, _ in loops}
        self._sig = {}

    def signature(self, c):
        """(shape, constants, reads) of coefficient ``c``: its expression with the index
        constants of reads varying with the loop left out, those constants and reads in walk
        order; a node too large to compare is its own shape."""
        hit = self._sig.get(c)
        if hit is None:
            shape, consts, reads, seen = [], [], [], 0
            stack = [c]
            while stack:
                i = stack.pop()
                seen += 1
                if seen > WALK_MAX:
                    shape, consts, reads = [("alone", c)], [], []
                    break
                n = self.g.nodes[i]
                if not self.g.loop_vars(i) & self.bound:
                    shape.append(("at", i))
                elif is_read(n) and i in reads:  # one read twice: the same read in every member
                    shape.append(("again", reads.index(i)))
                elif is_read(n):
                    shape.append((op_name(n), n[1], n[2], n[3][1]))
                    consts.append(n[3][0])
                    reads.append(i)
                else:
                    shape.append((op_name(n), len(n)))
                    stack.extend(reversed(n[1:]))
            hit = self._sig[c] = (tuple(shape), tuple(consts), tuple(reads))
        return hit

    def of(self, J, where):
        """[Family] covering {argument entry: coefficient} ``J`` (``where``: leaf -> (arg,
        affine index of its entry)): members of one argument, one index form and one guard
        whose coefficients have one shape, their constants moving by fixed steps."""
        groups, out = {}, []
        for w, c in J.items():
            p, (j, terms) = where[w]
            found = guarded(self.g, c)
            guard, v = found if found is not None and found[1] is not None else (None, c)
            shape, consts, _ = self.signature(v)
            groups.setdefault((p, terms, guard, shape), []).append((j, consts, v))
        for (p, terms, guard, _), members in groups.items():
            members.sort()
            k = 0
            while k < len(members):
                j0, c0, rep = members[k]
                m = k + 1
                if m < len(members):
                    step = members[m][0] - j0
                    steps = tuple(b - a for a, b in zip(c0, members[m][1]))
                    while m < len(members) and members[m][0] - members[m - 1][0] == step and \
                            tuple(b - a for a, b in zip(members[m - 1][1], members[m][1])) == steps:
                        m += 1
                else:
                    step, steps = 1, tuple(0 for _ in c0)
                out.append(Family(p, j0, step if m - k > 1 else 1, m - k, rep, steps, self, terms, guard))
                k = m
        return out

    def build(self, rep, steps, t, sub):
        """Coefficient ``rep`` over the loops renamed by ``sub``, each varying read moved by
        its step * t."""
        reads = self.signature(rep)[2]
        moves = {r: (t, k) for r, k in zip(reads, steps)} if t is not None else {}
        return self.rename.node(rep, sub, moves)

