"""Tracing as Python would run it: the state a trace reads, replaced functions, calls whose
results change from call to call, other threads, failed traces, stale or missing source."""
import math
import os
import random
import sys
import textwrap
import time

import numpy as np
import pytest

import symgrad


def test_state_changed_in_process_gives_a_new_program():
    import builtins
    import types

    def f(x):
        return f.k * x
    mod = types.ModuleType("m")

    def g(x):
        return mod.K * x

    def h(x):
        return SG_INJECTED2 * x  # noqa: F821 (a builtin set below)

    def p(x):
        return np.pi * x
    for S in (2.0, 3.0, 2.0):
        f.k, mod.K, builtins.SG_INJECTED2 = S, S, S
        for fn in (f, g, h):
            F = symgrad.compile(fn)
            assert F(1.5) == S * 1.5 and F.grad(1.5) == S
    pi = np.pi
    try:
        np.pi = 5.0
        assert symgrad.compile(p).grad(1.0) == 5.0
    finally:
        np.pi = pi
    assert symgrad.compile(p).grad(1.0) == np.pi


def test_replaced_math_and_numpy_functions_are_followed():
    def f(x):
        return math.sin(x) + np.sin(x)
    sin, npsin = math.sin, np.sin
    try:
        math.sin, np.sin = math.cos, np.cos
        F = symgrad.compile(f)
        assert F(0.0) == 2.0 and F.grad(0.5) == pytest.approx(-2 * sin(0.5), rel=1e-15)
        math.sin = lambda t: 3.0 * t          # a Python replacement is traced like a helper
        assert symgrad.compile(f).grad(0.0) == 3.0 - npsin(0.0)  # np.sin is still np.cos
    finally:
        math.sin, np.sin = sin, npsin
    assert symgrad.compile(f).grad(0.0) == 2.0


@pytest.mark.parametrize("call, name", [
    (lambda x: random.random() * x, "random"),
    (lambda x: random.uniform(0, 1) * x, "random"),
    (lambda x: np.random.rand() * x, "numpy.random"),
    (lambda x: np.random.default_rng(0).normal() * x, "numpy.random"),
    (lambda x: time.time() * x, "time"),
    (lambda x: os.urandom(1)[0] * x, "urandom"),
])
def test_values_that_change_from_call_to_call_are_refused(call, name):
    with pytest.raises(symgrad.TraceError, match=rf"(?s){name}.*test_tracing_state.py.*as an argument"):
        symgrad.compile(call)(1.0)



COUNT = 0


class _Bumper:
    def bump(self):
        global COUNT
        COUNT += 1

    def energy(self, x):
        self.bump()
        return math.sin(x) * 2.0


def test_tracing_is_invisible_to_other_threads():
    """Another thread calling a user method while it is being traced (through a rewritten
    copy) loses no write to the module's globals and sees the same class."""
    import threading
    global COUNT
    COUNT = 0
    b = _Bumper()
    method = _Bumper.__dict__["energy"]
    stop = threading.Event()
    done = [0]

    def other():
        while not stop.is_set():
            b.bump()
            done[0] += 1
            assert _Bumper.__dict__["energy"] is method

    def f(x):
        return sum(b.energy(x * k) for k in range(200))
    t = threading.Thread(target=other)
    t.start()
    traced = 0
    try:
        for _ in range(20):
            symgrad.compile(f).program  # a trace calls b.energy 200 times, in this thread
            traced += 200
    finally:
        stop.set()
        t.join()
    assert COUNT == done[0] + traced
    assert done[0] > 1000  # the threads did overlap


def test_a_failed_trace_leaves_nothing_behind():
    import symgrad.tracing.values as values

    class C:
        def m(self, x):
            return float(x)  # refused: a value leaving the traced world
    c = C()
    before = dict(vars(C)), math.sin
    with pytest.raises(symgrad.TraceError):
        symgrad.compile(lambda x: c.m(x) + math.sin(x))(1.0)
    assert dict(vars(C)) == before[0] and math.sin is before[1]
    assert values.builder() is None
    assert symgrad.compile(lambda x: math.sin(x)).grad(0.0) == 1.0


def test_source_that_no_longer_matches_the_running_code_is_not_used(tmp_path):
    """The rewriter compiles a function from its file only when that compiles to exactly the
    code that runs; an edited file falls back to the running code (which, here, has no math
    call to intercept and so still traces)."""
    mod = tmp_path / "edited_mod.py"
    mod.write_text("def f(x):\n    return 2.0 * x\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import edited_mod
        mod.write_text("def f(x):\n    return 5.0 * x\n")
        import linecache
        linecache.checkcache(str(mod))
        assert symgrad.compile(edited_mod.f).grad(1.0) == 2.0
    finally:
        sys.path.remove(str(tmp_path))


def test_functions_without_source_trace_through_a_view_of_their_globals():
    ns = {"math": math, "np": np, "K": 2.0}
    exec(compile(textwrap.dedent("""
        def f(x):
            return K * math.sin(x) + max(x, 0.0) + np.exp(x)
    """), "<generated>", "exec"), ns)
    F = symgrad.compile(ns["f"])
    assert F.grad(0.5) == pytest.approx(2 * math.cos(0.5) + 1 + math.exp(0.5), rel=1e-15)
    ns["K"] = 3.0
    assert symgrad.compile(ns["f"]).grad(0.5) == pytest.approx(3 * math.cos(0.5) + 1 + math.exp(0.5), rel=1e-15)
