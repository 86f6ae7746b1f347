"""A cached kernel is found by the traced program, so whatever the function reads (globals,
attributes, modules, files, patched math) is what the result reflects, in every process
sharing one cache. Each scenario was once a wrong result served from the cache."""
import pytest

from helpers import run_python

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
