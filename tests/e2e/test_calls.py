"""Functions as users write them: methods, keywords and defaults, derivatives by argument
and stacked, Hessian-vector products, the shapes= hint, building ahead of the first call."""
import gc
import logging
import math
import weakref

import numpy as np
import pytest
import sympy as sp

import symgrad
from symgrad.errors import ScalarUsedAsArray


class Spring:
    def __init__(self, k, x0):
        self.k, self.x0 = k, x0

    @symgrad.compile
    def energy(self, x):
        return 0.5 * self.k * (x - self.x0) ** 2 + math.cos(x)

    @symgrad.compile(shapes=[(2,)])
    def pair(self, p, scale=1.0):
        return scale * self.k * p[0] * p[1] ** 2


def test_method_binds_self_and_reads_its_attributes_at_trace_time():
    a, b = Spring(3.0, 1.0), Spring(5.0, -2.0)
    assert a.energy(2.5) == pytest.approx(0.5 * 3 * 1.5 ** 2 + math.cos(2.5), rel=1e-15)
    assert b.energy(2.5) == pytest.approx(0.5 * 5 * 4.5 ** 2 + math.cos(2.5), rel=1e-15)
    assert a.energy.grad(2.5) == pytest.approx(3 * 1.5 - math.sin(2.5), rel=1e-15)
    assert b.energy.hessian(2.5) == pytest.approx(5 - math.cos(2.5), rel=1e-15)
    assert a.energy is a.energy  # one Function per instance: traced once, reused
    assert Spring.energy(a, 2.5) == a.energy(2.5)  # the unbound Function with the instance first
    x = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(Spring(2.0, 0.5).energy.grad(x), 2 * (x - 0.5) - np.sin(x), rtol=1e-14)
    assert Spring(7.0, 0.0).energy(1.0) == pytest.approx(3.5 + math.cos(1.0), rel=1e-15)  # a temporary
    with pytest.raises(TypeError, match=r"obj\.energy\.grad"):
        Spring.energy.grad(2.5)
    p = np.array([1.5, -2.0])
    assert a.pair(p) == pytest.approx(3 * 1.5 * 4.0) and a.pair(p, scale=2.0) == pytest.approx(36.0)
    np.testing.assert_allclose(a.pair.grad(p, 2.0), [2 * 3 * 4.0, 2 * 3 * 1.5 * 2 * -2.0], rtol=1e-15)


def test_bound_functions_do_not_keep_their_instance_alive():
    s = Spring(1.0, 0.0)
    assert s.energy(0.0) == 1.0
    ref = weakref.ref(s)
    del s
    gc.collect()
    assert ref() is None


def test_keywords_and_overridden_defaults():
    def model(t, a, b=0.5, n=2, kind="exp"):
        base = math.exp(-b * t) if kind == "exp" else 1.0 / (1.0 + b * t)
        return a * base ** n

    F = symgrad.compile(model)
    assert [n for n, _ in F.args] == ["t", "a"]
    t, a = 0.7, 1.3
    ref = lambda b=0.5, n=2, kind="exp": a * (math.exp(-b * t) if kind == "exp" else 1 / (1 + b * t)) ** n  # noqa
    assert F(t, a) == pytest.approx(ref(), rel=1e-15)
    assert F(a=a, t=t) == F(t, a)
    assert F(t, a, 0.9) == pytest.approx(ref(b=0.9), rel=1e-15)          # a float default: traced
    assert F(t, a, b=0.9) == F(t, a, 0.9)
    assert F(t, a, n=3) == pytest.approx(ref(n=3), rel=1e-15)            # an int default: a constant
    assert F(t, a, 0.2, 3, "rational") == pytest.approx(ref(0.2, 3, "rational"), rel=1e-15)
    bs = np.array([0.1, 0.5, 2.0])  # a traced default broadcasts like any argument
    np.testing.assert_allclose(F(t, a, b=bs), [ref(b=v) for v in bs], rtol=1e-15)
    # derivatives stay by the traced arguments (t, a), whatever defaults are passed
    gt, ga = F.grad(t, a, b=0.9)
    assert gt == pytest.approx(-2 * 0.9 * ref(b=0.9), rel=1e-14) and ga == pytest.approx(ref(b=0.9) / a, rel=1e-14)
    with pytest.raises(TypeError, match="multiple values for argument 't'"):
        F(t, a, t=1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
        F(t, a, c=1.0)
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\) \(t, a\) and 3 more with defaults \(b, n, kind\), "
                       r"got 1: missing 'a'"):
        F(t)
    with pytest.raises(TypeError, match="must be real numbers"):
        F(t, a, b="fast")
    with pytest.raises(TypeError, match="cannot be passed to a compiled function"):
        F(t, a, kind=object())


