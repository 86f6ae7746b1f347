"""The runtime header, precompiled (GCC's symgrad_rt.h.gch): a kernel's compile then does not
parse <math.h>, <stdlib.h>, <omp.h> and the runtime again, 0.02-0.05 s of a unit's 0.2-0.5 s
on a 2-core machine.

One per header text, compiler, flags, include-path environment and the macros a unit defines
before the include (a directory named by their hash), kept beside the header as Python keeps
__pycache__ beside a module: a product of the installed package, not of any kernel, so it
outlives an emptied kernel cache. A compile that found none starts one when it is done, in a
process of its own that no call and no exit waits for. It precompiles a copy of the header
text it hashed, and lists every file GCC read with its size and time: a .gch whose files
changed since (a system header upgraded) is removed unused. GCC itself reads a .gch only
where the same compiler binary made it with the same target options and macros, and
otherwise the header: the same object code either way (tests/e2e/test_pch.py)."""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
import time
from functools import lru_cache

from . import cachedir
from .. import forksafe
from ..render.runtime import csrc_dir

HEADER = "symgrad_rt.h"
GCH = HEADER + ".gch"
DIR = "__pch__"
KEEP = 12  # precompiled headers kept, the most recently used (5 MB each): units of segments and
# the others, under the flags of small, long (block_flags), large and 512-bit (wide) kernels
STALE = 300.0  # s: a build marker (or a temporary file) this old is one whose process died
RETRY = 3600.0  # s: after a failed build (a full disk), the next try
# Wrappers that would not cache (or ship) a compile that reads a .gch: left as they are.
WRAPPERS = frozenset({"ccache", "sccache", "distcc", "icecc"})
# The environment that changes which headers GCC finds (the .gch stands for what it found).
ENVIRONMENT = ("CPATH", "C_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH")  # (and the working
# directory, where CC carries options: they may name directories relative to it)
_INCLUDE = f'#include "{HEADER}"'
_HEAD_LINES = 64  # a unit's lines read for the macros it defines before the include
_DEFINE = re.compile(r"#define (\w+)$")
_lock = forksafe.RLock()
_started = set()  # keys whose build this process started
_checked = set()  # directories whose files this process found unchanged


def include_dirs(cc, flags, text, host):
    """The ``-I`` arguments (before the runtime's own) that let ``cc flags`` compile the unit
    ``text`` from the precompiled header: its directory, or none while there is none. ``host``:
    what the flags' -march=native stands for (host.machine()), so that a package directory
    shared by several machines holds one .gch for each."""
    where = _place(cc, flags, text, host)
    if where is None:
        return []
    d = os.path.join(*where)
    return ["-I", d] if _current(d) else []


def prepare(cc, flags, text, host):
    """Start building the precompiled header for such a unit, if there is none (after ``cc``
    compiled one: a compiler that refuses code is not asked to precompile), unless the
    compiler made something else than GCC's (for good) or the last try failed (for RETRY s)."""
    where = _place(cc, flags, text, host)
    if where is None:
        return
    d = os.path.join(*where)
    if os.path.exists(os.path.join(d, GCH)) or os.path.exists(os.path.join(d, "unsupported")):
        return
    try:
        if time.time() - os.stat(os.path.join(d, "failed")).st_mtime < RETRY:
            return
        os.unlink(os.path.join(d, "failed"))
    except OSError:
        pass
    _start(*where, cc, flags, _prefix_defines(text))


def troubled(message):
    """Whether a failed compile's message may come from reading a .gch (then it is made again
    without): a damaged one stops GCC with "cannot read PCH file", or an internal error."""
    message = message.lower()
    return any(w in message for w in ("pch file", ".gch", "precompiled", "internal compiler error"))


def discard(args):
    """Remove the precompiled header that ``include_dirs`` gave as ``args``, so that no
    compile reads it again."""
    if args:
        with _lock:
            _checked.discard(args[1])
        shutil.rmtree(args[1], ignore_errors=True)


