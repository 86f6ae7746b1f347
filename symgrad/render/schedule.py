"""Program -> schedule: the order, grouping and naming of a kernel's statements, as plain data.

A Schedule says which statements a kernel runs, in segments of bounded size (each its own
C function, so the C compiler's superlinear work stays cheap), which temporaries pass from
one segment to a later one through a scratch array, which result entries are numbers that
need no statement, and the C name of everything; for the in-process CPU kernel, which
segments are repeated work run as one loop over a table (Roll: _rolled_segments). Every
emitter (cpu.py, c99.py, cuda.py) prints the same schedule; none of this is text."""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from functools import cached_property

from ..errors import CompileError
from .c import lower

# Kernel-internal C names are "n", "i", "t<k>" and "sg_*"; user names are kept clear of them.
_C_WORDS = ("auto break case char const continue default do double else enum extern float for goto if int long "
            "register return short signed sizeof static struct switch typedef union unsigned void volatile while "
            "_Bool _Complex _Imaginary")
_C_RESERVED = set(_C_WORDS.split()) | {"n", "i", "restrict", "inline", "int64_t", "NAN", "INFINITY"}


@dataclass(frozen=True)
class Slot:
    """An argument or a result as the kernel sees it: a C name and a number of entries."""
    name: str
    size: int
    shape: tuple
    label: str  # its name in the Python function (for documentation)


@dataclass(frozen=True)
class Schedule:
    name: str        # the kernel's C name
    args: tuple      # of Slot
    results: tuple   # of Slot
    names: dict      # input symbol or temporary -> C name
    inputs: dict     # input symbol -> (argument index, entry)
    segments: tuple  # of tuples of (target, expr): target a temporary, or (result index, entry)
    home: dict       # temporary -> index of the segment that computes it
    slots: dict      # temporary read by a later segment -> its place in the scratch array
    fixed: tuple     # per result: {entry: number} of entries with no statement (see schedule())
    ops: int         # operations per point
    calls: int       # of them, calls of elementary functions
    rolled: dict = None  # segment index -> Roll, for the segments that are one loop (_roll)

    @property
    def scratch(self):
        return len(self.slots)

    @cached_property
    def order(self):
        """Place of each input and temporary in the program (the order segments load them)."""
        return {t: k for k, t in enumerate(self.names)}


def cname(name, taken, prefix=""):
    """A fresh C identifier for ``name`` (an argument or result), clear of C's words and of
    the kernel's own names."""
    base = prefix + re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not base or base[0].isdigit():
        base = "_" + base
    if base.startswith("sg_"):
        base = "u" + base
    while base in _C_RESERVED or keyword.iskeyword(base) or re.fullmatch(r"t\d+", base) or base in taken:
        base += "_"
    taken.add(base)
    return base


@dataclass(frozen=True)
class Roll:
    """A segment that is one loop over ``len(ext)`` members of one form (_rolled_segments):
    each member is ``size`` consecutive statements of the segment (the first member's print
    the loop body), reading ``ext[m]`` (the member's operands computed elsewhere: inputs or
    earlier temporaries, in the order the body first reads them); ``where`` says for each
    operand position whether it is an argument (its index) or the scratch (None)."""
    size: int
    ext: tuple
    where: tuple


