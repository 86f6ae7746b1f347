"""Which code is the user's: what the tracer rewrites and the fingerprint covers in full.

Library code (numpy, the standard library, installed packages) is called as it is and
fingerprinted by name and version; user code (scripts, notebooks, the project's modules)
is rewritten to see traced math and fingerprinted by its contents."""
from __future__ import annotations

import sysconfig

LIBRARIES = ("math", "cmath", "numpy", "scipy", "sympy", "symgrad", "mpmath", "cffi", "functools",
             "operator", "typing", "builtins", "importlib", "collections", "abc", "inspect", "jax",
             "torch")
_STDLIB = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")})


def is_library(module_name):
    return (module_name or "").split(".")[0] in LIBRARIES


def is_user_module(m):
    if m.__name__ == "__main__":  # a script, `python -c`, a notebook
        return True
    f = getattr(m, "__file__", None)
    return (bool(f) and not is_library(m.__name__) and "site-packages" not in f
            and "dist-packages" not in f and not f.startswith(_STDLIB))
