"""C source -> loaded cffi library, through a content-addressed disk cache.

The source is wrapped by cffi (API mode: a real CPython extension whose calls
release the GIL) and compiled by the system C compiler, called directly. Entries
are keyed by everything that affects the binary and written atomically (temporary
file + rename), so concurrent processes never see a half-written library."""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import shlex
import shutil
import sys
import sysconfig
import threading
from functools import lru_cache
from pathlib import Path

from .errors import CompileError

VERSION = "0.1.0"
_loaded = {}
_lock = threading.RLock()  # guards _loaded and _building
_building = {}  # key -> lock held while that key builds (build() retries itself with fallback flags)

# IEEE semantics: no -ffast-math; no FMA contraction, so every operation rounds as written
# and results do not depend on vectorisation or thread count. sin/cos are not builtins so
# that gcc keeps them apart (its sincos fusion cannot be vectorised).
BASE_FLAGS = ("-O3", "-fno-math-errno", "-ffp-contract=off", "-fno-builtin-sin", "-fno-builtin-cos",
              "-fPIC", "-shared")
# glibc's vector math library (see csrc/symgrad_rt.h); x86-64 Linux only.
VECTOR_MATH = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def csrc_dir() -> Path:
    here = Path(__file__).resolve().parent
    for d in (here.parent / "csrc", here / "csrc"):
        if (d / "symgrad_rt.h").exists():
            return d
    raise CompileError(f"symgrad's C runtime (csrc/symgrad_rt.h) is missing next to {here}")


