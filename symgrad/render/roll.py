"""Repeated work of a large program as loops (runs): the members of each loop, the order
they run in, and what each reads from outside it, as plain data for schedule.py. Only the
in-process CPU kernel rolls (cpu.py prints a Roll as a loop over a table of operands)."""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from ..ir.cycles import cycles


@dataclass(frozen=True)
class Roll:
    """A segment that is one loop over ``len(ext)`` members of one form (runs): each member
    is ``size`` consecutive statements of the segment (the first member's print the loop
    body), reading ``ext[m]`` (the member's operands computed elsewhere: inputs, earlier
    temporaries or an earlier member's, in the order the body first reads them); ``where``
    says for each operand position whether it is an argument (its index) or the scratch
    (None)."""
    size: int
    ext: tuple
    where: tuple


class _Forest:
    """Union-find over statement indices 0..n-1, whose sets grow to ``cap`` statements at most."""

    def __init__(self, n, cap):
        self.up, self.size, self.cap = list(range(n)), [1] * n, cap

    def find(self, k):
        up = self.up
        root = k
        while up[root] != root:
            root = up[root]
        while up[k] != root:
            up[k], k = root, up[k]
        return root

    def union(self, a, b):
        up = self.up
        while up[a] != a:  # the roots, halving the paths to them
            up[a] = up[up[a]]
            a = up[a]
        while up[b] != b:
            up[b] = up[up[b]]
            b = up[b]
        if a != b:
            size = self.size[a] + self.size[b]
            if size <= self.cap:
                up[a], self.size[b] = b, size


