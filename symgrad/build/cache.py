"""The kernel cache's entries: how they are written, verified and loaded (where the cache
lives and which directories it trusts: cachedir.py).

symgrad never follows a symlink in the cache, never loads a file it did not verify, and writes every
file with explicit modes (0600, 0700) through unique temporary names and an atomic
rename. An entry for key K is ``_sg_K.json`` (what the library file is called, its SHA-256
and, for diagnostics, the compiler that built it) plus that library file (named by its own
hash, so two processes writing K at once never mix one's metadata with the other's library).
A damaged entry is removed and rebuilt with a warning; a cache that cannot be written, or
whose files cannot be mapped executable, degrades to a private directory with one warning.
A library a pickle shipped becomes an entry like any other (adopt). No sympy here."""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path

from .. import forksafe
from .cachedir import POSIX, directory, private_dir, warn_once
from ..errors import CacheError, CompileError

FORMAT = 2  # 2: plain shared libraries (library.py); 1 was cffi extension modules
EXT = ".so"
_loaded = {}   # key -> loaded library.Library
_files = {}    # key -> (library file, its SHA-256, its metadata's diagnostics) of _loaded[key]
_shipping = {}  # key -> (bytes, SHA-256, diagnostics) of that file, read at its first pickle
_lock = forksafe.RLock()
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


# -- reading and verifying entries ----------------------------------------------------------
def _meta_path(d, key):
    return d / f"_sg_{key}.json"


