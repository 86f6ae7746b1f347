"""Run a program and collect what it prints, by os.posix_spawnp and one pipe for its stdout
and stderr together: the subprocess module's import (with signal, selectors and locale) is a
twentieth of a small kernel's first call, and its features are not needed here."""
from __future__ import annotations

import os

SIGKILL = 9  # POSIX (the signal module is imported on the kill path only: kill)
# Signals Python ignores that a program expects at their default (subprocess restores them too):
# SIGPIPE (a compiler writing to a closed pipe stops) and SIGXFSZ, numbered as on x86, ARM and macOS.
DEFAULT_SIGNALS = (13, 25)


class Group:
    """Programs run together (``run(..., group=g)``): ``stop`` kills those running (with what
    they started: kill) and any started after it, and never signals a pid that run has already
    waited for (reused by then)."""

    def __init__(self):
        import threading
        self._lock, self._pids, self.stopped = threading.Lock(), set(), False

    def stop(self):
        with self._lock:
            self.stopped = True
            for pid in self._pids:  # (not yet waited for: still these programs)
                kill(pid)

    def _started(self, pid):
        with self._lock:
            self._pids.add(pid)
            if self.stopped:
                kill(pid)

    def _ended(self, pid):
        """Forget ``pid`` just before run waits for it: after this, stop leaves it alone."""
        with self._lock:
            self._pids.discard(pid)


def run(cmd, timeout=None, new_session=False, group=None):
    """(exit code, what ``cmd`` printed on stdout and stderr) of ``cmd`` run with stdin from
    /dev/null (in a session of its own with ``new_session``; else in the caller's process group,
    which a terminal's Ctrl-C reaches). After ``timeout`` seconds it is killed (with what it
    started that still runs: kill) and what it printed so far returned, even where a process it
    left behind holds its output open; an exception meanwhile (KeyboardInterrupt) kills it too.
    ``group``: a Group that can stop it (a caller that runs several).
    Raises OSError where it cannot be started (FileNotFoundError: no such program)."""
    if not hasattr(os, "posix_spawnp"):
        import subprocess
        try:
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=timeout, start_new_session=new_session)
        except subprocess.TimeoutExpired as e:
            return -SIGKILL, (e.output or b"").decode(errors="replace")
        return r.returncode, r.stdout.decode(errors="replace")
    r, w = os.pipe()  # both close on exec; the child's 1 and 2 are inheritable copies of w
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            pid = os.posix_spawnp(cmd[0], list(cmd), os.environ,
                                  file_actions=[(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1),
                                                (os.POSIX_SPAWN_DUP2, w, 2)],
                                  setsid=new_session, setsigdef=DEFAULT_SIGNALS)
        finally:
            os.close(null)
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    if group is not None:
        group._started(pid)
    try:
        out = _read(r, pid, timeout)
    except BaseException:
        kill(pid)  # not yet waited for: the pid is still this child's
        raise
    finally:
        os.close(r)
        if group is not None:
            if hasattr(os, "waitid"):  # its end, unreaped (stop may still kill it meanwhile)
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            group._ended(pid)
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def _read(fd, pid, timeout):
    """All of ``fd`` until its end, or until ``timeout`` seconds have passed (then ``pid`` is
    killed and reading stops: a process it started may hold the pipe open)."""
    chunks = []
    if timeout is None:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    import select
    import time
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            kill(pid)
            return b"".join(chunks)
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def kill(pid):
    """SIGKILL to ``pid`` (a program run started, not yet waited for) and to the processes it
    started that are still its descendants (gcc's cc1 and as, where /proc lists them): an
    interrupt that reaches Python alone (Jupyter's) would leave them running. Stopped first, it
    starts no further one meanwhile."""
    import signal  # (the kill path only)
    below = []
    try:
        os.kill(pid, signal.SIGSTOP)
        below = _descendants(pid)
    except OSError:
        pass
    finally:  # (an interrupt meanwhile: still killed, not left stopped)
        for p in [pid, *below]:
            try:
                os.kill(p, SIGKILL)
            except OSError:
                pass


def _descendants(pid):
    """The processes below ``pid`` (children, theirs, ...), read from /proc (none without one)."""
    children = {}
    try:
        names = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for name in names:
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out
