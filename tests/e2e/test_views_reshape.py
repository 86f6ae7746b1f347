"""Reshapes of views and sums over a moderately large axis inside another loop, kept as loops
(tracing/views.py, tracing/lazy_sum.py INNER_TERMS): each view's entries are numpy's bit for
bit, each gradient numpy's scatter of the entries' weights (np.add.at over the view of the
positions), and a reshape numpy could only do by a copy of an argument still falls back,
with its warning and the right value."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import symgrad
from symgrad.tracing import lazy_sum

N = 400
X0 = np.linspace(-1.3, 2.1, N) + 0.01 * np.sin(np.arange(N) * 7.0)
FALLBACK = "cannot keep as a loop"

VIEWS = {  # name: (a view of x (N entries) whose reshape numpy makes without a copy or only splits,
    #                whether it is taken of 2 x + 1, a computed array)
    "step": (lambda x: x[::2].reshape(10, 20), False),
    "negative-step": (lambda x: x[::-2].reshape(-1, 4)[:, 1:], False),
    "transpose-split": (lambda x: x.reshape(20, 20).T.reshape(20, 4, 5), False),
    "slice-transpose-split": (lambda x: x.reshape(40, 10)[2:38, ::2].T.reshape(5, 6, 6), False),
    "int-index-merge": (lambda x: x.reshape(2, 20, 10)[1].reshape(10, 20), False),
    "rows-merge": (lambda x: x[100:400].reshape(15, 20)[2:12].reshape(-1), False),
    "negative-rows-merge": (lambda x: x.reshape(20, 20)[::-3].reshape(7, 4, 5)[:, ::-1], False),
    "newaxis": (lambda x: x[::2][:, None].reshape(10, 1, 20), False),
    "ravel-of-slice": (lambda x: np.ravel(x.reshape(40, 10)[3:23]).reshape(2, -1), False),
    "computed-split": (lambda x: x[::-1].reshape(20, 2, 10), True),
    "computed-split-of-transpose": (lambda x: x.reshape(20, 20).T.reshape(20, 4, 5)[:, ::2], True),
}


def weights(shape):
    return np.cos(np.arange(int(np.prod(shape)), dtype=float)).reshape(shape) + 1.5


def no_fallback(caplog):
    return not any(FALLBACK in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("name", list(VIEWS))
def test_a_view_reshaped_is_numpys_bit_for_bit_and_its_gradient_a_scatter(name, caplog):
    index, computed = VIEWS[name]

    def view(x):
        return index(2.0 * x + 1.0) if computed else index(x)
    w = weights(view(X0).shape)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        V = symgrad.compile(lambda x: view(x), shapes=[(N,)])
        F = symgrad.compile(lambda x: np.sum(w * view(x) * view(x)), shapes=[(N,)])
        got = V(X0)
        v, g = F.value_and_grad(X0)
    assert no_fallback(caplog) and V.loops and F.grad.loops
    assert view(X0).size >= 128 and view(X0).base is not None  # large, and numpy's own view
    assert got.shape == view(X0).shape and np.array_equal(got, view(X0))
    assert v == np.sum(w * view(X0) * view(X0))  # numpy's order of the sum, from the view's strides
    want = np.zeros(N)  # numpy's positions of the view's entries, each one's weight added where it reads
    np.add.at(want, index(np.arange(N)), 2.0 * w * view(X0) * (2.0 if computed else 1.0))
    np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-14)


def test_views_of_data_are_read_where_numpy_reads_them_or_copied_as_numpy_copies(caplog):
    D = np.sin(np.arange(600.0)).reshape(30, 20)

    def kept(D):  # split and merged without a copy: read where numpy reads
        return D.T[::2].reshape(10, 3, 10)[:, 1:].reshape(10, 20)

    def copied(D):  # merged axes that are not contiguous: numpy's copy (of data: data again)
        return D[:, 1:].reshape(-1)[:N]

    def f(x):
        return np.sum(x[:200].reshape(10, 20) * kept(D)) + np.sum(x * x * copied(D))
    assert np.shares_memory(kept(D), D) and not np.shares_memory(copied(D), D)
    x = np.linspace(0.2, 1.0, N)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F = symgrad.compile(f, shapes=[(N,)])
        v, g = F.value_and_grad(x)
    assert no_fallback(caplog) and F.grad.loops
    want = 2 * x * copied(D)
    want[:200] += kept(D).ravel()
    np.testing.assert_allclose(g, want, rtol=1e-15, atol=0)
    assert v == f(x)


def test_mlp_parameters_unpacked_from_one_vector_stay_loops(caplog):
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((300, 3)), rng.standard_normal(300)
    shapes = [(3, 6), (6,), (6, 1), (1,)]
    size = sum(int(np.prod(s)) for s in shapes)

    def unpack(w):
        k, out = 0, []
        for s in shapes:
            m = int(np.prod(s))
            out.append(w[k:k + m].reshape(s))
            k += m
        return out

    def f(w):
        W1, b1, W2, b2 = unpack(w)
        return np.sum(((np.tanh(X @ W1 + b1) @ W2 + b2)[:, 0] - y) ** 2)
    w = 0.4 * rng.standard_normal(size)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F = symgrad.compile(f, shapes=[(size,)])
        v, g = F.value_and_grad(w)
    assert no_fallback(caplog) and F.loops
    W1, b1, W2, b2 = unpack(w)  # backpropagation by hand
    h = np.tanh(X @ W1 + b1)
    r = (h @ W2 + b2)[:, 0] - y
    dh = 2 * r[:, None] * W2[:, 0] * (1 - h * h)
    want = np.concatenate([(X.T @ dh).ravel(), dh.sum(0), (h.T @ (2 * r)).ravel(), [2 * r.sum()]])
    assert v == pytest.approx(np.sum(r * r), rel=1e-13)  # (tanh: libmvec's, within 4 ulp)
    np.testing.assert_allclose(g, want, rtol=1e-11, atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("view", [
    lambda x: x.reshape(20, 20).T.reshape(-1),  # merged axes of an argument that are not contiguous
    lambda x: x.reshape(20, 20)[:, 1:].reshape(-1),
    lambda x: np.sin(x).reshape(20, 20)[::2].reshape(-1),  # merged axes of a computed array
], ids=["transpose-merge", "columns-merge", "computed-merge"])
def test_a_reshape_numpy_copies_falls_back_with_its_warning_and_the_right_value(view, caplog):
    w = weights(view(X0).shape)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F = symgrad.compile(lambda x: np.sum(w * view(x)), shapes=[(N,)])
        v = F(X0)
    assert not no_fallback(caplog) and not F.loops
    assert any("a reshape of" in r.getMessage() for r in caplog.records)
    assert v == pytest.approx(np.sum(w * view(X0)), rel=1e-14)


# -- a sum over a large axis inside another loop --------------------------------------------------
def ridge_data(d, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)) / np.sqrt(d), rng.standard_normal(n), 0.1 * rng.standard_normal(d)


def test_ridge_past_128_columns_gradient_and_hessian_match_closed_forms(caplog):
    X, y, w = ridge_data(130, 150)  # (130 >= loop_min_size: X @ w a sum over a large axis in the rows' loop)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F = symgrad.compile(lambda w: np.sum((X @ w - y) ** 2), shapes=[(130,)])
        v, g = F.value_and_grad(w)
        H = F.hessian(w)  # one scatter over (row, j, k): transforms/hessian_sums.py
    assert no_fallback(caplog) and F.loops and F.hessian.loops
    r = X @ w - y
    assert v == pytest.approx(r @ r, rel=1e-13)
    np.testing.assert_allclose(g, 2 * X.T @ r, rtol=1e-12, atol=1e-12 * np.abs(g).max())
    np.testing.assert_allclose(H, 2 * X.T @ X, rtol=1e-12, atol=1e-13 * np.abs(H).max())
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):  # w read by a loop too (its penalty)
        P = symgrad.compile(lambda w: np.sum((X @ w - y) ** 2) + 0.1 * np.sum(w * w), shapes=[(130,)])
        g = P.grad(w)
    assert no_fallback(caplog) and P.grad.loops
    np.testing.assert_allclose(g, 2 * X.T @ r + 0.2 * w, rtol=1e-12, atol=1e-12 * np.abs(g).max())


def test_a_numpy_ordered_sum_inside_a_loop_adds_as_numpy(caplog):
    X, _, w = ridge_data(130, 130, seed=1)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F = symgrad.compile(lambda w: np.sum(np.sum(X * w, axis=1) * np.sum(X[:, ::-1] * w, axis=1)),
                            shapes=[(130,)])
        v, g = F.value_and_grad(w)
    assert no_fallback(caplog) and F.loops
    a, b = X @ w, X[:, ::-1] @ w
    assert v == np.sum(np.sum(X * w, axis=1) * np.sum(X[:, ::-1] * w, axis=1))
    np.testing.assert_allclose(g, X.T @ b + X[:, ::-1].T @ a, rtol=1e-12, atol=1e-12 * np.abs(g).max())


def test_an_inner_sum_over_the_bound_still_falls_back(monkeypatch, caplog):
    monkeypatch.setattr(lazy_sum, "INNER_TERMS", 150)
    X, y, w = ridge_data(200, 130)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F = symgrad.compile(lambda w: np.sum((X @ w - y) ** 2), shapes=[(200,)])
        v = F(w)
    assert any("inside another loop" in r.getMessage() for r in caplog.records) and not F.loops
    assert v == pytest.approx(np.sum((X @ w - y) ** 2), rel=1e-13)
