"""Defects found in review, each pinned by the smallest reproduction."""
import functools
import math
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_argument_names_never_merge_with_elements_or_temporaries():
    F = symgrad.compile(lambda p, p_0: (p[0] - p_0) ** 2 + p[1], shapes=[(2,), ()])
    assert F(np.array([1.0, 0.0]), 5.0) == 16.0
    gp, g0 = F.grad(np.array([1.0, 0.0]), 5.0)
    np.testing.assert_array_equal(gp, [-8.0, 1.0])
    assert g0 == 8.0

    def g(_t0, t):
        return math.sin(_t0) * _t0 + t
    assert symgrad.compile(g)(2.0, 1.0) == pytest.approx(math.sin(2.0) * 2.0 + 1.0, rel=1e-15)


def test_c_names_of_arguments_never_clash_with_c():
    def e(x, exp, linux):
        return math.exp(x) * exp + linux
    assert symgrad.compile(e)(1.0, 2.0, 3.0) == pytest.approx(2 * math.e + 3, rel=1e-15)

    def u(σ):
        return σ * σ
    assert symgrad.compile(u).grad(3.0) == 6.0


def test_division_by_a_constant_is_printed_as_a_division():
    xs = np.random.default_rng(0).uniform(-10, 10, 1000)
    np.testing.assert_array_equal(symgrad.compile(lambda x: x / 10)(xs), xs / 10)
    np.testing.assert_array_equal(symgrad.compile(lambda x: 2 * x / 3)(xs), 2 * xs / 3)


def test_steps_have_zero_derivative_and_prod_start():
    assert symgrad.compile(lambda x: math.floor(x) * x).grad(2.5) == 2.0
    assert symgrad.compile(lambda x: math.ceil(x) + x).grad(2.5) == 1.0
    assert symgrad.compile(lambda x: math.prod([x, x], start=2.0))(3.0) == 18.0


class _Base:
    def energy(self, x):
        return math.sin(x)


class _Model(_Base):
    def __init__(self, k):
        self.k = k

    def energy(self, x):
        return self.k * super().energy(x)


def test_user_objects_keep_isinstance_and_super():
    m = _Model(2.0)

    def f(x):
        return m.energy(x) if isinstance(m, _Model) else 0.0 * x
    assert symgrad.compile(f).grad(0.5) == pytest.approx(2 * math.cos(0.5), rel=1e-15)


def test_numpy_mean_over_an_axis_of_a_traced_array():
    F = symgrad.compile(lambda X: np.sum(np.mean(X, axis=0) ** 2), shapes=[(2, 3)])
    X = np.arange(6.0).reshape(2, 3)
    assert F(X) == pytest.approx(np.sum(np.mean(X, axis=0) ** 2), rel=1e-15)


def test_partials_with_different_arguments_trace_to_different_programs():
    def g(x, a):
        return x * a

    def make(b):
        p1 = functools.partial(g, a=2.0)
        p2 = functools.partial(g, a=b)
        return symgrad.compile(lambda x: p1(x) + p2(x))
    assert make(3.0).program.key != make(7.0).program.key
    assert make(3.0).program.key == make(3.0).program.key
    assert make(3.0)(1.0) == 5.0 and make(7.0).grad(1.0) == 9.0


def test_huge_array_argument_does_not_overflow_the_stack():
    F = symgrad.compile(lambda x: x[0] + x[-1], shapes=[(150_000,)])
    x = np.arange(300_000.0).reshape(2, 150_000)
    assert F(x[0]) == 149_999.0
    np.testing.assert_array_equal(F(x), [149_999.0, 449_999.0])


