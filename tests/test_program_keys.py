"""A cached kernel is found by the traced program, so whatever the function reads (globals,
attributes, modules, files, patched math) is what the result reflects, in every process
sharing one cache. Each scenario was once a wrong result served from the cache."""
import math
import os
import sys
import textwrap

import numpy as np
import pytest

import symgrad
from conftest import run_python

# Each scenario compiles f(x) = c * x (or sin/cos of x), where c comes from state the
# process sets up from its argument S; it prints name, F(1.5), F.grad(1.5) and the
# values Python itself computes for them (f(1.5), and the closed-form derivative).
SCENARIOS = """
    import builtins, collections, math, operator, os, random, sys, time, types
    import numpy as np
    import symgrad
    S = float(sys.argv[1])
    X = 1.5

    def report(name, f, c):
        F = symgrad.compile(f)
        print(name, float(F(X)), float(F.grad(X)), f(X), c)

    def f_attr(x):
        return f_attr.k * x
    f_attr.k = S
    report("function_attribute", f_attr, S)

    def helper(x):
        return helper.k * x
    helper.k = S
    report("helper_attribute", lambda x: helper(x), S)

    cfg = types.ModuleType("cfg")
    cfg.K = S
    report("module_type", lambda x: cfg.K * x, S)

    import nsp.cfgmod                      # a namespace package (no __init__.py)
    report("namespace_package", lambda x: nsp.cfgmod.K * x, S)

    import relpkg.core                     # `from . import cfg` inside the traced function
    report("relative_import", relpkg.core.f, S)

    sys.path.insert(0, os.path.join(os.getcwd(), "site-packages"))
    import instpkg                         # an installed package, edited in place
    report("installed_package", lambda x: instpkg.scale(x), S)

    class A(np.ndarray):
        pass
    W = np.zeros(2).view(A)
    W[:] = [S, 1.0]
    report("ndarray_subclass", lambda x: W[0] * x, S)

    class F1(float):
        pass

    class F2(float):
        def __mul__(self, o):
            return float.__mul__(self, 2.0) * o
        __rmul__ = __mul__
    K8 = F1(2.0)
    if S == 3.0:
        K8.__class__ = F2
    report("float_subclass_class", lambda x: K8 * x, 4.0 if S == 3.0 else 2.0)

    d = collections.defaultdict(lambda: S)
    report("defaultdict_factory", lambda x: d["missing"] * x, S)

    K10 = S
    get = operator.attrgetter("K10")
    report("attrgetter_sys_modules", lambda x: get(sys.modules[__name__]) * x, S)
    report("getframe_globals", lambda x: sys._getframe(0).f_globals["K10"] * x, S)

    builtins.SG_INJECTED = S
    report("injected_builtin", lambda x: SG_INJECTED * x, S)

    with open("data.txt") as fh:
        path = os.path.abspath(fh.name)
    report("file_read_at_trace", lambda x: float(open(path).read()) * x, S)
    report("sys_argv", lambda x: float(sys.argv[1]) * x, S)

    pi = np.pi
    np.pi = S
    report("numpy_pi_patched", lambda x: np.pi * x, S)
    np.pi = pi

    sin, cos = math.sin, math.cos

    def sin_of(x):
        return np.sin(x)
    if S == 3.0:
        np.sin = np.cos
    F = symgrad.compile(sin_of)
    print("numpy_sin_patched", float(F(X)), float(F.grad(X)), sin_of(X),
          -sin(X) if S == 3.0 else cos(X))

    def msin(x):
        return math.sin(x)
    if S == 3.0:
        math.sin = math.cos
    F = symgrad.compile(msin)
    print("math_sin_patched", float(F(X)), float(F.grad(X)), msin(X), -sin(X) if S == 3.0 else cos(X))
    math.sin = lambda t: S * t * t      # a user's replacement: traced like any helper
    F = symgrad.compile(msin)
    print("math_sin_user_replacement", float(F(X)), float(F.grad(X)), msin(X), 2 * S * X)
"""


def _setup(tmp_path, S):
    (tmp_path / "nsp").mkdir(exist_ok=True)
    (tmp_path / "nsp" / "cfgmod.py").write_text(f"K = {S}\n")
    pkg = tmp_path / "relpkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cfg.py").write_text(f"K = {S}\n")
    (pkg / "core.py").write_text("def f(x):\n    from . import cfg\n    return cfg.K * x\n")
    inst = tmp_path / "site-packages" / "instpkg"
    inst.mkdir(parents=True, exist_ok=True)
    (inst / "__init__.py").write_text(f"__version__ = '1.0'\nK = {S}\n\ndef scale(x):\n    return K * x\n")
    (tmp_path / "data.txt").write_text(str(S))


def _results(tmp_path, S, cache):
    _setup(tmp_path, S)
    r = run_python(SCENARIOS, tmp_path, S, SYMGRAD_CACHE_DIR=cache, PYTHONDONTWRITEBYTECODE=1)
    out = {}
    for line in r.lines:
        name, value, grad, py_value, py_grad = line.split()
        out[name] = tuple(map(float, (value, grad, py_value, py_grad)))
    return out


@pytest.mark.slow
def test_every_state_a_trace_reads_is_in_the_key_across_processes(tmp_path):
    cache = str(tmp_path / "cache")
    runs = [(S, _results(tmp_path, S, cache)) for S in (2.0, 3.0, 2.0)]
    assert len(runs[0][1]) == 18
    for S, res in runs:
        for name, (value, grad, py_value, py_grad) in res.items():
            assert value == pytest.approx(py_value, rel=1e-14), (S, name)
            assert grad == pytest.approx(py_grad, rel=1e-14), (S, name)
    assert runs[0][1] != runs[1][1]
    assert runs[0][1] == runs[2][1]


POISON = """
    import sys, symgrad
    K = 2.0
    def f(x):
        return K * x * x
    F = symgrad.compile(f)
    step = sys.argv[1]
    if step == "compile":
        print(F(1.5))
    elif step == "change":
        print(F(1.5))     # traced with K = 2 (once, like jax.jit) ...
        K = 3.0
        print(F.grad(1.5))  # ... so its gradient is of K = 2 as well
        G = symgrad.compile(f)
        print(G.grad(1.5))  # a new Function traces K = 3
    else:
        print(F.grad(1.5))
"""


@pytest.mark.slow
def test_three_process_cache_poisoning_sequence(tmp_path):
    cache = str(tmp_path / "cache")
    run = lambda step: run_python(POISON, tmp_path, step, SYMGRAD_CACHE_DIR=cache).lines  # noqa: E731
    assert run("compile") == ["4.5"]
    assert run("change") == ["4.5", "6.0", "9.0"]
    assert run("grad") == ["6.0"]


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
    with pytest.raises(symgrad.TraceError, match=rf"(?s){name}.*test_program_keys.py.*as an argument"):
        symgrad.compile(call)(1.0)


import random  # noqa: E402
import time  # noqa: E402


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
