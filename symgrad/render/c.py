"""The C-family printer: sympy's C99 printer plus symgrad's conventions.

Targets differ only by the data in ``Target`` (types, qualifiers, loop shape);
the printer never post-processes its own output."""
from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass, replace

import sympy as sp
from sympy.codegen.ast import float32, real
from sympy.printing.c import C99CodePrinter

from sympy.codegen.cfunctions import exp2, expm1, hypot, log1p, log2, log10

from ..errors import CompileError
from ..realfns import Recip, RealFunction

# Kernel-internal C names are "n", "i", "t<k>" and "sg_*"; user names are kept clear of them.
_C_RESERVED = set(C99CodePrinter.reserved_words) | {"n", "i", "restrict", "inline"}


@dataclass(frozen=True)
class Target:
    """What differs between kernels of one printer: the number type and the SIMD block.
    (A CUDA target would add its qualifiers and kernel shape here, as data.)"""

    real: str   # C type of every number
    block: int  # points per SIMD block (256-bit vectors)
    wide: int   # points per block of a kernel of scalars only, on a CPU with 512-bit vectors
    wide_flags: tuple = ("-mprefer-vector-width=512",)


TARGETS = {
    ("c", "float64"): Target("double", 4, 8),
    ("c", "float32"): Target("float", 8, 16),
}


class Printer(C99CodePrinter):
    """C99 printer with symgrad's names, literal constants and multiplication powers."""

    def __init__(self, names, target, options):
        settings = {"order": "none"}  # print terms in sympy's stored order: no costly sorting
        if target.real == "float":
            settings["type_aliases"] = {real: float32}
        super().__init__(settings)
        self.names, self.target, self.options = names, target, options

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
        # x/10 and x/0.1 as divisions, as written, not as x times a rounded 1/10
        recips = [f for f in e.args if isinstance(f, Recip)]
        if recips:
            rest = sp.Mul(*[f for f in e.args if not isinstance(f, Recip)])
            den = "*".join(self._print(f.args[0]) for f in recips)
            return f"({self._print(rest)})/{den if len(recips) == 1 else '(' + den + ')'}"
        c, rest = e.as_coeff_Mul()
        if c.is_Rational and not c.is_Integer and rest != 1:
            return f"({self._print(c.p * rest)})/{self._print(sp.Integer(c.q))}"
        return super()._print_Mul(e)

    def _print_Recip(self, e):
        return f"{self._one()}/{self._print(e.args[0])}"

    def _print_Negation(self, e):
        return f"!({self._print(e.args[0])})"

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
        if x.is_Integer and 1 < abs(x) <= self.options.max_mul_pow:
            s = self._ipow(self.parenthesize(b, 50), abs(int(x)))
            return s if x > 0 else f"{self._one()}/{s}"
        if x == -1:
            return f"{self._one()}/{self.parenthesize(b, 50)}"
        if x.is_Rational and x.q in (2, 3) and abs(x.p) <= self.options.max_mul_pow:
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

    def _call(self, fn, e):
        return f"{fn}{self._suffix()}({', '.join(self._print(a) for a in e.args)})"

    def _print_Floor(self, e):
        return self._call("floor", e)

    def _print_Ceiling(self, e):
        return self._call("ceil", e)

    def _print_Trunc(self, e):
        return self._call("trunc", e)

    def _print_RealPow(self, e):
        b, x = e.args
        if x.is_Rational and x.q == 2 and abs(x.p) <= self.options.max_mul_pow:
            return self._print_Pow(sp.Pow(b, x, evaluate=False))  # sqrt: NaN below 0 as pow
        return f"pow{self._suffix()}({self._print(b)}, {self._print(x)})"

    def _print_Log(self, e):
        return self._call("log", e)

    def _print_Asin(self, e):
        return self._call("asin", e)

    def _print_Acos(self, e):
        return self._call("acos", e)

    def _print_Acosh(self, e):
        return self._call("acosh", e)

    def _print_Atanh(self, e):
        return self._call("atanh", e)

    def _print_Log1p(self, e):
        return self._call("log1p", e)

    def _print_Log2(self, e):
        return self._call("log2", e)

    def _print_Log10(self, e):
        return self._call("log10", e)

    def _print_Cbrt(self, e):
        return self._call("cbrt", e)

    def _print_Abs(self, e):
        return self._call("fabs", e)

    def _print_Sign(self, e):
        x = self._print(e.args[0])  # numpy's sign: 0 for either zero, nan for nan
        return f"(({x}) > 0 ? 1 : (({x}) < 0 ? -1 : (({x}) == 0 ? 0 : ({x}))))"

    def _print_IsNan(self, e):
        return f"isnan({self._print(e.args[0])})"

    def _print_IsInf(self, e):
        return f"isinf({self._print(e.args[0])})"

    def _print_Infinity(self, e):
        return "INFINITY"

    def _print_NegativeInfinity(self, e):
        return "(-INFINITY)"

    def _print_NaN(self, e):
        return "NAN"

    def _print_copysign(self, e):
        return f"copysign{self._suffix()}({self._print(e.args[0])}, {self._print(e.args[1])})"

    def _print_DiracDelta(self, e):
        return "0"  # the derivative of a step, almost everywhere

    def _print_Heaviside(self, e):
        x = self._print(e.args[0])
        return f"(({x}) > 0 ? {self._one()} : (({x}) < 0 ? 0 : 0.5))"

    def emptyPrinter(self, e):
        raise CompileError(f"symgrad cannot print {type(e).__name__} in C: {e}")

    def _print_not_supported(self, e):
        raise CompileError(f"symgrad cannot print {type(e).__name__} in C: {e}")


