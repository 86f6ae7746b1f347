"""The kernel cache on disk: where it lives, what it trusts, how entries are written and loaded.

A cache is a directory owned by the current user and writable by nobody else, below
directories nobody else can change (checked on every use); symgrad
never follows a symlink in it, never loads a file it did not verify, and writes every
file with explicit modes (0600, 0700) through unique temporary names and an atomic
rename. An entry for key K is ``_sg_K.json`` (what the library file is called and its
SHA-256) plus that library file (named by its own hash, so two processes writing K at
once never mix one's metadata with the other's library). A damaged entry is removed and
rebuilt with a warning; a cache that cannot be written, or whose files cannot be mapped
executable, degrades to a private directory with one warning. No sympy here."""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import stat
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path

from . import forksafe
from .errors import CacheError, CacheWarning, CompileError

FORMAT = 1
EXT = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
_loaded = {}   # key -> loaded cffi module
_lock = forksafe.RLock()
_warned = set()
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_POSIX = hasattr(os, "getuid")


def warn_once(what, message):
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"symgrad: {message}", CacheWarning, stacklevel=4)


# -- which directory ----------------------------------------------------------------------
def _mine(st):
    """Whether a file or directory with status ``st`` belongs to this user or to root."""
    return not _POSIX or st.st_uid in (0, os.getuid())


def _private_group(gid):
    """Whether ``gid`` is this user's own group (the user-private-group convention)."""
    try:
        import grp
        import pwd
        user = pwd.getpwuid(os.getuid()).pw_name
        g = grp.getgrgid(gid)
        return gid == os.getgid() and g.gr_name == user and set(g.gr_mem) <= {user}
    except (ImportError, KeyError, OSError):
        return False


def _guarded(path, st):
    """Why another user could rename or replace entries of the directory ``path``, or None."""
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if not _mine(st):
        return f"{path} is owned by another user (uid {st.st_uid})"
    sticky = st.st_mode & stat.S_ISVTX
    if st.st_mode & 0o002 and not sticky:
        return f"{path} is writable by everyone (mode {stat.S_IMODE(st.st_mode):o})"
    if st.st_mode & 0o020 and not sticky and not _private_group(st.st_gid):
        return f"{path} is writable by its group (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _route(path):
    """Why someone else could replace ``path`` through one of the directories above it (or a
    symbolic link on the way), or None: every directory passed through must be this user's or
    root's and writable by nobody else (a sticky directory such as /tmp is fine)."""
    if not _POSIX:
        return None
    names = list(reversed(Path(os.path.abspath(path)).parts[1:]))  # a stack; the last name at the bottom
    here, hops = os.sep, 0
    try:
        why = _guarded(here, os.stat(here))
        while why is None and len(names) > 1:
            name = names.pop()
            if name in ("", "."):
                continue
            if name == "..":
                here = os.path.dirname(here)
                continue
            step = os.path.join(here, name)
            st = os.lstat(step)
            if stat.S_ISLNK(st.st_mode):  # follow it, checking where it leads
                hops += 1
                if not _mine(st):
                    return f"{step} is a symbolic link owned by another user (uid {st.st_uid})"
                if hops > 40:
                    return f"{step}: too many symbolic links"
                target = os.readlink(step)
                if os.path.isabs(target):
                    here = os.sep
                names.extend(reversed([p for p in Path(target).parts if p != os.sep]))
                continue
            why = _guarded(step, st)
            here = step
    except OSError as e:
        return f"{e.filename or path} cannot be examined ({e.strerror})"
    return why