def cache_dir() -> Path:
    d = os.environ.get("SYMGRAD_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "symgrad")
    p = Path(d)
    p.mkdir(parents=True, exist_ok=True, mode=0o700)
    return p


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
    CPU has AVX-512 (x86-64 Linux), else 256."""
    wide = platform.machine() in ("x86_64", "AMD64") and " avx512f" in machine()
    return 512 if wide else 256


@lru_cache(maxsize=None)
def _runtime_header():
    return (csrc_dir() / "symgrad_rt.h").read_bytes()


def flags(native=True, openmp=True, vector_math=VECTOR_MATH):
    """Compiler and linker flags of one build configuration."""
    return (BASE_FLAGS + (("-march=native",) if native else ()) + (("-fopenmp",) if openmp else ())
            + (("-lmvec",) if vector_math and openmp else ("-DSYMGRAD_NO_VECTOR_MATH",)))


@lru_cache(maxsize=None)
def toolchain():
    """Everything besides the program that decides a kernel's binary: symgrad's own source
    (a changed symgrad never reuses another's kernels), cffi, Python, compiler, flags, CPU."""
    import _cffi_backend  # the version cffi's generated modules are built against
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")) + [csrc_dir() / "symgrad_rt.h"]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    for part in (VERSION, _cffi_backend.__version__, sys.implementation.cache_tag,
                 sysconfig.get_config_var("EXT_SUFFIX") or "", " ".join(compiler()), " ".join(flags()),
                 machine()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _path(key):
    return cache_dir() / f"_sg_{key}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _verified(lib, key):
    """The library if it says it was built for ``key``, else None."""
    try:
        ok = lib.ffi.string(lib.lib.symgrad_key()).decode() == key
    except (AttributeError, TypeError, UnicodeDecodeError):
        ok = False
    return lib if ok else None


def build(key, source, cdecl, *, parts=(), extra_flags=(), native=True, openmp=True,
          vector_math=VECTOR_MATH):
    """The cffi library for ``source`` (plus translation units ``parts``), filed under
    ``key``: loaded from the cache if it is there, else compiled and stored. Different
    keys build at the same time (each key has its own lock)."""
    with _lock:
        key_lock = _building.setdefault(key, threading.RLock())
    with key_lock:
        lib = load(key)
        if lib is not None:
            return lib
        build_flags = flags(native, openmp, vector_math) + tuple(extra_flags)
        path = _path(key)
        stamp = f'\nconst char *symgrad_key(void) {{ return "{key}"; }}\n'
        try:
            _compile(source + stamp, cdecl + "const char *symgrad_key(void);\n", key, path, build_flags, parts)
        except CompileError as e:
            msg = str(e).lower()
            again = dict(parts=parts, extra_flags=extra_flags, native=native)
            if vector_math and "mvec" in msg:  # no libmvec: scalar <math.h>
                return build(key, source, cdecl, openmp=openmp, vector_math=False, **again)
            if openmp and "openmp" in msg:  # a compiler without OpenMP: go serial
                return build(key, source, cdecl, openmp=False, vector_math=False, **again)
            raise
        lib = _verified(_load(key, path), key)
        if lib is None:
            raise CompileError(f"the library built at {path} does not carry its key {key}")
        _loaded[key] = lib
        return lib


def load(key):
    """The library cached under ``key``, or None: never compiles."""
    with _lock:
        lib = _loaded.get(key)
        if lib is None:
            path = _path(key)
            if not path.exists():
                return None
            lib = _verified(_load(key, path), key)
            if lib is not None:
                _loaded[key] = lib
        return lib


def _compile(source, cdecl, key, path, build_flags, parts=()):
    """Compile the cffi module and any further translation units (in parallel), then link."""
    import tempfile

    import cffi
    cc = compiler()
    if shutil.which(cc[0]) is None:
        raise CompileError(f"no C compiler: {cc[0]!r} is not on PATH (set CC to a C compiler, "
                           "e.g. CC=gcc, or install one: apt-get install gcc)")
    from cffi.recompiler import make_c_source
    ffi = cffi.FFI()
    ffi.cdef(cdecl)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=path.parent) as tmp:
        c_file = os.path.join(tmp, f"_sg_{key}.c")
        make_c_source(ffi, f"_sg_{key}", source, c_file)
        units = [c_file]
        for k, part in enumerate(parts):
            units.append(os.path.join(tmp, f"part{k}.c"))
            with open(units[-1], "w") as f:
                f.write(part)
        out = os.path.join(tmp, path.name)
        libs = [f for f in build_flags if f.startswith("-l")]
        cflags = [*cc, *[f for f in build_flags if not f.startswith("-l")], "-I", str(csrc_dir()),
                  "-I", sysconfig.get_paths()["include"]]
        if len(units) == 1:
            _run([[*cflags, c_file, "-o", out, *libs, "-lm"]], c_file, path)
        else:
            objs = [u[:-2] + ".o" for u in units]
            _run([[*cflags, "-c", u, "-o", o] for u, o in zip(units, objs)], c_file, path)
            _run([[*cc, "-shared", *[f for f in build_flags if f == "-fopenmp"], *objs, "-o", out,
                   *libs, "-lm"]], c_file, path)
        shutil.copyfile(c_file, path.with_name(f"_sg_{key}.c.tmp{os.getpid()}"))
        os.replace(path.with_name(f"_sg_{key}.c.tmp{os.getpid()}"), path.with_name(f"_sg_{key}.c"))
        os.replace(out, path)  # atomic: readers see the old state or the whole file


def _run(cmds, c_file, path):
    """Run compiler commands, as many at once as there are cores; raise on the first failure."""
    import subprocess
    pending, running = list(cmds), []
    jobs = max(1, os.cpu_count() or 1)
    failed = None
    while pending or running:
        while pending and len(running) < jobs:
            cmd = pending.pop(0)
            running.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                  text=True)))
        cmd, proc = running.pop(0)
        _, err = proc.communicate()
        if proc.returncode != 0 and failed is None:
            failed = (cmd, err)
    if failed:
        cmd, err = failed
        kept = path.with_suffix(".failed.c")
        shutil.copyfile(c_file, kept)
        raise CompileError(f"C compiler failed ({' '.join(cmd[:3])} ...), source kept at {kept}:\n"
                           + err[-4000:])


def _load(key, path):
    name = f"_sg_{key}"
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    try:
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
    except ImportError as e:
        raise CompileError(f"could not load compiled kernel {path}: {e}") from e
    return mod
