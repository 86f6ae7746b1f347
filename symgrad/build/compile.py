"""C source -> loaded kernel library: the key's toolchain part, the compile itself and its fallbacks.

The source is compiled by the system C compiler (host.py: its command, flags and the machine),
called directly, in a temporary build directory, into a plain shared library (no Python.h:
library.py calls its entry points); cache.py decides where that directory is, stores the
result and loads it."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from . import cache, entries, spawn
from .host import CPU, VECTOR_MATH, ask_identity_meanwhile, compiler, compiler_identity, first_line, flags, machine
from .. import forksafe
from ..errors import CompileError
from ..render.target import units_text
from ..render.runtime import csrc_dir

VERSION = "0.1.0"
_lock = forksafe.RLock()  # guards _building
_building = {}  # key -> lock held while that key builds
_swept = set()


@lru_cache(maxsize=None)
def source_digest():
    """Hash of symgrad's own source (Python and C runtime): what traces, differentiates and
    renders. A changed symgrad never reuses another's kernels or unpickles its Functions."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]  # the symgrad package
    for path in sorted(root.rglob("*.py")) + sorted(csrc_dir().glob("*.[ch]")):
        name = path.relative_to(root) if path.is_relative_to(root) else path.name
        h.update(str(name).encode() + b"\0" + path.read_bytes())
    h.update(VERSION.encode())
    return h.hexdigest()