def schedule(program, name, options, fixed_group=0, roll=False) -> Schedule:
    """The schedule of an optimised Program (lowered here: render/c.py). With ``fixed_group`` k > 0, a result's entries
    are taken k at a time and a group of numbers only (the zeros of a sparse Hessian) gets no
    statement: the emitter writes it from a table (the CPU kernel, whose 4x4 transposes
    move entries in groups of four)."""
    prog = lower(program, options)
    for o in prog.outputs:
        if o.size == 0:
            raise CompileError(f"result {o.name!r} has no entries (shape {o.shape}); return at least "
                               "one number per result")
    taken = set()
    args = tuple(Slot(cname(a.name, taken, "a_"), a.size, a.shape, a.name) for a in prog.args)
    results = tuple(Slot(cname(o.name, taken), o.size, o.shape, o.name) for o in prog.outputs)
    fixed = tuple(_fixed(o, fixed_group) for o in prog.outputs)
    stmts = [(t, e) for t, e in prog.body]
    stmts += [((r, k), e) for r, o in enumerate(prog.outputs) for k, e in enumerate(o.exprs) if k not in fixed[r]]
    inputs_of = {s: a for a, arg in enumerate(prog.args) for s in arg.symbols}
    rolled = {}
    if roll and options.roll_min and prog.count_ops() > options.large_kernel_ops:
        segments, rolled = _rolled_segments(stmts, {t for t, _ in prog.body}, inputs_of, options)
    else:
        segments = _segments(stmts, {t for t, _ in prog.body}, options.max_segment)
    home = {t: i for i, seg in enumerate(segments) for t, _ in seg if not isinstance(t, tuple)}
    slots = {}
    for i, seg in enumerate(segments):
        for _, e in seg:
            for s in sorted(e.free_symbols, key=str):
                if home.get(s, i) < i and s not in slots:
                    slots[s] = len(slots)
    names, inputs, seen = {}, {}, set()
    for a, arg in enumerate(prog.args):
        for k, s in enumerate(arg.symbols):
            c = "sg_v_" + re.sub(r"[^0-9A-Za-z_]", "_", s.name)
            names[s] = c if c not in seen else f"sg_in{len(inputs)}"
            seen.add(names[s])
            inputs[s] = (a, k)
    names.update({t: f"t{k}" for k, (t, _) in enumerate(prog.body)})
    calls = prog.count_calls()
    return Schedule(name, args, results, names, inputs, tuple(tuple(s) for s in segments), home, slots, fixed,
                    prog.count_ops(), calls, rolled)


def _fixed(out, group):
    """{entry: number} of the groups of ``group`` entries that are all numbers."""
    if not group or out.size == 1:
        return {}
    fixed = {}
    for a in range(0, out.size, group):
        part = out.exprs[a:a + group]
        if all(e.is_Number for e in part):
            fixed.update({a + j: e for j, e in enumerate(part)})
    return fixed


def _segments(stmts, temps, limit):
    """Statements in segments whose size, counting the earlier temporaries each must load,
    stays under ``limit``."""
    segs, current, here, loads = [], [], set(), set()
    for t, e in stmts:
        new = {s for s in e.free_symbols if s in temps and s not in here and s not in loads}
        if current and len(current) + len(loads) + len(new) >= limit:
            segs.append(current)
            current, here, loads = [], set(), set()
            new = {s for s in e.free_symbols if s in temps}
        current.append((t, e))
        here.add(t)
        loads |= new
    segs.append(current)
    return segs


def _shape(low, i, top, leaves, seen):
    """The printed form of node ``i`` with its operands abstracted: a nested tuple of ops and
    constants, operand positions numbered by first reading (``leaves`` collects them), as
    Printer._node walks it."""
    n = low.nodes[i]
    op = n[0]
    if op == "const":
        return n
    if op == "arg" or (not top and not low.inline[i]):
        ref = low.refs[n] if op == "arg" else low.ref_of[i]
        k = seen.get(ref)
        if k is None:
            k = seen[ref] = len(leaves)
            leaves.append(ref)
        return k
    return (op, *[_shape(low, j, False, leaves, seen) for j in n[1:]])


class _Forest:
    """Union-find over statement indices."""

    def __init__(self):
        self.up = {}

    def find(self, k):
        root = k
        while self.up.setdefault(root, root) != root:
            root = self.up[root]
        while self.up[k] != root:
            self.up[k], k = root, self.up[k]
        return root

    def union(self, a, b):
        self.up[self.find(a)] = self.find(b)


