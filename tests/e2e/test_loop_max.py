"""np.max / np.min of arrays kept as loops (tracing/lazy_extremum.py): compiled, against numpy
and closed forms, and against the same function traced element by element
(Options(loop_min_size=0)); the function is never traced again element by element."""
import logging

import numpy as np
import pytest

import symgrad

UNROLLED = symgrad.Options(loop_min_size=0)
RNG = np.random.default_rng(0)
X = RNG.standard_normal((130, 5))  # (each array of it at least loop_min_size: 128 entries)
XL = RNG.standard_normal((1000, 20))


def lse(w):
    z = X @ w
    m = np.max(z)
    return m + np.log(np.sum(np.exp(z - m)))


def lse_big(w):
    z = XL @ w
    m = np.max(z)
    return m + np.log(np.sum(np.exp(z - m)))


def soft(w):
    z = X @ w.reshape(5, 4)
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(m[:, 0] + np.log(np.sum(np.exp(z - m), axis=1)))


def mixed(w):  # np.min, amin, amax, .max(), .min(), nanmax, axis=0 of a tall array
    z = X * w
    return (np.min(z) + np.amax(X @ w) + (X @ w).max() * 0.5 - (X @ w).min() + np.sum(np.amin(z, axis=0) ** 2)
            + np.nanmax(np.sin(X @ w)))


def mixed_numpy(w):
    with np.errstate(invalid="ignore"):
        return mixed(np.asarray(w, dtype=float))


def _softmax(z):
    p = np.exp(z - z.max())
    return p / p.sum()


@pytest.fixture
def no_fallback(caplog):
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        yield
    assert "traced again element by element" not in caplog.text
    assert "cannot keep as a loop" not in caplog.text and "numpy.max of a large array" not in caplog.text