def unsafe(path):
    """Why ``path`` may not be used as a cache directory, or None if it may: a real directory
    (not a symlink), owned by the current user, writable by no one else, below directories
    that no one else can change either."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"it cannot be examined ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if _POSIX and st.st_uid != os.getuid():
        return f"it is owned by another user (uid {st.st_uid}, you are {os.getuid()})"
    if _POSIX and st.st_mode & 0o022:
        return f"it is writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {stat.S_IMODE(st.st_mode):o})"
    why = _route(path)
    return f"another user could replace it: {why}" if why else None


def _make_private(path):
    """Create ``path`` and any missing parents as 0700 directories (whatever the umask);
    the reason it is unusable, or None."""
    path = os.path.abspath(path)
    missing = []
    p = path
    while not os.path.lexists(p) and os.path.dirname(p) != p:
        missing.append(p)
        p = os.path.dirname(p)
    if missing:  # nothing is made below a directory someone else could change
        why = _route(os.path.join(p, "x"))
        if why:
            return f"another user could replace it: {why}"
    for p in reversed(missing):
        try:
            os.mkdir(p, 0o700)  # the umask can only take bits away from 0700
        except FileExistsError:
            pass
        except OSError as e:
            return f"{p} cannot be created ({e.strerror})"
    return unsafe(path)


def _default_location():
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        home = os.environ.get("HOME")
        if not home:
            try:
                import pwd
                home = pwd.getpwuid(os.getuid()).pw_dir
            except (ImportError, KeyError, OSError):
                home = None
        base = os.path.join(home, ".cache") if home and os.path.isabs(home) else None
    return os.path.join(base, "symgrad") if base else None


def _temp_bases():
    """Temporary directories a private directory may go in: the system's (TMPDIR), or where
    another user could replace things in it, /tmp or /var/tmp."""
    seen = []
    for base in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        base = os.path.abspath(base)
        if base not in seen and os.path.isdir(base):
            seen.append(base)
            if _route(os.path.join(base, "x")) is None:
                return seen[-1:]
    return seen


def _private_path(base):
    return os.path.join(base, f"symgrad-{os.getuid() if _POSIX else 0}")


_private = {}  # "dir": this process's private directory, once made


def private_dir(create=True):
    """A directory for this user alone in a temporary directory, for kernels the cache cannot
    take: ``symgrad-<uid>`` there, kept across processes; if someone else has taken that name,
    a fresh directory for this process (removed at its exit). With ``create=False``, the
    shared one if it exists and is safe, else None."""
    with _lock:
        if "dir" in _private and unsafe(_private["dir"]) is None:
            return _private["dir"]
        _private.pop("dir", None)
        reasons = []
        for base in _temp_bases():
            path = _private_path(base)
            if not create:
                if os.path.lexists(path) and unsafe(path) is None:
                    return Path(path)
                continue
            why = _make_private(path)
            if why is None:
                _private["dir"] = Path(path)
                return _private["dir"]
            reasons.append(f"{path}: {why}")
            if _route(os.path.join(base, "x")) is None:  # the base itself is safe: a directory of our own
                try:
                    own = Path(tempfile.mkdtemp(prefix=f"symgrad-{os.getuid() if _POSIX else 0}-", dir=base))
                except OSError as e:
                    reasons.append(f"{base}: a directory cannot be made there ({e.strerror})")
                    continue
                _remove_at_exit(own)
                warn_once(("squatted", path), f"{path} cannot be used ({why}); this process builds "
                          f"in {own} (removed when it exits)")
                _private["dir"] = own
                return own
        if not create:
            return None
        raise CacheError("symgrad found no directory of its own to build kernels in:\n  "
                         + "\n  ".join(reasons) + "\nSet SYMGRAD_CACHE_DIR to a directory you own (mode 700).")


def _remove_at_exit(path):
    import atexit
    import shutil
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(path, ignore_errors=True))


_dir = {}


def directory():
    """The cache directory: ``$SYMGRAD_CACHE_DIR`` (an unsafe one raises CacheError), else
    ``$XDG_CACHE_HOME/symgrad`` or ``~/.cache/symgrad``, else (with one warning) a private
    temporary directory. Checked again on every use: a directory that has become unsafe is
    not used."""
    explicit = os.environ.get("SYMGRAD_CACHE_DIR")
    key = ("explicit", explicit) if explicit else ("default", os.environ.get("XDG_CACHE_HOME"),
                                                   os.environ.get("HOME"))
    with _lock:
        if key in _dir:
            d = _dir[key]
            why = unsafe(d)
        elif explicit:
            d = Path(os.path.abspath(explicit))
            why = _make_private(d) if not os.path.lexists(d) else unsafe(d)
        else:
            path = _default_location()
            d = Path(path) if path else None
            why = _make_private(path) if path else "no home directory is known (HOME is unset)"
        if why and explicit:
            _dir.pop(key, None)
            raise CacheError(f"SYMGRAD_CACHE_DIR={explicit!r} cannot be used: {why}. symgrad loads "
                             "native code from its cache, so the directory must be yours alone: "
                             "`chmod 700` it, or point SYMGRAD_CACHE_DIR at a directory you own")
        if why:
            fallback = private_dir()
            if d != fallback:
                warn_once(("default", str(d)), f"the cache directory {d} cannot be used ({why}); "
                          f"kernels go to {fallback} instead")
            d = fallback
        _dir[key] = d
        return d


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
    elif _POSIX and st.st_uid != os.getuid():
        why = "it belongs to another user"
    elif _POSIX and st.st_mode & 0o022:
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
    """(library path, its open fd) of the entry for ``key`` after checking its metadata and
    hash, or None if there is no entry; raises _Damaged otherwise."""
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
    return lib, fd


def _dlopen(key, path, fd):
    """Load the library at ``path``, verified through the open ``fd``: the path must still be
    that very file (the directory is ours alone, so nobody else can swap it in between)."""
    try:
        st, now = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise _Gone("its library file was removed while it was being checked") from None
    if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
        raise _Damaged("its library file changed while it was being checked")
    origin = str(path)
    name = f"_sg_{key}"
    loader = importlib.machinery.ExtensionFileLoader(name, origin)
    spec = importlib.util.spec_from_file_location(name, origin, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def _verified_key(mod, key):
    try:
        return mod.ffi.string(mod.lib.symgrad_key()).decode() == key
    except (AttributeError, TypeError, UnicodeDecodeError):
        return False


class NotExecutable(Exception):
    """A verified library that the system refuses to map (a noexec mount)."""


def load_from(d, key):
    """The library for ``key`` from directory ``d``: None if absent; a damaged entry is removed
    (with a warning) and None returned; NotExecutable if it cannot be mapped there."""
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
        warn_once(("damaged", key), f"the cached kernel {key[:12]} in {d} was damaged ({damage}); it is rebuilt")
        remove(d, key)
        return None


def _load(d, key):
    """One attempt of load_from; raises _Damaged (or _Gone) for an entry it cannot trust."""
    found = _library_file(d, key)
    if found is None:
        return None
    path, fd = found
    try:
        mod = _dlopen(key, path, fd)
    except ImportError as e:
        if _noexec(d) or "map" in str(e).lower() and "segment" in str(e).lower():
            raise NotExecutable(str(e)) from None
        raise _Damaged(f"it does not load ({e})") from None
    finally:
        os.close(fd)
    if not _verified_key(mod, key):
        raise _Damaged("the library was built for another kernel")
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


def store(d, key, library_file, source=None):
    """Put the compiled library (a file in a build directory) into ``d`` as the entry for
    ``key``; returns the library's final path. Raises OSError if ``d`` cannot be written."""
    with open(library_file, "rb") as f:
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    name = f"_sg_{key}-{digest[:16]}{EXT}"
    write_file(d, name, data, 0o700)
    if source is not None:
        write_file(d, f"_sg_{key}.c", source.encode(), 0o600)
    meta = {"format": FORMAT, "key": key, "library": name, "sha256": digest, "size": len(data),
            "created": time.time()}
    write_file(d, f"_sg_{key}.json", json.dumps(meta).encode(), 0o600)
    _remove_unlisted(d, key, name, GRACE)
    return d / name


