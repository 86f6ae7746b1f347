"""Program -> schedule: the order, grouping and naming of a kernel's statements, as plain data.

A Schedule says which statements a kernel runs, in segments of bounded size (each its own
C function, so the C compiler's superlinear work stays cheap), which temporaries pass from
one segment to a later one through a scratch array, which result entries are numbers that
need no statement, and the C name of everything; for the in-process CPU kernel, which
segments are repeated work run as one loop over a table (Roll: roll.py). Every
emitter (cpu.py, c99.py, cuda.py) prints the same schedule; none of this is text."""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from functools import cached_property

from ..errors import CompileError
from ..ir.nodes import is_const
from .c import lower
from .roll import Roll, runs  # noqa: F401  (Roll: the type of Schedule.rolled's values)

# Kernel-internal C names are "n", "i", "t<k>" and "sg_*"; user names are kept clear of them.
_C_WORDS = ("auto break case char const continue default do double else enum extern float for goto if int long "
            "register return short signed sizeof static struct switch typedef union unsigned void volatile while "
            "_Bool _Complex _Imaginary")
_C_RESERVED = set(_C_WORDS.split()) | {"n", "i", "restrict", "inline", "int64_t", "NAN", "INFINITY"}
_NOT_C = re.compile(r"[^0-9A-Za-z_]")
_NOT_C_ASCII = {c: "_" for c in range(128) if _NOT_C.match(chr(c))}  # a str.translate table


def _c_chars(text):
    """``text`` with each character an identifier in C cannot hold as _."""
    return text.translate(_NOT_C_ASCII) if text.isascii() else _NOT_C.sub("_", text)


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
    slots: dict      # temporary read by a later segment (or loop member) -> its place in the scratch
                     # array (a running sum's links share one)
    fixed: tuple     # per result: {entry: number} of entries with no statement (see schedule())
    ops: int         # operations per point
    calls: int       # of them, calls of elementary functions
    rolled: dict = None  # segment index -> Roll, for the segments that are one loop (roll.py)

    @property
    def scratch(self):
        return max(self.slots.values(), default=-1) + 1

    @cached_property
    def order(self):
        """Place of each input and temporary in the program (the order segments load them)."""
        return {t: k for k, t in enumerate(self.names)}


def cname(name, taken, prefix=""):
    """A fresh C identifier for ``name`` (an argument or result), clear of C's words and of
    the kernel's own names."""
    base = prefix + _c_chars(name)
    if not base or base[0].isdigit():
        base = "_" + base
    if base.startswith("sg_"):
        base = "u" + base
    while base in _C_RESERVED or keyword.iskeyword(base) or re.fullmatch(r"t\d+", base) or base in taken:
        base += "_"
    taken.add(base)
    return base


def schedule(program, name, options, fixed_group=0, roll=False) -> Schedule:
    """The schedule of an optimised Program (lowered here: render/c.py). With ``fixed_group`` k > 0, a result's entries
    are taken k at a time and a group of numbers only (the zeros of a sparse Hessian) gets no
    statement: the emitter writes it from a table (the CPU kernel, whose 4x4 transposes
    move entries in groups of four)."""
    large = bool(options.roll_min) and program.count_ops() > options.large_kernel_ops
    prog = lower(program, options, links=large)  # the same statements, rolled or not
    roll = roll and large
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
    temps = {t for t, _ in prog.body}
    segments = []
    for loop, part in runs(stmts, inputs_of, options) if roll else [(None, stmts)]:
        if loop is None:
            segments += _segments(part, temps, options.max_segment)
        else:
            rolled[len(segments)] = loop
            segments.append(part)
    home = {t: i for i, seg in enumerate(segments) for t, _ in seg if not isinstance(t, tuple)}
    needed = set()  # temporaries read by a later segment, or by a later member of a loop
    for i, loop in rolled.items():
        needed.update(s for ext in loop.ext for s in ext if home.get(s) == i)
    for i, seg in enumerate(segments):
        needed.update(s for _, e in seg for s in e.free_symbols if home.get(s, i) < i)
    uses = {}
    for seg in segments:
        for _, e in seg:
            for s in e.free_symbols:
                uses[s] = uses.get(s, 0) + 1
    slots, count = {}, 0
    for seg in segments:
        for t, e in seg:
            if t in needed:  # a running sum's link takes the slot of the one before, read by it alone
                prev = [s for s in e.free_symbols if s in slots and uses[s] == 1]
                if prev:
                    slots[t] = slots[min(prev, key=str)]
                else:
                    slots[t], count = count, count + 1
    names, inputs, seen = {}, {}, set()
    for a, arg in enumerate(prog.args):
        for k, s in enumerate(arg.symbols):
            c = "sg_v_" + _c_chars(s.name)
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
    fixed, nodes = {}, out.exprs[0].low.nodes
    for a in range(0, out.size, group):
        part = out.exprs[a:a + group]
        if all(is_const(nodes[e.node]) for e in part):
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
