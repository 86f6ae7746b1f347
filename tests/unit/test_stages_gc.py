"""The cyclic garbage collector pauses in symgrad's own compile stages only, and comes back
as it was: after the stage, in the user's code (tracing), and in a process forked meanwhile."""
import gc
import os
import threading

import pytest

import symgrad
from symgrad.source import PAUSES_GC, stage


@pytest.fixture
def gc_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_own_stages_pause_and_resume(gc_on):
    for what in sorted(PAUSES_GC):
        with stage("f", what):
            assert not gc.isenabled(), what
        assert gc.isenabled(), what


def test_trace_and_c_compile_do_not_pause(gc_on):
    for what in ("trace", "C compile"):
        with stage("f", what):
            assert gc.isenabled(), what


def test_users_function_traces_with_the_collector_on(gc_on):
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return x * x

    F = symgrad.compile(f)
    F.grad.program  # traces f and differentiates it, compiling nothing
    assert seen == [True]


def test_user_who_turned_it_off_keeps_it_off(gc_on):
    gc.disable()
    with stage("f", "optimize"):
        with stage("f", "generate C"):
            pass
    assert not gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_child_forked_during_a_stage_resumes_collection(gc_on):
    inside, leave = threading.Event(), threading.Event()

    def busy():
        with stage("f", "differentiate"):
            inside.set()
            leave.wait(30)

    t = threading.Thread(target=busy)
    t.start()
    try:
        assert inside.wait(30)
        assert not gc.isenabled()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its stage thread is gone
            try:
                with stage("g", "optimize"):  # a stage of its own pauses and resumes
                    paused = not gc.isenabled()
                os.write(w, b"%d%d" % (gc.isenabled(), paused))
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 2)
        os.waitpid(pid, 0)
        os.close(r)
        assert got == b"11"
    finally:
        leave.set()
        t.join()
    assert gc.isenabled()