def runs(stmts, inputs_of, options):
    """A large program's statements as runs in which repeated work is one loop over a table of
    operands, so that the C compiler's work follows the program's distinct forms, not its
    length (a sum over pairs of atoms written as Python loops is traced into one copy per pair).

    A statement's form is its printed expression with its operands abstracted (Expr.form:
    render/c.py numbers them as it lowers the program). Statements of
    a form that occurs at least options.roll_min times join, through the temporaries they read
    of each other, into members (the forward and reverse work of one pair of atoms, with its
    links of the running sums it adds to: _members); at least roll_min consecutive members of
    one form (the same statements, reading each other alike, storing the same ones) run as one
    loop, each member in registers, each reading what earlier members stored (a running sum
    passes from one to the next through the scratch). The other statements of those forms roll
    one by one where at least options.roll_alone_min of them share a form and a depth in the
    dependency graph (one depth: none reads another); alone, a statement loads its operands and
    stores its result, which costs more time per point than the straight code (a 10x10 solve's
    eliminations: 1.7x), so only long runs of it pay. Every statement computes what it computed
    before, from the same operands: no result changes by a bit, only the order of independent
    work (_order). Returns [(Roll or None, statements), ...]: a loop's members' statements, or
    statements that stay straight."""
    n = len(stmts)
    if stmts and stmts[0][1].form is None:  # (lowered without links: every statement would be one key)
        raise ValueError("runs needs a program lowered with links (render.c.lower(..., links=True))")
    depth, leaf_of, src_of, results, dep = {}, [None] * n, [None] * n, [False] * n, [0] * n
    ids, keys, count = {}, [0] * n, {}  # each (form, target, inputs) as a small number
    maker = {t: k for k, (t, _) in enumerate(stmts) if not isinstance(t, tuple)}
    depth_of, input_of, made_by, temp = depth.get, inputs_of.get, maker.get, ("t",)
    for k, (t, e) in enumerate(stmts):
        leaves = e.free_symbols
        d = 0
        for s in leaves:
            x = depth_of(s)
            if x is not None and x > d:
                d = x
        dep[k] = d = d + 1
        if isinstance(t, tuple):
            target = ("r", t[0])
            results[k] = True
        else:
            depth[t], target = d, temp
        key = (e.form, target, tuple(map(input_of, leaves)))
        key = keys[k] = ids.setdefault(key, len(ids))
        count[key] = count.get(key, 0) + 1
        leaf_of[k] = leaves
        src_of[k] = tuple([made_by(s, -1) for s in leaves])  # the statement each operand is, or -1
    common = [count[key] >= options.roll_min for key in keys]
    if not any(common):
        return [(None, list(stmts))]
    readers = [[] for _ in range(n)]
    for k in range(n):
        for m in src_of[k]:
            if m >= 0:
                readers[m].append(k)

    def least(member):
        """The fewest members of a loop that pay: roll_min of whole members, or of copies (a
        result that is a temporary or an input: a running sum's last link), which cost a load
        and a store rolled or not; roll_alone_min of other statements alone."""
        return options.roll_min if len(member) > 1 or stmts[member[0]][1].form == -1 else options.roll_alone_min

    def alone(ks):
        """Statements ``ks`` as loops of one statement a member, by form and depth (results,
        which no statement reads, by form alone)."""
        by = {}
        for k in ks:
            by.setdefault((keys[k], 0 if results[k] else dep[k]), []).append([k])
        return [m for m in by.values() if len(m) >= least(m[0])]

    groups, rest = _members(n, keys, results, leaf_of, src_of, readers, common, options.roll_min)
    groups += alone(rest)
    for attempt in itertools.count():
        order, caught = _order(n, groups, src_of)
        if order is not None:
            break
        # loops that would need themselves through others: of each cycle of a few loops the
        # first is broken (which may free the others), of a larger one every loop, as of every
        # cycle after _BREAK_PASSES passes (a pass costs a whole scheduling; a large Hessian
        # caught hundreds of loops in cycles: one a pass took a minute, to break no more)
        cut = set()
        for c in caught:
            cut |= c if attempt >= _BREAK_PASSES or len(c) > _BREAK_ONE_MAX else {min(c)}
        broken = [groups[g] for g in sorted(cut)]
        groups = [m for g, m in enumerate(groups) if g not in cut]
        for members in broken:
            if len(members[0]) > 1:  # whole members: their statements roll one by one instead
                groups += alone(k for m in members for k in m)
    out = []
    for g, items in _runs_of(order):
        members = [groups[g][j] for j in items] if g is not None else None
        if members is None or len(members) < least(members[0]):
            part = [stmts[k] for k in items] if members is None else [stmts[k] for m in members for k in m]
            if out and out[-1][0] is None:
                out[-1][1].extend(part)
            else:
                out.append((None, part))
            continue
        ext = tuple(_outside(m, leaf_of, src_of) for m in members)
        out.append((Roll(len(members[0]), ext, tuple(inputs_of.get(s) for s in ext[0])),
                    [stmts[k] for m in members for k in m]))
    return out


def _runs_of(order):
    """The placed items as runs: (loop index, [member, ...]) for consecutive members of one
    loop, (None, [statement, ...]) for consecutive statements."""
    out = []
    for it in order:
        g = it[1] if it[0] == "m" else None
        x = it[2] if it[0] == "m" else it[1]
        if out and out[-1][0] == g:
            out[-1][1].append(x)
        else:
            out.append((g, [x]))
    return out


