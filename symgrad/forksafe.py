"""Locks that a forked child gets back unlocked: a thread of the parent may hold one at the
fork (building a kernel, tracing), and that thread does not exist in the child. A fork also
waits (a while) for imports of symgrad's lazily imported packages that other threads are in
the middle of (a build imports sympy and the renderer): a child forked mid-import finds the
module half made and its import lock held by a thread it does not have, and hangs at its
first use of it."""
from __future__ import annotations

import os
import threading
import time
import weakref

IMPORT_WAIT = 20.0  # s: at most this long, in case an import waits for the forking thread
# the packages a build imports lazily (top-level names); other imports are not waited for
LAZY_PACKAGES = frozenset({"symgrad", "sympy", "mpmath", "cffi", "pycparser"})

_all = weakref.WeakSet()


class RLock:
    """A re-entrant lock, replaced by a fresh one in a forked child."""
    __slots__ = ("_lock", "__weakref__")

    def __init__(self):
        self._lock = threading.RLock()
        _all.add(self)

    def __enter__(self):
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)


def _after_fork_in_child():
    for lock in list(_all):
        lock._lock = threading.RLock()


def _imports_in_flight():
    """Whether another thread holds CPython's import lock of a module of LAZY_PACKAGES."""
    try:
        from importlib import _bootstrap
        locks = list(_bootstrap._module_locks.items())
    except (ImportError, AttributeError, RuntimeError):  # another Python: nothing to wait for
        return False
    me = threading.get_ident()
    for name, ref in locks:
        owner = getattr(ref(), "owner", None)
        if owner and owner != me and name.partition(".")[0] in LAZY_PACKAGES:
            return True
    return False


def _before_fork():
    deadline = time.monotonic() + IMPORT_WAIT
    while _imports_in_flight() and time.monotonic() < deadline:
        time.sleep(0.001)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
