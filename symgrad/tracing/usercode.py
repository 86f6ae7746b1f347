"""Which code is the user's: user code (scripts, notebooks, the project's modules) is
rewritten and traced into; library code (numpy, the standard library, installed packages)
runs as it is."""
from __future__ import annotations

import sys
import sysconfig

LIBRARIES = ("math", "cmath", "numpy", "scipy", "sympy", "symgrad", "mpmath", "cffi", "functools",
             "operator", "typing", "builtins", "importlib", "collections", "abc", "inspect", "jax",
             "torch", "dask", "cupy", "numba")
STDLIB = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")})


def is_user_code(module_name, filename):
    """User code (scripts, notebooks, the project's modules) is rewritten; library code
    (numpy, the standard library, installed packages) runs as it is."""
    if (module_name or "").split(".")[0] in LIBRARIES:
        return False
    return not (filename.startswith(STDLIB) or "site-packages" in filename or "dist-packages" in filename
                or filename.startswith("<frozen"))


def module_file(cls):
    """The file of the module that defines ``cls`` ("<unknown>" where there is none)."""
    return getattr(sys.modules.get(cls.__module__), "__file__", None) or "<unknown>"
