"""The compiler flags of an in-process kernel (render/cpu.py; spelled in render/target.py),
without a C compiler."""
import math
import os

from helpers import ROOT, pairs10

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


def test_vector_functions_are_the_headers_lists_and_not_builtins():
    """render/target.py's VECTOR_FUNCTIONS names what csrc/symgrad_rt.h declares simd and gives
    one-lane helpers (Options.one_point); each is compiled as a plain call, not a builtin."""
    import re
    from symgrad.render.target import _CPU_FLAGS, VECTOR_FUNCTIONS
    header = open(os.path.join(ROOT, "csrc", "symgrad_rt.h")).read()
    lists = re.findall(r"#define SYMGRAD_VMATH\w*\(X\) ((?:[^\n]*\\\n)*[^\n]*)", header)
    declared = {n for body in lists for n in re.findall(r"X\((\w+)\)", body)}
    helped = set(re.findall(r"^SYMGRAD_ONE[12]\((\w+)\)$", header, re.M))
    assert declared | helped == VECTOR_FUNCTIONS
    assert helped == {"symgrad_sech2", "symgrad_logaddexp", "symgrad_logaddexp2"}
    for fn in declared:
        assert f"-fno-builtin-{fn}" in _CPU_FLAGS and f"-fno-builtin-{fn}f" in _CPU_FLAGS
