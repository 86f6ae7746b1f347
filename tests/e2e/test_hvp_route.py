"""The hvp route that a long dense Hessian's progress line suggests (estimate.hvp_route) is code
that runs as written and gives F.hessian's matrix."""
import re

import numpy as np
import pytest

import symgrad
from symgrad.pipeline import estimate


def suggested(F, **names):
    note = estimate.hvp_route(F.hessian.spec, 1000.0)
    code = re.search(r"H = (.*) \(F: the compiled ", note).group(1)
    return code, eval(code, {"np": np, "F": F, **names})


def test_the_suggested_call_is_the_hessian_of_a_vector_argument():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, 6)), (rng.uniform(size=40) < 0.5).astype(float)

    def loss(w):
        z = X @ w
        return np.sum(np.log1p(np.exp(-z)) + (1 - y) * z) + 0.5 * np.sum(w ** 4)
    F = symgrad.compile(loss, [(6,)])
    w = rng.normal(size=6)
    code, H = suggested(F, w=w)
    assert code == "F.hvp(np.broadcast_to(w, (6, 6)), np.eye(6))"
    np.testing.assert_allclose(H, F.hessian(w), rtol=1e-12, atol=1e-12)


def test_the_suggested_call_is_the_hessian_of_a_matrix_argument():
    def energy(W):
        return np.sum(np.sin(W) * W[::-1, :] ** 2) + np.prod(W[0])
    F = symgrad.compile(energy, [(2, 3)])
    W = np.random.default_rng(4).normal(size=(2, 3))
    code, H = suggested(F, W=W)
    assert code.startswith("F.hvp(np.broadcast_to(W, (6, 2, 3)), np.eye(6).reshape(6, 2, 3))")
    assert H.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(H, F.hessian(W), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p", [50])
def test_the_issue_case_builds_by_hvp(p):
    """Logistic regression over closed-over data at p = 50 (issue 47: F.hessian did not finish in
    300 s): the suggested call is what a user runs instead (the Hessian itself not compiled here)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1000, p)), (rng.uniform(size=1000) < 0.5).astype(float)

    def loss(w):
        z = X @ w
        return np.sum(np.log1p(np.exp(-z)) + (1 - y) * z)
    F = symgrad.compile(loss, [(p,)])
    w = np.full(p, 0.01)
    code, H = suggested(F, w=w)
    s = 1 / (1 + np.exp(-(X @ w)))  # the closed form: X^T diag(s (1 - s)) X
    np.testing.assert_allclose(H, X.T @ ((s * (1 - s))[:, None] * X), rtol=1e-10)