def test_from_sympy_takes_names_from_symbols_and_keywords():
    q = sp.symbols("q0:3", real=True)
    mass = sp.Symbol("mass", real=True)
    F = symgrad.from_sympy(mass * (q[0] ** 2 + q[1] * q[2]), [list(q), mass])
    assert [n for n, _ in F.args] == ["q", "mass"]
    assert F(mass=2.0, q=np.array([1.0, 2.0, 3.0])) == 14.0
    np.testing.assert_array_equal(symgrad.grad(F, argnums=0)(np.array([1.0, 2.0, 3.0]), 2.0), [4.0, 6.0, 4.0])


def test_jacobian_by_argument_and_stacked_as_curve_fit_wants():
    def model(t, a, b, c):
        return a * np.exp(-b * t) + c

    F = symgrad.compile(model)
    t = np.linspace(0, 2, 7)
    a, b, c = 2.0, 0.7, 0.1
    J = F.jacobian_wrt((1, 2, 3), stack=True)(t, a, b, c)
    assert J.shape == (7, 3)
    np.testing.assert_allclose(J, np.stack([np.exp(-b * t), -a * t * np.exp(-b * t), np.ones_like(t)], -1),
                               rtol=1e-15)
    Jb = symgrad.jacobian(F, argnums=2)(t, a, b, c)  # one argument: one array
    np.testing.assert_array_equal(Jb, J[:, 1])
    np.testing.assert_array_equal(F.jacobian_wrt(2)(t, a, b, c), Jb)

    def vec(x, w):
        return np.array([x[0] * w[1], x[1] ** 2 * w[0], x[0] + w[0] * w[1]])

    V = symgrad.compile(vec, shapes=[(2,), (2,)])
    x, w = np.array([1.5, -0.5]), np.array([2.0, 3.0])
    jx, jw = V.jacobian(x, w)
    np.testing.assert_array_equal(V.jacobian_wrt(stack=True)(x, w), np.concatenate([jx, jw], axis=-1))
    assert V.jacobian_wrt(stack=True)(np.stack([x, x]), w).shape == (2, 3, 4)


