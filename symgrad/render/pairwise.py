"""Sums in numpy's order in loop kernels (render/loops.py).

A sum node ``("sum", body, loops, (block, run))`` (tracing/lazy_sum.py) adds its body over the
flat index of its loops (the first outermost) as numpy's float64 add.reduce does
(tracing/sumorder.py): the range in blocks of ``block`` entries, each cut into runs of
``run`` (the last shorter), the runs added in sequence from 0.0, each run numpy's pairwise
sum: halves while longer than 128 entries (the first a multiple of 8 long), and a leaf of at
most 128 summed by 8 accumulators over strides of 8, joined ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
then its last (n mod 8) entries in sequence. The accumulators start at 0.0 where numpy's
start at the first entries: that changes only the sign of a zero, and the sum's own start
0.0 makes every zero +0.0 as numpy's.

A whole sum in one run (np.sum of an array laid out in one stretch: the common case) is cut
into the subtrees of its pairwise tree's top levels, summed on the thread team (a result
never depends on the thread count) and joined as the tree joins them; several runs go in
sequence, each its tree; runs of one entry (numpy adding entry by entry: a sum over an outer
axis) are one plain loop. The recursion is a loop with a stack of right halves, the leaf a
SIMD loop over blocks of 8 entries with the body inline."""
from __future__ import annotations

import math

LEAF = 128  # numpy's PW_BLOCKSIZE
TOP = 4  # levels of the pairwise tree cut into pieces for the thread team (up to 16)
DEPTH = 64  # the stack of right halves (a tree of 2**63 entries is deeper than any loop)


def ordered_loop(em, g, ind, parallel):
    """The C lines of group ``g`` (sums in numpy's order, all of one (block, run)); ``em``:
    loop_plan.LoopPlan, ``parallel(total, indent)``: the thread team's pragma lines."""
    M, prog, K = em.M, em.prog, len(g.sums)
    block, run = g.order
    total = math.prod(e for _, e in g.loops)
    lines = [f"{ind}/* loop {g.n}: {', '.join(f'sg_i{v} < {e}' for v, e in g.loops)}, in numpy's order "
             f"(blocks of {block}, runs of {run}) */"]
    lines += [f"{ind}{M} {em.names[s]};" for s in g.sums]
    i2 = ind + "    "
    lines.append(f"{ind}{{")
    bodies = [prog.nodes[s][1] for s in g.sums]
    if run == 1 or total == 0:  # entry by entry, in order
        lines.append(f"{i2}{M} sg_z[{K}] = {{0}};")
        i3 = i2
        for v, e in g.loops:
            lines.append(f"{i3}for (int64_t sg_i{v} = 0; sg_i{v} < {e}; ++sg_i{v}) {{")
            i3 += "    "
        lines += [em.define(i, i3) for i in em.statements(bodies, g.loops)]
        lines += [f"{i3}sg_z[{k}] += {em.p(b)};" for k, b in enumerate(bodies)]
        lines += [f"{ind}{'    ' * (j + 1)}}}" for j in reversed(range(len(g.loops)))]
    elif block == total and run >= total:  # one run: the top of its tree on the thread team
        pieces = []
        join = _top(0, total, TOP, pieces)
        lines += [f"{i2}static const int64_t sg_po[{len(pieces)}] = {{{', '.join(str(o) for o, _ in pieces)}}};",
                  f"{i2}static const int64_t sg_pn[{len(pieces)}] = {{{', '.join(str(n) for _, n in pieces)}}};",
                  f"{i2}{M} sg_p[{len(pieces) * K}];"]
        lines += parallel(total, i2) + [f"{i2}for (int64_t sg_c = 0; sg_c < {len(pieces)}; ++sg_c) {{"]
        lines += _tree(em, g, bodies, "sg_po[sg_c]", "sg_pn[sg_c]", i2 + "    ")
        lines += [f"{i2}    for (int sg_k = 0; sg_k < {K}; ++sg_k) sg_p[sg_c*{K} + sg_k] = sg_z[sg_k];", f"{i2}}}",
                  f"{i2}{M} sg_z[{K}];"]
        lines += [f"{i2}sg_z[{k}] = 0.0 + {join.format(k=k, K=K)};" for k in range(K)]
    else:  # runs in sequence, each its tree
        lines.append(f"{i2}{M} sg_t[{K}] = {{0}};")
        lines.append(f"{i2}for (int64_t sg_b0 = 0; sg_b0 < {total}; sg_b0 += {block}) "
                     f"for (int64_t sg_r0 = 0; sg_r0 < {block}; sg_r0 += {run}) {{")
        lines += _tree(em, g, bodies, "sg_b0 + sg_r0", f"({block} - sg_r0 < {run} ? {block} - sg_r0 : {run})",
                       i2 + "    ")
        lines += [f"{i2}    for (int sg_k = 0; sg_k < {K}; ++sg_k) sg_t[sg_k] += sg_z[sg_k];", f"{i2}}}"]
        lines.append(f"{i2}{M} *const sg_z = sg_t;")
    lines += [f"{i2}{em.names[s]} = sg_z[{k}];" for k, s in enumerate(g.sums)]
    lines.append(f"{ind}}}")
    return lines


