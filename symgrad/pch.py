"""The runtime header, precompiled (GCC's symgrad_rt.h.gch): a kernel's compile then does not
parse <math.h>, <stdlib.h>, <omp.h> and the runtime again, 0.04-0.05 s of a small kernel's
0.25-0.30 s on a 2-core machine.

One per header text, compiler and flags (a directory named by their hash), kept beside the
header as Python keeps __pycache__ beside a module: a product of the installed package, not
of any kernel, so it outlives an emptied kernel cache. A compile that found none starts one
when it is done, in a process of its own, which no call and no exit waits for. GCC reads a .gch only where the
same compiler binary made it with the same target options and macros, and otherwise the
header, the same code either way (tests/e2e/test_pch.py compares the objects); the hash
covers what GCC does not check: the header's text and the flags."""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import time
from functools import lru_cache

from . import cachedir, forksafe
from .runtime import csrc_dir

HEADER = "symgrad_rt.h"
DIR = "__pch__"
KEEP = 8  # precompiled headers kept, the newest (header versions x flag sets x unit kinds)
STALE = 300.0  # s: a build marker this old is one whose process died
# Wrappers that would not cache (or ship) a compile that reads a .gch: left as they are.
WRAPPERS = frozenset({"ccache", "sccache", "distcc", "icecc"})
_INCLUDE = f'#include "{HEADER}"'
_DEFINE = re.compile(r"#define (\w+)$")
_lock = forksafe.RLock()
_started = set()


def include_dirs(cc, flags, text):
    """The ``-I`` arguments (before the runtime's own) that let ``cc flags`` compile the unit
    ``text`` from the precompiled header: its directory, or none while there is none."""
    where = _place(cc, flags, text)
    if where is not None and os.path.exists(os.path.join(*where, HEADER + ".gch")):
        return ["-I", os.path.join(*where)]
    return []


def prepare(cc, flags, text):
    """Start building the precompiled header for such a unit, if there is none (after ``cc``
    compiled one: a compiler that refuses code is not asked to precompile)."""
    where = _place(cc, flags, text)
    if where is not None and not os.path.exists(os.path.join(*where, HEADER + ".gch")):
        _start(*where, cc, flags, _prefix_defines(text))


def _place(cc, flags, text):
    defines = _prefix_defines(text)
    return None if defines is None else _where(tuple(cc), tuple(flags), defines)


def discard(args):
    """Remove the precompiled header that ``include_dirs`` gave as ``args`` (a compile that
    read it failed: a damaged file), so that no compile reads it again."""
    if args:
        shutil.rmtree(args[1], ignore_errors=True)


def _prefix_defines(text):
    """The macros a unit defines (without values) before it includes the header, or None where
    anything else comes first (GCC would not read a .gch then)."""
    defines = []
    for line in text.splitlines():
        line = line.strip()
        if line == _INCLUDE:
            return tuple(defines)
        m = _DEFINE.match(line)
        if m:
            defines.append(m.group(1))
        elif line and not (line.startswith("/*") and line.endswith("*/")):
            return None
    return None


@lru_cache(maxsize=None)
def _where(cc, flags, defines):
    """(directory, key) of the precompiled header for these, or None where there is none to
    have: a compiler wrapper, no compiler, or a package directory another user could change."""
    if not cc or os.path.basename(cc[0]) in WRAPPERS or not os.path.exists("/bin/sh"):
        return None
    binary = shutil.which(cc[0])
    if binary is None:
        return None
    root = csrc_dir() / DIR
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except OSError:
        return None
    if cachedir.unsafe(str(root)) is not None:
        return None
    real = os.path.realpath(binary)
    st = os.stat(real)
    h = hashlib.sha256()
    for part in (shlex.join(cc), f"{real} {st.st_size} {st.st_mtime_ns}", shlex.join(flags), " ".join(defines)):
        h.update(part.encode() + b"\0")
    for path in sorted(csrc_dir().glob("*.h")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return str(root), h.hexdigest()[:32]


def _start(root, key, cc, flags, defines):
    """Start building the precompiled header ``key`` in a detached shell: the compiler writes a
    temporary file, renamed into place when complete (a compile never reads half of one). A
    marker keeps other processes from building the same one meanwhile."""
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
    _prune(root, key)
    out = os.path.join(root, key)
    os.makedirs(out, mode=0o700, exist_ok=True)
    tmp, gch = os.path.join(out, f".{os.getpid()}.tmp"), os.path.join(out, HEADER + ".gch")
    cmd = [*cc, *flags, *(f"-D{m}=" for m in defines), "-x", "c-header", str(csrc_dir() / HEADER), "-o", tmp]
    q = shlex.quote
    script = f"{shlex.join(cmd)} && mv -f {q(tmp)} {q(gch)}; rm -f {q(tmp)} {q(marker)}"
    import threading
    threading.Thread(target=_detach, args=(script,), name="symgrad-pch", daemon=True).start()


def _detach(script):
    """Run ``script`` in the background of a shell that exits at once: nothing to wait for."""
    import subprocess
    try:
        subprocess.run(["/bin/sh", "-c", f"({script}) </dev/null >/dev/null 2>&1 &"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       start_new_session=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pass


def _prune(root, keep):
    """Remove all but the KEEP newest precompiled headers, and markers of builds that died."""
    try:
        entries = [(e.stat().st_mtime, e) for e in os.scandir(root)]
    except OSError:
        return
    now = time.time()
    dirs = sorted(((t, e) for t, e in entries if e.is_dir(follow_symlinks=False) and e.name != keep), reverse=True)
    for _, e in dirs[KEEP - 1:]:
        shutil.rmtree(e.path, ignore_errors=True)
    for t, e in entries:
        if e.name.endswith(".building") and now - t > STALE:
            try:
                os.unlink(e.path)
            except OSError:
                pass