@lru_cache(maxsize=None)
def toolchain():
    """Everything besides the program that decides a kernel's binary: symgrad's own source,
    Python, flags (symgrad's and any that CC carries: CC="cc -ffast-math"), CPU. Not the
    compiler's name: CC=gcc, CC=cc and a process without any compiler share kernels (the
    compiler that built one is in its metadata); nor how kernels are called (symgrad._native
    or ctypes: the same library either way)."""
    h = hashlib.sha256()
    for part in (source_digest(), sys.implementation.cache_tag,
                 sysconfig.get_config_var("EXT_SUFFIX") or "", " ".join(flags() + tuple(compiler()[1:])),
                 machine()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def load(key):
    """The library built for ``key`` (in this process, or a verified cache entry), or None."""
    return cache.lookup(key)


def adopt(key, data, sha256, info=None):
    """The library for ``key``: the cached one, else ``data`` (a library built for ``key`` in
    another process, shipped with a pickle) made a cache entry and loaded like any other;
    None where ``data`` does not match ``sha256`` or cannot be stored (see cache.adopt)."""
    with _key_lock(key):
        return cache.lookup(key) or cache.adopt(key, data, sha256, info)


def _key_lock(key):
    with _lock:
        return _building.setdefault(key, forksafe.RLock())


def build_many(kernels):
    """Build several kernels into one library with one compile: ``kernels`` are (key, Kernel,
    meta) of the same compiler flags. The library is stored under each key (build's
    ``aliases``), so each loads as an ordinary cache entry. Keys already built are left out."""
    import contextlib
    kernels = sorted({k: (k, kern, meta) for k, kern, meta in kernels}.values(), key=lambda e: e[0])
    with contextlib.ExitStack() as held:
        for k, _, _ in kernels:  # in key order: two threads building overlapping families cannot deadlock
            held.enter_context(_key_lock(k))
        todo = [e for e in kernels if cache.lookup(e[0]) is None]
        if len(todo) == 1:
            key, kern, meta = todo[0]
            build_kernel(key, kern, meta)
        elif todo:
            build(todo[0][0], "\n".join(kern.source for _, kern, _ in todo),
                  parts=tuple(p for _, kern, _ in todo for p in kern.parts),
                  tails=tuple(t for _, kern, _ in todo for t in kern.tails),
                  extra_flags=todo[0][1].cflags, meta={"members": {k: meta for k, _, meta in todo}},
                  aliases=tuple(k for k, _, _ in todo[1:]))


def build_kernel(key, kern, meta=None):
    """The library of render.Kernel ``kern``, every unit of it, filed under ``key`` (build)."""
    return build(key, kern.source, parts=kern.parts, tails=kern.tails, extra_flags=kern.cflags, meta=meta)


def build(key, source, *, parts=(), tails=(), extra_flags=(), meta=None, aliases=()):
    """The library for ``source`` (plus translation units ``parts``, and ``tails``: units
    compiled apart where there are several cores, else appended to ``source``), filed under
    ``key``: loaded from the cache if it is there, else compiled and stored. Different keys build at
    the same time (a lock per key). ``meta`` (JSON data: results, dtype, ...) is compiled
    into the library, which returns it from ``symgrad_meta()`` beside ``symgrad_key()``.
    With ``aliases`` (the keys of further kernels in ``source``, whose locks the caller
    holds), the library also answers to each (symgrad_keys()) and is stored under each of
    them too."""
    with _key_lock(key):
        lib = cache.lookup(key)
        if lib is not None:
            return lib
        _check_compiler(f"kernel {key[:12]} is not in symgrad's cache ({cache.describe_places()}) and there is ")
        stamp = (f'\nconst char *symgrad_key(void) {{ return "{key}"; }}\n'
                 f'const char *symgrad_meta(void) {{ return {_c_string(json.dumps(meta or {}))}; }}\n')
        if aliases:  # one library, several kernels' keys
            stamp += f'const char *symgrad_keys(void) {{ return "{" ".join((key,) + tuple(aliases))}"; }}\n'
        if tails and usable_cpus() < 2:  # one core: one unit compiles the code tails share with source once
            source, tails = units_text((source,) + tuple(tails)), ()
        parts = tuple(tails) + tuple(parts)
        tried = []
        for d in cache.building_places():
            if d not in _swept:
                _swept.add(d)
                entries.sweep(d)
            try:
                import tempfile
                with tempfile.TemporaryDirectory(prefix=".build-", dir=d) as tmp:
                    ask_identity_meanwhile()
                    so = _compile_with_fallbacks(source + stamp, key, Path(tmp), extra_flags, parts)
                    c_text = units_text((source + stamp,) + tuple(parts))
                    with open(so, "rb") as f:
                        data = f.read()
                    lib = cache.install(d, key, data, c_text, compiler_identity())
                    for alias in aliases:
                        cache.install(d, alias, data, None, compiler_identity())
                    return lib
            except _CompilerFailed as e:
                if not _io_failure(e.stderr):  # the compiler refused the code: its message is the error
                    kept = _keep_failed_source(d, key, e.source)
                    raise CompileError(f"C compiler failed {e.what} ({' '.join(e.cmd[:3])} ...)"
                                       + (f", source kept at {kept}" if kept else "") + ":\n"
                                       + e.stderr[-4000:]) from None
                tried.append((d, "the C compiler could not write its output: "
                              + first_line(_io_lines(e.stderr) or e.stderr, "no message")))
            except cache.NotExecutable as e:
                tried.append((d, f"compiled code cannot be loaded from there ({e})"))
            except OSError as e:
                tried.append((d, f"{e.strerror or e} ({e.filename or d})"))
            if len(tried) == 1:
                cache.warn_once(("build", str(d)), f"could not build in {d}: {first_line(tried[0][1])}; "
                                "trying a private directory")
        raise cache.fail(tried)


_IO_WORDS = ("no space left", "read-only file system", "permission denied", "disk quota",
             "input/output error", "cannot open output file", "can't open output file",
             "file too large", "operation not permitted")


def _check_compiler(context=""):
    import shutil
    cc = compiler()
    if not cc or shutil.which(cc[0]) is None:
        raise CompileError(f"{context}no C compiler: {cc[0] if cc else ''!r} is not on PATH (set CC to a C "
                           "compiler, e.g. CC=gcc, or install one: apt-get install gcc; or fill the cache "
                           "where a compiler is, see docs/cache.md, 'Sharing')")


def _io_failure(message):
    """Whether a compiler's message says it could not write its files (rather than that it
    refused the code): then another directory may do."""
    message = message.lower()
    return any(w in message for w in _IO_WORDS)


def _io_lines(message):
    """The lines of a compiler's message that say it could not write its files."""
    return "\n".join(line for line in message.splitlines() if any(w in line.lower() for w in _IO_WORDS))


def _c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _CompilerFailed(Exception):
    """The compiler refused (or could not write) one build: its command, message, the source
    of the file it failed on, and what it was doing."""

    def __init__(self, cmd, stderr, source, what=""):
        super().__init__(stderr)
        self.cmd, self.stderr, self.source, self.what = cmd, stderr, source, what


def _keep_failed_source(d, key, source):
    """Best effort: the source the compiler refused, next to the cache, for a bug report."""
    if source:
        try:
            return entries.write_file(d, f"_sg_{key}.failed.c", source.encode(), 0o600)
        except OSError:
            return None
    return None


def _compile_with_fallbacks(source, key, tmp, extra_flags, parts, openmp=True, vector_math=VECTOR_MATH):
    """Compile in ``tmp``; without libmvec, or without OpenMP, where the compiler lacks them;
    without a preferred vector width where it does not know the option (GCC before 8)."""
    build_flags = flags(openmp, vector_math) + tuple(extra_flags)
    try:
        return _compile(source, key, tmp, build_flags, parts)
    except _CompilerFailed as e:
        msg = e.stderr.lower()
        widths = [f for f in extra_flags if f in CPU.block_flags + CPU.wide_flags and f.split("=")[0] in msg]
        if widths:  # the same code, vectorised as the compiler's tuning prefers
            return _compile_with_fallbacks(source, key, tmp, [f for f in extra_flags if f not in widths], parts,
                                           openmp, vector_math)
        if vector_math and ("mvec" in msg or "vect-epilogues" in msg):  # no libmvec: scalar <math.h>
            return _compile_with_fallbacks(source, key, tmp, extra_flags, parts, openmp, False)
        if openmp and "openmp" in msg:  # a compiler without OpenMP: go serial
            return _compile_with_fallbacks(source, key, tmp, extra_flags, parts, False, False)
        raise


def usable_cpus():
    """The CPUs this process may run on (its affinity: taskset, a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _unit_label(text):
    """What a translation unit holds, from its first line (/* name: what, generated by symgrad */)."""
    first = text.split("\n", 1)[0]
    return first[3:first.index(", generated")] if first.startswith("/* ") and ", generated" in first else ""


def _compile(source, key, tmp, build_flags, parts=()):
    """Compile the kernel ``source`` and any further translation units ``parts`` into a
    shared library in ``tmp``: one compiler run for one unit; several compile in parallel,
    then link. Units read the runtime header precompiled where it is (pch.py); a compile that
    may have failed reading it is made again from the header itself. Returns the library's path."""
    from . import pch  # a cache miss's: not imported where every kernel is cached
    cc = compiler()
    _check_compiler()
    units, texts = [], (source,) + tuple(parts)
    for k, part in enumerate(texts):
        units.append(os.path.join(tmp, f"part{k}.c"))
        with open(units[-1], "w") as f:
            f.write(part)
    cflags = [*[f for f in build_flags if not f.startswith("-l")], "-I", str(csrc_dir())]
    pchs = [pch.include_dirs(cc, cflags, text, machine()) for text in texts]
    try:
        out = _compile_units(cc, cflags, pchs, units, texts, key, tmp, build_flags)
    except _CompilerFailed as e:
        if not any(pchs) or not pch.troubled(e.stderr):
            raise
        for args in pchs:
            pch.discard(args)
        pchs = [[] for _ in units]
        out = _compile_units(cc, cflags, pchs, units, texts, key, tmp, build_flags)
    for args, text in zip(pchs, texts):
        if not args:
            pch.prepare(cc, cflags, text, machine())
    return out


def _compile_units(cc, cflags, pchs, units, texts, key, tmp, build_flags):
    out = os.path.join(tmp, f"_sg_{key}{entries.EXT}")
    libs = [f for f in build_flags if f.startswith("-l")] + list(CPU.libs)
    if len(units) == 1:
        _run([[*cc, *cflags[:-2], *pchs[0], *cflags[-2:], *CPU.link_flags, units[0], "-o", out, *libs]], units,
             ["compiling the kernel"])
        return out
    objs = [u[:-2] + ".o" for u in units]
    what = ["compiling the kernel"] + [f"compiling unit {k} of the kernel ({_unit_label(part)})"
                                       for k, part in enumerate(texts[1:], 1)]
    _run([[*cc, *cflags[:-2], *p, *cflags[-2:], "-c", u, "-o", o] for u, o, p in zip(units, objs, pchs)], units,
         what, sizes=[os.path.getsize(u) for u in units])
    _run([[*cc, *CPU.link_flags, *[f for f in build_flags if f in CPU.openmp_flags], *objs, "-o", out, *libs]],
         [units[0]], ["linking the library"])
    return out


def _run(cmds, files, what, sizes=None):
    """Run compiler commands (command k compiles ``files[k]``, to do ``what[k]``), as many at
    once as there are cores, the largest unit (by ``sizes``) first so the last to finish is a
    small one; raise on the first failure (in command order), with the compiler's own message,
    what failed, and the source of that file."""
    import threading
    order = sorted(range(len(cmds)), key=lambda i: -(sizes[i] if sizes else 0))
    results, taking, group = {}, threading.Lock(), spawn.Group()

    def work():
        while True:
            with taking:
                if not order or group.stopped:
                    return
                i = order.pop(0)
            try:
                results[i] = spawn.run(cmds[i], group=group)
            except BaseException as e:  # raised below, in this thread
                results[i] = e

    if len(cmds) == 1:
        work()
    else:
        threads = [threading.Thread(target=work, name="symgrad-cc", daemon=True)
                   for _ in range(max(1, min(len(cmds), usable_cpus())))]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        except BaseException:  # KeyboardInterrupt: no further unit starts, those running stop
            group.stop()
            raise
    for i in range(len(cmds)):
        if isinstance(results[i], BaseException):
            raise results[i]
    failed = next((i for i in range(len(cmds)) if results[i][0] != 0), None)
    if failed is not None:
        try:
            with open(files[failed]) as f:
                source = f.read()
        except OSError:
            source = None
        raise _CompilerFailed(cmds[failed], results[failed][1], source, what[failed])
