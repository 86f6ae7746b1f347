"""A line every PERIOD seconds while a long stage runs (source.stage): one background thread,
shared by every stage of every thread, sleeping on a condition until the next line is due (no
busy wait), started at the first stage and a daemon (it never keeps the process alive).

A stage's callback runs on that thread with the lock held, and its stage removes it under the
same lock: no line comes after its stage ended. A forked child gets a fresh lock and thread,
and keeps only the stages of the thread that forked (the others' threads are not there to end
them)."""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

PERIOD = 10.0  # s between two lines about one stage; a stage shorter than this prints none

_lock = threading.Lock()
_wake = threading.Condition(_lock)
_watched = {}  # token -> [when the next line is due, start, say, the thread of the stage]
_thread = [None]


@contextmanager
def every(say):
    """While the block runs: ``say(seconds since it began)`` every PERIOD seconds (from the
    ticker's thread; an exception it raises is dropped)."""
    token = object()
    start = time.monotonic()
    with _lock:
        _watched[token] = [start + PERIOD, start, say, threading.get_ident()]
        _start()
        _wake.notify()
    try:
        yield
    finally:
        with _lock:
            _watched.pop(token, None)


def _start():
    """Start the thread if this process has none (with the lock held)."""
    if _thread[0] is None:
        t = threading.Thread(target=_run, args=(_wake, _watched), name="symgrad-progress", daemon=True)
        try:
            t.start()
        except RuntimeError:  # the interpreter is shutting down: no lines
            return
        _thread[0] = t


def _run(wake, watched):
    with wake:
        while True:
            now = time.monotonic()
            due = min((w[0] for w in watched.values()), default=None)
            if due is None or due > now:
                wake.wait(None if due is None else due - now)
                continue
            for w in list(watched.values()):
                if w[0] <= now:
                    w[0] = now + PERIOD
                    try:
                        w[2](now - w[1])
                    except Exception:  # a handler's failure: the stage goes on
                        pass


def _after_fork_in_child():
    global _lock, _wake, _watched
    me = threading.get_ident()
    _lock = threading.Lock()
    _wake = threading.Condition(_lock)
    _watched = {k: w for k, w in _watched.items() if w[3] == me}
    _thread[0] = None
    if _watched:
        with _lock:
            _start()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
