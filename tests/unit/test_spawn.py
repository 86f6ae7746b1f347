"""symgrad/spawn.py: a program's output, its exit code, a timeout that holds even where a
process it started keeps the output open, and an exception that stops the program."""
import os
import signal
import threading
import time

import pytest

from symgrad.build import spawn


def test_output_and_exit_code_of_a_program():
    code, out = spawn.run(["/bin/sh", "-c", "printf 'a\\n'; printf 'b\\n' >&2; exit 3"])
    assert code == 3 and out == "a\nb\n"
    with pytest.raises(FileNotFoundError):
        spawn.run(["no-such-program-anywhere"])


def _gone(pid, seconds=10):
    """Whether process ``pid`` ends (or is a zombie: killed, not yet reaped) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_timeout_holds_while_a_process_it_started_keeps_the_output_open():
    t = time.monotonic()
    code, out = spawn.run(["/bin/sh", "-c", "echo started; sleep 60 & echo $! >&2"], timeout=1.0)
    started, holder = out.split()
    os.kill(int(holder), signal.SIGKILL)  # (the test's own leftover)
    assert started == "started" and time.monotonic() - t < 10


def test_a_timeout_kills_what_the_program_started():
    """A timed-out program's children die with it (gcc's cc1 would run on, orphaned)."""
    code, out = spawn.run(["/bin/sh", "-c", "sleep 60 & echo $!; wait"], timeout=1.0)
    assert code == -signal.SIGKILL and _gone(int(out.split()[0]))


def test_a_timeout_kills_a_program_that_runs_on():
    t = time.monotonic()
    code, out = spawn.run(["/bin/sh", "-c", "echo started; exec sleep 60"], timeout=1.0)
    assert code == -signal.SIGKILL and out == "started\n" and time.monotonic() - t < 10


def test_an_exception_while_it_runs_kills_it():
    """KeyboardInterrupt (here an exception from a signal handler) while waiting: the program
    is killed and waited for, not left to finish."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGALRM, interrupt)
    t = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            spawn.run(["sleep", "60"], group=spawn.Group())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - t < 10


def test_a_stopped_group_kills_what_runs_and_what_starts_after():
    """What runs with what it started (gcc's cc1 is gcc's child: an interrupted build left it
    running, holding the output open)."""
    group = spawn.Group()
    done = []
    cmd = ["/bin/sh", "-c", "sleep 60 & echo $!; wait"]
    worker = threading.Thread(target=lambda: done.append(spawn.run(cmd, group=group)))
    t = time.monotonic()
    worker.start()
    time.sleep(0.5)
    group.stop()
    worker.join(10)
    assert done and done[0][0] == -signal.SIGKILL and _gone(int(done[0][1]))
    assert spawn.run(["sleep", "60"], group=group)[0] == -signal.SIGKILL  # started after the stop
    assert time.monotonic() - t < 10


def test_a_program_starts_with_sigpipe_at_its_default():
    """Python ignores SIGPIPE; a compiler writing to a closed pipe must stop, not loop on EPIPE."""
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    code, out = spawn.run(["/bin/sh", "-c", "yes | head -c 1 >/dev/null; grep SigIgn /proc/self/status"])
    ignored = int(out.split()[-1], 16)
    assert code == 0 and not ignored & (1 << (signal.SIGPIPE - 1))


def test_an_interrupt_inside_kill_still_kills(monkeypatch):
    """A second Ctrl-C while kill reads /proc: the program is killed, not left stopped (its
    reader would wait forever)."""
    def interrupted(pid):
        raise KeyboardInterrupt
    group, done = spawn.Group(), []
    worker = threading.Thread(target=lambda: done.append(spawn.run(["sleep", "60"], group=group)))
    worker.start()
    time.sleep(0.3)
    monkeypatch.setattr(spawn, "_descendants", interrupted)
    with pytest.raises(KeyboardInterrupt):
        group.stop()
    worker.join(10)
    assert done and done[0][0] == -signal.SIGKILL
