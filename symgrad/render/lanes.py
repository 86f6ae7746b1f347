"""The lane code of the in-process CPU kernel (cpu.py): each segment of a schedule as a function
over the W lanes of a block, one SIMD loop each, and a rolled segment as a loop over a table of
its members; which arguments and results reach the lanes through arrays of lanes."""
from __future__ import annotations

from .c import Printer
from .schedule import segment_lines


def laned(sched, target, optional=0):
    """For each argument and result: whether the block passes it to the lane loop through an
    array of lanes of the arithmetic type (arrays always: they are transposed). Where the
    arithmetic type is wider than memory's (float32 computing in double), numbers too in
    kernels without calls of maths functions, so that the lane loop touches one type only
    (mixed, gcc vectorises it at the narrow type's width); around vector maths calls the
    round trip through the stack costs more than it saves (measured each way on
    examples/benchmark.py's float32 rows: seed faster with lane arrays, trig2 slower).
    Optional results always (the lane loop never sees their pointer, which may be NULL)."""
    wider = target.math != target.real and not sched.calls
    n = len(sched.args)
    return [a.size > 1 or wider or n <= k < n + optional for k, a in enumerate(sched.args + sched.results)]


def _simd(target):
    """The pragma of a block's lane loop: of the block's lanes as vectors where the kernel calls
    vector maths (target.vector_calls), so that every kernel of that block calls the same libmvec
    variant (csrc/symgrad_rt.h: SYMGRAD_LANES); else GCC's choice (the float32 rows of
    examples/benchmark.py: 1.1-1.2x slower as 4 lanes on a CPU that prefers 2), which rounds
    the same in any width."""
    return f"SYMGRAD_LANES({target.block})" if target.vector_calls else "SYMGRAD_SIMD"


def lane_functions(sched, target, options, optional=0):
    """Each segment runs its own SIMD loop over the lanes of a block in its own function.
    Within a block, lane j of number k of an argument or result (or scratch slot) sits at
    [k*W + j], so every access of the lane loop has unit stride."""
    L, W, name = target.math, target.block, sched.name
    names = [a.name for a in sched.args] + [r.name for r in sched.results]
    types = [L if laned else target.real for laned in laned(sched, target, optional)]  # of what the lanes read and write
    params = ([f"const {t} *restrict {a.name}" for a, t in zip(sched.args, types)]
              + [f"{t} *restrict {r.name}" for r, t in zip(sched.results, types[len(sched.args):])]
              + [f"{L} *restrict sg_t"])
    call = ", ".join([c + " + sg_j" for c in names] + ["sg_t + sg_j"])
    multi = len(sched.segments) > 1
    printer = Printer(sched.names, target, options)
    src = []
    for i, seg in enumerate(sched.segments):
        if i in sched.rolled:
            src.append(_rolled(sched, i, target, options, params))
            continue
        lines = segment_lines(sched, i, printer, W)
        # Small kernels inline all the way into the batch loop (constants stay in registers).
        kind = "SYMGRAD_HIDDEN" if multi else "static inline" if len(seg) <= options.inline_segment else \
            "static SYMGRAD_NOINLINE"
        src.append([f"SYMGRAD_ALWAYS_INLINE void {name}_s{i}({', '.join(params)}) {{", *lines, "}", "",
                    f"{kind} void {name}_l{i}({', '.join(params)}) {{",
                    f"    {_simd(target)}",
                    f"    for (int sg_j = 0; sg_j < {W}; ++sg_j) {name}_s{i}({call});", "}", ""])
    if not multi:
        return src[0], []
    # Several segments: each group of segments is its own translation unit (compiled in
    # parallel); the main unit declares their lane functions.
    per = options.segments_per_unit
    chunks = [[line for seg in src[k:k + per] for line in seg] for k in range(0, len(src), per)]
    protos = [f"SYMGRAD_HIDDEN void {name}_l{i}({', '.join(params)});" for i in range(len(sched.segments))]
    return protos + [""], chunks


def _rolled(sched, i, target, options, params):
    """A segment of members of one form (schedule.Roll) as its lane function: a loop over a
    table of each member's operands from outside (entries of arguments, or scratch slots) and
    of where its results go (scratch slots, or entries of results), the SIMD loop over the
    block's lanes inside it, the first member's statements as its body (in registers)."""
    L, W, name = target.math, target.block, sched.name
    roll, seg = sched.rolled[i], sched.segments[i]
    body = seg[:roll.size]
    names = {s: f"sg_a{j}" for j, s in enumerate(roll.ext[0])}
    names.update({t: f"sg_c{p}" for p, (t, _) in enumerate(body) if not isinstance(t, tuple)})
    printer = Printer(names, target, options)
    stores = [p for p, (t, _) in enumerate(body) if isinstance(t, tuple) or t in sched.slots]
    cols = [[sched.inputs[s][1] if a is not None else sched.slots[s] for s, a in zip(ext, roll.where)]
            for ext in roll.ext]
    for m, ext in enumerate(roll.ext):
        for p in stores:
            t = seg[m * roll.size + p][0]
            cols[m].append(t[1] if isinstance(t, tuple) else sched.slots[t])
    # A running sum's link stores where it loaded the link before it (schedule's slots): one column.
    n_ext = len(roll.where)
    same = {}
    for q, p in enumerate(stores):
        if isinstance(body[p][0], tuple):
            continue
        a = next((a for a in range(n_ext) if roll.where[a] is None and all(c[a] == c[n_ext + q] for c in cols)), None)
        if a is not None:
            same[p] = a
    keep = list(range(n_ext)) + [n_ext + q for q, p in enumerate(stores) if p not in same]
    col_of = {p: keep.index(n_ext + q) for q, p in enumerate(stores) if p not in same}
    col_of.update(same)
    width = len(keep)
    table = [c[k] for c in cols for k in keep]
    lines = [f"            const {L} sg_a{j} = {sched.args[a].name if a is not None else 'sg_t'}[sg_o{j} + sg_j];"
             for j, a in enumerate(roll.where)]
    for p, (t, e) in enumerate(body):
        if isinstance(t, tuple):
            lines.append(f"            {sched.results[t[0]].name}[sg_o{col_of[p]} + sg_j] = {printer.doprint(e)};")
            continue
        lines.append(f"            const {L} sg_c{p} = {printer.doprint(e)};")
        if t in sched.slots:
            lines.append(f"            sg_t[sg_o{col_of[p]} + sg_j] = sg_c{p};")
    return [f"SYMGRAD_HIDDEN SYMGRAD_NOINLINE void {name}_l{i}({', '.join(params)}) {{",
            f"    static const int32_t sg_table[{len(table)}] = {{{', '.join(map(str, table))}}};",
            "    const int32_t *sg_ix = SYMGRAD_OPAQUE(sg_table);",
            f"    for (int sg_q = 0; sg_q < {len(roll.ext)}; ++sg_q, sg_ix += {width}) {{",
            # each member's offsets read once, before its lane loop: read in it (the table might
            # alias what the loop writes, for all GCC knows), they made the loads gathers, which
            # GCC's tuning for some CPUs (znver1) refuses, leaving the loop and its maths calls scalar
            *[f"        const int64_t sg_o{k} = (int64_t)sg_ix[{k}] * {W};" for k in range(width)],
            f"        {_simd(target)}",
            f"        for (int sg_j = 0; sg_j < {W}; ++sg_j) {{",
            *lines,
            "        }", "    }", "}", ""]
