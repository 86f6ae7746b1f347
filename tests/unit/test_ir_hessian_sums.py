"""Dense Hessians of sums over data rows (transforms/hessian_sums.py), on the IR without a C
compiler: one scatter over (row, j, k) whose program does not grow with the number of
parameters, against closed forms, evaluated by the numpy interpreter (ir/evaluate.py)."""
import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.ir.nodes import is_sum
from symgrad.tracing import trace
from symgrad.transforms import hessian
from symgrad.transforms.hessian_sums import hessian_of_sums

N = 200
LOOP = 128  # Options.loop_min_size's default
RNG = np.random.default_rng(7)


def data(d, zeros=True):
    X = RNG.standard_normal((N, d)) / np.sqrt(d)
    if zeros:
        X[3, 0] = 0.0
        X[5, :] = 0.0
    return X, RNG.standard_normal(N)


def rolled(f, shapes, argnums=(0,)):
    prog = trace(f, shapes, loop_min=LOOP)
    assert prog.has_loops
    h = hessian_of_sums(prog, argnums)
    assert h is not None
    return prog, h


def value(h, *args):
    out = evaluate(h, *args)
    return [np.asarray(o) for o in out]


def test_ridge_is_one_scatter_whatever_the_number_of_parameters():
    sizes = {}
    for d in (5, 40):
        X, y = data(d)
        _, h = rolled(lambda w: np.sum((X @ w - y) ** 2) + 0.1 * np.sum(w * w), [(d,)])
        w = RNG.standard_normal(d)
        (H,) = value(h, w)
        np.testing.assert_allclose(H, 2 * X.T @ X + 0.2 * np.eye(d), rtol=1e-13, atol=1e-14)
        assert not any(map(is_sum, h.nodes))
        (o,) = h.outputs
        loops = [lp for _, _, lp, _ in o.adds if lp]
        assert [tuple(e for _, e in lp) for lp in loops] == [(N, d, d)]  # one term over (row, j, k)
        sizes[d] = len(h.nodes)
    assert sizes[5] == sizes[40]


def test_logistic_regression_against_its_closed_form():
    d = 6
    X, y = data(d)
    s = np.sign(y)
    _, h = rolled(lambda w: np.sum(np.log1p(np.exp(-s * (X @ w)))), [(d,)])
    w = RNG.standard_normal(d)
    p = 1 / (1 + np.exp(-s * (X @ w)))
    (H,) = value(h, w)
    np.testing.assert_allclose(H, X.T @ ((p * (1 - p))[:, None] * X), rtol=1e-12, atol=1e-15)


def test_a_matrix_of_parameters_couples_only_its_own_columns():
    d, c = 4, 3
    X, _ = data(d)
    _, h = rolled(lambda W: np.sum(np.sin(X @ W)), [(d, c)])
    W = RNG.standard_normal((d, c))
    S = np.sin(X @ W)
    want = np.zeros((d, c, d, c))
    for k in range(c):
        want[:, k, :, k] = -X.T @ (S[:, k][:, None] * X)
    (H,) = value(h, W)
    np.testing.assert_allclose(H, want, rtol=1e-12, atol=1e-14)


def test_two_arguments_give_the_four_blocks():
    d = 5
    X, y = data(d)
    _, h = rolled(lambda w, b: np.sum(np.tanh(X @ w + b * y) ** 2), [(d,), ()], (0, 1))
    w, b = RNG.standard_normal(d), 0.3
    z = X @ w + b * y
    t = np.tanh(z)
    c = 2 * (1 - t * t) * (1 - 3 * t * t)  # d2/dz2 tanh(z)**2
    ww, wb, bw, bb = value(h, w, b)
    np.testing.assert_allclose(ww, X.T @ (c[:, None] * X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(wb, X.T @ (c * y), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(bw, wb, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(bb, np.sum(c * y * y), rtol=1e-12)


def test_coefficients_that_do_not_roll_stay_entries():
    d = 5
    X, _ = data(d, zeros=False)
    perm = [3, 0, 4, 1, 2]  # w[j]'s coefficient X[i, perm[j]]: no fixed step from one j to the next
    _, h = rolled(lambda w: np.sum(np.cos(X[:, perm] @ w)), [(d,)])
    w = RNG.standard_normal(d)
    Xs = X[:, perm]
    (H,) = value(h, w)
    np.testing.assert_allclose(H, -Xs.T @ (np.cos(Xs @ w)[:, None] * Xs), rtol=1e-12, atol=1e-14)


def test_a_zero_of_the_data_keeps_its_term_zero_at_an_infinite_weight():
    d = 3
    X = np.abs(RNG.standard_normal((N, d))) + 0.5
    X[0] = [0.0, 1.0, 0.0]  # z_0 = w[1] = 0: the second derivative of sqrt is -inf there
    prog, h = rolled(lambda w: np.sum(np.sqrt(X @ w)), [(d,)])
    w = np.array([0.7, 0.0, 0.4])
    (H,) = value(h, w)
    old = np.asarray(evaluate(hessian.hessian(prog, (0,)), w)[0])
    assert H[1, 1] == -np.inf and np.isfinite(np.delete(H.ravel(), 4)).all()
    np.testing.assert_array_equal(np.isfinite(H), np.isfinite(old))
    fin = np.isfinite(old)
    np.testing.assert_allclose(H[fin], old[fin], rtol=1e-12)


def test_nonlinear_in_its_sums_adds_the_gradients_outer_products():
    d = 5
    X, y = data(d)
    w = RNG.standard_normal(d) * 0.3
    _, h = rolled(lambda w: np.log(np.sum(np.exp(X @ w))), [(d,)])
    p = np.exp(X @ w)
    p /= p.sum()
    g = X.T @ p
    (H,) = value(h, w)
    np.testing.assert_allclose(H, X.T @ (p[:, None] * X) - np.outer(g, g), rtol=1e-12, atol=1e-14)
    _, h = rolled(lambda w: np.sum(X @ w) * np.sum(y * (X @ w) ** 2), [(d,)])
    a, z = X.sum(0), X @ w
    b = 2 * X.T @ (y * z)  # d/dw sum(y z^2)
    want = np.outer(a, b) + np.outer(b, a) + np.sum(z) * 2 * X.T @ (y[:, None] * X)
    (H,) = value(h, w)
    np.testing.assert_allclose(H, want, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", ["variance", "scaled outside", "log of a sum by a large argument"])
def test_what_it_does_not_take(name):
    d = 4
    X, y = data(d)
    f, shape = {"variance": (lambda w: np.var(X @ w), (d,)),
                "scaled outside": (lambda w: np.sum(np.cos(X @ (y[:d] * w))), (d,)),  # reads y[:d] * w
                "log of a sum by a large argument": (lambda x: np.log(np.sum(np.exp(x) * y)), (N,))}[name]
    prog = trace(f, [shape], loop_min=LOOP)
    assert prog.has_loops
    assert hessian_of_sums(prog, (0,)) is None