# What may reach the printer: real arithmetic, real functions, conditions. Anything else
# (I, re, im, arg, zoo, an unevaluated Derivative) means a rule upstream left the reals.
_REAL = (sp.Symbol, sp.Integer, sp.Rational, sp.Float, sp.Add, sp.Mul, sp.Pow, sp.Piecewise,
         sp.functions.elementary.piecewise.ExprCondPair, sp.core.relational.Relational,
         sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom, RealFunction, sp.Abs, sp.sign,
         sp.sin, sp.cos, sp.tan, sp.asin, sp.acos, sp.atan, sp.atan2, sp.sinh, sp.cosh, sp.tanh,
         sp.asinh, sp.acosh, sp.atanh, sp.exp, sp.log, sp.erf, sp.erfc, sp.gamma, sp.loggamma,
         sp.polygamma, sp.Heaviside, sp.DiracDelta, hypot, expm1, exp2, log1p, log2, log10)
_REAL_ATOMS = (sp.core.numbers.NaN, sp.core.numbers.Infinity, sp.core.numbers.NegativeInfinity,
               sp.core.numbers.Pi, sp.core.numbers.Exp1, sp.core.numbers.EulerGamma)


def check_real(prog, name):
    """Raise CompileError unless every expression is real arithmetic symgrad can print."""
    seen = set()
    stack = [e for _, e in prog.body] + prog.output_exprs()
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if isinstance(e, _REAL_ATOMS) or (isinstance(e, _REAL) and not isinstance(e, sp.Number)) or \
                (isinstance(e, sp.Number) and e.is_extended_real):
            stack.extend(e.args)
            continue
        raise CompileError(f"{name}: the derivative holds {type(e).__name__} ({e}), which is not a real "
                           "function symgrad can print; this is a bug in symgrad, please report it")


@dataclass(frozen=True)
class Kernel:
    """Generated source for one function: ``NAME(args..., results...)`` (one point),
    ``NAME_batch(n, mode, args..., results...)`` (mode & 3 = 0: blocks straight into the
    results; 1/2: tiles leaving with non-temporal/plain stores, where ``NAME_streams()`` says
    the kernel has them; mode & 4: on this thread alone) and, for scalar arguments,
    ``NAME_scalar``."""

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