def _rolled_segments(stmts, temps, inputs_of, options):
    """Segments of a large program in which repeated work is one loop over a table of operands,
    so that the C compiler's work follows the program's distinct forms, not its length (a sum
    over pairs of atoms written as Python loops is traced into one copy per pair).

    A statement's form is its printed expression with its operands abstracted. Statements of
    a form that occurs at least options.roll_min times join, through the temporaries they read
    of each other, into members (the forward and reverse work of one pair of atoms: _members);
    at least roll_min members of one form (the same statements, reading each other alike,
    storing the same ones) run as one loop, each member in registers. The other statements of
    those forms roll one by one where at least options.roll_alone_min of them share a form and
    a depth in the dependency graph (one depth: none reads another); alone, a statement loads
    its operands and stores its result, which costs more time per point than the straight
    code (a 10x10 solve's eliminations: 1.7x), so only long runs of it pay. Every statement
    computes what it computed before, from the same operands: no result changes by a bit,
    only the order of independent work. The remaining statements keep their order, each
    loop placed before its first reader (_order), in segments as _segments makes them.
    Returns (segments, {segment index: Roll})."""
    n = len(stmts)
    depth, keys, leaf_of = {}, [], []
    dep = [0] * n
    for k, (t, e) in enumerate(stmts):
        leaves = []
        shape = _shape(e.low, e.node, e.define, leaves, {})
        dep[k] = 1 + max((depth[s] for s in leaves if s in depth), default=0)
        if not isinstance(t, tuple):
            depth[t] = dep[k]
        target = ("t",) if not isinstance(t, tuple) else ("r", t[0])
        keys.append((shape, target, tuple(inputs_of.get(s) for s in leaves)))
        leaf_of.append(tuple(leaves))
    count = {}
    for key in keys:
        count[key] = count.get(key, 0) + 1
    maker = {t: k for k, (t, _) in enumerate(stmts) if not isinstance(t, tuple)}
    common = [count[keys[k]] >= options.roll_min for k in range(n)]
    if not any(common):
        return _segments(stmts, temps, options.max_segment), {}
    readers = [[] for _ in range(n)]
    for k in range(n):
        for s in leaf_of[k]:
            if s in maker:
                readers[maker[s]].append(k)

    def alone(ks):
        """Statements ``ks`` as loops of one statement a member, by form and depth."""
        by = {}
        for k in ks:
            by.setdefault((keys[k], dep[k]), []).append([k])
        return [m for m in by.values() if len(m) >= options.roll_alone_min]

    groups, rest = _members(n, keys, leaf_of, maker, readers, stmts, common, options.roll_min)
    groups += alone(rest)
    while True:
        order = _order(n, groups, leaf_of, maker)
        if isinstance(order, list):
            break
        broken = groups.pop(order)  # a loop that would need itself through others
        if len(broken[0]) > 1:  # whole members: their statements roll one by one instead
            groups += alone(k for m in broken for k in m)
    segments, rolled, run = [], {}, []
    for it in order + [None]:
        if it is not None and it[0] == "s":
            run.append(stmts[it[1]])
            continue
        if run:
            segments += _segments(run, temps, options.max_segment)
            run = []
        if it is not None:
            members = groups[it[1]]
            ext = tuple(_outside(m, leaf_of, maker) for m in members)
            rolled[len(segments)] = Roll(len(members[0]), ext, tuple(inputs_of.get(s) for s in ext[0]))
            segments.append([stmts[k] for m in members for k in m])
    return segments, rolled


def _members(n, keys, leaf_of, maker, readers, stmts, common, least):
    """The members of the loops that roll whole members: common statements (``common``) joined
    through the temporaries they read of each other, along the pairs of forms where every
    statement of the reading form reads one of the other form and every one of the other is
    read so (a pair's work; a sum over many pairs' results reads some of them: it joins
    nothing). A statement that reads another member of its own class leaves the members (a
    running sum: its links are read one by the next). Returns (lists of members, one list per
    loop; the common statements left over)."""
    out = set()
    for attempt in range(_ATTEMPTS):
        last = attempt == _ATTEMPTS - 1
        pairs = {}
        for k in range(n):
            if common[k] and k not in out:
                for s in leaf_of[k]:
                    m = maker.get(s)
                    if m is not None and common[m] and m not in out:
                        r, w = pairs.setdefault((keys[k], keys[m]), (set(), set()))
                        r.add(k)
                        w.add(m)
        count = {}
        for k in range(n):
            if common[k] and k not in out:
                count[keys[k]] = count.get(keys[k], 0) + 1
        forest = _Forest()
        for (fr, fm), (r, w) in pairs.items():
            if len(r) == count[fr] and len(w) == count[fm]:
                for k in r:
                    for s in leaf_of[k]:
                        m = maker.get(s)
                        if m in w:
                            forest.union(k, m)
        parts = {}
        for k in range(n):
            if common[k] and k not in out:
                parts.setdefault(forest.find(k), []).append(k)
        classes = {}
        for part in parts.values():
            classes.setdefault(_form(part, keys, leaf_of, maker, readers, stmts), []).append(part)
        groups, rest, cross = [], [], set()
        for members in classes.values():
            if len(members) < least or len(members[0]) == 1:
                rest += [k for m in members for k in m]
                continue
            owner = {k: j for j, m in enumerate(members) for k in m}
            bad = {k for j, m in enumerate(members) for k in m for s in leaf_of[k]
                   if owner.get(maker.get(s), j) != j}
            if not bad:
                groups.append(members)
            elif last:  # still members reading each other: their statements go on alone
                rest += [k for m in members for k in m]
            else:
                cross |= bad
        if not cross:
            return groups, rest + sorted(out)
        out |= cross
    raise AssertionError("unreachable: the last attempt leaves no statement out")


