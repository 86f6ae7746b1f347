"""The in-process CPU kernel of a program with loops (symgrad/loops.py).

Per point: the straight-line code of the closed forms (common subexpressions shared), each
sum computed by one loop (all its derivatives' accumulators and scatters at once) where its
slots are known, then map results by loops over their entries. The innermost loop runs in
SIMD blocks of W lanes with an accumulator per lane; the outermost loop is cut into CHUNKS
fixed pieces, summed in order afterwards, so a result never depends on the thread count
(a single point runs its pieces on the thread team). Data arrays are read through pointers
set once per process (``K_set_data``): the C never holds the data."""
from __future__ import annotations

import math

import sympy as sp

from ..loops import atoms
from .printer import Printer
from .schedule import cname
from .target import Kernel

CHUNKS = 16          # pieces of the outermost loop (fixed: results do not depend on threads)
PARALLEL_MIN = 1 << 15  # iterations from which a single point's loop runs on the thread team


def index_c(index):
    """An affine index (tracing/lazy.py) in C."""
    c, terms = index
    parts = []
    for t, k in terms:
        s = f"sg_i{t}" if isinstance(t, int) else f"sg_d{t[1]}[{index_c(t[2])}]"
        parts.append(s if k == 1 else f"{k}*{s}" if k > 0 else f"({k})*{s}")
    if c or not parts:
        parts.append(str(c))
    return " + ".join(parts)


def _innermost(index, v):
    """How an index moves with loop variable v: 'none', 'direct' (one-to-one, no gathers
    of v: lanes write distinct entries), or 'gather'."""
    direct = any(t == v for t, _ in index[1])
    gathered = any(not isinstance(t, int) and _mentions(t[2], v) for t, _ in index[1])
    return "gather" if gathered else "direct" if direct else "none"


def _lanes_apart(indices, args, v):
    """Whether the SIMD lanes of loop variable v can add into these entries (of arguments
    ``args``) at once: no entry one lane writes is written by another lane (x[j] and x[j+1]
    collide across lanes; x[3j], x[3j+1], x[3j+2] never do)."""
    for k, (a, x) in enumerate(zip(args, indices)):
        for b, y in zip(args[k:], indices[k:]):
            if a != b:
                continue
            cx, cy = dict(x[1]), dict(y[1])
            step = cx.get(v)
            if step != cy.get(v) or {t: c for t, c in cx.items() if t != v} != {t: c for t, c in cy.items() if t != v}:
                return False
            if (x[0] - y[0]) % abs(step) == 0 and x[0] != y[0]:
                return False
    return True


def _mentions(index, v):
    return any(t == v if isinstance(t, int) else _mentions(t[2], v) for t, _ in index[1])


class _Emit:
    def __init__(self, lp, name, target, options):
        self.lp, self.name, self.target, self.options = lp, name, target, options
        self.M, self.R, self.W = target.math, target.real, target.block
        taken = set()
        self.arg_c = [cname(a.name, taken, "a_") for a in lp.args]
        self.res_c = [cname(o.name, taken) for o in lp.outputs]
        self.names = {}
        for a, syms in enumerate(lp.symbols):
            items = syms.items() if isinstance(syms, dict) else enumerate(syms)
            for j, s in items:
                self.names[s] = f"sg_v{a}_{j}"
        self.names.update({s: s.name for s in lp.reads})
        self.printer = Printer(self.names, target, options)
        self.ops = 0

    def p(self, e):
        return self.printer.doprint(e)

    def read_line(self, s, indent):
        kind, i, index = self.lp.reads[s]
        src = f"sg_d{i}" if kind == "d" else self.arg_c[i]
        return f"{indent}const {self.M} {s.name} = ({self.M}){src}[{index_c(index)}];"

    def body(self, exprs, indent, prefix):
        """Loads, temporaries and the final expressions of a loop body (CSE over all of them)."""
        temps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(prefix, real=True), order="none")
        for t, _ in temps:
            self.names[t] = t.name
        used = set().union(*[e.free_symbols for _, e in temps], *[e.free_symbols for e in reduced]) \
            if exprs else set()
        lines = [self.read_line(s, indent) for s in sorted(used, key=str) if s in self.lp.reads]
        lines += [f"{indent}const {self.M} {t.name} = {self.p(e)};" for t, e in temps]
        self.ops += sum(sp.count_ops(e) for _, e in temps) + sum(sp.count_ops(e) for e in reduced)
        return lines, reduced

    def loops(self, loops, indent):
        """Nested loops over ``loops``, the first over this chunk's piece (sg_c) of its range:
        (opening lines, indent of the innermost body, closing lines)."""
        lines, close = [], []
        (v0, e0) = loops[0]
        lines.append(f"{indent}for (int64_t sg_i{v0} = {e0}*sg_c/{CHUNKS}; sg_i{v0} < {e0}*(sg_c + 1)/{CHUNKS}; "
                     f"++sg_i{v0}) {{")
        close.append(f"{indent}}}")
        ind = indent + "    "
        for v, e in loops[1:]:
            lines.append(f"{ind}for (int64_t sg_i{v} = 0; sg_i{v} < {e}; ++sg_i{v}) {{")
            close.insert(0, f"{ind}}}")
            ind += "    "
        return lines, ind, close