def render(prog, name, target: Target, vector_bits, options, title=None) -> Kernel:
    """Print a Program as a C kernel named ``name`` (see Kernel), for a CPU whose widest SIMD
    registers have ``vector_bits``. A kernel of scalars only then takes blocks of a whole
    512-bit register; array arguments and results keep 256-bit blocks, whose 4x4 transposes
    between point and lane order stay cheapest."""
    wide = vector_bits >= 512 and all(a.size == 1 for a in prog.args) and all(o.size == 1 for o in prog.outputs)
    if wide:
        target = replace(target, block=target.wide)
    for o in prog.outputs:
        if o.size == 0:
            raise CompileError(f"result {o.name!r} has no entries (shape {o.shape}); return at least "
                               "one number per result")
    taken = set()
    arg_names = [_cname(a.name, taken, "a_") for a in prog.args]  # a_ keeps clear of exp, linux...
    res_names = [_cname(o.name, taken) for o in prog.outputs]
    T = target.real
    ops = prog.count_ops()
    plain = [f"const {T} *{c}" for c in arg_names] + [f"{T} *{c}" for c in res_names]
    sizes = [a.size for a in prog.args] + [o.size for o in prog.outputs]
    check_real(prog, name)
    layout = _Layout(prog, res_names, Printer({}, target, options))
    src, parts, nseg, scratch = _omp_segments(prog, name, target, arg_names, res_names, layout.skip, options)
    scalar = all(a.shape == () for a in prog.args)
    src += _omp_entry_points(name, target, arg_names, res_names, sizes, plain, ops, _cost(prog, ops, options), nseg,
                             scratch, scalar, layout, options)
    cdecl = (f"void {name}({', '.join(plain)});\n"
             f"void {name}_batch(int64_t n, int mode, {', '.join(plain)});\n"
             f"int {name}_streams(void);\n")
    if scalar:
        byval = ", ".join([f"{T} {c}" for c in arg_names] + [f"{T} *sg_res"])
        cdecl += f"void {name}_scalar({byval});\n"
    label = (title or name).replace("*/", "* /")
    head = f"/* {name}: {label}, generated by symgrad */\n#include \"symgrad_rt.h\"\n\n"
    # Past LARGE_KERNEL_OPS, -O1 with SIMD lanes: on straight-line code -O3 adds much
    # compile time and little speed.
    cflags = (("-O1", "-ftree-vectorize") if ops > options.large_kernel_ops else ()) + (target.wide_flags if wide else ())
    unit = f"/* {name}: segments, generated by symgrad */\n#define SYMGRAD_SEGMENT_UNIT\n#include \"symgrad_rt.h\"\n\n"
    return Kernel(name, head + "\n".join(src), cdecl, ops, tuple(unit + "\n".join(p) for p in parts),
                  cflags)


