"""What each target decides, as data: number type, spellings, entry-point names, flags;
and Kernel, the generated in-process kernel (plain data: it travels in pickles).

Every entry-point name and every compiler flag of every target is spelled here and only
here; the emitters (cpu.py, c99.py, cuda.py) and the callers (build.py, calling.py,
codegen.py) ask a Target."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

from ..ir.ops import VECTOR_FUNCTIONS  # (C functions with vector variants: the op registry's)

# IEEE semantics: no -ffast-math; no FMA contraction, so every operation rounds as written
# and results do not depend on vectorisation or thread count. The vector maths functions are
# not builtins: each call stays the call written, in every loop and unit. As builtins, gcc
# fused sin and cos into sincos (which it cannot vectorise), and its vectoriser turned
# pow(x, 0.5) into a square root (sqrt(-0.0) is -0.0, sqrt(-inf) NaN, where pow gives +0.0
# and +inf) and pow(x, 2.0) into x*x in some loops and not in others.
_CPU_FLAGS = ("-O3", "-fno-math-errno", "-ffp-contract=off",
              *[f"-fno-builtin-{fn}{t}" for fn in sorted(VECTOR_FUNCTIONS) if not fn.startswith("symgrad_") for t in ("", "f")],
              "-fPIC", "-shared", "-march=native")
_SHARED = ("-shared",)


@dataclass(frozen=True)
class Target:
    """One kind of generated code, for one number type."""

    kind: str                 # "cpu" (the in-process kernel), "c99" (standalone), "cuda"
    real: str                 # C type of the numbers in memory: arguments and results
    itemsize: int
    math: str                 # C type the arithmetic runs in: locals, scratch, lanes, <math.h> (sinf for float)
    restrict: str = "restrict"
    device: str = ""          # qualifier of per-point functions ("__device__")
    inline: str = "static inline"
    block: int = 1            # points per SIMD block (cpu: a 256-bit vector of the arithmetic type)
    wide: int = 1             # points per block of a kernel of scalars only on a 512-bit CPU (a 512-bit vector)
    flags: tuple = ()         # how to compile it
    openmp_flags: tuple = ()  # added where the compiler has OpenMP
    vector_math_flags: tuple = ()  # added where there is a vector math library (libmvec)
    no_vector_math_flags: tuple = ()
    wide_flags: tuple = ()    # a kernel in 512-bit blocks
    block_flags: tuple = ()   # a kernel past Options.block_vector_ops in 256-bit blocks: vectors as wide
    large_flags: tuple = ()   # a kernel past Options.large_kernel_ops: cheaper to compile
    link_flags: tuple = ()    # linking object files into a library
    libs: tuple = ("-lm",)
    vector_calls: bool = False  # a cpu kernel whose lane loops call maths functions (libmvec's, vectorised)

    def entry(self, kernel, what="point"):
        """The name of one entry point of a kernel: point (one point), batch (n points),
        call (the batch with its pointers in one array: how symgrad calls a cpu kernel),
        streams (cpu), data (the data arrays of a kernel with loops, cpu), one (cpu, where
        Options.one_point: call's form, one point at a time in one lane), kernel (a CUDA
        __global__)."""
        return kernel if what == "point" else f"{kernel}_{what}"

    def call_entry(self, kernel, nargs, nres):
        """Lines of C defining ``K_call(n, mode, p)``: the batch entry point with its pointers
        in one array (the arguments, then the results), so that one C caller
        (csrc/symgrad_call.c) calls any kernel."""
        T = self.real
        ptrs = [f"(const {T} *)sg_p[{k}]" for k in range(nargs)] + [f"({T} *)sg_p[{nargs + k}]" for k in range(nres)]
        return [f"void {self.entry(kernel, 'call')}(int64_t n, int sg_mode, void *const *sg_p) {{",
                f"    {self.entry(kernel, 'batch')}(n, sg_mode, {', '.join(ptrs)});", "}", ""]

    def widened(self):
        return replace(self, block=self.wide)


def pick(kind, dtype, options):
    """The Target of ``kind`` for numbers of ``dtype``: float32 kernels compute in double
    (each result is the float64 result rounded once) unless options.float32_math = "float".
    In double they take float64's blocks too: the same vector maths functions (libmvec's
    4- and 8-lane tanh differ in the last bit), so the same double results."""
    target = TARGETS[kind, str(dtype)]
    if target.real != "float" or options.float32_math == "float":
        return target
    wide = TARGETS[kind, "float64"]
    return replace(target, math="double", block=wide.block, wide=wide.wide)


# Large kernels: -O1 with the vectoriser. Dead-store elimination finds nothing to remove in
# straight-line segments (gcc 12 emits the same machine code without it) and took 20-30%
# of their compile time (lj30's gradient and Hessian units, measured each way).
_LARGE_FLAGS = ("-O1", "-ftree-vectorize", "-fno-predictive-commoning", "-fno-tree-dse", "-fno-dse")


# Vector maths (libmvec): a loop's remainder iterations are not vectorised again with narrower
# vectors, so that a float32 kernel computing in double and its float64 twin call the same
# functions for the same elements (GCC gave the float64 loop's remainder libmvec's 2-lane tanh,
# the float32 one's scalar tanh: a review find on loops of arrays).
_VECTOR_MATH_FLAGS = ("-lmvec", "--param=vect-epilogues-nomask=0")


def _cpu(real, itemsize, block, wide):
    return Target("cpu", real, itemsize, real, block=block, wide=wide, flags=_CPU_FLAGS,
                  openmp_flags=("-fopenmp",), vector_math_flags=_VECTOR_MATH_FLAGS,
                  no_vector_math_flags=("-DSYMGRAD_NO_VECTOR_MATH",),
                  wide_flags=("-mprefer-vector-width=512",), block_flags=("-mprefer-vector-width=256",),
                  large_flags=_LARGE_FLAGS,
                  link_flags=_SHARED)


def _c99(real, itemsize):
    return Target("c99", real, itemsize, real, flags=("-std=c99", "-O2", "-ffp-contract=off"),
                  openmp_flags=("-fopenmp",))


def _cuda(real, itemsize):
    # --fmad=false: no fused multiply-add, so the GPU rounds each operation as written, as the
    # CPU kernels do (bit for bit the standalone C, under the same libm).
    return Target("cuda", real, itemsize, real, restrict="__restrict__", device="__device__",
                  inline="static __device__ __forceinline__", flags=("--fmad=false",), libs=())


TARGETS = {
    ("cpu", "float64"): _cpu("double", 8, 4, 8),
    ("cpu", "float32"): _cpu("float", 4, 8, 16),
    ("c99", "float64"): _c99("double", 8),
    ("c99", "float32"): _c99("float", 4),
    ("cuda", "float64"): _cuda("double", 8),
    ("cuda", "float32"): _cuda("float", 4),
}


def c99_build(source):
    """A shell command that compiles standalone C file ``source`` with the c99 target's flags
    (float64 and float32 alike) into an object beside it, and a comment: what to link with."""
    t = TARGETS["c99", "float64"]
    obj = (source[:-2] if source.endswith(".c") else source) + ".o"
    return (f"cc {' '.join(t.flags)} -c {shlex.quote(source)} -o {shlex.quote(obj)}"
            f"  # then link with {' '.join(t.libs)}")


@dataclass(frozen=True)
class Kernel:
    """Generated source of one in-process kernel and what building it needs."""

    name: str
    source: str       # definitions (includes symgrad_rt.h)
    ops: int
    parts: tuple = ()   # further units (a large kernel's segments, the one-point copy), compiled in parallel
    cflags: tuple = ()  # compiler flags this kernel needs beyond the target's
    tails: tuple = ()   # units that compile apart where there are several cores, else appended to source

    @property
    def text(self):
        """Every translation unit, in one text that also compiles as one unit (as the cache
        keeps it beside the library)."""
        return units_text((self.source,) + self.tails + self.parts)


def units_text(units):
    """Translation units in one text, each after a marker line (a comment: the text compiles)."""
    return "\n/* ---- next translation unit ---- */\n".join(units)
