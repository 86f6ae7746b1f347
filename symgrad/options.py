"""The tunables of the pipeline: one frozen dataclass, every field of which enters the
cache key (they all change the generated code). No sympy here."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """How symgrad differentiates, optimises and prints a function.

    ``symgrad.compile(f, options=symgrad.Options(max_segment=200))`` picks other values for
    one Function; ``DEFAULT`` is used otherwise."""

    # A node used once is printed inside the expression that uses it while that stays this small.
    max_inlined_nodes: int = 48
    # Integer powers up to this exponent print as multiplications (exact, no pow call).
    max_mul_pow: int = 16
    # Statements (and loads of earlier temporaries) per C function: large programs are split
    # so that the C compiler's work, superlinear in function size, stays cheap, and so that
    # GCC vectorises each segment's lane loop (at 400, a 10x10 solve's pivoting selects left
    # some scalar, branches: 3.8x slower than at 150; lj30's gradient compiles in 1.35-1.39 s
    # at 150 and 8 a unit against 1.63-1.68 s at 400 and 3, the same speed after).
    max_segment: int = 150
    # A kernel of one segment of at most this many statements is inlined into its batch loop.
    inline_segment: int = 128
    # Large kernels go to the C compiler as several translation units of this many segments,
    # compiled in parallel, at a cheaper optimisation level past large_kernel_ops operations.
    segments_per_unit: int = 8
    large_kernel_ops: int = 2500
    # Kernels past this many operations take SIMD vectors as wide as their 256-bit blocks
    # where the CPU has them: GCC tuned for 128-bit vectors (znver1) runs each 4-lane loop
    # twice and took twice the time on a long one (lj10's gradient, 1527 operations: 1.8-2.0 s
    # against 1.0 s; its Hessian 1.3 against 0.7 s; the same speed after), while small kernels
    # keep the tuning's choice (rosen8's gradient ran 1.06-1.14x slower in 256-bit vectors).
    block_vector_ops: int = 1000
    # In such large kernels, at least this many repeated units of work alike (a pair of atoms'
    # forward and reverse statements, with its additions to the running sums) run as one loop
    # over a table of their operands (render/roll.py), so that the C compiler's work follows the
    # program's distinct forms, not its length; 0: never. Every number is computed from the
    # same operands by the same operations; where GCC left a straight segment's maths calls
    # scalar (libm) the loop calls libmvec's, and the last bit can differ.
    roll_min: int = 16
    # Statements that roll one by one (not as part of a larger repeated unit) need this many
    # alike: alone in a loop, a statement goes through memory (collocation constraints of
    # 1000 nodes: built in 1.6 s against 2.2 s straight; a 10x10 solve's eliminations of at
    # most 100 alike: 1.7x slower a point rolled, so they stay straight).
    roll_alone_min: int = 128
    # Local arrays of a kernel larger than this many bytes live on the heap, not the stack.
    max_stack_bytes: int = 64 << 10
    # Batches with results of at least stream_bytes may run in tiles that leave as whole
    # cache lines (see calling.Stores) when the kernel costs at most
    # stream_cost_per_number operations per result number (a call of an elementary function
    # counts as call_cost): below that, arithmetic bounds the kernel, not writing memory.
    stream_bytes: int = 8 << 20
    stream_cost_per_number: int = 40
    call_cost: int = 20
    # Numbers of results per tile of a streamed batch, about.
    tile_numbers: int = 128
    # Threads only where they pay: each kernel's time per point is measured when it is
    # loaded (calling.Plan); batches it would compute in less than parallel_seconds run on
    # the calling thread alone (waking the thread team costs 1-20 us: more the longer it has
    # slept), and those of less than hold_gil_seconds keep the GIL (releasing and taking it
    # back costs about that).
    parallel_seconds: float = 5e-6
    hold_gil_seconds: float = 1e-6
    # The arithmetic of float32 kernels: "double" (every operation in double, each result
    # rounded to float once: the float64 result rounded, no intermediate overflow below
    # 1.8e308) or "float" (every operation in float: faster, but an intermediate past
    # 3.4e38 overflows, see docs/guide.md).
    float32_math: str = "double"
    # Arrays of at least this many entries (arguments, closed-over numeric data, what numpy
    # computes of them) stay loops where the operations on them allow (tracing/lazy.py):
    # compile time then does not grow with their size. 0: every array element by element.
    loop_min_size: int = 128
    # from_sympy runs sympy's cse on expressions of at most this many distinct subexpressions
    # (and a tree at most sympy_input.TREE_PER_NODE times that; 0: never): it finds the
    # products and sums that expressions share in any grouping, which value numbering of
    # two-operand nodes cannot (an 11-link pendulum's forcing: 2508 -> 1500 operations, for
    # 0.13 s; cse's time grows to seconds on 10^4 subexpressions).
    sympy_cse_nodes: int = 2500
    # Also compile each CPU kernel once more for single points, in one lane (render/cpu.py:
    # _one_point), for functions a solver calls one point at a time: where 256-bit operations
    # cost two 128-bit ones (znver1) a single point then takes about two thirds of the time
    # (the 22-state pendulum's forcing: kernel 1.15 -> 0.7 us), for about 1.6x the C compiler's
    # work. The same results, bit for bit, as the blocks: where the built library does not show
    # one vector maths variant per function (library.py), single points keep the blocks.
    one_point: bool = False

    def __post_init__(self):
        if self.float32_math not in ("double", "float"):
            raise ValueError(f"Options.float32_math must be 'double' or 'float', got {self.float32_math!r}")
        for f in dataclasses.fields(self):  # every number a non-negative int or real, as annotated
            v, least = getattr(self, f.name), _AT_LEAST.get(f.name, 0)
            if f.type == "bool" and not isinstance(v, bool):
                raise ValueError(f"Options.{f.name} must be True or False, got {v!r}")
            if f.type == "int" and (not isinstance(v, int) or isinstance(v, bool) or v < least):
                raise ValueError(f"Options.{f.name} must be an int of at least {least}, got {v!r}")
            if f.type == "float" and (not isinstance(v, (int, float)) or isinstance(v, bool) or not v >= 0):
                raise ValueError(f"Options.{f.name} must be a non-negative number, got {v!r}")

    def key(self) -> str:
        """The part of a cache key these options make: every field, by name."""
        return repr(dataclasses.astuple(self)) + repr([f.name for f in dataclasses.fields(self)])


_AT_LEAST = {"segments_per_unit": 1}  # ints that must be positive (the rest: >= 0)
DEFAULT = Options()