def test_hvp_is_the_hessian_times_the_vector():
    def f(x, y):
        return sum(math.sin(x[i] * x[i + 1]) * y for i in range(3)) + x[0] ** 4 * y ** 2

    F = symgrad.compile(f, shapes=[(4,), ()])
    assert [n for n, _ in F.hvp.args] == ["x", "y", "v_x", "v_y"]
    rng = np.random.default_rng(3)
    x, vx = rng.uniform(-1, 1, (5, 4)), rng.uniform(-1, 1, (5, 4))
    y, vy = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 5)
    (hxx, hxy), (hyx, hyy) = F.hessian(x, y)
    hx, hy = F.hvp(x, y, vx, vy)
    np.testing.assert_allclose(hx, np.einsum("bij,bj->bi", hxx, vx) + hxy * vy[:, None], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(hy, np.einsum("bj,bj->b", hyx, vx) + hyy * vy, rtol=1e-13, atol=1e-14)
    # and against the closed-form Hessian of a small function
    H1 = symgrad.compile(lambda x: x[0] ** 3 * x[1] + math.exp(x[0] * x[1]), shapes=[(2,)]).hvp
    p, v = np.array([0.3, -1.2]), np.array([2.0, 0.5])
    e = math.exp(p[0] * p[1])
    H = np.array([[6 * p[0] * p[1] + p[1] ** 2 * e, 3 * p[0] ** 2 + e + p[0] * p[1] * e],
                  [3 * p[0] ** 2 + e + p[0] * p[1] * e, p[0] ** 2 * e]])
    np.testing.assert_allclose(H1(p, v), H @ v, rtol=1e-14)


def test_hvp_program_grows_linearly():
    def chain(x):
        return sum(math.exp(math.sin(x[i]) * x[(i + 1) % len(x)]) for i in range(len(x)))

    sizes = {}
    for n in (20, 40):
        F = symgrad.compile(chain, shapes=[(n,)])
        sizes[n] = F.hvp.optimized().count_ops()
        x, v = np.linspace(-1, 1, n), np.cos(np.arange(n))
        np.testing.assert_allclose(F.hvp(x, v), F.hessian(x) @ v, rtol=1e-12, atol=1e-12)
    assert sizes[40] < 2.3 * sizes[20]  # a dense Hessian would be 4x


def test_forgetting_shapes_says_which_argument_and_what_to_pass():
    def f(x, k):
        return k * np.sum(x ** 2) + len(x)

    F = symgrad.compile(f)
    with pytest.raises(ScalarUsedAsArray, match=r"argument 'x' is used as an array; pass "
                       r"shapes=\[\(10,\), \(\)\]") as e:
        F(np.ones(10), 2.0)
    assert "test_calls.py" in str(e.value)  # where: the user's file and line
    G = symgrad.compile(lambda x: x[0] * x[1])
    with pytest.raises(symgrad.TraceError, match="used as an array"):
        G.grad(np.ones(2))


def test_build_compiles_now_and_reports_long_stages(caplog, monkeypatch):
    from symgrad.pipeline import source
    monkeypatch.setattr(logging.getLogger("symgrad.progress"), "propagate", True)
    monkeypatch.setattr(source, "PROGRESS_SECONDS", 0.0)
    F = symgrad.compile(lambda x: sum(math.atan(x[i] * x[i - 1]) for i in range(6)), shapes=[(6,)])
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        assert F.build(kinds=("value", "grad", "hessian")) is F
    text = caplog.text
    assert "C compile" in text and "expected about" in text and "took" in text
    x = np.linspace(0.1, 0.6, 6)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F(x), F.grad(x), F.hessian(x)
    assert caplog.text == ""  # built: the calls compile nothing
    with pytest.raises(ValueError, match="unknown kind 'hess'"):
        F.build(kinds=("hess",))


def test_unbound_method_call_passes_keywords_and_refuses_unknown_ones():
    s = Spring(3.0, 1.0)
    p = np.array([1.5, -2.0])
    assert Spring.pair(s, p, scale=2.0) == s.pair(p, scale=2.0) == pytest.approx(2 * 3 * 1.5 * 4.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        Spring.pair(s, p, bogus=1.0)


def test_instances_whose_function_was_only_read_or_failed_are_freed():
    class Broken:
        @symgrad.compile
        def f(self, x):
            return self.missing * x

    objs = [Spring(1.0, 0.0) for _ in range(3)]
    for o in objs:
        o.energy  # read, never called
    broken = Broken()
    with pytest.raises(AttributeError):
        broken.f(1.0)
    refs = [weakref.ref(o) for o in objs + [broken]]
    del objs, o, broken
    gc.collect()
    assert [r() for r in refs] == [None] * 4


def test_slots_without_weakref_and_classmethods_are_refused_clearly():
    class Slotted:
        __slots__ = ("k",)

        def __init__(self):
            self.k = 2.0

        @symgrad.compile
        def f(self, x):
            return self.k * x

    with pytest.raises(TypeError, match="__weakref__"):
        Slotted().f(1.0)
    with pytest.raises(TypeError, match="classmethod"):
        class C:
            @classmethod
            @symgrad.compile
            def f(cls, x):
                return x


def test_a_parameter_named_out_is_the_functions_own():
    def f(x, out=1.0):
        return x + out

    F = symgrad.compile(f)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(F(x, out=np.array([10.0, 20.0, 30.0])), [11.0, 22.0, 33.0])
    assert F(2.0) == 3.0 and F(2.0, out=5.0) == 7.0


def test_batch_last_moves_any_array_like():
    F = symgrad.compile(lambda x: np.array([x[0] * x[1], x[1] + x[2], x[2] ** 2]), shapes=[(3,)])
    cols = [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]  # three points, as columns
    want = np.stack([F(np.array(cols)[:, j]) for j in range(3)], axis=1)
    np.testing.assert_array_equal(F.batch_last(np.array(cols)), want)
    np.testing.assert_array_equal(F.batch_last(cols), want)


def test_forgotten_shapes_hint_for_array_methods_and_matmul():
    for f in (lambda x: x.sum(), lambda x: x @ x):
        with pytest.raises(ScalarUsedAsArray, match=r"argument 'x' is used as an array; pass shapes=\[\(4,\)\]"):
            symgrad.compile(f)(np.ones(4))