def _omp_segments(prog, name, target, arg_names, res_names, skip, options):
    """The per-point code as segments of at most options.max_segment statements.

    Each segment runs its own SIMD loop over the lanes of a block in its own function, so
    the C compiler's register allocation (superlinear in function size) stays cheap for
    large programs. Temporaries that later segments read pass through ``sg_t``, a
    lanes-innermost scratch array. Within a block, lane j of number k of an argument or
    result sits at [k*W + j], so every access of the lane loop has unit stride."""
    T, W = target.real, target.block
    stmts = [(t, e) for t, e in prog.body]
    stmts += [((c, k), e) for o, c in zip(prog.outputs, res_names) for k, e in enumerate(o.exprs)
              if (c, k) not in skip]
    # A segment's size counts its statements and the earlier temporaries it must load.
    temps = {t for t, _ in prog.body}
    segs, current, here, loads = [], [], set(), set()
    for t, e in stmts:
        new = {s for s in e.free_symbols if s in temps and s not in here and s not in loads}
        if current and len(current) + len(loads) + len(new) >= options.max_segment:
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
        p = Printer(names, target, options)
        for t, e in seg:
            if t in number:
                lines.append(f"    const {T} t{number[t]} = {p.doprint(e)};")
                if t in slot:
                    lines.append(f"    {where[t]} = t{number[t]};")
            else:
                c, k = t
                lines.append(f"    {c}[{k * W}] = {p.doprint(e)};")
        # Small kernels inline all the way into the batch loop (constants stay in registers).
        kind = "SYMGRAD_HIDDEN" if multi else "static inline" if len(seg) <= options.inline_segment else \
            "static SYMGRAD_NOINLINE"
        src.append([f"SYMGRAD_ALWAYS_INLINE void {name}_s{i}({', '.join(params)}) {{", *lines, "}", "",
                    f"{kind} void {name}_l{i}({', '.join(params)}) {{",
                    "    SYMGRAD_SIMD",
                    f"    for (int sg_j = 0; sg_j < {W}; ++sg_j) {name}_s{i}({call});", "}", ""])
    scratch = max(1, len(slot) * W)
    if not multi:
        return src[0], [], 1, scratch
    # Several segments: each group of segments is its own translation unit (compiled in
    # parallel); the main unit declares their lane functions.
    per = options.segments_per_unit
    chunks = [[line for seg in src[k:k + per] for line in seg] for k in range(0, len(src), per)]
    protos = [f"SYMGRAD_HIDDEN void {name}_l{i}({', '.join(params)});" for i in range(len(segs))]
    return protos + [""], chunks, len(segs), scratch


def _cost(prog, ops, options):
    """``ops`` operations per point with calls of elementary functions weighted as
    options.call_cost: the arithmetic side of the compute/memory balance."""
    calls = sum(1 for e in prog.output_exprs() + [e for _, e in prog.body]
                for x in sp.preorder_traversal(e) if isinstance(x, sp.Function)
                or (isinstance(x, sp.Pow) and not x.exp.is_Integer))
    return ops + (options.call_cost - 1) * calls


def _local(T, name, count, options):
    """Declaration (and release) of a local array: on the stack while small, else on the heap,
    so that kernels of large arrays never overflow a thread's stack."""
    if count * 8 <= options.max_stack_bytes:
        return (f"    {T} {name}[{count}];",)
    return (f"    {T} *{name} = ({T} *)symgrad_alloc({count} * sizeof({T}));", f"    free({name});")


class _Layout:
    """Which entries of each array result the lane code computes, in groups of four (one
    4x4 transpose): a group of numbers only (the zeros of a sparse Hessian, say) is left
    out of the lane code and written from a table: by each block, or in a streamed batch
    once into each thread's tile buffer."""

    def __init__(self, prog, res_names, printer):
        self.computed, self.fixed, self.table, self.skip = {}, {}, {}, set()
        for o, c in zip(prog.outputs, res_names):
            if o.size == 1:
                continue
            groups = [(k, min(k + 4, o.size)) for k in range(0, o.size, 4)]
            fixed = [all(e.is_Number for e in o.exprs[a:b]) for a, b in groups]
            self.computed[c] = _runs([g for g, f in zip(groups, fixed) if not f])
            self.fixed[c] = _runs([g for g, f in zip(groups, fixed) if f])
            if self.fixed[c]:
                self.table[c] = [printer.doprint(e) if e.is_Number else "0" for e in o.exprs]
                self.skip |= {(c, k) for a, b in self.fixed[c] for k in range(a, b)}


