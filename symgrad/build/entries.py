"""One cache directory's entries: how an entry is written, read back and verified, removed,
and swept (which entries a process has loaded, and where it looks: cache.py).

symgrad never follows a symlink in the cache and writes every file with explicit modes (0600,
0700) through unique temporary names and an atomic rename. An entry for key K is
``_sg_K.json`` (what the library file is called, its SHA-256 and, for diagnostics, the
compiler that built it) plus that library file (named by its own hash, so two processes
writing K at once never mix one's metadata with the other's library). No sympy here."""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path

from .cachedir import POSIX

FORMAT = 2  # 2: plain shared libraries (library.py); 1 was cffi extension modules
EXT = ".so"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


# -- reading and verifying entries ----------------------------------------------------------
def _meta_path(d, key):
    return d / f"_sg_{key}.json"


def open_own(path):
    """fd of a regular file of ours that only we can write, or None (absent); raises
    Damaged if the file is there but not one symgrad may trust."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block
    except FileNotFoundError:
        return None
    except OSError as e:
        raise Damaged(f"{path.name} cannot be opened ({e.strerror})") from None
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = "it is not a regular file"
    elif POSIX and st.st_uid != os.getuid():
        why = "it belongs to another user"
    elif POSIX and st.st_mode & 0o022:
        why = f"it is writable by others (mode {stat.S_IMODE(st.st_mode):o})"
    if why:
        os.close(fd)
        raise Damaged(f"{path.name}: {why}")
    return fd


class Damaged(Exception):
    """A cache entry that is there but cannot be trusted."""


class Gone(Damaged):
    """A library file that its metadata names is not there (possibly replaced a moment ago
    by another process writing the same entry: worth reading the metadata again)."""


def read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def library_file(d, key):
    """(library path, its open fd, metadata) of the entry for ``key`` after checking its
    metadata and hash, or None if there is no entry; raises Damaged otherwise."""
    fd = open_own(_meta_path(d, key))
    if fd is None:
        return None
    try:
        meta = json.loads(read_all(fd).decode())
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Damaged("its metadata is not valid") from None
    finally:
        os.close(fd)
    if not isinstance(meta, dict):
        raise Damaged("its metadata does not describe this kernel")
    name = meta.get("library")
    if meta.get("format") != FORMAT or meta.get("key") != key or not isinstance(name, str) or \
            not re.fullmatch(rf"_sg_{re.escape(key)}-[0-9a-f]{{16}}{re.escape(EXT)}", name):
        raise Damaged("its metadata does not describe this kernel")
    lib = d / name
    fd = open_own(lib)
    if fd is None:
        raise Gone("its library file is missing")
    data = read_all(fd)
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        os.close(fd)
        raise Damaged("its library file does not match its recorded hash (truncated or altered)")
    return lib, fd, meta


def noexec(d):
    try:
        return bool(os.statvfs(d).f_flag & getattr(os, "ST_NOEXEC", 0))
    except OSError:
        return False


def remove(d, key):
    """Remove the entry for ``key`` (best effort: a read-only cache keeps it)."""
    for p in list(d.glob(f"_sg_{key}.json")) + list(d.glob(f"_sg_{key}-*{EXT}")):
        try:
            os.unlink(p)  # unlink removes a symlink itself, never its target
        except OSError:
            pass


# -- writing entries ---------------------------------------------------------------------------
def write_file(d, name, data, mode):
    """Write ``data`` to ``d/name`` through a unique temporary file and an atomic rename."""
    import tempfile  # writes only: not imported where every kernel is cached
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, d / name)
        return d / name
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


DIAGNOSTICS = ("cc", "compiler", "shipped")  # metadata that says where a library came from


def store(d, key, data, source=None, info=None):
    """Put a compiled library (its bytes) into ``d`` as the entry for ``key``, with ``info``
    (DIAGNOSTICS: the compiler that built it) in its metadata; returns the library's final
    path. Raises OSError if ``d`` cannot be written."""
    digest = hashlib.sha256(data).hexdigest()
    name = f"_sg_{key}-{digest[:16]}{EXT}"
    write_file(d, name, data, 0o700)
    if source is not None:
        write_file(d, f"_sg_{key}.c", source.encode(), 0o600)
    meta = {"format": FORMAT, "key": key, "library": name, "sha256": digest, "size": len(data),
            "created": time.time(), **{k: v for k, v in (info or {}).items() if k in DIAGNOSTICS}}
    write_file(d, f"_sg_{key}.json", json.dumps(meta).encode(), 0o600)
    _remove_unlisted(d.glob(f"_sg_{key}-*{EXT}"), name, GRACE)
    return d / name


GRACE = 600.0  # s: a library another process wrote this recently may be about to be loaded


def _remove_unlisted(libraries, listed, min_age):
    """Remove the files ``libraries`` (one key's) other than ``listed`` (earlier writes) older
    than ``min_age`` s: a younger one may belong to a process writing the same entry now."""
    now = time.time()
    for old in libraries:
        try:
            if old.name != listed and now - os.lstat(old).st_mtime > min_age:
                os.unlink(old)
        except OSError:
            pass


def sweep(d, max_age=86400.0):
    """Remove build and temporary files of builds that died, and libraries no metadata lists
    (left by processes that wrote the same entry at once), older than ``max_age`` s. One
    directory listing: a glob per key was quadratic (4.9 s for a cache of 1553 entries)."""
    now = time.time()
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    libraries = {}  # key -> its library files (_sg_<key>-<anything><EXT>)
    for e in entries:
        if e.name.startswith("_sg_") and e.name.endswith(EXT) and "-" in e.name:
            libraries.setdefault(e.name[4:].split("-", 1)[0], []).append(e)
    for e in entries:
        if e.name.endswith(".json") and e.name.startswith("_sg_") and e.name[4:-5] in libraries:
            fd = None
            try:
                fd = open_own(Path(e.path))
                if fd is None:  # not ours to judge
                    continue
                listed = json.loads(read_all(fd).decode()).get("library")
            except (Damaged, OSError, ValueError, UnicodeDecodeError, RecursionError, AttributeError):
                continue
            finally:
                if fd is not None:
                    os.close(fd)
            _remove_unlisted(libraries[e.name[4:-5]], listed, max_age)
        if not e.name.startswith((".build-", ".tmp-")):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if now - st.st_mtime < max_age or (POSIX and st.st_uid != os.getuid()):
                continue
            if stat.S_ISDIR(st.st_mode):
                import shutil
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)
        except OSError:
            pass
