"""Locks that a forked child gets back unlocked: a thread of the parent may hold one at the
fork (building a kernel, tracing), and that thread does not exist in the child. A fork also
waits for imports other threads are in the middle of (a build imports sympy and the
renderer lazily): a child forked mid-import finds the module half made and its import lock
held by a thread it does not have, and hangs at its first use of it."""
from __future__ import annotations

import os
import threading
import time
import weakref

IMPORT_WAIT = 60.0  # s: at most this long, in case an import waits for the forking thread

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
    """Whether another thread holds one of CPython's per-module import locks."""
    try:
        from importlib import _bootstrap
        refs = list(_bootstrap._module_locks.values())
    except (ImportError, AttributeError, RuntimeError):  # another Python: nothing to wait for
        return False
    me = threading.get_ident()
    for ref in refs:
        owner = getattr(ref(), "owner", None)
        if owner and owner != me:
            return True
    return False


def _before_fork():
    deadline = time.monotonic() + IMPORT_WAIT
    while _imports_in_flight() and time.monotonic() < deadline:
        time.sleep(0.001)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
