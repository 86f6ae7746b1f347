"""The cyclic garbage collector pauses in symgrad's own compile stages only, and comes back
as it was: after the stage, in the user's code (tracing), and in a process forked meanwhile."""
import gc
import os
import threading
import types

import pytest

import symgrad
from symgrad import options, render
from symgrad.pipeline.source import PAUSES_GC, stage
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian, optimize


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


def test_stages_leave_no_cycles_for_the_collector():
    """What a paused stage drops is freed by reference counting, not left in cycles for the
    collector's first pass after it (lj40's generate C left every statement so: 25 ms)."""
    def pairs(p):
        e = 0.0
        for i in range(8):
            for j in range(i + 1, 8):
                r2 = (p[3 * i] - p[3 * j]) ** 2 + (p[3 * i + 1] - p[3 * j + 1]) ** 2 + (p[3 * i + 2] - p[3 * j + 2]) ** 2
                e = e + 1.0 / r2 ** 6 - 1.0 / r2 ** 3
        return e
    prog = trace(pairs, [(24,)])
    opts = options.Options(large_kernel_ops=0, roll_min=4, roll_alone_min=4)  # rolled: every stage's code
    cpu = render.TARGETS["cpu", "float64"]
    gc.collect()
    was, debug = gc.isenabled(), gc.get_debug()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds stays in gc.garbage to be looked at
    try:
        for make in (lambda: derive.grad(prog, [0], with_value=True), lambda: hessian.hessian(prog, [0])):
            d = make()
            o = optimize.optimize(d, opts)
            k = render.render(o, "k", cpu, 512, opts)
            gc.collect()
            # Only symgrad's objects count: another thread of the process (pytest-xdist's
            # channel) may drop cycles of its own meanwhile.
            ours = [x for x in gc.garbage if _symgrads(x)]
            gc.garbage.clear()
            assert k.source and not ours, ours[:5]
    finally:
        gc.garbage.clear()
        gc.set_debug(debug)
        (gc.enable if was else gc.disable)()


def _symgrads(x):
    """Whether x is an object of symgrad's: an instance of its classes, one of its functions
    (a closure in a cycle through its cell) or a frame of its code."""
    if isinstance(x, types.FunctionType):
        return (x.__module__ or "").startswith("symgrad")
    if isinstance(x, types.FrameType):
        return os.sep + "symgrad" + os.sep in x.f_code.co_filename
    return type(x).__module__.startswith("symgrad")
