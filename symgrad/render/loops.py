"""The in-process CPU kernel of a program whose arrays stayed loops (read and sum nodes, map
and scatter results: program.py), printed from the IR through the op table (c.Printer), as
loop_plan.py places and names its nodes.

Per point: the straight-line code of what does not vary with any loop, each group of sums
over the same loops computed by one loop (all their accumulators, and the scatters of a
gradient by an argument the loops read; sums in numpy's order by a loop of their own that
adds as numpy does, pairwise.py) as soon as what it reads is known, then map results
and the parts of joined results by loops over their entries. The innermost loop runs in
SIMD blocks of W lanes with an accumulator per lane; the outermost loop is cut into CHUNKS
fixed pieces, summed in order afterwards, so a result never depends on the thread count (a
single point runs its pieces on the thread team). Data arrays are read through pointers set once per process (``K_set_data``):
the C never holds the data."""
from __future__ import annotations

import math

from ..errors import CompileError
from ..ir.graph import number
from ..ir.nodes import is_arg, is_const, is_reduction
from ..ir.ops.selects import second_wins_c
from . import pairwise, panels
from .indices import index_c, innermost, lanes_apart
from .loop_plan import CHUNKS, LoopPlan, LoopGroup
from .target import Kernel

PARALLEL_MIN = 1 << 15  # iterations from which a single point's loop runs on the thread team


def _parallel(total, ind):
    """The OpenMP pragma of a loop over ``total`` iterations in chunks: none below
    PARALLEL_MIN (``parallel if(0)`` still makes a team of one, malloc and futex calls)."""
    if total < PARALLEL_MIN:
        return []
    return ["#ifdef _OPENMP", f"{ind}_Pragma(\"omp parallel for schedule(static) if(sg_par)\")", "#endif"]


