"""The kernel cache as a build sees it: which libraries this process has loaded, where a
kernel is looked up and built, and how a verified entry is loaded (an entry's files:
entries.py; where the cache lives and which directories it trusts: cachedir.py).

symgrad never loads a file it did not verify. A damaged entry is removed and rebuilt with a
warning; a cache that cannot be written, or whose files cannot be mapped executable, degrades
to a private directory with one warning. A library a pickle shipped becomes an entry like any
other (adopt). No sympy here."""
from __future__ import annotations

import hashlib
import json
import os
import time

from .. import forksafe
from .cachedir import directory, private_dir, warn_once
from .entries import DIAGNOSTICS, Damaged, Gone, library_file, noexec, open_own, read_all, remove, store
from ..errors import CacheError, CompileError

_loaded = {}   # key -> loaded library.Library
_files = {}    # key -> (library file, its SHA-256, its metadata's diagnostics) of _loaded[key]
_shipping = {}  # key -> (bytes, SHA-256, diagnostics) of that file, read at its first pickle
_lock = forksafe.RLock()


# -- loading a verified entry --------------------------------------------------------------------
def _dlopen(key, path, fd):
    """Load the library at ``path``, verified through the open ``fd``: the path must still be
    that very file (the directory is ours alone, so nobody else can swap it in between)."""
    try:
        st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise Gone("its library file was removed while it was being checked") from None
    if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
        raise Damaged("its library file changed while it was being checked")
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
        except Gone as e:
            if attempt < 2:
                time.sleep(0.01 * (attempt + 1))
                continue
            damage = e
        except Damaged as e:
            damage = e
        warn_once(("damaged", key), f"{what} {key[:12]} in {d} was damaged ({damage}); it is rebuilt")
        remove(d, key)
        return None


def _load(d, key):
    """One attempt of load_from; raises Damaged (or Gone) for an entry it cannot trust."""
    found = library_file(d, key)
    if found is None:
        return None
    path, fd, meta = found
    try:
        mod = _dlopen(key, path, fd)
    except OSError as e:
        if noexec(d) or "map" in str(e).lower() and "segment" in str(e).lower():
            raise NotExecutable(str(e)) from None
        raise Damaged(f"it does not load ({e})") from None
    finally:
        os.close(fd)
    if not _verified_key(mod, key):
        raise Damaged("the library was built for another kernel")
    with _lock:
        _files[key] = (path, meta["sha256"], {k: meta[k] for k in DIAGNOSTICS if k in meta})
    return mod


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
    if noexec(d):
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
                fd = open_own(path)
            except Damaged:
                fd = None
            if fd is not None:
                try:
                    data = read_all(fd)
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