GRACE = 600.0  # s: a library another process wrote this recently may be about to be loaded


def _remove_unlisted(d, key, listed, min_age):
    """Remove libraries of ``key`` other than ``listed`` (earlier writes) older than ``min_age`` s:
    a younger one may belong to a process writing the same entry at this moment."""
    now = time.time()
    for old in d.glob(f"_sg_{key}-*{EXT}"):
        try:
            if old.name != listed and now - old.lstat().st_mtime > min_age:
                os.unlink(old)
        except OSError:
            pass


def sweep(d, max_age=86400.0):
    """Remove build and temporary files of builds that died, and libraries no metadata lists
    (left by processes that wrote the same entry at once), older than ``max_age`` s."""
    now = time.time()
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    for e in entries:
        if e.name.endswith(".json") and e.name.startswith("_sg_"):
            key = e.name[4:-5]
            try:
                fd = _open_own(Path(e.path))
                listed = json.loads(_read_all(fd).decode()).get("library") if fd is not None else None
                os.close(fd)
            except (_Damaged, OSError, ValueError, UnicodeDecodeError, RecursionError, AttributeError):
                continue
            _remove_unlisted(d, key, listed, max_age)
        if not e.name.startswith((".build-", ".tmp-")):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if now - st.st_mtime < max_age or (_POSIX and st.st_uid != os.getuid()):
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
    (kernels built there when the cache could not take them), if there is one."""
    d = directory()
    p = private_dir(create=False)
    return [d] if p is None or p == d else [d, p]


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


def install(d, key, library_file, source):
    """Store a built library in ``d`` and load it; on failure raise OSError/NotExecutable."""
    path = store(d, key, library_file, source)
    mod = load_from(d, key)
    if mod is None:
        raise OSError(f"the kernel stored at {path} could not be read back")
    with _lock:
        _loaded[key] = mod
    return mod


def fail(places_tried):
    """The CompileError for a kernel that could be built nowhere."""
    lines = "\n".join(f"  {d}: {why}" for d, why in places_tried)
    return CompileError("symgrad could not build or load the kernel anywhere:\n" + lines +
                        "\nSet SYMGRAD_CACHE_DIR to a directory of yours on a local, writable filesystem "
                        "that allows executing code.")


def library_meta(mod):
    """What the library says it computes (symgrad_meta(): kernel name, dtype, result shapes)."""
    try:
        return json.loads(mod.ffi.string(mod.lib.symgrad_meta()).decode())
    except (AttributeError, TypeError, ValueError, UnicodeDecodeError):
        return None


def discard(key):
    """Forget and remove the entry for ``key`` (it was found to describe another kernel)."""
    with _lock:
        _loaded.pop(key, None)
        for d in _places():
            remove(d, key)
