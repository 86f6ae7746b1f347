"""The compiler and the machine it builds for: the C compiler's command and what it says it is,
the flags of an in-process kernel, and the CPU features -march=native depends on (what
compile.toolchain hashes into a kernel's key, and the vector width render blocks for)."""
from __future__ import annotations

import os
import platform
import shlex
import sys
from functools import lru_cache

from . import spawn
from .. import forksafe
from ..render.target import TARGETS

_lock = forksafe.RLock()  # guards _asked

# glibc's vector math library (see csrc/symgrad_rt.h); x86-64 Linux only.
VECTOR_MATH = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")
CPU = TARGETS["cpu", "float64"]  # the flags of in-process kernels (the same for float)


def compiler():
    return shlex.split(os.environ.get("CC") or "cc")


@lru_cache(maxsize=None)
def machine():
    """What -march=native depends on: the architecture and the CPU's feature flags."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features", "model name")):
                    flags += line
                if line.strip() == "":
                    break
    except OSError:
        pass
    return platform.machine() + "\n" + flags


def vector_bits():
    """Width of the widest SIMD registers that -march=native code uses here: 512 where the
    CPU has AVX-512, 256 where it has AVX (x86-64 Linux), else 128."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return 128
    cpu = machine()
    return 512 if " avx512f" in cpu else 256 if " avx" in cpu else 128


def flags(openmp=True, vector_math=VECTOR_MATH):
    """Compiler and linker flags of one build configuration of an in-process kernel."""
    return (CPU.flags + (CPU.openmp_flags if openmp else ())
            + (CPU.vector_math_flags if vector_math and openmp else CPU.no_vector_math_flags))


@lru_cache(maxsize=None)
def _identity(cc):
    try:
        out = spawn.run([*cc, "--version"], timeout=30)[1]
    except OSError as e:
        out = f"unknown ({e})"
    return first_line(out, "unknown")


def compiler_identity():
    """What built a kernel, for its metadata (diagnostics only, never the key): the command
    and the first line of its ``--version``, asked once per process and compiler."""
    cc = tuple(compiler())
    return {"cc": " ".join(cc), "compiler": _identity(cc)}


_asked = set()


def ask_identity_meanwhile():
    """Ask the compiler's ``--version`` on a thread while the first kernel compiles: a process
    of its own (7 ms here), which the first call otherwise waits for after the compile."""
    import threading
    cc = tuple(compiler())
    with _lock:
        if cc in _asked:
            return
        _asked.add(cc)
    threading.Thread(target=_identity, args=(cc,), name="symgrad-cc-version", daemon=True).start()


def first_line(text, default=""):
    return next((line.strip() for line in text.splitlines() if line.strip()), default)
