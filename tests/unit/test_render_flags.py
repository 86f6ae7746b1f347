"""The compiler flags of an in-process kernel (render/cpu.py; spelled in render/target.py),
without a C compiler."""
import math

from helpers import pairs10

from symgrad import options
from symgrad.render import TARGETS, render
from symgrad.tracing import trace
from symgrad.transforms import derive, optimize

CPU = TARGETS["cpu", "float64"]


def flags(prog, bits, opts=options.DEFAULT):
    prog = optimize.optimize(prog, opts)
    return render(prog, "k", CPU, bits, opts).cflags, prog.count_ops()


def test_long_kernels_take_vectors_as_wide_as_their_blocks():
    grad = derive.grad(trace(pairs10, [(30,)]), [0])
    cflags, ops = flags(grad, 256)
    assert options.DEFAULT.block_vector_ops < ops <= options.DEFAULT.large_kernel_ops
    assert cflags == CPU.block_flags
    assert flags(grad, 128)[0] == ()  # no 256-bit vectors (another architecture, no AVX)
    assert flags(grad, 256, options.Options(block_vector_ops=ops))[0] == ()
    small, ops = flags(trace(lambda x: math.sin(x[0]) * x[1], [(2,)]), 256)
    assert small == () and ops <= options.DEFAULT.block_vector_ops  # the tuning's own choice


def test_large_and_wide_kernels():
    grad = derive.grad(trace(pairs10, [(30,)]), [0])
    cflags, ops = flags(grad, 256, options.Options(large_kernel_ops=1000))
    assert cflags == CPU.large_flags + CPU.block_flags
    scalars = trace(lambda x, y: math.sin(x) * y, [(), ()])
    assert flags(scalars, 512)[0] == CPU.wide_flags  # 512-bit blocks: vectors of 512
    assert flags(grad, 512)[0] == CPU.block_flags  # arrays keep 256-bit blocks