def render_loops(prog, name, target, options, title=None) -> Kernel:
    em = LoopPlan(prog, name, target, options)
    M, nodes, ind = em.M, prog.nodes, "    "
    lines = [f"{ind}const double *const sg_d{k} = (const double *)sg_data[{k}];" if d.dtype.kind == "f" else
             f"{ind}const int64_t *const sg_d{k} = (const int64_t *)sg_data[{k}];" for k, d in enumerate(prog.data)]
    lines += [f"{ind}const {M} {em.names[n]} = ({M}){em.arg_c[n[1]]}[{n[2]}];" for n in nodes if is_arg(n)]
    # what the top level computes: plain results, coefficients of scatters, and whatever the
    # loops read; ordered so that each group's loop runs once all it reads is known
    sum_groups = [g for g in em.groups.values() if g.sums or g.scatter]
    roots = [r for o in prog.outputs if not o.loops for r in o.refs]
    roots += [x for o in prog.outputs for c, w, loops, _ in o.adds or () for x in ((c,) if loops else (c, w))]
    for g in em.groups.values():
        bodies = [nodes[s][1] for s in g.sums] + [w for _, w, _ in g.scatter] + \
            [r for k in g.maps for r in prog.outputs[k].refs] + [w for _, w, _ in g.stores]
        g.reads = em.needs(bodies, g.loops)
        roots += sorted(g.reads)
    order, state = [], {}
    group_of_sum = {s: g for g in sum_groups for s in g.sums}

    def visit(item):  # an iterative depth-first topological order of statements and sum groups
        stack = [(item, False)]
        while stack:
            x, done = stack.pop()
            if done:
                state[x] = 2
                order.append(x)
                continue
            if state.get(x) == 2:
                continue
            if state.get(x) == 1:
                raise CompileError(f"{name}: the loops of a kernel depend on each other (a bug in symgrad)")
            state[x] = 1
            stack.append((x, True))
            deps = sorted(x.reads) if isinstance(x, LoopGroup) else sorted(em.needs([x], None) - {x})
            for d in deps:
                d = group_of_sum.get(d, d)
                if state.get(d) != 2:
                    stack.append((d, False))
    for r in roots:
        for i in em.statements([r], None) + sorted(em.needs([r], None) & set(group_of_sum)):
            x = group_of_sum.get(i, i)
            if state.get(x) != 2:
                visit(x)
    for g in sum_groups:  # (a group of scatters only: no sum read by anything)
        if state.get(g) != 2:
            visit(g)
    for x in order:
        if isinstance(x, LoopGroup):
            lines += _extremum_loop(em, x, ind) if x.order and x.order[0] == "pick" else \
                pairwise.ordered_loop(em, x, ind, _parallel) if x.order else _sum_loop(em, x, ind)
        elif not is_reduction(nodes[x]):
            lines.append(em.define(x, ind))
    frees = []
    for r, (o, c) in enumerate(zip(prog.outputs, em.res_c)):
        if o.loops:
            lines += _map_loop(em, em.groups[o.loops], r, c, ind)
        elif o.stores:  # a joined array: each part's entries written where they go
            lines.append(f"{ind}for (int64_t sg_j = 0; sg_j < {o.size}; ++sg_j) {c}[sg_j] = 0;")
            lines += [f"{ind}{c}[{index_c(index)}] = {em.p(w)};" for _, w, loops, index in o.adds if not loops]
            for loops in dict.fromkeys(loops for _, _, loops, _ in o.adds if loops):
                g = em.groups[loops]
                lines += _write_loop(em, g, [(f"{c}[{index_c(index)}]", w) for rr, w, index in g.stores if rr == r],
                                     ind, f"{c}: ")
        elif o.adds is not None:
            lines.append(f"{ind}for (int64_t sg_j = 0; sg_j < {o.size}; ++sg_j) {c}[sg_j] = 0;")
            for coef, w, loops, index in o.adds:
                if not loops:
                    one = is_const(nodes[coef]) and number(nodes[coef]) == 1
                    lines.append(f"{ind}{c}[{index_c(index)}] += {em.p(w) if one else em.p(coef) + '*' + em.p(w)};")
            for g in sum_groups:
                for b, (rr, coef) in enumerate(g.buffers):
                    if rr == r:
                        buf = f"sg_S{g.n}_{b}"
                        lines.append(f"{ind}{{ const {M} sg_adj = {em.p(coef)};")
                        lines.append(f"{ind}  for (int64_t sg_j = 0; sg_j < {o.size}; ++sg_j) "
                                     f"{c}[sg_j] += sg_adj*{buf}[sg_j]; }}")
                        frees.append(f"{ind}free({buf});")
        else:
            lines += [f"{ind}{c}[{k}] = {em.p(x)};" for k, x in enumerate(o.refs)]
    return _kernel(em, lines + frees, title)


def _body(em, g, roots, indent):
    """The statements of a group's loop body that ``roots`` need: at ``indent``, or (indent
    None) as lists of nodes by the depth of the loop nest they vary with."""
    stmts = em.statements(roots, g.loops)
    if indent is not None:
        return [em.define(i, indent) for i in stmts]
    depth = [[] for _ in g.loops]
    for i in stmts:
        depth[em.level[i]].append(i)
    return depth


def _nest(em, g, depth, indent):
    """The loops of a group but its innermost, the first over this chunk's piece (sg_c) of
    its range, each followed by the statements that vary with it and no deeper loop:
    (opening lines, indent of the innermost body, closing lines)."""
    lines, close, ind = [], [], indent
    for k, (v, e) in enumerate(g.loops[:-1]):
        lo, hi = (f"{e}*sg_c/{CHUNKS}", f"{e}*(sg_c + 1)/{CHUNKS}") if k == 0 else ("0", str(e))
        lines.append(f"{ind}for (int64_t sg_i{v} = {lo}; sg_i{v} < {hi}; ++sg_i{v}) {{")
        close.insert(0, f"{ind}}}")
        ind += "    "
        lines += [em.define(i, ind) for i in depth[k]]
    return lines, ind, close


