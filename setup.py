"""symgrad's one compiled module, symgrad._native (csrc/symgrad_call.c): it loads kernel
libraries and runs the calls they take as they are without Python. Optional: where it cannot
be built, symgrad calls kernels through ctypes (the same results, slower per call)."""
import numpy
from setuptools import Extension, setup

setup(ext_modules=[Extension("symgrad._native", ["csrc/symgrad_call.c"], include_dirs=[numpy.get_include()],
                             extra_compile_args=["-O2"], optional=True)])