def _groups(lp):
    """Sum atoms grouped by (sum, slot values): one loop each."""
    found = set()
    for o in lp.outputs:
        for e in (o.exprs if o.kind != "scatter" else [e for _, e in o.exprs] + [a for a, f in o.scatter]):
            found |= atoms(e)
        for _, f in o.scatter:
            found.add(f)
            found |= atoms(f)
    groups = {}
    for f in sorted(found, key=lambda f: (f.func.red.k, str(f))):
        g = groups.setdefault((f.func.red.k, f.args), {"red": f.func.red, "args": f.args, "atoms": [],
                                                        "scatter": set()})
        g["atoms"].append(f)
    for o in lp.outputs:
        for _, f in o.scatter:
            groups[f.func.red.k, f.args]["scatter"].add(o.arg)
    return list(groups.values())


def render_loops(lp, name, target, options, title=None) -> Kernel:
    em = _Emit(lp, name, target, options)
    M = em.M
    groups = _groups(lp)
    place = {}
    for n, g in enumerate(groups):
        g["n"] = n
        for f in g["atoms"]:
            place[f] = sp.Symbol(f"sg_A{len(place)}", real=True)
            em.names[place[f]] = place[f].name
    # top level: slot values of every loop, plain results, explicit parts and adjoints
    top = []
    for g in groups:
        g["slots"] = (len(top), len(g["args"]) - 1)
        top += [a.xreplace(place) for a in g["args"][:-1]]
    starts = []  # per result: where its expressions start in ``top`` (maps: None, printed in their loop)
    for o in lp.outputs:
        starts.append(None if o.kind == "map" else len(top))
        if o.kind == "plain":
            top += [e.xreplace(place) for e in o.exprs]
        elif o.kind == "scatter":
            top += [e.xreplace(place) for _, e in o.exprs] + [a.xreplace(place) for a, _ in o.scatter]
    temps, reduced = sp.cse(top, symbols=sp.numbered_symbols("t", real=True), order="none") if top else ([], [])
    for t, _ in temps:
        em.names[t] = t.name
    em.ops += sum(sp.count_ops(e) for _, e in temps)
    ind = "    "
    lines = [f"{ind}const double *const sg_d{k} = (const double *)sg_data[{k}];" if d.dtype.kind == "f" else
             f"{ind}const int64_t *const sg_d{k} = (const int64_t *)sg_data[{k}];" for k, d in enumerate(lp.data)]
    for a, syms in enumerate(lp.symbols):
        items = syms.items() if isinstance(syms, dict) else enumerate(syms)
        lines += [f"{ind}const {M} {em.names[s]} = ({M}){em.arg_c[a]}[{j}];" for j, s in items]
    # straight-line code and loops, each as soon as what it reads is known
    known = set(em.names) - set(place.values()) - {t for t, _ in temps}
    pending = [("t", t, e) for t, e in temps] + [("g", g, None) for g in groups]
    while pending:
        progress = False
        for item in list(pending):
            kind, x, e = item
            if kind == "t":
                if e.free_symbols <= known:
                    lines.append(f"{ind}const {M} {x.name} = {em.p(e)};")
                    known.add(x)
                    pending.remove(item)
                    progress = True
            else:
                a, n = x["slots"]
                need = set().union(*[r.free_symbols for r in reduced[a:a + n]]) if n else set()
                if need <= known:
                    lines += _sum_loop(em, x, reduced[a:a + n], place, ind)
                    known |= {place[f] for f in x["atoms"]}
                    pending.remove(item)
                    progress = True
        if not progress:
            raise AssertionError("symgrad: the loops of a kernel depend on each other (a bug in symgrad)")
    frees = []
    for o, c, start in zip(lp.outputs, em.res_c, starts):
        if o.kind == "plain":
            lines += [f"{ind}{c}[{k}] = {em.p(e)};" for k, e in enumerate(reduced[start:start + o.size])]
        elif o.kind == "scatter":
            ne = len(o.exprs)
            lines.append(f"{ind}for (int64_t sg_j = 0; sg_j < {o.size}; ++sg_j) {c}[sg_j] = 0;")
            lines += [f"{ind}{c}[{j}] = {em.p(e)};" for (j, _), e in zip(o.exprs, reduced[start:start + ne])]
            for (adj, f), a in zip(o.scatter, reduced[start + ne:start + ne + len(o.scatter)]):
                g = next(g for g in groups if f in g["atoms"])
                lines += [f"{ind}{{ const {M} sg_adj = {em.p(a)};",
                          f"{ind}  for (int64_t sg_j = 0; sg_j < {o.size}; ++sg_j) "
                          f"{c}[sg_j] += sg_adj*sg_S{g['n']}_{o.arg}[sg_j]; }}"]
        else:
            lines += _map_loop(em, o, c, place, ind)
    for g in groups:
        frees += [f"{ind}free(sg_S{g['n']}_{a});" for a in sorted(g["scatter"])]
    lines += frees
    return _kernel(em, lines, title)