def _members(n, keys, results, leaf_of, src_of, readers, common, least):
    """The members of the loops that roll whole members: common statements (``common``) joined
    through the temporaries they read of each other, along the pairs of forms where every
    statement of the reading form reads one of the other form and every one of the other is
    read so (a pair's work; a sum over many pairs' results reads some of them: it joins
    nothing); and each link of a running sum (a statement that alone reads each statement of
    another form it reads) with the one value it adds, of the form it covers best (not the
    link before it). No member grows past 1/``least`` of the common statements. Members of
    one class run in an order in which each reads only earlier ones (_ranked: a running sum's
    links, one member after the other); where they read each other round a cycle, the
    statements that read another member leave the members. Returns (lists of members, one
    list per loop; the common statements left over)."""
    out = set()
    for attempt in range(_ATTEMPTS):
        last = attempt == _ATTEMPTS - 1
        live = [common[k] and k not in out for k in range(n)]
        pairs, count = {}, {}
        for k in range(n):
            if live[k]:
                fk = keys[k]
                count[fk] = count.get(fk, 0) + 1
                for m in src_of[k]:
                    if m >= 0 and live[m]:
                        pair = pairs.get((fk, keys[m]))
                        if pair is None:
                            pair = pairs[fk, keys[m]] = (set(), {})
                        pair[0].add(k)
                        ks = pair[1].get(m)
                        if ks is None:
                            pair[1][m] = [k]
                        elif ks[-1] != k:
                            ks.append(k)
        forest, best = _Forest(n, max(2, sum(common) // least)), {}
        for (fr, fm), (r, w) in pairs.items():
            if len(r) == count[fr] and len(w) == count[fm]:  # a pair's work: every one read alike
                for k in r:
                    for m in src_of[k]:
                        if m in w:
                            forest.union(k, m)
            elif fr != fm and not results[next(iter(r))] and all(len(ks) == 1 for ks in w.values()):
                share = len(w) / count[fm]  # a running sum's links: each joins the value of
                for k in r:                 # its own member it reads (the best covered form's)
                    ms = [m for m in src_of[k] if m in w]
                    if len(ms) == 1 and share > best.get(k, (0,))[0]:
                        best[k] = (share, ms[0])
        for k, (_, m) in best.items():
            forest.union(k, m)
        parts = {}
        for k in range(n):
            if live[k]:
                parts.setdefault(forest.find(k), []).append(k)
        classes = {}
        for part in parts.values():
            classes.setdefault(_form(part, keys, leaf_of, src_of, readers, results), []).append(part)
        groups, rest, cross = [], [], set()
        for members in classes.values():
            if len(members) < least or len(members[0]) == 1:
                rest += [k for m in members for k in m]
                continue
            ranked = _ranked(members, src_of)
            if ranked is not None:
                groups.append(ranked)
                continue
            owner = {k: j for j, m in enumerate(members) for k in m}
            bad = {k for j, m in enumerate(members) for k in m for s in src_of[k] if owner.get(s, j) != j}
            if last:  # still members reading each other: their statements go on alone
                rest += [k for m in members for k in m]
            else:
                cross |= bad
        if not cross:
            return groups, rest + sorted(out)
        out |= cross
    raise AssertionError("unreachable: the last attempt leaves no statement out")


def _ranked(members, src_of):
    """``members`` in an order in which each reads only members before it (a running sum
    through a loop's iterations: each link reads the one before), the earliest first where
    free; None where they read each other round a cycle."""
    owner = {k: j for j, m in enumerate(members) for k in m}
    needs = [set() for _ in members]
    for j, m in enumerate(members):
        for k in m:
            for s in src_of[k]:
                o = owner.get(s, j)
                if o != j:
                    needs[j].add(o)
    if not any(needs):
        return members
    readers = [[] for _ in members]
    for j, ns in enumerate(needs):
        for o in ns:
            readers[o].append(j)
    waiting = [len(ns) for ns in needs]
    ready = [j for j, w in enumerate(waiting) if not w]
    heapq.heapify(ready)
    out = []
    while ready:
        j = heapq.heappop(ready)
        out.append(members[j])
        for r in readers[j]:
            waiting[r] -= 1
            if not waiting[r]:
                heapq.heappush(ready, r)
    return out if len(out) == len(members) else None


_ATTEMPTS = 4  # rounds of _members (each takes out the statements that read other members)
_BREAK_PASSES = 8  # passes of runs that break one loop of each cycle; then all of them
_BREAK_ONE_MAX = 16  # loops a cycle may hold for runs to break one of them only (lj's Hessian: 3)


def _order(n, groups, src_of):
    """The statements in an order that respects what each reads, with the members of each loop
    in their order (_ranked) in as few runs as can be (_runs_of: each run is one loop):
    a list scheduler that continues the current run while its next member is ready, else
    places the ready statements that loops need, else starts the run of the loop whose next
    member comes first in the program, and leaves the statements no loop needs (the results)
    for last. Returns (a list of ("s", statement) and ("m", loop, member), None); or, where
    members would need each other round a cycle, (None, the loops caught in each cycle: _cyclic)."""
    where = {k: (g, j) for g, members in enumerate(groups) for j, m in enumerate(members) for k in m}
    items = [("s", k) for k in range(n) if k not in where] + \
        [("m", g, j) for g, members in enumerate(groups) for j in range(len(members))]

    def stmts_of(it):
        return groups[it[1]][it[2]] if it[0] == "m" else (it[1],)
    pos = {it: min(stmts_of(it)) for it in items}
    needs = {}
    for it in items:
        ds = {("s", m) if w is None else ("m", *w)
              for k in stmts_of(it) for m in src_of[k] if m >= 0 for w in (where.get(m),)}
        ds.discard(it)
        if it[0] == "m" and it[2]:
            ds.add(("m", it[1], it[2] - 1))  # a loop's members in their order
        needs[it] = ds
    readers = {it: [] for it in items}
    for it, ds in needs.items():
        for d in ds:
            readers[d].append(it)
    feeds, stack = set(), [it for it in items if it[0] == "m"]  # what the loops need, through anything
    while stack:
        for d in needs[stack.pop()]:
            if d not in feeds:
                feeds.add(d)
                stack.append(d)
    waiting = {it: len(ds) for it, ds in needs.items()}
    feed_q, sink_q, start_q, next_ready = [], [], [], set()

    def ready(it):
        if it[0] == "m":
            next_ready.add(it)
            heapq.heappush(start_q, (pos[it], it))
        else:
            heapq.heappush(feed_q if it in feeds else sink_q, (pos[it], it))
    for it in items:
        if not waiting[it]:
            ready(it)
    order, current = [], None
    while True:
        nxt = ("m", current[1], current[2] + 1) if current is not None else None
        if nxt in next_ready:
            it = nxt
        elif feed_q:
            it = heapq.heappop(feed_q)[1]
        else:
            while start_q and start_q[0][1] not in next_ready:
                heapq.heappop(start_q)
            if start_q:
                it = heapq.heappop(start_q)[1]
            elif sink_q:
                it = heapq.heappop(sink_q)[1]
            else:
                break
        next_ready.discard(it)
        if it[0] == "m":
            current = it
        order.append(it)
        for r in readers[it]:
            waiting[r] -= 1
            if not waiting[r]:
                ready(r)
    if len(order) < len(items):  # cycles among what is still waiting: the loops caught in them
        return None, _cyclic({it for it in items if waiting[it]}, needs)
    return order, None


def _cyclic(left, needs):
    """The loops with a member on a cycle of ``needs`` among the items ``left``: a set of
    loops for each strongly connected component that has a cycle."""
    out = [{w[1] for w in comp if w[0] == "m"} for comp in cycles(left, lambda v: [d for d in needs[v] if d in left])]
    out = [loops for loops in out if loops]
    assert out, "a stalled schedule has a cycle"
    return out


def _outside(member, leaf_of, src_of):
    """The operands a member reads from outside it, in the order its statements first read them."""
    inside, seen = set(member), {}
    for k in member:
        for s, m in zip(leaf_of[k], src_of[k]):
            if m not in inside and s not in seen:
                seen[s] = len(seen)
    return tuple(seen)


def _form(member, keys, leaf_of, src_of, readers, results):
    """What members that roll together share: each statement's form, where each of its operands
    comes from (a statement of the member, by place p, or the k-th operand from outside, by
    first reading, as len(member) + k) and whether it is a result or a statement outside reads it."""
    place = {k: p for p, k in enumerate(member)}
    at, inside, outside, form, size = place.get, place.__contains__, {}, [], len(member)
    for k in member:
        srcs = []
        for s, m in zip(leaf_of[k], src_of[k]):
            p = at(m)
            srcs.append(p if p is not None else size + outside.setdefault(s, len(outside)))
        form.append((keys[k], tuple(srcs), results[k] or not all(map(inside, readers[k]))))
    return tuple(form)
