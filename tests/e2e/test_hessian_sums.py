"""Compiled Hessians of sums over data rows (transforms/hessian_sums.py: one scatter loop nest
over (row, j, k), panels of rows, render/panels.py): values against closed forms and the
trace element by element, batches of points, and kernels whose size does not grow with the
number of parameters."""
import numpy as np
import symgrad

N = 500
RNG = np.random.default_rng(11)
UNROLLED = symgrad.Options(loop_min_size=0)


def data(d):
    X = RNG.standard_normal((N, d)) / np.sqrt(d)
    X[7, 1] = 0.0
    return X, RNG.standard_normal(N)


def test_ridge_and_logistic_against_closed_forms_over_a_batch():
    d = 7
    X, y = data(d)
    s = np.sign(y)
    R = symgrad.compile(lambda w: np.sum((X @ w - y) ** 2) + 0.1 * np.sum(w * w), shapes=[(d,)])
    L = symgrad.compile(lambda w: np.sum(np.log1p(np.exp(-s * (X @ w)))), shapes=[(d,)])
    W = RNG.standard_normal((3, d))
    HR, HL = R.hessian(W), L.hessian(W)
    assert R.hessian.loops and HR.shape == (3, d, d)
    for k, w in enumerate(W):
        np.testing.assert_allclose(HR[k], 2 * X.T @ X + 0.2 * np.eye(d), rtol=1e-13, atol=1e-13)
        p = 1 / (1 + np.exp(-s * (X @ w)))
        np.testing.assert_allclose(HL[k], X.T @ ((p * (1 - p))[:, None] * X), rtol=1e-12, atol=1e-14)


def test_a_matrix_read_by_the_loops():
    d, c = 5, 3
    X, _ = data(d)
    F = symgrad.compile(lambda W: np.sum(np.cos(X @ W)), shapes=[(d, c)])
    W = RNG.standard_normal((d, c))
    C = np.cos(X @ W)
    want = np.zeros((d, c, d, c))
    for k in range(c):
        want[:, k, :, k] = -X.T @ (C[:, k][:, None] * X)
    assert F.hessian.loops
    np.testing.assert_allclose(F.hessian(W), want, rtol=1e-12, atol=1e-13)


def test_an_infinite_weight_at_a_zero_of_the_data_as_element_by_element():
    d = 3
    X = np.abs(RNG.standard_normal((150, d))) + 0.5
    X[0] = [0.0, 1.0, 0.0]  # z_0 = w[1] = 0: d2/dz2 sqrt(z) is -inf there, X[0, 0] and X[0, 2] are 0

    def f(w):
        return np.sum(np.sqrt(X @ w))
    w = np.array([0.7, 0.0, 0.4])
    H = symgrad.compile(f, shapes=[(d,)]).hessian(w)
    U = symgrad.compile(f, shapes=[(d,)], options=UNROLLED).hessian(w)
    assert H[1, 1] == -np.inf
    np.testing.assert_array_equal(np.isfinite(H), np.isfinite(U))
    np.testing.assert_allclose(H[np.isfinite(U)], U[np.isfinite(U)], rtol=1e-12)


def test_the_kernel_does_not_grow_with_the_parameters():
    sizes = {}
    for d in (4, 60):
        X, y = data(d)
        F = symgrad.compile(lambda w: np.sum(np.log1p(np.exp(-y * (X @ w)))), shapes=[(d,)])
        src = F.hessian.c_source
        sizes[d] = src.count(";")
    # the row's X @ w is d products (the value's own trace); the Hessian adds no d x d anything
    assert sizes[60] - sizes[4] <= 2 * 56 + 10, sizes