def _sum_loop(em, g, slot_values, place, ind):
    """One loop over a sum's index variables: every derivative of it wanted (accumulators)
    and the scatters of its read partials into large arguments' gradients."""
    M, W, red = em.M, em.W, g["red"]
    n = g["n"]
    for s, v in zip(red.slots, slot_values):
        em.names[s] = f"sg_s{n}_{red.slots.index(s)}"
    alphas = [f.func.alpha for f in g["atoms"]]
    exprs = [red.derivative(al) for al in alphas]
    scat = []  # (argument, read symbol)
    for a in sorted(g["scatter"]):
        for r in red.arg_reads(a):
            scat.append((a, r))
            exprs.append(sp.diff(red.body, r))
    inner_v = red.loops[-1][0]
    how = [_innermost(em.lp.reads[r][2], inner_v) for _, r in scat]
    simd = "gather" not in how and _lanes_apart([em.lp.reads[r][2] for (_, r), h in zip(scat, how) if h == "direct"],
                                                [a for (a, _), h in zip(scat, how) if h == "direct"], inner_v)
    lanes = [k for k, h in enumerate(how) if h == "none"]
    na, nl = len(alphas), len(lanes)
    total = math.prod(e for _, e in red.loops)
    lines = [f"{ind}/* sum {red.k}: {', '.join(f'sg_i{v} < {e}' for v, e in red.loops)} */"]
    lines += [f"{ind}{M} {place[f].name};" for f in g["atoms"]]
    lines.append(f"{ind}{{")
    i2 = ind + "    "
    lines += [f"{i2}const {M} sg_s{n}_{k} = {em.p(v)};" for k, v in enumerate(slot_values)]
    lines.append(f"{i2}{M} sg_part[{CHUNKS * max(na, 1)}];")
    for a in sorted(g["scatter"]):
        size = em.lp.args[a].size
        lines.insert(0, f"{ind}{M} *sg_S{n}_{a} = ({M} *)calloc({CHUNKS * size}, sizeof({M}));")
        lines.insert(1, f"{ind}if (!sg_S{n}_{a}) symgrad_alloc((size_t)-1);")
    par = f"sg_par && {total} >= {PARALLEL_MIN}"
    lines += ["#ifdef _OPENMP", f"{i2}_Pragma(\"omp parallel for schedule(static) if({par})\")", "#endif",
              f"{i2}for (int64_t sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {{"]
    i3 = i2 + "    "
    lines.append(f"{i3}{M} sg_acc[{max(na, 1) * W}] = {{0}};")
    for a in sorted(g["scatter"]):
        lines.append(f"{i3}{M} *restrict sg_Sc{a} = sg_S{n}_{a} + sg_c*{em.lp.args[a].size};")
    body_lines, reduced = em.body(exprs, "", f"u{n}_")
    accs = reduced[:na]
    parts = reduced[na:]
    if len(red.loops) == 1:
        v, e = red.loops[0]
        lo, hi = f"{e}*sg_c/{CHUNKS}", f"{e}*(sg_c + 1)/{CHUNKS}"
        opened, i4, close = [], i3, []
    else:
        outer = red.loops[:-1]
        opened, i4, close = em.loops(outer, i3)
        v, e = red.loops[-1]
        lo, hi = "0", str(e)
    lines += opened
    if nl:
        lines.append(f"{i4}{M} sg_lacc[{nl * W}] = {{0}};")
    i5 = i4 + "    "
    lines += [f"{i4}for (int64_t sg_jb = {lo}; sg_jb < {hi}; sg_jb += {W}) {{",
              f"{i5}const int sg_w = {hi} - sg_jb < {W} ? (int)({hi} - sg_jb) : {W};"]
    if simd:
        lines.append(f"{i5}SYMGRAD_SIMD")
    i6 = i5 + "    "
    lines.append(f"{i5}for (int sg_l = 0; sg_l < sg_w; ++sg_l) {{")
    lines.append(f"{i6}const int64_t sg_i{v} = sg_jb + sg_l;")
    lines += [i6 + x for x in body_lines]
    lines += [f"{i6}sg_acc[{k * W} + sg_l] += {em.p(x)};" for k, x in enumerate(accs)]
    for k, ((a, r), x, h) in enumerate(zip(scat, parts, how)):
        idx = index_c(em.lp.reads[r][2])
        if h == "none":
            lines.append(f"{i6}sg_lacc[{lanes.index(k) * W} + sg_l] += {em.p(x)};")
        else:
            lines.append(f"{i6}sg_Sc{a}[{idx}] += {em.p(x)};")
    lines += [f"{i5}}}", f"{i4}}}"]
    for m, k in enumerate(lanes):
        a, r = scat[k]
        lines.append(f"{i4}{{ {M} sg_z = 0; for (int sg_l = 0; sg_l < {W}; ++sg_l) sg_z += sg_lacc[{m * W} + sg_l]; "
                     f"sg_Sc{a}[{index_c(em.lp.reads[r][2])}] += sg_z; }}")
    lines += close
    for k in range(na):
        lines.append(f"{i3}{{ {M} sg_z = 0; for (int sg_l = 0; sg_l < {W}; ++sg_l) sg_z += sg_acc[{k * W} + sg_l]; "
                     f"sg_part[sg_c*{na} + {k}] = sg_z; }}")
    lines.append(f"{i2}}}")
    for k, f in enumerate(g["atoms"]):
        lines.append(f"{i2}{place[f].name} = 0; for (int sg_c = 0; sg_c < {CHUNKS}; ++sg_c) "
                     f"{place[f].name} += sg_part[sg_c*{na} + {k}];")
    for a in sorted(g["scatter"]):
        size = em.lp.args[a].size
        lines.append(f"{i2}for (int sg_c = 1; sg_c < {CHUNKS}; ++sg_c) for (int64_t sg_j = 0; sg_j < {size}; ++sg_j) "
                     f"sg_S{n}_{a}[sg_j] += sg_S{n}_{a}[sg_c*{size} + sg_j];")
    lines.append(f"{ind}}}")
    return lines