def test_log_sum_exp_value_gradient_and_hessian(no_fallback):
    F = symgrad.compile(lse, shapes=[(5,)])
    U = symgrad.compile(lse, shapes=[(5,)], options=UNROLLED)
    for w in [np.array([0.3, -0.2, 0.1, 0.5, -0.4]), np.zeros(5)]:  # (w = 0: every entry ties)
        z = X @ w
        p = _softmax(z)
        v, g = F.value_and_grad(w)
        assert v == U(w)  # (numpy's own X @ w is BLAS's, in no order modelled: to rounding)
        np.testing.assert_allclose(v, np.log(np.sum(np.exp(z))), rtol=1e-15)
        np.testing.assert_allclose(g, X.T @ p, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(g, U.grad(w), rtol=1e-13, atol=1e-15)
        H = F.hessian(w)
        np.testing.assert_allclose(H, X.T @ (np.diag(p) - np.outer(p, p)) @ X, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(F.hvp(w, np.eye(5)[2]), H[:, 2], rtol=1e-12, atol=1e-14)
    assert F.loops
    W = RNG.standard_normal((7, 5))  # a batch of points
    np.testing.assert_array_equal(F(W), [F(w) for w in W])
    np.testing.assert_allclose(F(W), [lse(w) for w in W], rtol=1e-15)
    np.testing.assert_allclose(F.grad(W), [X.T @ _softmax(X @ w) for w in W], rtol=1e-13, atol=1e-15)


def test_the_gradient_at_ties_nan_and_inf_is_the_unrolled_ones(no_fallback):
    F = symgrad.compile(lambda x: np.max(x * 2.0) + np.min(x), shapes=[(300,)])
    U = symgrad.compile(lambda x: np.max(x * 2.0) + np.min(x), shapes=[(300,)], options=UNROLLED)
    k = np.arange(300)
    for x in [np.zeros(300), np.where(k % 3, -0.0, 0.0), np.where(k == 7, np.nan, 1.0),
              np.where(k % 50 == 0, np.nan, 1.0), np.where(k % 2, np.inf, -np.inf), np.full(300, -np.inf),
              np.where(k == 250, 5.0, np.where(k == 30, -5.0, 1.0))]:
        with np.errstate(invalid="ignore"):
            want = np.max(x * 2.0) + np.min(x)
        assert np.array_equal(F(x), want, equal_nan=True)
        assert np.array_equal(F(x), U(x), equal_nan=True)
        np.testing.assert_array_equal(F.grad(x), U.grad(x))
    assert F.loops and "maximum in order */" in F.grad.c_source and "minimum in order */" in F.c_source
    g = F.grad(np.ones(300))
    assert g[0] == 3 and not g[1:].any()  # both credit the first entry at a tie


def test_a_small_reduced_axis_keeps_the_unrolled_chain(no_fallback):
    # the same operations as the unrolled kernel; exp and log in a SIMD loop are libmvec's, whose
    # last bit can differ from libm's (docs/guide.md), so the values agree to rounding, not bits
    F = symgrad.compile(soft, shapes=[(20,)])
    U = symgrad.compile(soft, shapes=[(20,)], options=UNROLLED)
    for w in [np.random.default_rng(5).standard_normal(20), np.zeros(20)]:
        np.testing.assert_allclose(F(w), U(w), rtol=1e-15)
        np.testing.assert_allclose(F(w), soft(w), rtol=1e-15)
        np.testing.assert_allclose(F.grad(w), U.grad(w), rtol=1e-13, atol=1e-15)


@pytest.mark.filterwarnings("ignore:All-NaN")
def test_min_amin_amax_methods_nanmax_and_axis_0(no_fallback):
    F = symgrad.compile(mixed, shapes=[(5,)])
    U = symgrad.compile(mixed, shapes=[(5,)], options=UNROLLED)
    for w in [np.array([0.3, -0.2, 0.1, 0.5, -0.4]), np.zeros(5), np.array([1.0, np.inf, 0.0, -1.0, 2.0])]:
        # (np.sin in a SIMD loop is libmvec's: its last bit can differ from numpy's and libm's)
        np.testing.assert_allclose(F(w), mixed_numpy(w), rtol=1e-15)
        np.testing.assert_allclose(F(w), U(w), rtol=1e-15)
    w = np.array([0.3, -0.2, 0.1, 0.5, -0.4])
    np.testing.assert_allclose(F.grad(w), U.grad(w), rtol=1e-13, atol=1e-15)
    J = symgrad.compile(lambda w: np.max(X * w, axis=0), shapes=[(5,)])  # a Jacobian of a vector of maxima
    np.testing.assert_array_equal(J.jacobian(w), np.diag(X[np.argmax(X * w, axis=0), np.arange(5)]))


def test_a_larger_log_sum_exp_against_numpy(no_fallback):
    F = symgrad.compile(lse_big, shapes=[(20,)])
    w = RNG.standard_normal(20) * 0.3
    v, g = F.value_and_grad(w)
    np.testing.assert_allclose(v, lse_big(w), rtol=1e-15)
    np.testing.assert_allclose(g, XL.T @ _softmax(XL @ w), rtol=1e-13, atol=1e-15)


def test_kinds_that_take_no_extremum_fall_back_or_refuse(caplog):
    """A sparse Jacobian and standalone source take the function traced element by element
    (a warning says so), with the dense loop kernel's values; .expr refuses as for any loop program."""
    F = symgrad.compile(lambda w: np.max(X * w, axis=0) + w, shapes=[(5,)])
    w = np.array([0.3, -0.2, 0.1, 0.5, -0.4])
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        dense = F.jacobian(w)
        assert "traced again element by element" not in caplog.text and "cannot keep as a loop" not in caplog.text
        S = F.jacobian(w, sparse=True)
        assert "traced again element by element" in caplog.text
    assert "symgrad_maximum" in F.standalone("c99").definitions  # (the unrolled chain)
    np.testing.assert_array_equal(dense, np.diag(X[np.argmax(X * w, axis=0), np.arange(5)]) + np.eye(5))
    np.testing.assert_array_equal(S.toarray(), dense)
    with pytest.raises(symgrad.CompileError, match="loops"):
        F.expr