def _current(d):
    """Whether the .gch in ``d`` is there and every file it was made from is as it was then
    (checked once per process; a changed one is removed)."""
    if d in _checked:
        return True
    try:
        with open(os.path.join(d, "deps")) as f:
            deps = [line.split(" ", 2) for line in f.read().splitlines()]
        if not os.path.exists(os.path.join(d, GCH)):
            return False
        for size, mtime, path in deps:
            st = os.stat(path)
            if (st.st_size, st.st_mtime_ns) != (int(size), int(mtime)):
                raise ValueError(path)
    except FileNotFoundError as e:  # no list yet (a build under way), or a .gch without one
        if e.filename != os.path.join(d, "deps") or os.path.exists(os.path.join(d, GCH)):
            discard(["-I", d])
        return False
    except (OSError, ValueError):
        discard(["-I", d])
        return False
    with _lock:
        _checked.add(d)
    try:
        os.utime(d)  # recently used: pruned last
    except OSError:
        pass
    return True


def _prefix_defines(text):
    """The macros a unit defines (without values) before it includes the header, or None where
    anything else comes first (GCC would not read a .gch then)."""
    defines = []
    for line in text.split("\n", _HEAD_LINES)[:_HEAD_LINES]:  # (not the whole of a large unit)
        line = line.strip()
        if line == _INCLUDE:
            return tuple(defines)
        m = _DEFINE.match(line)
        if m:
            defines.append(m.group(1))
        elif line and not (line.startswith("/*") and line.endswith("*/")):
            return None
    return None


def _place(cc, flags, text, host):
    defines = _prefix_defines(text)
    if defines is None:
        return None
    # A CC with options of its own may name directories relative to where the compile runs.
    try:
        here = os.getcwd() if len(cc) > 1 else ""
    except OSError:  # a working directory removed: no precompiled header then
        return None
    return _where(tuple(cc), tuple(flags), defines, tuple(os.environ.get(v, "") for v in ENVIRONMENT) + (here, host))


@lru_cache(maxsize=None)
def _headers():
    """The runtime's header files, (name, bytes): what a .gch is made from and named by."""
    return tuple((p.name, p.read_bytes()) for p in sorted(csrc_dir().glob("*.h")))