def _map_loop(em, o, c, place, ind):
    """A map result: every entry of the leading axes by one loop nest, SIMD innermost."""
    exprs = [e.xreplace(place) for e in o.exprs]
    tail = len(exprs)
    strides, s = [], tail
    for _, e in reversed(o.loops):
        strides.insert(0, s)
        s *= e
    flat = " + ".join(f"{st}*sg_i{v}" for (v, _), st in zip(o.loops, strides))
    body_lines, reduced = em.body(exprs, "", f"m{c}_")
    total = math.prod(e for _, e in o.loops)
    i2 = ind + "    "
    lines = [f"{ind}/* {c}: {', '.join(f'sg_i{v} < {e}' for v, e in o.loops)} */",
             "#ifdef _OPENMP", f"{ind}_Pragma(\"omp parallel for schedule(static) if(sg_par && {total} >= "
             f"{PARALLEL_MIN})\")", "#endif", f"{ind}for (int64_t sg_c = 0; sg_c < {CHUNKS}; ++sg_c) {{"]
    if len(o.loops) == 1:
        v, e = o.loops[0]
        opened, i3, close = [], i2, []
        lo, hi = f"{e}*sg_c/{CHUNKS}", f"{e}*(sg_c + 1)/{CHUNKS}"
    else:
        opened, i3, close = em.loops(o.loops[:-1], i2)
        v, e = o.loops[-1]
        lo, hi = "0", str(e)
    i4 = i3 + "    "
    lines += opened + [f"{i3}SYMGRAD_SIMD", f"{i3}for (int64_t sg_i{v} = {lo}; sg_i{v} < {hi}; ++sg_i{v}) {{"]
    lines += [i4 + x for x in body_lines]
    lines += [f"{i4}{c}[({flat}) + {k}] = {em.p(x)};" for k, x in enumerate(reduced)]
    lines += [f"{i3}}}"] + close + [f"{ind}}}"]
    return lines