_ATTEMPTS = 4  # rounds of _members (each takes out the statements that read other members)


def _order(n, groups, leaf_of, maker):
    """The statements as they were, each loop placed (with what it needs, depth first) just
    before the first statement that needs it: a list of ("s", statement) and ("g", loop); or,
    where a loop would need itself through others, that loop's index."""
    group = {k: g for g, members in enumerate(groups) for m in members for k in m}
    item = lambda k: ("g", group[k]) if k in group else ("s", k)  # noqa: E731

    def needs(it):
        ks = [k for m in groups[it[1]] for k in m] if it[0] == "g" else (it[1],)
        return [item(maker[s]) for k in ks for s in leaf_of[k] if s in maker and item(maker[s]) != it]

    done, active, order = set(), set(), []
    for k in range(n):
        start = item(k)
        if start in done:
            continue
        stack = [(start, iter(needs(start)))]
        active.add(start)
        while stack:
            it, deps = stack[-1]
            for d in deps:
                if d in active:
                    return d[1] if d[0] == "g" else it[1] if it[0] == "g" else next(
                        x[1] for x, _ in reversed(stack) if x[0] == "g")
                if d not in done:
                    active.add(d)
                    stack.append((d, iter(needs(d))))
                    break
            else:
                stack.pop()
                active.discard(it)
                done.add(it)
                order.append(it)
    return order


def _outside(member, leaf_of, maker):
    """The operands a member reads from outside it, in the order its statements first read them."""
    inside, seen = set(member), {}
    for k in member:
        for s in leaf_of[k]:
            if s not in seen and maker.get(s) not in inside:
                seen[s] = len(seen)
    return tuple(seen)


def _form(member, keys, leaf_of, maker, readers, stmts):
    """What members that roll together share: each statement's form, where each of its operands
    comes from (a statement of the member, by place, or the k-th operand from outside, by
    first reading) and whether a statement outside reads it."""
    place = {k: p for p, k in enumerate(member)}
    outside, form = {}, []
    for k in member:
        srcs = []
        for s in leaf_of[k]:
            m = maker.get(s)
            if m in place:
                srcs.append(("in", place[m]))
            else:
                srcs.append(("out", outside.setdefault(s, len(outside))))
        read_out = isinstance(stmts[k][0], tuple) or any(r not in place for r in readers[k])
        form.append((keys[k], tuple(srcs), read_out))
    return tuple(form)


def segment_lines(sched, i, printer, stride=1, indent="    "):
    """The C statements of segment ``i`` of a schedule: every input and earlier temporary it
    reads is loaded once, just before the first statement that reads it (loaded all up front,
    thousands of loads live across the whole segment made gcc's combiner quadratic: 24 s for
    one unit of a 2000-state right-hand side, 0.6 s loaded where used); each temporary is a
    ``const`` local (of the target's arithmetic type, which can be wider than the
    arguments'), stored to the scratch array ``sg_t`` too if a later segment reads it. Entry
    k of an argument or result, and slot k of the scratch, sit at [k*stride] (stride: the
    SIMD lanes of a CPU block, or 1). Arguments and results never overlap (restrict)."""
    T, seg = printer.target.math, sched.segments[i]
    order = sched.order
    loaded, lines = set(), []
    for t, e in seg:
        reads = [s for s in e.free_symbols if s not in loaded and (s in sched.inputs or sched.home.get(s, i) < i)]
        for s in sorted(reads, key=order.get):
            loaded.add(s)
            if s in sched.inputs:
                a, k = sched.inputs[s]
                lines.append(f"{indent}const {T} {sched.names[s]} = {sched.args[a].name}[{k * stride}];")
            else:
                lines.append(f"{indent}const {T} {sched.names[s]} = sg_t[{sched.slots[s] * stride}];")
        if isinstance(t, tuple):
            r, k = t
            lines.append(f"{indent}{sched.results[r].name}[{k * stride}] = {printer.doprint(e)};")
        else:
            lines.append(f"{indent}const {T} {sched.names[t]} = {printer.doprint(e)};")
            if t in sched.slots:
                lines.append(f"{indent}sg_t[{sched.slots[t] * stride}] = {sched.names[t]};")
    return lines
