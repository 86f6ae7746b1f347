"""Derivatives of programs whose arrays stayed loops (sum and read nodes, map and scatter
results), on the IR without a C compiler: against closed forms, evaluated by the numpy
interpreter (ir/evaluate.py)."""
import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.ir.program import Arg
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian

N = 300
D = np.linspace(0.5, 1.5, N)
Y = np.cos(3 * D)
LOOP = 128  # Options.loop_min_size's default


def traced(f, shapes):
    prog = trace(f, shapes, loop_min=LOOP)
    assert prog.has_loops
    return prog


def sums(prog):
    return sum(1 for n in prog.nodes if n[0] == "sum")


def test_gradient_and_hessian_of_a_least_squares_loss():
    def loss(a, b, c):
        return np.sum((a * np.exp(-b * D) + c - Y) ** 2)
    prog = traced(loss, [(), (), ()])
    p = (1.3, 0.7, -0.2)
    e = np.exp(-p[1] * D)
    r = p[0] * e + p[2] - Y
    J = np.stack([e, -p[0] * D * e, np.ones(N)])  # d r / d (a, b, c)
    got = evaluate(derive.grad(prog, (0, 1, 2), with_value=True), *p)
    np.testing.assert_allclose(got, [np.sum(r * r)] + list(2 * J @ r), rtol=1e-13)
    h = hessian.hessian(prog, (0, 1, 2))
    assert sums(h) <= 10 and h.count_ops() < 60  # one body per entry, not N of them
    second = np.zeros((3, 3, N))
    second[0, 1] = second[1, 0] = -D * e
    second[1, 1] = p[0] * D * D * e
    want = 2 * (J @ J.T + second @ r)
    np.testing.assert_allclose(np.array(evaluate(h, *p)).reshape(3, 3), want, rtol=1e-12)


def test_a_gradient_by_an_argument_the_loops_read_is_a_scatter():
    def f(x):  # read at two offsets, and one entry outside the loops
        return np.sum((x[1:] - x[:-1]) ** 2 * D[1:]) + x[3] ** 3
    prog = traced(f, [(N,)])
    g = derive.grad(prog, (0,))
    assert g.outputs[0].adds is not None and not g.outputs[0].refs
    x = np.sin(np.arange(N) * 0.37)
    d = np.diff(x)
    want = np.zeros(N)
    want[1:] += 2 * d * D[1:]
    want[:-1] -= 2 * d * D[1:]
    want[3] += 3 * x[3] ** 2
    np.testing.assert_allclose(evaluate(g, x)[0], want, rtol=1e-12, atol=1e-15)


def test_a_scatter_through_repeated_indices_adds_up():
    idx = np.arange(2 * N) % 7  # each of x[0..6] read about 85 times

    def f(x):
        return np.sum(np.sin(x[idx]) * np.arange(2 * N))
    prog = traced(f, [(N,)])
    x = np.linspace(-1, 1, N)
    want = np.zeros(N)
    np.add.at(want, idx, np.cos(x[idx]) * np.arange(2 * N))
    np.testing.assert_allclose(evaluate(derive.grad(prog, (0,)), x)[0], want, rtol=1e-12)


def test_where_inside_a_sum_keeps_the_branch_not_taken_out_of_every_derivative():
    def f(p):  # sqrt of a negative number where the branch is not taken
        u = D * p - 1.0
        return np.sum(np.where(u > 0, np.sqrt(np.where(u > 0, u, 0.0)) * D, 0.0))
    prog = traced(f, [()])
    p = 1.2
    u = D * p - 1
    m = u > 0
    g = evaluate(derive.grad(prog, (0,)), p)[0]
    h = evaluate(hessian.hessian(prog, (0,)), p)[0]
    assert g == pytest.approx(np.sum(0.5 / np.sqrt(u[m]) * D[m] ** 2), rel=1e-12)
    assert h == pytest.approx(np.sum(-0.25 * u[m] ** -1.5 * D[m] ** 3), rel=1e-12)