def _sum_loop(em, g, ind):
    """One loop over a group's index variables: every sum of the group (accumulators) and the
    scatters of its weights into gradients by arguments the loops read (a buffer per result
    and coefficient, scaled by the coefficient once the loop is done)."""
    M, W, prog = em.M, em.W, em.prog
    n, na, scat = g.n, len(g.sums), g.scatter
    inner_v = g.loops[-1][0]
    how = [innermost(index, inner_v) for _, _, index in scat]
    direct = [(b, index) for (b, _, index), h in zip(scat, how) if h == "direct"]
    simd = "gather" not in how and lanes_apart([x for _, x in direct], [b for b, _ in direct], inner_v)
    lanes = [k for k, h in enumerate(how) if h == "none"]
    nl = len(lanes)
    total = math.prod(e for _, e in g.loops)
    # a buffer whose one scatter term moves with the one (chunked) loop variable: the chunks
    # write disjoint entries, so they share it (no copy per chunk to zero and add up per call)
    shared = {b for b in range(len(g.buffers)) if len(g.loops) == 1
              and [(h, sum(k for t, k in x[1] if t == inner_v) != 0) for (bb, _, x), h in zip(scat, how)
                   if bb == b] == [("direct", True)]}
    lines = [f"{ind}/* loop {n}: {', '.join(f'sg_i{v} < {e}' for v, e in g.loops)} */"]
    for b, (r, _) in enumerate(g.buffers):
        size = prog.outputs[r].size * (1 if b in shared else CHUNKS)
        lines += [f"{ind}{M} *sg_S{n}_{b} = ({M} *)calloc({size}, sizeof({M}));",
                  f"{ind}if (!sg_S{n}_{b}) symgrad_alloc((size_t)-1);"]
    lines += [f"{ind}{M} {em.names[s]};" for s in g.sums]
    lines.append(f"{ind}{{")
    i2 = ind + "    "
    lines.append(f"{i2}{M} sg_part[{CHUNKS * max(na, 1)}];")
    lines += _parallel(total, i2) + [f"{i2}for (int64_t sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {{"]
    i3 = i2 + "    "
    lines.append(f"{i3}{M} sg_acc[{max(na, 1) * W}] = {{0}};")
    for b, (r, _) in enumerate(g.buffers):
        lines.append(f"{i3}{M} *restrict sg_Sc{b} = sg_S{n}_{b}" +
                     ("" if b in shared else f" + sg_c*{prog.outputs[r].size}") + ";")
    roots = [prog.nodes[s][1] for s in g.sums] + [w for _, w, _ in scat]
    inner = _body(em, g, roots, None)  # (statements by depth: the outer ones hoisted)
    if panels.takes(g, na + nl, inner):
        lines += panels.loop(em, g, inner, scat, simd, i3)
        return lines + _sum_loop_end(em, g, shared, i2, ind)
    if len(g.loops) == 1:
        v, e = g.loops[0]
        lo, hi = f"{e}*sg_c/{CHUNKS}", f"{e}*(sg_c + 1)/{CHUNKS}"
        opened, i4, close = [], i3, []
    else:
        opened, i4, close = _nest(em, g, inner, i3)
        v, e = g.loops[-1]
        lo, hi = "0", str(e)
    lines += opened
    if nl:
        lines.append(f"{i4}{M} sg_lacc[{nl * W}] = {{0}};")
    i5 = i4 + "    "
    if na or nl:  # blocks of W lanes, an accumulator per lane
        lines += [f"{i4}for (int64_t sg_jb = {lo}; sg_jb < {hi}; sg_jb += {W}) {{",
                  f"{i5}const int sg_w = {hi} - sg_jb < {W} ? (int)({hi} - sg_jb) : {W};"]
        if simd:
            lines.append(f"{i5}{em.simd}")
        i6 = i5 + "    "
        lines.append(f"{i5}for (int sg_l = 0; sg_l < sg_w; ++sg_l) {{")
        lines.append(f"{i6}const int64_t sg_i{v} = sg_jb + sg_l;")
    else:  # scatters alone: one SIMD loop (a Hessian's rank-one updates, hessian_sums.py)
        i6 = i5
        lines += [f"{i4}{em.simd}"] if simd else []
        lines.append(f"{i4}for (int64_t sg_i{v} = {lo}; sg_i{v} < {hi}; ++sg_i{v}) {{")
    lines += [em.define(i, i6) for i in inner[-1]]
    lines += [f"{i6}sg_acc[{k * W} + sg_l] += {em.p(prog.nodes[s][1])};" for k, s in enumerate(g.sums)]
    for k, ((b, w, index), h) in enumerate(zip(scat, how)):
        if h == "none":
            lines.append(f"{i6}sg_lacc[{lanes.index(k) * W} + sg_l] += {em.p(w)};")
        else:
            lines.append(f"{i6}sg_Sc{b}[{index_c(index)}] += {em.p(w)};")
    lines += [f"{i5}}}", f"{i4}}}"] if na or nl else [f"{i4}}}"]
    for m, k in enumerate(lanes):
        b, _, index = scat[k]
        lines.append(f"{i4}{{ {M} sg_z = 0; for (int sg_l = 0; sg_l < {W}; ++sg_l) sg_z += sg_lacc[{m * W} + sg_l]; "
                     f"sg_Sc{b}[{index_c(index)}] += sg_z; }}")
    lines += close
    for k in range(na):
        lines.append(f"{i3}{{ {M} sg_z = 0; for (int sg_l = 0; sg_l < {W}; ++sg_l) sg_z += sg_acc[{k * W} + sg_l]; "
                     f"sg_part[sg_c*{na} + {k}] = sg_z; }}")
    return lines + _sum_loop_end(em, g, shared, i2, ind)