def _kernel(em, body, title):
    lp, name, target, R = em.lp, em.name, em.target, em.R
    plain = [f"const {R} *{c}" for c in em.arg_c] + [f"{R} *{c}" for c in em.res_c]
    restrict = [f"const {R} *restrict {c}" for c in em.arg_c] + [f"{R} *restrict {c}" for c in em.res_c]
    names = em.arg_c + em.res_c
    sizes = [a.size for a in lp.args] + [o.size for o in lp.outputs]
    nd = max(1, len(lp.data))
    batch, streams, setter = (target.entry(name, w) for w in ("batch", "streams", "data"))
    label = (title or name).replace("*/", "* /")
    src = [f"/* {name}: {label}, generated by symgrad */", '#include "symgrad_rt.h"', "",
           f"static const void *sg_data[{nd}];", f"static int sg_data_set = {int(not lp.data)};", "",
           f"void {setter}(const void *const *p) {{",
           f"    for (int k = 0; k < {len(lp.data)}; ++k) sg_data[k] = p[k];", "    sg_data_set = 1;", "}", "",
           f"static void {name}_one({', '.join(restrict)}, int sg_par) {{", *body, "}", "",
           f"void {batch}(int64_t n, int sg_mode, {', '.join(plain)}) {{",
           "    if (!sg_data_set) {  /* never reached through symgrad: NaN, not a crash */",
           *[f"        for (int64_t sg_j = 0; sg_j < n*{s}; ++sg_j) {c}[sg_j] = NAN;"
             for c, s in zip(em.res_c, sizes[len(em.arg_c):])],
           "        return;", "    }",
           f"    if (n == 1) {{ {name}_one({', '.join(names)}, !(sg_mode & 4)); return; }}",
           "#ifdef _OPENMP", "    _Pragma(\"omp parallel for schedule(static) if(!(sg_mode & 4))\")", "#endif",
           "    for (int64_t sg_b = 0; sg_b < n; ++sg_b)",
           f"        {name}_one({', '.join(f'{c} + sg_b*{s}' for c, s in zip(names, sizes))}, 0);", "}", "",
           f"void {name}({', '.join(plain)}) {{ {batch}(1, 4, {', '.join(names)}); }}", "",
           f"int {streams}(void) {{ return 0; }}", ""]
    cdecl = (f"void {name}({', '.join(plain)});\n"
             f"void {batch}(int64_t n, int mode, {', '.join(plain)});\n"
             f"int {streams}(void);\nvoid {setter}(const void *const *p);\n")
    return Kernel(name, "\n".join(src) + "\n", cdecl, em.ops)