def _runs(groups):
    """Merge adjacent (start, end) ranges."""
    out = []
    for a, b in groups:
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _omp_entry_points(name, target, arg_names, res_names, sizes, plain, ops, cost, nseg, scratch, scalar,
                      layout, options):
    """Block, tile, tail, one-point, batch and scalar entry points around the segments."""
    T, W = target.real, target.block
    names = arg_names + res_names
    nargs = len(arg_names)
    res_sizes = dict(zip(res_names, sizes[nargs:]))
    at = lambda off: ", ".join(f"{c} + {off}*{s}" for c, s in zip(names, sizes))  # noqa: E731
    params = [f"const {T} *restrict {c}" for c in arg_names] + [f"{T} *restrict {c}" for c in res_names]
    out = []
    # Numbers of array results that never change: a table, and a fill of np points.
    for c, runs in layout.fixed.items():
        if runs:
            s = res_sizes[c]
            out += [f"static void {name}_fill_{c}({T} *restrict {c}, int64_t sg_np) {{",
                    f"    static const {T} sg_table[{s}] = {{{', '.join(layout.table[c])}}};",
                    f"    const {T} *sg_tab = SYMGRAD_OPAQUE(sg_table);",
                    "    for (int64_t sg_j = 0; sg_j < sg_np; ++sg_j) {",
                    *[f"        for (int sg_k = {a}; sg_k < {b}; ++sg_k) {c}[sg_j*{s} + sg_k] = sg_tab[sg_k];"
                      for a, b in runs],
                    "    }", "}", ""]
    filled = [c for c, runs in layout.fixed.items() if runs]
    # A block of W points: transpose arrays to lanes-innermost, run the SIMD lane loop, transpose
    # back the computed entries, and write the fixed ones unless the caller has (sg_fill = 0).
    soa = [c if s == 1 else f"sg_soa_{c}" for c, s in zip(names, sizes)] + ["sg_t"]
    block_locals = [("sg_t", scratch)] + [(f"sg_soa_{c}", W * s) for c, s in zip(names, sizes) if s > 1]
    block = [f"static inline void {name}_block({', '.join(params)}, int sg_fill) {{"]
    block += [_local(T, v, n, options)[0] for v, n in block_locals]
    block += [f"    symgrad_transpose_{T}({c}, {s}, sg_soa_{c}, {W});" for c, s in zip(arg_names, sizes) if s > 1]
    block += [f"    {name}_l{i}({', '.join(soa)});" for i in range(nseg)]
    block += [f"    symgrad_untranspose_{T}(sg_soa_{c} + {a * W}, {b - a}, {res_sizes[c]}, {c} + {a}, {W});"
              for c, runs in layout.computed.items() for a, b in runs]
    block += [f"    if (sg_fill) {name}_fill_{c}({c}, {W});" for c in filled]
    block += [line for v, n in block_locals for line in _local(T, v, n, options)[1:]]
    block += ["}", ""]
    # Threads pay off above ~2e5 operations per call (waking a team costs ~10 us).
    par_min = max(1, 200_000 // max(ops * W, 1))
    tail = [f"static void {name}_tail(int64_t sg_r, {', '.join(plain)}) {{"]
    tail += [_local(T, f"sg_buf_{c}", W * s, options)[0] for c, s in zip(names, sizes)]
    tail += [f"    symgrad_pad_{T}({c}, sg_r, {s}, {W}, sg_buf_{c});" for c, s in zip(arg_names, sizes)]
    tail += [f"    {name}_block({', '.join('sg_buf_' + c for c in names)}, 1);"]
    tail += [f"    symgrad_unpad_{T}(sg_buf_{c}, sg_r, {s}, {c});" for c, s in zip(res_names, sizes[nargs:])]
    tail += [line for c, s in zip(names, sizes) for line in _local(T, f"sg_buf_{c}", W * s, options)[1:]]
    tail += ["}", ""]
    # sg_mode & 4: no thread team (a child made by fork: the OpenMP runtime is not fork-safe)
    batch = [f"void {name}_batch(int64_t n, int sg_mode, {', '.join(plain)}) {{", "    int64_t sg_done = 0;",
             "    const int sg_serial = (sg_mode & 4) != 0;"]
    # Where writing memory and not arithmetic bounds the kernel, a large batch can run in
    # tiles of whole blocks whose results gather in a local buffer (point order, as in the
    # result) and leave it as whole cache lines, with non-temporal stores (sg_mode 1: no read
    # of each destination line first, a third less memory traffic) or plain ones (sg_mode 2);
    # the caller picks (see function._Stores). Each thread takes one range of tiles and
    # writes the fixed numbers into its buffer once.
    out_numbers = sum(sizes[nargs:])
    itemsize = 8 if T == "double" else 4
    unit = math.lcm(W, *[64 // math.gcd(64, s * itemsize) for s in sizes[nargs:]])  # whole lines
    tile = unit * max(1, options.tile_numbers // (unit * out_numbers))
    tiles = []
    streams = cost <= options.stream_cost_per_number * out_numbers and \
        tile * out_numbers * itemsize <= options.max_stack_bytes // 2
    if streams:
        buf = {c: f"sg_tile_{c}" for c in res_names}
        args = [f"{c} + (sg_i*{tile} + sg_b*{W})*{s}" for c, s in zip(arg_names, sizes)]
        args += [f"{buf[c]} + sg_b*{W * s}" for c, s in zip(res_names, sizes[nargs:])]
        tiles = [f"static void {name}_tiles(int64_t sg_lo, int64_t sg_hi, int sg_nt, {', '.join(params)}) {{"]
        tiles += [f"    {T} {buf[c]}[{tile * s}];" for c, s in zip(res_names, sizes[nargs:])]
        tiles += [f"    {name}_fill_{c}({buf[c]}, {tile});" for c in filled]
        tiles += ["    for (int64_t sg_i = sg_lo; sg_i < sg_hi; ++sg_i) {",
                  f"        for (int sg_b = 0; sg_b < {tile // W}; ++sg_b) {name}_block({', '.join(args)}, 0);"]
        tiles += [f"        symgrad_stream_{T}({c} + sg_i*{tile * s}, {buf[c]}, {tile * s}, sg_nt);"
                  for c, s in zip(res_names, sizes[nargs:])]
        tiles += ["    }", "}", ""]
        batch += ["    if (sg_mode & 3) {",
                  f"        const int64_t sg_par_min = sg_serial ? INT64_MAX : 1, sg_nb = n / {tile};",
                  "        const int sg_nt = (sg_mode & 3) == 1;",
                  f"        SYMGRAD_RANGES({name}_tiles(sg_lo, sg_hi, sg_nt, {', '.join(names)}))",
                  f"        sg_done = sg_nb * {tile};",
                  "    }"]
    batch += ["    {",
              f"        const int64_t sg_par_min = sg_serial ? INT64_MAX : {par_min}, sg_nb = (n - sg_done) / {W};",
              f"        SYMGRAD_BLOCKS({name}_block({at(f'(sg_done + sg_b*{W})')}, 1))",
              f"        sg_done += sg_nb * {W};",
              "    }",
              f"    if (n > sg_done) {name}_tail(n - sg_done, {at('sg_done')});", "}", ""]
    out += [*block, *tiles, *tail,
            f"void {name}({', '.join(plain)}) {{ {name}_tail(1, {', '.join(names)}); }}", "", *batch,
            f"int {name}_streams(void) {{ return {int(bool(streams))}; }}", ""]
    if scalar:
        # Scalar arguments by value, all results into one buffer: the cheapest call from Python.
        byval = ", ".join([f"{T} {c}" for c in arg_names] + [f"{T} *sg_res"])
        offsets = [sum(sizes[nargs:nargs + k]) for k in range(len(res_names))]
        ptrs = ", ".join([f"&{c}" for c in arg_names] + [f"sg_res + {k}" for k in offsets])
        out += [f"void {name}_scalar({byval}) {{ {name}_tail(1, {ptrs}); }}", ""]
    return out
