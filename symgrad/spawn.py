"""Run a program and collect what it prints, by os.posix_spawnp and one pipe for its stdout
and stderr together: the subprocess module's import (with signal, selectors and locale) is a
twentieth of a small kernel's first call, and its features are not needed here."""
from __future__ import annotations

import os

SIGKILL = 9  # POSIX; the signal module is not imported for it


def run(cmd, timeout=None, new_session=False):
    """(exit code, what ``cmd`` printed on stdout and stderr) of ``cmd`` run with stdin from
    /dev/null (in a session of its own with ``new_session``); killed after ``timeout`` seconds
    (exit code then negative). Raises OSError where it cannot be started (FileNotFoundError:
    no such program)."""
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
                                                (os.POSIX_SPAWN_DUP2, w, 2)], setsid=new_session)
        finally:
            os.close(null)
    except BaseException:
        os.close(r)
        raise
    finally:
        os.close(w)
    timer = None
    if timeout is not None:
        import threading
        timer = threading.Timer(timeout, _kill, (pid,))  # before the wait below: the pid is still ours
        timer.daemon = True
        timer.start()
    try:
        with os.fdopen(r, "rb") as f:
            out = f.read()
    finally:
        if timer is not None:
            timer.cancel()
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def _kill(pid):
    try:
        os.kill(pid, SIGKILL)
    except OSError:
        pass
