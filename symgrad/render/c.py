"""The C-family printer: sympy's C99 printer plus symgrad's conventions.

Targets differ only by the data in ``Target`` (types, qualifiers, loop shape);
the printer never post-processes its own output."""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

import sympy as sp
from sympy.codegen.ast import float32, real
from sympy.printing.c import C99CodePrinter

from .. import config
from ..errors import CompileError

# Kernel-internal C names are "n", "i", "t<k>" and "sg_*"; user names are kept clear of them.
_C_RESERVED = set(C99CodePrinter.reserved_words) | {"n", "i", "restrict", "inline"}


@dataclass(frozen=True)
class Target:
    """What differs between kernels of one printer: the number type and the SIMD block.
    (A CUDA target would add its qualifiers and kernel shape here, as data.)"""

    real: str   # C type of every number
    block: int  # points per SIMD block


TARGETS = {
    ("c", "float64"): Target("double", 4),
    ("c", "float32"): Target("float", 8),
}

class Printer(C99CodePrinter):
    """C99 printer with symgrad's names, literal constants and multiplication powers."""

    def __init__(self, names, target):
        settings = {"order": "none"}  # print terms in sympy's stored order: no costly sorting
        if target.real == "float":
            settings["type_aliases"] = {real: float32}
        super().__init__(settings)
        self.names, self.target = names, target

    def _print_Symbol(self, s):
        try:
            return self.names[s]
        except KeyError:
            raise CompileError(f"symbol {s} is not an input or temporary of this kernel") from None

    def _literal(self, value):
        return self._print(sp.Float(value, 17))

    def _one(self):
        return "1.0F" if self.target.real == "float" else "1.0"

    def _print_Mul(self, e):
        # x/10 as a division, as written, not as x times a rounded 1/10
        c, rest = e.as_coeff_Mul()
        if c.is_Rational and not c.is_Integer and rest != 1:
            return f"({self._print(c.p * rest)})/{self._print(sp.Integer(c.q))}"
        return super()._print_Mul(e)

    def _print_Integer(self, e):
        # Beyond 2**53 a C integer literal could overflow; a double literal is what is meant.
        return super()._print_Integer(e) if abs(e.p) < 2**53 else self._literal(e.p)

    def _print_BooleanTrue(self, e):
        return "1"

    def _print_BooleanFalse(self, e):
        return "0"

    def _print_Pi(self, e):
        return self._literal(sp.pi.evalf(20))

    def _print_Exp1(self, e):
        return self._literal(sp.E.evalf(20))

    def _print_EulerGamma(self, e):
        return self._literal(sp.EulerGamma.evalf(20))

    def _print_Pow(self, e):
        b, x = e.args
        if x.is_Integer and 1 < abs(x) <= config.MAX_MUL_POW:
            s = self._ipow(self.parenthesize(b, 50), abs(int(x)))
            return s if x > 0 else f"{self._one()}/{s}"
        if x == -1:
            return f"{self._one()}/{self.parenthesize(b, 50)}"
        if x.is_Rational and x.q in (2, 3) and abs(x.p) <= config.MAX_MUL_POW:
            root = f"{'sqrt' if x.q == 2 else 'cbrt'}{self._suffix()}({self._print(b)})"
            s = self._ipow(root, abs(int(x.p)))
            return s if x > 0 else f"{self._one()}/{s}"
        return super()._print_Pow(e)

    def _suffix(self):
        return "f" if self.target.real == "float" else ""

    def _ipow(self, base, n):
        """base**n by repeated squaring; the C compiler shares the repeated subterms."""
        if n == 1:
            return base
        half = self._ipow(base, n // 2)
        sq = f"({half}*{half})"
        return f"({sq}*{base})" if n % 2 else sq

    def _print_Piecewise(self, e):
        *pieces, (last, cond) = e.args
        if cond != sp.true:
            pieces.append((last, cond))
            last = sp.nan
        s = self._print(last)
        for value, cond in reversed(pieces):
            s = f"(({self._print(cond)}) ? ({self._print(value)}) : ({s}))"
        return s

    def _print_polygamma(self, e):
        m, x = e.args
        return f"symgrad_polygamma({self._print(m)}, {self._print(x)})"

    def _print_Floor(self, e):
        return f"floor{self._suffix()}({self._print(e.args[0])})"

    def _print_Ceiling(self, e):
        return f"ceil{self._suffix()}({self._print(e.args[0])})"

    def _print_copysign(self, e):
        return f"copysign{self._suffix()}({self._print(e.args[0])}, {self._print(e.args[1])})"

    def _print_DiracDelta(self, e):
        return "0"  # the derivative of a step, almost everywhere

    def _print_Heaviside(self, e):
        x = self._print(e.args[0])
        return f"(({x}) > 0 ? {self._one()} : (({x}) < 0 ? 0 : 0.5))"

    def _print_ComplexInfinity(self, e):
        return "NAN"

    def emptyPrinter(self, e):
        raise CompileError(f"symgrad cannot print {type(e).__name__} in C: {e}")

    def _print_not_supported(self, e):
        raise CompileError(f"symgrad cannot print {type(e).__name__} in C: {e}")


@dataclass(frozen=True)
class Kernel:
    """Generated source for one function: ``NAME(args..., results...)`` and ``NAME_batch``."""

    name: str
    source: str       # definitions (includes symgrad_rt.h)
    cdecl: str        # declarations of the exported functions
    ops: int
    parts: tuple = ()   # further translation units (segments of a large kernel), compiled in parallel
    cflags: tuple = ()  # compiler flags this kernel needs beyond the defaults


def _cname(name, taken, prefix=""):
    base = prefix + re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not base or base[0].isdigit():
        base = "_" + base
    if base.startswith("sg_"):
        base = "u" + base
    while base in _C_RESERVED or keyword.iskeyword(base) or re.fullmatch(r"t\d+", base) or base in taken:
        base += "_"
    taken.add(base)
    return base


def render(prog, name, target: Target) -> Kernel:
    """Print a Program as a C kernel named ``name`` (see Kernel)."""
    taken = set()
    arg_names = [_cname(a.name, taken, "a_") for a in prog.args]  # a_ keeps clear of exp, linux...
    res_names = [_cname(o.name, taken) for o in prog.outputs]
    T = target.real
    ops = prog.count_ops()
    plain = [f"const {T} *{c}" for c in arg_names] + [f"{T} *{c}" for c in res_names]
    sizes = [a.size for a in prog.args] + [o.size for o in prog.outputs]
    src, parts, nseg, scratch = _omp_segments(prog, name, target, arg_names, res_names)
    scalar = all(a.shape == () for a in prog.args)
    src += _omp_entry_points(name, target, arg_names, res_names, sizes, plain, ops, nseg, scratch, scalar)
    cdecl = (f"void {name}({', '.join(plain)});\n"
             f"void {name}_batch(int64_t n, {', '.join(plain)});\n")
    if scalar:
        byval = ", ".join([f"{T} {c}" for c in arg_names] + [f"{T} *sg_res"])
        cdecl += f"void {name}_scalar({byval});\n"
    head = f"/* {name}: generated by symgrad */\n#include \"symgrad_rt.h\"\n\n"
    # Past LARGE_KERNEL_OPS, -O1 with SIMD lanes: on straight-line code -O3 adds much
    # compile time and little speed.
    cflags = ("-O1", "-ftree-vectorize") if ops > config.LARGE_KERNEL_OPS else ()
    return Kernel(name, head + "\n".join(src), cdecl, ops, tuple(head + "\n".join(p) for p in parts),
                  cflags)


def _omp_segments(prog, name, target, arg_names, res_names):
    """The per-point code as segments of at most config.MAX_SEGMENT statements.

    Each segment runs its own SIMD loop over the lanes of a block in its own function, so
    the C compiler's register allocation (superlinear in function size) stays cheap for
    large programs. Temporaries that later segments read pass through ``sg_t``, a
    lanes-innermost scratch array. Within a block, lane j of number k of an argument or
    result sits at [k*W + j], so every access of the lane loop has unit stride."""
    T, W = target.real, target.block
    stmts = [(t, e) for t, e in prog.body]
    stmts += [((c, k), e) for o, c in zip(prog.outputs, res_names) for k, e in enumerate(o.exprs)]
    # A segment's size counts its statements and the earlier temporaries it must load.
    temps = {t for t, _ in prog.body}
    segs, current, here, loads = [], [], set(), set()
    for t, e in stmts:
        new = {s for s in e.free_symbols if s in temps and s not in here and s not in loads}
        if current and len(current) + len(loads) + len(new) >= config.MAX_SEGMENT:
            segs.append(current)
            current, here, loads = [], set(), set()
            new = {s for s in e.free_symbols if s in temps}
        current.append((t, e))
        here.add(t)
        loads |= new
    segs.append(current)
    home = {t: i for i, seg in enumerate(segs) for t, _ in seg}
    slot = {}
    for i, seg in enumerate(segs):
        for _, e in seg:
            for s in e.free_symbols:
                if home.get(s, i) < i and s not in slot:
                    slot[s] = len(slot)
    where = {s: f"{c}[{k * W}]" for a, c in zip(prog.args, arg_names) for k, s in enumerate(a.symbols)}
    where.update({t: f"sg_t[{slot[t] * W}]" for t in slot})
    number = {t: k for k, (t, _) in enumerate(prog.body)}
    inputs, seen = {}, set()
    for k, s in enumerate(prog.input_symbols()):
        c = "sg_v_" + re.sub(r"[^0-9A-Za-z_]", "_", s.name)
        inputs[s] = c if c not in seen else f"sg_in{k}"
        seen.add(inputs[s])
    params = ([f"const {T} *restrict {c}" for c in arg_names] + [f"{T} *restrict {c}" for c in res_names]
              + [f"{T} *restrict sg_t"])
    call = ", ".join([c + " + sg_j" for c in arg_names + res_names] + ["sg_t + sg_j"])
    multi = len(segs) > 1
    src = []
    for i, seg in enumerate(segs):
        # Every input and earlier temporary the segment reads is loaded once, up front:
        # the statements then touch no memory but their own results.
        used = set().union(*[e.free_symbols for _, e in seg]) if seg else set()
        names = {t: f"t{number[t]}" for t in number}
        names.update(inputs)
        lines = [f"    const {T} {inputs[s]} = {where[s]};" for s in prog.input_symbols() if s in used]
        lines += [f"    const {T} t{number[t]} = {where[t]};" for t in sorted(used & slot.keys(), key=number.get)
                  if home[t] < i]
        p = Printer(names, target)
        for t, e in seg:
            if t in number:
                lines.append(f"    const {T} t{number[t]} = {p.doprint(e)};")
                if t in slot:
                    lines.append(f"    {where[t]} = t{number[t]};")
            else:
                c, k = t
                lines.append(f"    {c}[{k * W}] = {p.doprint(e)};")
        src.append([f"static inline void {name}_s{i}({', '.join(params)}) {{", *lines, "}", "",
                f"{'SYMGRAD_HIDDEN' if multi else 'static'} void {name}_l{i}({', '.join(params)}) {{",
                "    SYMGRAD_SIMD",
                f"    for (int sg_j = 0; sg_j < {W}; ++sg_j) {name}_s{i}({call});", "}", ""])
    scratch = max(1, len(slot) * W)
    if not multi:
        return src[0], [], 1, scratch
    # Several segments: each group of segments is its own translation unit (compiled in
    # parallel); the main unit declares their lane functions.
    per = config.SEGMENTS_PER_UNIT
    chunks = [[line for seg in src[k:k + per] for line in seg] for k in range(0, len(src), per)]
    protos = [f"SYMGRAD_HIDDEN void {name}_l{i}({', '.join(params)});" for i in range(len(segs))]
    return protos + [""], chunks, len(segs), scratch


def _local(T, name, count):
    """Declaration (and release) of a local array: on the stack while small, else on the heap,
    so that kernels of large arrays never overflow a thread's stack."""
    if count * 8 <= config.MAX_STACK_BYTES:
        return (f"    {T} {name}[{count}];",)
    return (f"    {T} *{name} = ({T} *)symgrad_alloc({count} * sizeof({T}));", f"    free({name});")


def _omp_entry_points(name, target, arg_names, res_names, sizes, plain, ops, nseg, scratch, scalar):
    """Block, tail, one-point, batch and scalar entry points around the segments."""
    T, W = target.real, target.block
    names = arg_names + res_names
    nargs = len(arg_names)
    at = lambda off: ", ".join(f"{c} + {off}*{s}" for c, s in zip(names, sizes))  # noqa: E731
    params = [f"const {T} *restrict {c}" for c in arg_names] + [f"{T} *restrict {c}" for c in res_names]
    # A block of W points: transpose arrays to lanes-innermost, run the SIMD lane loop, transpose back.
    soa = [c if s == 1 else f"sg_soa_{c}" for c, s in zip(names, sizes)] + ["sg_t"]
    block_locals = [("sg_t", scratch)] + [(f"sg_soa_{c}", W * s) for c, s in zip(names, sizes) if s > 1]
    block = [f"static void {name}_block({', '.join(params)}, int sg_nt) {{"]
    block += [_local(T, v, n)[0] for v, n in block_locals]
    block += [f"    for (int sg_j = 0; sg_j < {W}; ++sg_j) for (int sg_k = 0; sg_k < {s}; ++sg_k) "
              f"sg_soa_{c}[sg_k*{W} + sg_j] = {c}[sg_j*{s} + sg_k];"
              for c, s in zip(arg_names, sizes) if s > 1]
    block += [f"    {name}_l{i}({', '.join(soa)});" for i in range(nseg)]
    # Array results fill W*s consecutive numbers per block; in a large batch (sg_nt) they
    # are assembled in point order first and streamed out with non-temporal stores.
    wide = [(c, s) for c, s in zip(res_names, sizes[nargs:]) if s > 1]
    for c, s in wide:
        block += ["    if (sg_nt) {",
                  f"        {T} sg_aos_{c}[{W * s}];",
                  f"        for (int sg_j = 0; sg_j < {W}; ++sg_j) for (int sg_k = 0; sg_k < {s}; ++sg_k) "
                  f"sg_aos_{c}[sg_j*{s} + sg_k] = sg_soa_{c}[sg_k*{W} + sg_j];",
                  f"        symgrad_stream_{T}({c}, sg_aos_{c}, {W * s});",
                  "    } else {",
                  f"        for (int sg_j = 0; sg_j < {W}; ++sg_j) for (int sg_k = 0; sg_k < {s}; ++sg_k) "
                  f"{c}[sg_j*{s} + sg_k] = sg_soa_{c}[sg_k*{W} + sg_j];",
                  "    }"]
    # Streaming pays where writing dominates: few operations per result number.
    out_numbers = sum(s for _, s in wide)
    out_bytes = out_numbers * (8 if T == "double" else 4) if ops <= 16 * out_numbers else 0
    block += [line for v, n in block_locals for line in _local(T, v, n)[1:]]
    block += ["}", ""]
    # Threads pay off above ~2e5 operations per call (waking a team costs ~10 us).
    par_min = max(1, 200_000 // max(ops * W, 1))
    tail = [f"static void {name}_tail(int64_t sg_r, {', '.join(plain)}) {{"]
    tail += [_local(T, f"sg_buf_{c}", W * s)[0] for c, s in zip(names, sizes)]
    tail += [f"    symgrad_pad_{T}({c}, sg_r, {s}, {W}, sg_buf_{c});" for c, s in zip(arg_names, sizes)]
    tail += [f"    {name}_block({', '.join('sg_buf_' + c for c in names)}, 0);"]
    tail += [f"    symgrad_unpad_{T}(sg_buf_{c}, sg_r, {s}, {c});" for c, s in zip(res_names, sizes[nargs:])]
    tail += [line for c, s in zip(names, sizes) for line in _local(T, f"sg_buf_{c}", W * s)[1:]]
    out = [*block, *tail, "}", "",
           f"void {name}({', '.join(plain)}) {{ {name}_tail(1, {', '.join(names)}); }}", "",
           f"void {name}_batch(int64_t n, {', '.join(plain)}) {{",
           f"    const int64_t sg_par_min = {par_min}, sg_nb = n / {W};",
           f"    const int sg_nt = {'n * ' + str(out_bytes) + ' >= SYMGRAD_STREAM_BYTES' if out_bytes else '0'};",
           f"    SYMGRAD_BLOCKS({name}_block({at(f'sg_b*{W}')}, sg_nt))",
           f"    if (n % {W}) {name}_tail(n % {W}, {at(f'sg_nb*{W}')});", "}", ""]
    if scalar:
        # Scalar arguments by value, all results into one buffer: the cheapest call from Python.
        byval = ", ".join([f"{T} {c}" for c in arg_names] + [f"{T} *sg_res"])
        offsets = [sum(sizes[nargs:nargs + k]) for k in range(len(res_names))]
        ptrs = ", ".join([f"&{c}" for c in arg_names] + [f"sg_res + {k}" for k in offsets])
        out += [f"void {name}_scalar({byval}) {{ {name}_tail(1, {ptrs}); }}", ""]
    return out