def _open_own(path):
    """fd of a regular file of ours that only we can write, or None (absent); raises
    _Damaged if the file is there but not one symgrad may trust."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _Damaged(f"{path.name} cannot be opened ({e.strerror})") from None
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
        raise _Damaged(f"{path.name}: {why}")
    return fd


class _Damaged(Exception):
    """A cache entry that is there but cannot be trusted."""


class _Gone(_Damaged):
    """A library file that its metadata names is not there (possibly replaced a moment ago
    by another process writing the same entry: worth reading the metadata again)."""


def _read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _library_file(d, key):
    """(library path, its open fd, metadata) of the entry for ``key`` after checking its
    metadata and hash, or None if there is no entry; raises _Damaged otherwise."""
    fd = _open_own(_meta_path(d, key))
    if fd is None:
        return None
    try:
        meta = json.loads(_read_all(fd).decode())
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise _Damaged("its metadata is not valid") from None
    finally:
        os.close(fd)
    if not isinstance(meta, dict):
        raise _Damaged("its metadata does not describe this kernel")
    name = meta.get("library")
    if meta.get("format") != FORMAT or meta.get("key") != key or not isinstance(name, str) or \
            not re.fullmatch(rf"_sg_{re.escape(key)}-[0-9a-f]{{16}}{re.escape(EXT)}", name):
        raise _Damaged("its metadata does not describe this kernel")
    lib = d / name
    fd = _open_own(lib)
    if fd is None:
        raise _Gone("its library file is missing")
    data = _read_all(fd)
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        os.close(fd)
        raise _Damaged("its library file does not match its recorded hash (truncated or altered)")
    return lib, fd, meta


def _dlopen(key, path, fd):
    """Load the library at ``path``, verified through the open ``fd``: the path must still be
    that very file (the directory is ours alone, so nobody else can swap it in between)."""
    try:
        st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise _Gone("its library file was removed while it was being checked") from None
    if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
        raise _Damaged("its library file changed while it was being checked")
    from .library import Library
    return Library(path)


def _verified_key(lib, key):
    """Whether the library says it was built for ``key``: its own key, or one of the kernels
    it holds (a library of several kernels, build.build_many, is stored under each of theirs)."""
    try:
        return lib.string("symgrad_key") == key or key in (lib.string("symgrad_keys") or "").split()
    except (ValueError, UnicodeDecodeError):
        return False


class NotExecutable(Exception):
    """A verified library that the system refuses to map (a noexec mount)."""


def load_from(d, key, what="the cached kernel"):
    """The library for ``key`` from directory ``d``: None if absent; a damaged entry is removed
    (with a warning naming ``what`` it was) and None returned; NotExecutable if it cannot be
    mapped there."""
    for attempt in range(3):
        try:
            return _load(d, key)
        except _Gone as e:
            if attempt < 2:
                time.sleep(0.01 * (attempt + 1))
                continue
            damage = e
        except _Damaged as e:
            damage = e
        warn_once(("damaged", key), f"{what} {key[:12]} in {d} was damaged ({damage}); it is rebuilt")
        remove(d, key)
        return None


def _load(d, key):
    """One attempt of load_from; raises _Damaged (or _Gone) for an entry it cannot trust."""
    found = _library_file(d, key)
    if found is None:
        return None
    path, fd, meta = found
    try:
        mod = _dlopen(key, path, fd)
    except OSError as e:
        if _noexec(d) or "map" in str(e).lower() and "segment" in str(e).lower():
            raise NotExecutable(str(e)) from None
        raise _Damaged(f"it does not load ({e})") from None
    finally:
        os.close(fd)
    if not _verified_key(mod, key):
        raise _Damaged("the library was built for another kernel")
    with _lock:
        _files[key] = (path, meta["sha256"], {k: meta[k] for k in _DIAGNOSTICS if k in meta})
    return mod


def _noexec(d):
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


_DIAGNOSTICS = ("cc", "compiler", "shipped")  # metadata that says where a library came from


def store(d, key, data, source=None, info=None):
    """Put a compiled library (its bytes) into ``d`` as the entry for ``key``, with ``info``
    (_DIAGNOSTICS: the compiler that built it) in its metadata; returns the library's final
    path. Raises OSError if ``d`` cannot be written."""
    digest = hashlib.sha256(data).hexdigest()
    name = f"_sg_{key}-{digest[:16]}{EXT}"
    write_file(d, name, data, 0o700)
    if source is not None:
        write_file(d, f"_sg_{key}.c", source.encode(), 0o600)
    meta = {"format": FORMAT, "key": key, "library": name, "sha256": digest, "size": len(data),
            "created": time.time(), **{k: v for k, v in (info or {}).items() if k in _DIAGNOSTICS}}
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
                fd = _open_own(Path(e.path))
                if fd is None:  # not ours to judge
                    continue
                listed = json.loads(_read_all(fd).decode()).get("library")
            except (_Damaged, OSError, ValueError, UnicodeDecodeError, RecursionError, AttributeError):
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


# -- the cache as build.py sees it -------------------------------------------------------------
def lookup(key):
    """The loaded library for ``key`` (this process's, or a verified cache entry), or None."""
    with _lock:
        mod = _loaded.get(key)
        if mod is not None:
            return mod
        for d in _places():
            try:
                mod = load_from(d, key)
            except NotExecutable as e:
                warn_once(("noexec", str(d)), f"{d} does not allow loading compiled code ({e}); "
                          "kernels are built in a private directory instead")
                continue
            if mod is not None:
                _loaded[key] = mod
                return mod
        return None


def _places():
    """Directories a kernel may be found in: the cache, then this user's private directory
    (kernels built there when the cache could not take them), if there is one (a generator:
    a kernel found in the cache does not look for the private directory)."""
    d = directory()
    yield d
    p = private_dir(create=False)
    if p is not None and p != d:
        yield p


def describe_places():
    """Where kernels are looked up, in words (for errors)."""
    try:
        return ", ".join(str(d) for d in _places())
    except CacheError as e:
        return f"unusable: {e}"


def building_places():
    """Where to build, in order (a generator, so the private directory is made only when
    reached): the cache, then the private directory."""
    d = directory()
    if _noexec(d):
        warn_once(("noexec", str(d)), f"{d} is on a filesystem that does not allow loading compiled code "
                  "(noexec); kernels are built in a private directory instead")
    else:
        yield d
    p = private_dir()
    if p != d:
        yield p


def install(d, key, data, source=None, info=None):
    """Store a built library (its bytes) in ``d`` and load it; on failure raise OSError or
    NotExecutable."""
    path = store(d, key, data, source, info)
    mod = load_from(d, key)
    if mod is None:
        raise OSError(f"the kernel stored at {path} could not be read back")
    with _lock:
        _loaded[key] = mod
    return mod


def adopt(key, data, sha256, info=None):
    """Make ``data``, a library built for ``key`` elsewhere (a pickle's), the entry for ``key``
    in the first place that takes it, and load it as any entry (its hash checked, then the key
    it reports). None, with a warning, where ``data`` does not match ``sha256`` (it is never
    written or loaded); None where no place takes it."""
    if hashlib.sha256(data).hexdigest() != sha256:
        warn_once(("shipped", key), f"the library shipped with a pickled Function for kernel {key[:12]} "
                  "does not match its SHA-256 (altered or truncated on the way); it is not loaded: "
                  "the kernel is built here from the pickled Function instead")
        return None
    for d in building_places():
        try:
            store(d, key, data, None, dict(info or {}, shipped=True))
            mod = load_from(d, key, "the library a pickle shipped for kernel")  # None (warned) if it does not load
        except (OSError, NotExecutable):
            continue
        if mod is not None:
            with _lock:
                _loaded[key] = mod
        return mod
    return None


def library_bytes(key):
    """(bytes, SHA-256, diagnostics) of the library loaded for ``key`` in this process, read
    once from its verified file (later calls reuse them); None where none is loaded here or
    its file has changed or gone since it was loaded."""
    with _lock:
        if key not in _shipping and key in _loaded and key in _files:
            path, digest, info = _files[key]
            try:
                fd = _open_own(path)
            except _Damaged:
                fd = None
            if fd is not None:
                try:
                    data = _read_all(fd)
                finally:
                    os.close(fd)
                if hashlib.sha256(data).hexdigest() == digest:
                    _shipping[key] = (data, digest, info)
        return _shipping.get(key)


def fail(places_tried):
    """The CompileError for a kernel that could be built nowhere."""
    lines = "\n".join(f"  {d}: {why}" for d, why in places_tried)
    return CompileError("symgrad could not build or load the kernel anywhere:\n" + lines +
                        "\nSet SYMGRAD_CACHE_DIR to a directory of yours on a local, writable filesystem "
                        "that allows executing code.")


def library_meta(mod, key=None):
    """What the library says it computes (symgrad_meta(): kernel name, dtype, result shapes);
    of a library of several kernels, what it says of the one built for ``key``."""
    try:
        meta = json.loads(mod.string("symgrad_meta") or "")
    except (TypeError, ValueError, UnicodeDecodeError):
        return None
    if isinstance(meta, dict) and "members" in meta:
        return meta["members"].get(key) if isinstance(meta["members"], dict) else None
    return meta


def discard(key):
    """Forget and remove the entry for ``key`` (it was found to describe another kernel)."""
    with _lock:
        _loaded.pop(key, None)
        _files.pop(key, None)
        _shipping.pop(key, None)
        for d in _places():
            remove(d, key)