def _sum_loop_end(em, g, shared, i2, ind):
    """After a group's chunks: its sums and its buffers added up over the chunks, in order."""
    n, na = g.n, len(g.sums)
    lines = [f"{i2}}}"]
    for k, s in enumerate(g.sums):
        a = em.names[s]
        lines.append(f"{i2}{a} = 0; for (int sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {a} += sg_part[sg_c*{na} + {k}];")
    for b, (r, _) in enumerate(g.buffers):
        size = em.prog.outputs[r].size
        if b not in shared:
            lines.append(f"{i2}for (int sg_c = 1; sg_c < {CHUNKS}; ++sg_c) for (int64_t sg_j = 0; sg_j < {size}; ++sg_j) "
                         f"sg_S{n}_{b}[sg_j] += sg_S{n}_{b}[sg_c*{size} + sg_j];")
    lines.append(f"{ind}}}")
    return lines


def _extremum_loop(em, g, ind):
    """A group's extremum nodes (one body, one pick op: ir/nodes.py): the chain's value and the
    flat index (C order of the loops) of the entry it picked. Each chunk of the outermost loop
    runs W lanes, each lane the chain over its own entries (moved to an entry where the pick
    takes its second operand: ops/selects.py second_wins_c); then the lanes' picks, in order
    of their indices, chunk after chunk, are chained once more. The pick prefers its entries
    by one order (a NaN first for maximum and minimum, last for fmax and fmin; ties to the
    first), so that picks the entry one chain over all of them picks: the unrolled trace's,
    bit for bit, whatever W, the chunks or the threads."""
    M, W, nodes = em.M, em.W, em.prog.nodes
    bodies = {nodes[s][1] for s in g.sums}
    if len(bodies) != 1:
        raise CompileError(f"{em.name}: extrema of two bodies over one loop (a bug in symgrad)")
    body = bodies.pop()
    total = math.prod(e for _, e in g.loops)
    flat, stride = [], 1
    for v, e in reversed(g.loops):
        flat.append(f"{stride}*sg_i{v}")
        stride *= e
    lines = [f"{ind}/* loop {g.n}: {', '.join(f'sg_i{v} < {e}' for v, e in g.loops)}, {g.order[1]} in order */"]
    lines += [f"{ind}{M} {em.names[s]};" for s in g.sums]
    i2 = ind + "    "
    lines += [f"{ind}{{", f"{i2}{M} sg_cb[{CHUNKS * W}]; int64_t sg_ca[{CHUNKS * W}];"]
    lines += _parallel(total, i2) + [f"{i2}for (int64_t sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {{"]
    i3 = i2 + "    "
    lines += [f"{i3}{M} sg_b[{W}] = {{0}}; int64_t sg_a[{W}];",
              f"{i3}for (int sg_l = 0; sg_l < {W}; ++sg_l) sg_a[sg_l] = -1;"]
    if len(g.loops) == 1:
        v, e = g.loops[0]
        lo, hi = f"{e}*sg_c/{CHUNKS}", f"{e}*(sg_c + 1)/{CHUNKS}"
        opened, i4, close = [], i3, []
    else:
        opened, i4, close = em.loops(g.loops[:-1], i3)
        v, e = g.loops[-1]
        lo, hi = "0", str(e)
    i5, i6 = i4 + "    ", i4 + "        "
    lines += opened + [f"{i4}for (int64_t sg_jb = {lo}; sg_jb < {hi}; sg_jb += {W}) {{",
                       f"{i5}const int sg_w = {hi} - sg_jb < {W} ? (int)({hi} - sg_jb) : {W};",
                       f"{i5}{em.simd}", f"{i5}for (int sg_l = 0; sg_l < sg_w; ++sg_l) {{",
                       f"{i6}const int64_t sg_i{v} = sg_jb + sg_l;"]
    lines += _body(em, g, [body], i6)
    lines += [f"{i6}const {M} sg_e = {em.p(body)};",
              f"{i6}const int sg_t = (sg_a[sg_l] < 0) | {second_wins_c(g.order[1], 'sg_b[sg_l]', 'sg_e')};",
              f"{i6}sg_b[sg_l] = sg_t ? sg_e : sg_b[sg_l];",
              f"{i6}sg_a[sg_l] = sg_t ? {' + '.join(flat)} : sg_a[sg_l];", f"{i5}}}", f"{i4}}}"]
    lines += close
    lines += [f"{i3}for (int sg_l = 0; sg_l < {W}; ++sg_l) {{ sg_cb[sg_c*{W} + sg_l] = sg_b[sg_l]; "
              f"sg_ca[sg_c*{W} + sg_l] = sg_a[sg_l]; }}", f"{i2}}}"]
    # the lanes' picks in order of their indices (each chunk's lanes sorted: W is small)
    lines += [f"{i2}{M} sg_best = 0; int64_t sg_at = -1;",
              f"{i2}for (int sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {{",
              f"{i3}{M} *sg_pb = sg_cb + sg_c*{W}; int64_t *sg_pa = sg_ca + sg_c*{W};",
              f"{i3}for (int sg_l = 1; sg_l < {W}; ++sg_l) for (int sg_k = sg_l; sg_k > 0 && "
              "(uint64_t)sg_pa[sg_k - 1] > (uint64_t)sg_pa[sg_k]; --sg_k) {",
              f"{i3}    const {M} sg_tb = sg_pb[sg_k]; const int64_t sg_ta = sg_pa[sg_k];",
              f"{i3}    sg_pb[sg_k] = sg_pb[sg_k - 1]; sg_pa[sg_k] = sg_pa[sg_k - 1]; "
              "sg_pb[sg_k - 1] = sg_tb; sg_pa[sg_k - 1] = sg_ta;", f"{i3}}}",
              f"{i3}for (int sg_l = 0; sg_l < {W} && sg_pa[sg_l] >= 0; ++sg_l)",
              f"{i3}    if (sg_at < 0 || {second_wins_c(g.order[1], 'sg_best', 'sg_pb[sg_l]')}) "
              "{ sg_best = sg_pb[sg_l]; sg_at = sg_pa[sg_l]; }", f"{i2}}}"]
    lines += [f"{i2}{em.names[s]} = {'sg_best' if nodes[s][4] == 0 else f'({M})sg_at'};" for s in g.sums]
    lines.append(f"{ind}}}")
    return lines


