"""The walk of a cold ``symgrad.compile(f).grad(x)``: each stage of pipeline/stages.py is
reached once, in pipeline order (trace, differentiate, optimize, render, build, bind), and a
second call reaches none (the call plan is kept); a Function of the same program traces and
binds the kernel in the cache. F.build of several kinds renders each and
compiles them in one build_many, then binds each."""
import math

import pytest

import symgrad
from symgrad.pipeline import stages

STAGES = ("trace", "differentiate", "sparsity", "optimize", "render", "build", "bind", "build_many")


@pytest.fixture
def walk(monkeypatch, tmp_path):
    """The names of the stages called, in order (a fresh, empty kernel cache)."""
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    seen = []
    for name in STAGES:
        def recorded(*args, _stage=getattr(stages, name), _name=name, **kwargs):
            seen.append(_name)
            return _stage(*args, **kwargs)
        monkeypatch.setattr(stages, name, recorded)
    return seen


def test_a_cold_gradient_reaches_each_stage_once_in_order(walk, tmp_path):
    c = 1.0 + len(str(tmp_path)) / 7.0  # a constant of this run's own: a program no cache holds

    def f(x, y):
        return math.sin(x) * y ** 3 + c * x * y

    F = symgrad.compile(f)
    g = F.grad(0.5, 2.0)
    assert walk == ["trace", "differentiate", "optimize", "render", "build", "bind"]
    x, y = 0.5, 2.0
    assert g == pytest.approx((math.cos(x) * y ** 3 + c * y, 3 * math.sin(x) * y ** 2 + c * x), rel=1e-14)
    assert F.grad(1.0, 1.0) == pytest.approx((math.cos(1.0) + c, 3 * math.sin(1.0) + c), rel=1e-14)
    assert len(walk) == 6  # the second call reaches no stage
    G = symgrad.compile(f)  # another Function of the same program: traced, its kernel found in the cache
    assert G.grad(0.5, 2.0) == g
    assert walk[6:] == ["trace", "bind"]


def test_build_of_several_kinds_compiles_them_together(walk, tmp_path):
    c = 2.0 + len(str(tmp_path)) / 7.0
    F = symgrad.compile(lambda x: c * x ** 3)
    F.build(kinds=("value", "grad", "hessian"))
    assert walk.count("build_many") == 1 and "build" not in walk
    assert walk.count("render") == 3 and walk.count("bind") == 3
    assert walk.index("build_many") > max(i for i, s in enumerate(walk) if s == "render")
    assert walk[0] == "trace" and walk.count("trace") == 3  # one trace; each Function's pipeline asks its Source
    n = len(walk)
    assert (F(2.0), F.grad(2.0), F.hessian(2.0)) == (8 * c, 12 * c, 12 * c)
    assert len(walk) == n
