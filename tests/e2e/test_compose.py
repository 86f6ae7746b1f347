"""Functions compose (issue 48 item 5): a symgrad Function (compiled, a derivative verb, or
from_sympy) called inside a traced function has its program inlined into the trace, so the
outer Function's value and derivatives go through it."""
import math

import numpy as np
import pytest
import sympy as sp

import symgrad

X, Y = sp.symbols("x y")
POINTS = [-1.3, -0.2, 0.4, 1.1, 2.5]


def _h_g():
    h = symgrad.from_sympy(sp.sin(X) * Y + X ** 2, [X, Y], name="h")
    g = symgrad.compile(lambda u: u ** 3 + math.exp(u))
    return h, g


def test_from_sympy_and_compiled_inside_a_traced_function():
    h, g = _h_g()
    F = symgrad.compile(lambda x: g(h(x, 2.0)))
    for x in POINTS:
        u = 2.0 * math.sin(x) + x * x
        du = 2.0 * math.cos(x) + 2 * x
        assert F(x) == pytest.approx(u ** 3 + math.exp(u), rel=1e-13)
        assert F.grad(x) == pytest.approx((3 * u * u + math.exp(u)) * du, rel=1e-12)


def test_inner_functions_already_called_and_of_two_traced_arguments():
    h, g = _h_g()
    assert g(0.5) == pytest.approx(0.125 + math.exp(0.5))  # the C entry point is loaded: still inlined
    F = symgrad.compile(lambda x, y: g(h(x, y)) * y)
    for x in POINTS:
        y = 0.5 * x - 0.3
        u = math.sin(x) * y + x * x
        dg = 3 * u * u + math.exp(u)
        gx, gy = F.grad(x, y)
        assert gx == pytest.approx(dg * (math.cos(x) * y + 2 * x) * y, rel=1e-12)
        assert gy == pytest.approx(dg * math.sin(x) * y + u ** 3 + math.exp(u), rel=1e-12)


def test_array_argument_and_array_result():
    inner = symgrad.compile(lambda v: np.sin(v) * v[::-1], shapes=[(3,)])
    F = symgrad.compile(lambda v: np.sum(inner(2.0 * v) ** 2), shapes=[(3,)])
    v = np.array([0.3, -0.7, 1.2])
    w = 2.0 * v
    r = np.sin(w) * w[::-1]
    assert F(v) == pytest.approx(np.sum(r ** 2), rel=1e-13)
    # d r_i / d w_j: cos(w_i) w_{2-i} [i == j] + sin(w_i) [j == 2 - i]; w = 2 v
    J = np.diag(np.cos(w) * w[::-1]) + np.diag(np.sin(w))[:, ::-1]
    np.testing.assert_allclose(F.grad(v), 2.0 * (2.0 * r @ J), rtol=1e-12)
    # the inner's array result itself, returned from the outer
    G = symgrad.compile(lambda v: inner(v) + 1.0, shapes=[(3,)])
    np.testing.assert_allclose(G(v), np.sin(v) * v[::-1] + 1.0, rtol=1e-14)


def test_a_derivative_inside_and_the_hessian_through_it():
    def f(x, y):
        return math.sin(x * y) + x ** 3 * y
    F = symgrad.compile(f)
    G = symgrad.compile(lambda x, y: F.grad(x, y))  # a tuple of two: the gradient
    S = symgrad.compile(lambda x, y: F(x, y) + 0.5 * sum(g * g for g in F.grad(x, y)))
    for x, y in [(0.3, 1.2), (-1.1, 0.4), (2.0, -0.7)]:
        gx, gy = G(x, y)
        ex, ey = F.grad(x, y)
        assert (gx, gy) == (pytest.approx(ex, rel=1e-14), pytest.approx(ey, rel=1e-14))
        # the Hessian of a function of F.grad: d/dz of (f + |grad f|^2 / 2) is grad f + H grad f
        H = np.asarray(F.hessian(x, y))
        g = np.array([ex, ey])
        np.testing.assert_allclose(np.array(S.grad(x, y)), g + H @ g, rtol=1e-12)
        # the Jacobian of the gradient taken inside is F's Hessian
        np.testing.assert_allclose(np.array(G.jacobian(x, y)), H, rtol=1e-12)


def test_a_program_with_loops_is_refused():
    data = np.linspace(0.0, 1.0, 300)
    inner = symgrad.compile(lambda a: np.sum(np.sin(a * data)))  # 300 entries: kept as loops
    assert inner.loops
    F = symgrad.compile(lambda x: inner(x) * x)
    with pytest.raises(symgrad.TraceError, match=r"loop_min_size=0.*or call it outside"):
        F(0.5)
    inner0 = symgrad.compile(lambda a: np.sum(np.sin(a * data)), options=symgrad.Options(loop_min_size=0))
    F0 = symgrad.compile(lambda x: inner0(x) * x)
    assert F0.grad(0.5) == pytest.approx(np.sum(np.sin(0.5 * data)) + 0.5 * np.sum(data * np.cos(0.5 * data)),
                                         rel=1e-12)


def test_wrong_shape_is_refused_naming_the_line():
    inner = symgrad.compile(lambda v: np.sum(v * v), shapes=[(3,)])
    F = symgrad.compile(lambda v: inner(v[:2]), shapes=[(3,)])
    with pytest.raises(symgrad.TraceError, match=r"shape \(3,\), got shape \(2,\).*test_compose.py"):
        F(np.ones(3))