def _map_loop(em, g, r, c, ind):
    """A map result: every entry of the leading axes by one loop nest, SIMD innermost."""
    o = em.prog.outputs[r]
    strides, s = [], len(o.refs)
    for _, e in reversed(o.loops):
        strides.insert(0, s)
        s *= e
    flat = " + ".join(f"{st}*sg_i{v}" for (v, _), st in zip(o.loops, strides))
    return _write_loop(em, g, [(f"{c}[({flat}) + {k}]", x) for k, x in enumerate(o.refs)], ind, f"{c}: ")


def _write_loop(em, g, writes, ind, label=""):
    """One loop nest over a group's variables, SIMD innermost, writing each (C lvalue, node)
    of ``writes`` at every point (entries no two points share)."""
    total = math.prod(e for _, e in g.loops)
    i2 = ind + "    "
    lines = [f"{ind}/* {label}{', '.join(f'sg_i{v} < {e}' for v, e in g.loops)} */",
             *_parallel(total, ind), f"{ind}for (int64_t sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {{"]
    if len(g.loops) == 1:
        v, e = g.loops[0]
        opened, i3, close = [], i2, []
        lo, hi = f"{e}*sg_c/{CHUNKS}", f"{e}*(sg_c + 1)/{CHUNKS}"
    else:
        opened, i3, close = em.loops(g.loops[:-1], i2)
        v, e = g.loops[-1]
        lo, hi = "0", str(e)
    i4 = i3 + "    "
    lines += opened + [f"{i3}{em.simd}", f"{i3}for (int64_t sg_i{v} = {lo}; sg_i{v} < {hi}; ++sg_i{v}) {{"]
    lines += _body(em, g, [x for _, x in writes], i4)
    lines += [f"{i4}{at} = {em.p(x)};" for at, x in writes]
    lines += [f"{i3}}}"] + close + [f"{ind}}}"]
    return lines