@lru_cache(maxsize=None)
def _where(cc, flags, defines, environment):
    """(directory, key) of the precompiled header for these (``environment``: the include-path
    variables, the working directory where CC has options, and the host), or None where there is
    none to have: a wrapper or script as the compiler, no compiler, no Python to run the build,
    or a package directory another user could change."""
    if not cc or os.path.basename(cc[0]) in WRAPPERS or not os.path.exists("/bin/sh") \
            or not os.path.isabs(sys.executable or ""):
        return None
    binary = shutil.which(cc[0])
    if binary is None:
        return None
    real = os.path.realpath(binary)
    if os.path.basename(real) in WRAPPERS:  # a link named gcc to ccache (/usr/lib/ccache/gcc)
        return None
    try:
        with open(real, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
        st = os.stat(real)
    except OSError:
        return None
    root = csrc_dir() / DIR
    if cachedir.make_private(str(root)) is not None:  # (nothing made where others could write)
        return None
    h = hashlib.sha256()
    for part in (shlex.join(cc), f"{real} {st.st_size} {st.st_mtime_ns}", shlex.join(flags), " ".join(defines),
                 *environment):
        h.update(part.encode() + b"\0")
    for name, data in _headers():
        h.update(name.encode() + b"\0" + data)
    return str(root), h.hexdigest()[:32]


# Run by a Python of its own (-I -S: the standard library only): compile the copy of the
# header, check it is GCC's, list the files it read, then move the .gch into place.
_BUILD = r"""
import json, os, re, subprocess, sys
out, marker, cmd = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
tmp = os.path.join(out, ".%d" % os.getpid())


def mark(name):
    try:
        open(os.path.join(out, name), "w").close()
    except OSError:
        pass


try:
    ok = subprocess.run(cmd + ["-MD", "-MF", tmp + ".d", "-o", tmp + ".gch"], stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if ok:
        with open(tmp + ".gch", "rb") as f:
            ok = None if f.read(4) != b"gpch" else True
    if not ok:  # output that is not GCC's: for good; a failure (a full disk): for a while
        mark("unsupported" if ok is None else "failed")
    else:
        with open(tmp + ".d") as f:
            rule = f.read().replace("\\\n", " ").split(": ", 1)[1]
        lines = []
        for p in re.split(r"(?<!\\)\s+", rule.strip()):
            p = p.replace("\\ ", " ").replace("\\#", "#").replace("$$", "$")
            st = os.stat(p)
            lines.append("%d %d %s" % (st.st_size, st.st_mtime_ns, os.path.abspath(p)))
        with open(tmp + ".deps", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp + ".deps", os.path.join(out, "deps"))
        os.replace(tmp + ".gch", os.path.join(out, "symgrad_rt.h.gch"))
except OSError:
    mark("failed")
finally:
    for ext in (".gch", ".d", ".deps"):
        try:
            os.unlink(tmp + ext)
        except OSError:
            pass
    try:
        os.unlink(marker)
    except OSError:
        pass
"""


def _start(root, key, cc, flags, defines):
    """Start building the precompiled header ``key``, detached: a shell starts the build in
    the background and exits at once. A marker keeps other processes from building it
    meanwhile; the build removes it, or this where the build does not start."""
    import json

    from . import spawn
    with _lock:
        if key in _started:
            return
        _started.add(key)
    marker = os.path.join(root, key + ".building")
    try:
        if time.time() - os.stat(marker).st_mtime < STALE:
            return
        os.unlink(marker)
    except OSError:
        pass
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:
        return
    try:
        _prune(root, key)
        out = os.path.join(root, key)
        os.makedirs(out, mode=0o700, exist_ok=True)
        for name, data in _headers():  # the very text the key hashed, whatever csrc/ holds by now
            with open(os.path.join(out, name), "wb") as f:  # beside the .gch: a second #include finds it
                f.write(data)
        cmd = [*cc, *flags, *(f"-D{m}=" for m in defines), "-x", "c-header", os.path.join(out, HEADER)]
        script = shlex.join([sys.executable, "-I", "-S", "-c", _BUILD, out, marker, json.dumps(cmd)])
        code = spawn.run(["/bin/sh", "-c", f"({script}) </dev/null >/dev/null 2>&1 &"], timeout=30,
                         new_session=True)[0]
    except OSError:  # (a full disk)
        code = None
    # An interrupt meanwhile leaves the marker: a build may be under way, and a second one in its
    # directory would rewrite the header copies it reads (others then go without for STALE s).
    if code != 0:  # no build started (sh could not fork): others may try at once
        try:
            os.unlink(marker)
        except OSError:
            pass


def _prune(root, keep):
    """Remove all but the KEEP most recently used precompiled headers, and the markers and
    temporary files of builds that died."""
    try:
        entries = [(e.stat(follow_symlinks=False).st_mtime, e) for e in os.scandir(root)]
    except OSError:
        return
    now = time.time()
    dirs = sorted(((t, e) for t, e in entries if e.is_dir(follow_symlinks=False) and e.name != keep),
                  key=lambda te: te[0], reverse=True)
    for _, e in dirs[KEEP - 1:]:
        shutil.rmtree(e.path, ignore_errors=True)
    stale = [e.path for t, e in entries if e.name.endswith(".building") and now - t > STALE]
    for e in [e for _, e in dirs[:KEEP - 1]] + [os.path.join(root, keep)]:
        try:
            stale += [t.path for t in os.scandir(e) if t.name.startswith(".") and now - t.stat().st_mtime > STALE]
        except OSError:
            pass
    for path in stale:
        try:
            os.unlink(path)
        except OSError:
            pass
