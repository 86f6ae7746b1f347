"""Where the kernel cache lives and which directories it trusts.

A cache directory must be a real directory owned by the current user and writable by
nobody else, below directories nobody else can change (checked on every use). Without a
usable one, kernels go to a private directory of this user's in a temporary directory,
with one warning. No sympy here."""
from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

from .. import forksafe
from ..errors import CacheError, CacheWarning

POSIX = hasattr(os, "getuid")
_lock = forksafe.RLock()
_warned = set()

def warn_once(what, message):
    if what not in _warned:
        _warned.add(what)
        warnings.warn(f"symgrad: {message}", CacheWarning, stacklevel=4)


def _mine(st):
    """Whether a file or directory with status ``st`` belongs to this user or to root."""
    return not POSIX or st.st_uid in (0, os.getuid())


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
    if not POSIX:
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
    if POSIX and st.st_uid != os.getuid():
        return f"it is owned by another user (uid {st.st_uid}, you are {os.getuid()})"
    if POSIX and st.st_mode & 0o022:
        return f"it is writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {stat.S_IMODE(st.st_mode):o})"
    why = _route(path)
    return f"another user could replace it: {why}" if why else None


def make_private(path):
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
    import tempfile
    seen = []
    for base in (tempfile.gettempdir(), "/tmp", "/var/tmp"):
        base = os.path.abspath(base)
        if base not in seen and os.path.isdir(base):
            seen.append(base)
            if _route(os.path.join(base, "x")) is None:
                return seen[-1:]
    return seen


def _private_path(base):
    return os.path.join(base, f"symgrad-{os.getuid() if POSIX else 0}")


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
            why = make_private(path)
            if why is None:
                _private["dir"] = Path(path)
                return _private["dir"]
            reasons.append(f"{path}: {why}")
            if _route(os.path.join(base, "x")) is None:  # the base itself is safe: a directory of our own
                import tempfile
                try:
                    own = Path(tempfile.mkdtemp(prefix=f"symgrad-{os.getuid() if POSIX else 0}-", dir=base))
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
            why = make_private(d) if not os.path.lexists(d) else unsafe(d)
        else:
            path = _default_location()
            d = Path(path) if path else None
            why = make_private(path) if path else "no home directory is known (HOME is unset)"
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