def _top(o, n, depth, pieces):
    """The pieces (offset, length) of the top ``depth`` levels of numpy's pairwise tree of
    [o, o + n), appended in order, and the C expression that joins them (sg_p[piece*K + k])."""
    if depth == 0 or n <= LEAF:
        pieces.append((o, n))
        return f"sg_p[{len(pieces) - 1}*{{K}} + {{k}}]"
    h = n // 2
    h -= h % 8
    a = _top(o, h, depth - 1, pieces)
    return f"({a} + {_top(o + h, n - h, depth - 1, pieces)})"


def _tree(em, g, bodies, start, length, ind):
    """Lines leaving in sg_z[k] the pairwise sum of the bodies over flat entries
    [start, start + length): numpy's recursion as a loop with a stack of right halves."""
    M, K = em.M, len(bodies)
    i2, i3, i4 = ind + "    ", ind + "        ", ind + "            "
    lines = [f"{ind}int64_t sg_o = {start}, sg_n = {length}, sg_so[{DEPTH}], sg_sn[{DEPTH}];",
             f"{ind}{M} sg_sv[{DEPTH * K}], sg_z[{K}];",
             f"{ind}char sg_ss[{DEPTH}];",
             f"{ind}int sg_sp = 0;",
             f"{ind}for (;;) {{",
             f"{i2}while (sg_n > {LEAF}) {{  /* the left half first, the right one kept */",
             f"{i3}int64_t sg_h = sg_n/2;",
             f"{i3}sg_h -= sg_h % 8;",
             f"{i3}sg_so[sg_sp] = sg_o + sg_h; sg_sn[sg_sp] = sg_n - sg_h; sg_ss[sg_sp++] = 0;",
             f"{i3}sg_n = sg_h;",
             f"{i2}}}",
             f"{i2}{{  /* a leaf: 8 accumulators over strides of 8, then the rest in sequence */",
             f"{i3}{M} sg_r[{8 * K}] = {{0}}, sg_v[{8 * K}];",
             f"{i3}int64_t sg_jb = 0;",
             f"{i3}for (; sg_jb + 8 <= sg_n; sg_jb += 8) {{",
             f"{i4}{em.simd}",
             f"{i4}for (int sg_l = 0; sg_l < 8; ++sg_l) {{"]
    lines += _lane(em, g, bodies, "sg_r[{k} + sg_l] += {v};", i4 + "    ")
    lines += [f"{i4}}}",
              f"{i3}}}",
              f"{i3}if (sg_jb < sg_n) {{  /* the last (n mod 8) entries */",
              f"{i4}const int sg_w = (int)(sg_n - sg_jb);",
              f"{i4}for (int sg_l = 0; sg_l < sg_w; ++sg_l) {{"]
    lines += _lane(em, g, bodies, "sg_v[{k} + sg_l] = {v};", i4 + "    ")
    lines += [f"{i4}}}",
              f"{i3}}}",
              f"{i3}for (int sg_k = 0; sg_k < {K}; ++sg_k) {{",
              f"{i4}const {M} *sg_a = sg_r + 8*sg_k;",
              f"{i4}{M} sg_y = ((sg_a[0] + sg_a[1]) + (sg_a[2] + sg_a[3])) + ((sg_a[4] + sg_a[5]) + (sg_a[6] + sg_a[7]));",
              f"{i4}for (int sg_l = 0; sg_l < (int)(sg_n % 8); ++sg_l) sg_y += sg_v[8*sg_k + sg_l];",
              f"{i4}sg_z[sg_k] = sg_y;",
              f"{i3}}}",
              f"{i2}}}",
              f"{i2}while (sg_sp && sg_ss[sg_sp - 1]) {{  /* a right half done: its left one + it */",
              f"{i3}--sg_sp;",
              f"{i3}for (int sg_k = 0; sg_k < {K}; ++sg_k) sg_z[sg_k] = sg_sv[sg_sp*{K} + sg_k] + sg_z[sg_k];",
              f"{i2}}}",
              f"{i2}if (!sg_sp) break;",
              f"{i2}for (int sg_k = 0; sg_k < {K}; ++sg_k) sg_sv[(sg_sp - 1)*{K} + sg_k] = sg_z[sg_k];",
              f"{i2}sg_ss[sg_sp - 1] = 1;",
              f"{i2}sg_o = sg_so[sg_sp - 1]; sg_n = sg_sn[sg_sp - 1];",
              f"{ind}}}"]
    return lines


def _lane(em, g, bodies, store, ind):
    """A lane's statements: the loop variables at flat entry sg_k, the bodies, each stored."""
    lines = [f"{ind}const int64_t sg_k = sg_o + sg_jb + sg_l;"] + _indices(g.loops, ind)
    lines += [em.define(i, ind) for i in em.statements(bodies, g.loops)]
    return lines + [ind + store.format(k=8 * k, v=em.p(b)) for k, b in enumerate(bodies)]


def _indices(loops, ind):
    """The loop variables at flat entry sg_k (the first loop outermost)."""
    out, inner = [], 1
    for v, e in reversed(loops):
        if len(loops) == 1:
            out.append(f"{ind}const int64_t sg_i{v} = sg_k;")
        elif inner == 1:
            out.append(f"{ind}const int64_t sg_i{v} = sg_k % {e};")
        elif v == loops[0][0]:
            out.append(f"{ind}const int64_t sg_i{v} = sg_k / {inner};")
        else:
            out.append(f"{ind}const int64_t sg_i{v} = sg_k / {inner} % {e};")
        inner *= e
    return out
