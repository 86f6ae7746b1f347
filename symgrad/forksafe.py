"""Locks that a forked child gets back unlocked: a thread of the parent may hold one at the
fork (building a kernel, tracing), and that thread does not exist in the child."""
from __future__ import annotations

import os
import threading
import weakref

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


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