def test_a_log_of_a_sum_and_a_body_reading_a_computed_value():
    d = 4
    X, y = data(d)
    w = RNG.standard_normal(d) * 0.3
    H = symgrad.compile(lambda w: np.log(np.sum(np.exp(X @ w))), shapes=[(d,)]).hessian(w)
    p = np.exp(X @ w)
    p /= p.sum()
    g = X.T @ p
    np.testing.assert_allclose(H, X.T @ (p[:, None] * X) - np.outer(g, g), rtol=1e-12, atol=1e-14)
    Xs = X * y[:d]
    H = symgrad.compile(lambda w: np.sum(np.cos(X @ (y[:d] * w))), shapes=[(d,)]).hessian(w)
    np.testing.assert_allclose(H, -Xs.T @ (np.cos(Xs @ w)[:, None] * Xs), rtol=1e-12, atol=1e-13)


def test_kinks_in_the_row_body_as_element_by_element():
    # (review: relu, clip, where and min made the coefficients of a select plain products, and
    # inf * (X * 0) NaN where the select was not taken; now rolled, and no NaN)
    d = 3
    X = RNG.standard_normal((130, d))
    w = RNG.standard_normal(d) * 0.5
    for f in (lambda w: np.sum(np.maximum(X @ w, 0.0) ** 1.5),
              lambda w: np.sum(np.clip(X @ w, 0.0, 1.0) ** 1.5),
              lambda w: np.sum(np.where(X @ w > 0, X @ w, 0.0) ** 1.5),
              lambda w: np.sum(np.log(1.0 - np.minimum(X @ w, 1.0)))):
        H = symgrad.compile(f, shapes=[(d,)]).hessian(w)
        U = symgrad.compile(f, shapes=[(d,)], options=UNROLLED).hessian(w)
        assert np.isfinite(U).all()
        np.testing.assert_allclose(H, U, rtol=1e-12, atol=1e-12)


def test_float_arithmetic_bounds_the_unguarded_products():
    # (review: a bound of 1e300 let 2*A*A*X*X go unguarded; in float arithmetic 2*A*A overflows
    # and inf * 0 was NaN where the element-by-element trace folds the 0 of the data away)
    n, d = 130, 3
    X, y, A = RNG.standard_normal((n, d)), RNG.standard_normal(n), RNG.standard_normal(n)
    X[3], A[3] = [1.0, 0.0, 0.5], 1e20
    w = (RNG.standard_normal(d) * 0.3).astype(np.float32)

    def f(w):
        return np.sum((A * (X @ w) - y) ** 2)
    opts = dict(shapes=[(d,)], dtype="float32")
    H = symgrad.compile(f, **opts, options=symgrad.Options(float32_math="float")).hessian(w)
    U = symgrad.compile(f, **opts, options=symgrad.Options(float32_math="float", loop_min_size=0)).hessian(w)
    np.testing.assert_array_equal(np.isnan(H), np.isnan(U))
    np.testing.assert_array_equal(np.isinf(H), np.isinf(U))
    fin = np.isfinite(U)
    np.testing.assert_allclose(H[fin], U[fin], rtol=1e-5)


def test_softmax_regression_against_its_closed_form():
    # (the max over classes is a pick: taken as linear, its conditions made every class's
    # coefficients read every weight, 84,100 terms; now 100 over (row, j, k))
    d, c = 6, 4
    X, y = data(d)
    onehot = np.eye(c)[(np.abs(y * 7).astype(int)) % c]

    def f(w):
        z = X @ w.reshape(d, c)
        m = np.max(z, axis=1, keepdims=True)
        return np.sum(m[:, 0] + np.log(np.sum(np.exp(z - m), axis=1))) - np.sum(z * onehot)
    w = RNG.standard_normal(d * c) * 0.3
    F = symgrad.compile(f, shapes=[(d * c,)])
    H = F.hessian(w).reshape(d, c, d, c)
    Z = X @ w.reshape(d, c)
    P = np.exp(Z - Z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    want = np.einsum("ij,ik,ic,cd->jckd", X, X, P, np.eye(c)) - np.einsum("ij,ik,ic,id->jckd", X, X, P, P)
    assert F.hessian.loops
    np.testing.assert_allclose(H, want, rtol=1e-11, atol=1e-13)
