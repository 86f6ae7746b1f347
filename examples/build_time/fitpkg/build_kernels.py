"""Build step (a cffi module): symgrad writes the kernels' C once, here, at build time; the
installed package needs neither symgrad nor sympy, only cffi's small runtime and numpy."""
import os
import re
import sys

import cffi
import symgrad.codegen

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernels  # noqa: E402
GEN = os.path.join(HERE, "build", "gen")

symgrad.codegen.generate(kernels.seed, GEN, name="seed", kinds=("value", "grad", "d2"))
symgrad.codegen.generate(kernels.rosen, GEN, name="rosen", shapes=[(4,)], kinds=("value", "grad", "hessian"))


def prototypes(header):
    """The function declarations of a generated header (cffi's cdef takes no preprocessor lines)."""
    with open(os.path.join(GEN, header)) as f:
        return "\n".join(line for line in f if re.match(r"void \w+\(", line))


ffibuilder = cffi.FFI()
ffibuilder.cdef(prototypes("seed.h") + "\n" + prototypes("rosen.h"))
ffibuilder.set_source("fitpkg._kernels", '#include "seed.h"\n#include "rosen.h"',
                      sources=[os.path.join(GEN, "seed.c"), os.path.join(GEN, "rosen.c")],
                      include_dirs=[GEN], extra_compile_args=["-std=c99", "-O2", "-ffp-contract=off"])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