def _python(code, tmp_path, **env):
    script = tmp_path / f"s{abs(hash(code))}.py"
    script.write_text(textwrap.dedent(code))
    full = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + str(tmp_path), **env)
    r = subprocess.run([sys.executable, str(script)], env=full, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_kernel_is_filed_under_what_was_traced(tmp_path):
    code = """
        import sys, symgrad
        K = 2.0
        def f(x):
            return K * x * x
        F = symgrad.compile(f)
        if sys.argv[-1] == "first":
            F(1.0)      # traced with K = 2 ...
            K = 3.0     # ... then K changes, before the gradient is compiled
            print(F.grad(1.0))
        else:
            K = 3.0
            print(F.grad(1.0))
    """
    cache = str(tmp_path / "cache")
    script = tmp_path / "poison.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PYTHONPATH=ROOT, SYMGRAD_CACHE_DIR=cache)
    run = lambda arg: subprocess.run([sys.executable, str(script), arg], env=env, capture_output=True,  # noqa
                                     text=True, timeout=120).stdout.split()
    assert run("first") == ["4.0"]   # this process traced K = 2 (traced once, like jax.jit)
    assert run("second") == ["6.0"]  # a new process with K = 3 must not get that kernel


def test_imports_and_helpers_reading_module_attributes_invalidate(tmp_path):
    (tmp_path / "cfgmod.py").write_text("K = 2.0\nscale = 1.0\n")
    code = """
        import symgrad, cfgmod
        def helper(x):
            return x * cfgmod.K
        def g(x):
            return cfgmod.scale * helper(x)
        def f(x):
            import cfgmod as c
            return c.K * x
        print(symgrad.compile(g)(1.0), symgrad.compile(f)(1.0))
    """
    cache = str(tmp_path / "cache")
    assert _python(code, tmp_path, SYMGRAD_CACHE_DIR=cache) == ["2.0", "2.0"]
    (tmp_path / "cfgmod.py").write_text("K = 5.0\nscale = 1.0\n")
    for pyc in (tmp_path / "__pycache__").glob("*") if (tmp_path / "__pycache__").exists() else []:
        pyc.unlink()
    assert _python(code, tmp_path, SYMGRAD_CACHE_DIR=cache) == ["5.0", "5.0"]


def test_compiler_without_openmp_falls_back_without_deadlock(tmp_path):
    cc = tmp_path / "cc-no-openmp"
    cc.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = "-fopenmp" ] && '
                  '{ echo "cc: error: unsupported option -fopenmp" >&2; exit 1; }; done\nexec gcc "$@"\n')
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    out = _python("import math, symgrad\nprint(symgrad.compile(lambda x: math.sin(x)).grad(0.5))\n",
                  tmp_path, CC=str(cc), SYMGRAD_CACHE_DIR=str(tmp_path / "cache"))
    assert float(out[0]) == pytest.approx(math.cos(0.5), rel=1e-15)


# -- second review ------------------------------------------------------------------------
class _Counter:
    calls = 0

    def energy(self, x):
        type(self).calls += 1
        return math.exp(x) if type(self) is _Counter else 0.0 * x


class _Registry:
    seen = []

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        _Registry.seen.append(cls.__name__)


class _Plugin(_Registry):
    def apply(self, x):
        return math.sin(x)


import dataclasses  # noqa: E402


@dataclasses.dataclass(slots=True)
class _Slotted:
    k: float

    def scale(self, x):
        return self.k * math.cos(x)


_SLOTTED = _Slotted(2.0)  # a slotted global in the traced function's module must not break tracing


def test_user_classes_are_the_same_classes_during_the_trace():
    c = _Counter()
    assert symgrad.compile(lambda x: c.energy(x))(1.0) == pytest.approx(math.e, rel=1e-15)
    assert _Counter.calls == 1
    p = _Plugin()
    before = list(_Registry.seen)
    assert symgrad.compile(lambda x: p.apply(x)).grad(0.5) == pytest.approx(math.cos(0.5), rel=1e-15)
    assert _Registry.seen == before  # no subclasses made behind the user's back
    assert _Counter.energy.__module__ == __name__  # methods restored after the trace
    assert symgrad.compile(lambda x: _SLOTTED.scale(x))(0.0) == 2.0


def test_state_read_dynamically_is_what_the_trace_records():
    def make(value):
        lookup = {"a": value}.get  # a bound method of a dict: the dict is read by the trace
        return symgrad.compile(lambda x: lookup("a") * x)
    assert make(3.0).program.key != make(5.0).program.key
    assert make(5.0).grad(1.0) == 5.0

    def dyn(x):
        return globals()["math"].sin(x)
    assert symgrad.compile(dyn).grad(0.0) == 1.0


def test_base_class_change_invalidates(tmp_path):
    code = """
        import symgrad
        class Base:
            def scale(self, x):
                return {val} * x
        class Sub(Base):
            pass
        obj = Sub()
        print(symgrad.compile(lambda x: obj.scale(x))(2.0))
    """
    cache = str(tmp_path / "cache")
    assert _python(code.format(val=3.0), tmp_path, SYMGRAD_CACHE_DIR=cache) == ["6.0"]
    assert _python(code.format(val=5.0), tmp_path, SYMGRAD_CACHE_DIR=cache) == ["10.0"]


def test_from_sympy_piecewise_and_multi_axis_reductions():
    import sympy as sp
    x = sp.Symbol("x")
    F = symgrad.from_sympy(sp.Piecewise((x**2, x > 0), (-x, True)), [x])
    assert (F(2.0), F(-3.0), F.grad(2.0), F.grad(-3.0)) == (4.0, 3.0, 4.0, -1.0)
    G = symgrad.compile(lambda X: np.sum(X) + np.max(X) + np.mean(X) + np.sum(X, axis=0)[1], shapes=[(2, 2)])
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert G(X) == 10 + 4 + 2.5 + 6
    np.testing.assert_array_equal(G.grad(X), [[1.25, 2.25], [1.25, 3.25]])