def test_forward_derivatives_through_sums():
    prog = traced(lambda t: np.sum(np.sin(t * D) * Y), [()])
    d3 = derive.nth(prog, 3, 0, "d")
    assert sums(d3) == 1
    assert evaluate(d3, 0.4)[0] == pytest.approx(np.sum(-np.cos(0.4 * D) * D ** 3 * Y), rel=1e-12)
    loss = traced(lambda a, b: np.sum(np.exp(a * D) * np.sin(b * D)), [(), ()])
    hv = derive.hvp(loss, (0, 1), ["va", "vb"])
    a, b, va, vb = 0.3, 0.8, 1.5, -0.25
    ea, sb, cb = np.exp(a * D), np.sin(b * D), np.cos(b * D)
    H = np.array([[np.sum(D * D * ea * sb), np.sum(D * D * ea * cb)],
                  [np.sum(D * D * ea * cb), -np.sum(D * D * ea * sb)]])
    np.testing.assert_allclose(evaluate(hv, a, b, va, vb), H @ [va, vb], rtol=1e-12)


def test_the_jacobian_of_an_array_kept_as_a_loop_is_a_loop_too():
    def f(x, c):
        return np.sin(x * c[0]) * c[1] + D
    prog = traced(f, [(N,), (2,)])
    j = derive.jacobian(prog, (1,))
    out = j.outputs[0]
    assert out.loops and out.shape == (N, 2) and len(out.refs) == 2
    x, c = np.linspace(0, 1, N), np.array([0.3, 0.8])
    want = np.stack([np.cos(x * c[0]) * x * c[1], np.sin(x * c[0])], axis=-1)
    np.testing.assert_allclose(evaluate(j, x, c)[0], want, rtol=1e-14)


def test_matrix_products_over_data_and_their_batches():
    A = np.cos(np.arange(N * 4).reshape(N, 4))

    def f(w):
        return np.sum((A @ w - Y) ** 2)
    prog = traced(f, [(4,)])
    w = np.array([[0.1, -0.2, 0.3, 0.05], [1.0, 0.5, -0.5, 2.0]])  # two points
    got = evaluate(derive.grad(prog, (0,), with_value=True), w)
    r = w @ A.T - Y
    np.testing.assert_allclose(got[0], np.sum(r * r, axis=1), rtol=1e-12)
    np.testing.assert_allclose(got[1], 2 * r @ A, rtol=1e-12)
    np.testing.assert_allclose(evaluate(hessian.hessian(prog, (0,)), w[0])[0], 2 * A.T @ A, rtol=1e-12)


def test_the_evaluator_sums_a_body_that_does_not_vary():
    prog = traced(lambda p, x: np.sum(x * 0.0 + p), [(), (N,)])
    assert evaluate(prog, 0.5, np.zeros(N))[0] == 0.5 * N
    assert evaluate(derive.grad(prog, (0,)), 0.5, np.zeros(N))[0] == N
    assert prog.args[1] == Arg("x", (N,))


def test_a_zero_of_the_data_takes_its_term_away_as_in_the_element_by_element_trace():
    X = np.linspace(0, 2, 200)  # X[0] = 0: sqrt(p * 0) is 0 for every p, its derivative 0 (not 0 * inf)

    def f(p):
        return np.sum(np.sqrt(p * X)) + np.sum(np.cbrt(p * X) * X)
    loops, flat = traced(f, [()]), trace(f, [()])
    assert not flat.has_loops
    p = 0.8
    m = X > 0
    want = np.sum(0.5 * np.sqrt(X[m] / p)) + np.sum(X[m] ** 2 / (3 * np.cbrt(p * X[m]) ** 2))
    for prog in (loops, flat):
        assert evaluate(derive.grad(prog, (0,)), p)[0] == pytest.approx(want, rel=1e-12)
        assert np.isfinite(evaluate(hessian.hessian(prog, (0,)), p)[0])


def test_remainders_of_a_constant_zero_have_a_derivative():
    import math
    for f in (lambda p: 0.0 % p, lambda p: np.fmod(0.0, p), lambda p: math.remainder(0.0, p) * 2):
        prog = trace(f, [()])
        assert evaluate(derive.grad(prog, (0,)), 0.7)[0] == 0  # -floor(0 / 0.7) and its kin
