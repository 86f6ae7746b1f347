"""Tunable thresholds of the pipeline, in one sympy-free place (they are part of every
cache fingerprint, since they change the generated code)."""
import os

# Stages of a compile slower than this many seconds are reported on stderr (None: never).
PROGRESS_SECONDS = None if os.environ.get("SYMGRAD_QUIET") else 2.0

# Closed-form trees up to this many operations are differentiated as whole expressions
# (sympy diff + CSE); larger programs by reverse accumulation over the straight-line body.
INLINE_LIMIT = 300

# A temporary used once is substituted into its user while the result stays this small.
MAX_INLINED_NODES = 48

# Integer powers up to this exponent print as multiplications (exact, no pow call).
MAX_MUL_POW = 16

# Statements (and loads of earlier temporaries) per C function: large programs are split
# so that the C compiler's work, superlinear in function size, stays cheap.
MAX_SEGMENT = 400

# A kernel of one segment of at most this many statements is inlined into its batch loop.
INLINE_SEGMENT = 128

# Large kernels go to the C compiler as several translation units of this many segments,
# compiled in parallel, at a cheaper optimisation level past LARGE_KERNEL_OPS operations.
SEGMENTS_PER_UNIT = 3

# Local arrays of a kernel larger than this live on the heap instead of the stack.
MAX_STACK_BYTES = 64 << 10
LARGE_KERNEL_OPS = 5000

# Batches with results of at least STREAM_BYTES may run in tiles that leave as whole cache
# lines (non-temporal or plain stores) or block by block, whichever measures fastest, when
# the kernel costs at most STREAM_COST_PER_NUMBER operations per result number (a call of an
# elementary function counts as CALL_COST): below that, arithmetic and not writing memory
# bounds the kernel, and it always runs block by block.
STREAM_BYTES = 8 << 20
STREAM_COST_PER_NUMBER = 40
CALL_COST = 20
# Numbers of results per tile of a streamed batch, about (a tile is a whole number of blocks
# and of cache lines of each result; small tiles keep computing and streaming interleaved).
TILE_NUMBERS = 128


def snapshot():
    return (INLINE_LIMIT, MAX_INLINED_NODES, MAX_MUL_POW, MAX_SEGMENT, INLINE_SEGMENT, SEGMENTS_PER_UNIT,
            LARGE_KERNEL_OPS, MAX_STACK_BYTES,
            STREAM_COST_PER_NUMBER, CALL_COST, TILE_NUMBERS)
