"""np.linalg.solve, inv, det and slogdet beyond 4x4: LU with partial pivoting in the kernel,
against numpy's LAPACK values and the closed forms of their derivatives
(d(A^-1 b) = -A^-1 dA A^-1 b, d log|det A| = tr(A^-1 dA))."""
import numpy as np
import pytest

import symgrad
from symgrad.ir.evaluate import evaluate
from symgrad.tracing import trace
from symgrad.transforms import derive


def _matrices(n, seed):
    """Well-conditioned matrices whose first pivots are not on the diagonal (a zero corner,
    a row of tiny entries), and a plain random one."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(3, n, n)) + 2 * np.sqrt(n) * np.eye(n)[::-1]
    a[0, 0, 0] = 0.0
    a[1, :2] *= 1e-3
    a[1, 2:] += 3 * np.eye(n)[2:]
    return a


def lin(A, b, w):
    """(w . A^-1 b + log|det A|, A^-1 b, det A, the sign of det A, A^-1 flattened): one array."""
    x = np.linalg.solve(A, b)
    sign, logabs = np.linalg.slogdet(A)
    return np.concatenate([np.array([w @ x + logabs]), x, np.array([np.linalg.det(A), sign]),
                           np.linalg.inv(A).ravel()])


@pytest.mark.parametrize("n", [6, 10])
def test_values_match_lapack(n):
    F = symgrad.compile(lin, [(n, n), (n,), (n,)])
    A = _matrices(n, n)
    rng = np.random.default_rng(1)
    b, w = rng.normal(size=(3, n)), rng.normal(size=(3, n))
    r = F(A, b, w)
    x, det, sign, inv = r[:, 1:n + 1], r[:, n + 1], r[:, n + 2], r[:, n + 3:].reshape(3, n, n)
    assert np.allclose(x, np.linalg.solve(A, b[..., None])[..., 0], rtol=1e-12, atol=1e-13)
    assert np.allclose(det, np.linalg.det(A), rtol=1e-12, atol=0)
    assert np.array_equal(sign, np.linalg.slogdet(A)[0])
    assert np.allclose(inv, np.linalg.inv(A), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("n", [6, 10])
def test_gradients_match_closed_forms(n):
    G = symgrad.compile(lambda A, b, w: lin(A, b, w)[0], [(n, n), (n,), (n,)])
    A = _matrices(n, 2 * n)
    rng = np.random.default_rng(3)
    b, w = rng.normal(size=(3, n)), rng.normal(size=(3, n))
    gA, gb, gw = G.grad(A, b, w)
    for k in range(3):
        x = np.linalg.solve(A[k], b[k])
        lam = np.linalg.solve(A[k].T, w[k])
        assert np.allclose(gA[k], -np.outer(lam, x) + np.linalg.inv(A[k]).T, rtol=1e-11, atol=1e-12)
        assert np.allclose(gb[k], lam, rtol=1e-11, atol=1e-12)
        assert np.allclose(gw[k], x, rtol=1e-12, atol=1e-13)


def test_hessian_through_the_pivoting():
    n = 5
    H = symgrad.compile(lambda A, b: np.sum(np.linalg.solve(A, b) ** 2), [(n, n), (n,)]).hessian_wrt(1)
    A = _matrices(n, 7)
    b = np.random.default_rng(4).normal(size=(3, n))
    for k in range(3):
        Ainv = np.linalg.inv(A[k])
        assert np.allclose(H(A[k], b[k]), 2 * Ainv.T @ Ainv, rtol=1e-11, atol=1e-12)


def test_a_singular_matrix_gives_non_finite_values():
    n = 5
    F = symgrad.compile(lambda A, b: np.linalg.solve(A, b), [(n, n), (n,)])
    A = np.ones((n, n))
    assert not np.all(np.isfinite(F(A, np.ones(n))))


def test_30x30_on_the_ir():
    """Without a C compiler: the traced solve and its reverse-mode gradient, evaluated by
    numpy node by node."""
    n = 30
    prog = trace(lambda A, b, w: w @ np.linalg.solve(A, b), [(n, n), (n,), (n,)])
    A = _matrices(n, 30)[0]
    rng = np.random.default_rng(5)
    b, w = rng.normal(size=n), rng.normal(size=n)
    (value,) = evaluate(prog, A, b, w)
    x = np.linalg.solve(A, b)
    assert np.isclose(value, w @ x, rtol=1e-12)
    gA, gb, gw = evaluate(derive.grad(prog, (0, 1, 2)), A, b, w)
    lam = np.linalg.solve(A.T, w)
    assert np.allclose(gA, -np.outer(lam, x), rtol=1e-10, atol=1e-12)
    assert np.allclose(gb, lam, rtol=1e-10, atol=1e-12) and np.allclose(gw, x, rtol=1e-12, atol=1e-13)


def test_what_the_review_found():
    """Singular matrices (det 0 and slogdet (0, -inf) as numpy), a determinant whose partial
    products overflow, stacked right-hand sides at small sizes, constants mixed with traced
    entries, slogdet's result stacked, a matrix singular whatever the traced entries."""
    n = 5
    D = symgrad.compile(lambda A: np.linalg.det(A), [(n, n)])
    S = symgrad.compile(lambda A: np.stack(np.linalg.slogdet(A)), [(n, n)])
    singular = np.arange(25.0).reshape(5, 5)
    assert D(singular) == 0.0 and np.array_equal(S(singular), [0.0, -np.inf])
    scaled = (np.eye(n) + 1e-3 * np.random.default_rng(0).normal(size=(n, n))) * np.array([1e200, 1e200, 1e-200,
                                                                                          1e-200, 1.0])[:, None]
    assert D(scaled) == pytest.approx(np.linalg.det(scaled), rel=1e-12)
    for m in (3, 6):
        F = symgrad.compile(lambda A, B: np.linalg.solve(A, B), [(m, m), (2, m, 1)])
        A, B = _matrices(m, 9)[2], np.random.default_rng(9).normal(size=(2, m, 1))
        assert np.allclose(F(A, B), np.linalg.solve(A, B), rtol=1e-12, atol=1e-13)
    T = symgrad.compile(lambda d: np.linalg.det(np.eye(6, k=1) + np.eye(6, k=-1) + np.diag(d)), [(6,)])
    d = np.array([2.0, 3.0, -1.5, 4.0, 2.5, -3.0])
    assert T(d) == pytest.approx(np.linalg.det(np.eye(6, k=1) + np.eye(6, k=-1) + np.diag(d)), rel=1e-13)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        symgrad.compile(lambda b: np.linalg.solve(np.ones((5, 5)), b), [(5,)])(np.ones(5))