def _kernel(em, body, title):
    prog, name, target, R = em.prog, em.name, em.target, em.target.real
    plain = [f"const {R} *{c}" for c in em.arg_c] + [f"{R} *{c}" for c in em.res_c]
    restrict = [f"const {R} *restrict {c}" for c in em.arg_c] + [f"{R} *restrict {c}" for c in em.res_c]
    names = em.arg_c + em.res_c
    sizes = [a.size for a in prog.args] + [o.size for o in prog.outputs]
    nd = max(1, len(prog.data))
    batch, streams, setter = (target.entry(name, w) for w in ("batch", "streams", "data"))
    label = (title or name).replace("*/", "* /")
    src = [f"/* {name}: {label}, generated by symgrad */", '#include "symgrad_rt.h"', "",
           f"static const void *sg_data[{nd}];", f"static int sg_data_set = {int(not prog.data)};", "",
           f"void {setter}(const void *const *p) {{",
           f"    for (int k = 0; k < {len(prog.data)}; ++k) sg_data[k] = p[k];", "    sg_data_set = 1;", "}", "",
           f"static void {name}_one({', '.join(restrict)}, int sg_par) {{", *body, "}", "",
           f"void {batch}(int64_t n, int sg_mode, {', '.join(plain)}) {{",
           "    if (!sg_data_set) {  /* never reached through symgrad: NaN, not a crash */",
           *[f"        for (int64_t sg_j = 0; sg_j < n*{s}; ++sg_j) {c}[sg_j] = NAN;"
             for c, s in zip(em.res_c, sizes[len(em.arg_c):])],
           "        return;", "    }",
           f"    if (n == 1) {{ {name}_one({', '.join(names)}, !(sg_mode & 4)); return; }}",
           "#ifdef _OPENMP",  # serial calls never enter OpenMP (parallel if(0) still makes a team)
           "    if (!(sg_mode & 4)) {", "        _Pragma(\"omp parallel for schedule(static)\")",
           "        for (int64_t sg_b = 0; sg_b < n; ++sg_b)",
           f"            {name}_one({', '.join(f'{c} + sg_b*{s}' for c, s in zip(names, sizes))}, 0);",
           "        return;", "    }", "#endif",
           "    for (int64_t sg_b = 0; sg_b < n; ++sg_b)",
           f"        {name}_one({', '.join(f'{c} + sg_b*{s}' for c, s in zip(names, sizes))}, 0);", "}", "",
           f"void {name}({', '.join(plain)}) {{ {batch}(1, 4, {', '.join(names)}); }}", "",
           f"int {streams}(void) {{ return 0; }}", "",
           *target.call_entry(name, len(em.arg_c), len(em.res_c))]
    # a large loop kernel (a Hessian's d^2 terms outside its loops) at the cheaper level: gcc -O3
    # took 13.7 s on one of 3,571 operations (log-sum-exp's at d = 40), -O1 1.6 s
    large = em.ops > em.options.large_kernel_ops
    return Kernel(name, "\n".join(src) + "\n", em.ops, cflags=target.large_flags if large else ())
