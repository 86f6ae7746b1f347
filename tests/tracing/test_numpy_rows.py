"""The repros of numpy code third-party functions use (issue rows A-P): each value against
numpy on floats, each gradient against a closed form or long-double central differences."""
import math

import numpy as np
import pytest
import sympy as sp

import symgrad
from helpers import reference_grad

X2 = np.array([0.3, 0.7])
X3 = np.array([0.3, 2.0, -1.6])


def agree(fn, x, grad=None, rtol=1e-14):
    F = symgrad.compile(fn, shapes=[np.shape(x)])
    np.testing.assert_allclose(F(x), fn(x.copy()), rtol=rtol, atol=1e-15)
    want = reference_grad(fn, [x], 0) if grad is None else grad
    np.testing.assert_allclose(F.grad(x), want, rtol=1e-8 if grad is None else 1e-14, atol=1e-12)
    return F


@pytest.mark.parametrize("fn, grad", [
    (lambda x: np.max(np.abs(x)), [0.0, 1.0, 0.0]),
    (lambda x: np.sum(np.where(np.abs(x) > 1.5, x, 0.0)), [0.0, 1.0, 1.0]),
    (lambda x: np.where(x > 0, x, 0.1 * x).max(), [0.0, 1.0, 0.0]),
], ids=["max-abs", "where-abs", "where-max-method"])
def test_A_results_of_ufuncs_stay_traced(fn, grad):
    agree(fn, X3, grad)


def test_B_C_traced_values_and_lists():
    F = agree(lambda x: np.sum((x[0] - [1.0, 2.0]) ** 2), X2, [2 * (0.3 - 1) + 2 * (0.3 - 2), 0.0])
    np.testing.assert_allclose(F(X2), 3.38, rtol=1e-15)
    F = agree(lambda x: np.sum((x - [1.0, 2.0]) ** 2), X2, [-1.4, -2.6])
    np.testing.assert_allclose(F(X2), 2.18, rtol=1e-15)
    agree(lambda x: np.sum([1.0, 2.0] * x + (1.0, 3.0) / (x + 1)), X2)


def test_D_reductions_of_a_scalar_are_the_scalar():
    agree(lambda x: np.sum(np.sum(x * x)), X2, 2 * X2)
    agree(lambda x: np.max(x[0]) + np.min(x[1]) + np.prod(x[0]) + np.mean(x[1]), X2, [2.0, 2.0])


def test_E_sign_of_a_float_power_differentiates_to_zero():
    F = agree(lambda x: x[1] * np.sign(x[0] ** 2.0 - 1.0), X2, [0.0, -1.0])
    assert not F.grad.expr.atoms(sp.Derivative)
    np.testing.assert_array_equal(F.grad(np.array([2.0, 0.7])), [0.0, 1.0])


@pytest.mark.parametrize("fn", [
    lambda x: np.round(x[0] * 10) + np.rint(x[1] * 10) + np.trunc(x[0] * 7) + np.fix(-x[1] * 7) + x[0],
    lambda x: np.around(x[0] * 13.3) * x[1] + round(x[1] * 9.1) + round(x[0], 1),
], ids=["np", "builtin-round"])
def test_F_rounding_steps_have_derivative_zero(fn):
    agree(fn, X2)


def test_F_modulo_and_fmod_have_derivative_one_in_the_first_argument():
    F = agree(lambda x: np.fmod(x[0] * 5, 0.7) + x[1] % 0.3 + np.remainder(x[0], 0.2), X2, [6.0, 1.0])
    negative = np.array([-0.3, -0.7])  # fmod keeps the dividend's sign, % the divisor's
    np.testing.assert_allclose(F(negative), np.fmod(-1.5, 0.7) + (-0.7) % 0.3 + np.remainder(-0.3, 0.2),
                               rtol=1e-15)
    agree(lambda x: x[0] // 0.25 * x[1] + divmod(x[1], 0.3)[1], X2)


def _store_into_zeros(x):
    b = np.zeros(4)
    b[1:3] = x
    return np.sum(b ** 2)


def _store_into_ones_2d(x):
    b = np.ones((2, 2))
    b[0, 1] = x[0]
    b[:, 0] = x * 2
    return np.linalg.det(b)


def test_G_arrays_made_in_traced_code_hold_traced_values():
    agree(_store_into_zeros, X2, 2 * X2)
    agree(_store_into_ones_2d, X2)


def test_H_a_comparison_used_as_a_number_is_a_step():
    fn = lambda x: float(x[0] >= 0) * x[1] + int(x[1] > 0.5) * x[0] + (x[0] > 0) * 2.0 * x[1]  # noqa: E731
    F = agree(fn, X2, [1.0, 3.0])
    np.testing.assert_allclose(F(np.array([-0.3, 0.2])), 0.0)
    np.testing.assert_allclose(F.grad(np.array([-0.3, 0.2])), [0.0, 0.0])


def test_I_clip_however_reached():
    from numpy import clip
    agree(lambda x: np.sum(x.clip(0.3, 0.7)), np.array([0.45, 2.0, -1.6]), [1.0, 0.0, 0.0])
    agree(lambda x: np.sum(clip(x, -2.0, 0.5) * [1.0, 2.0, 3.0]), X3, [1.0, 0.0, 3.0])


def _m(x):
    return np.array([[x[0], x[1]], [x[1] * 0.5, 2.0 + x[0]]])


def test_J_small_linear_algebra_against_closed_forms():
    x = X2
    A = _m(x)
    dA = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [0.5, 0.0]])]  # dA/dx0, dA/dx1
    inv = np.linalg.inv(A)
    det = np.linalg.det(A)
    # Jacobi's formula d det = det tr(A^-1 dA); d A^-1 = -A^-1 dA A^-1
    agree(lambda x: np.linalg.det(_m(x)), x, [det * np.trace(inv @ d) for d in dA], rtol=1e-13)
    agree(lambda x: np.linalg.slogdet(_m(x))[1], x, [np.trace(inv @ d) for d in dA], rtol=1e-13)
    agree(lambda x: np.sum(np.linalg.inv(_m(x))), x, [-np.sum(inv @ d @ inv) for d in dA], rtol=1e-13)
    b = np.array([1.0, 2.0])
    agree(lambda x: np.sum(np.linalg.solve(_m(x), b)), x, [-np.sum(inv @ d @ inv @ b) for d in dA], rtol=1e-13)
    agree(lambda x: np.linalg.norm(_m(x)), x, [np.sum(A * d) / np.linalg.norm(A) for d in dA])
    S = lambda x: _m(x) + _m(x).T  # noqa: E731
    w, V = np.linalg.eigh(S(x))
    dS = [d + d.T for d in dA]  # d lambda_i = v_i^T dS v_i (distinct eigenvalues)
    agree(lambda x: np.linalg.eigvalsh(S(x)) @ [1.0, 3.0], x,
          [sum(c * V[:, i] @ d @ V[:, i] for i, c in enumerate([1.0, 3.0])) for d in dS], rtol=1e-13)
    agree(lambda x: np.sum(np.linalg.cholesky(_m(x) @ _m(x).T)), x)


@pytest.mark.parametrize("m", [[1e6, 1.0, 1.0, 1e-3], [-1e6, 1.0, 1.0, 1e-3], [1e8, 1.0, 1.0, -1e-8],
                               [-3.0, 2.0, 2.0, 1e-8], [2.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
def test_J_two_by_two_eigenvalues_far_apart_keep_their_digits(m):
    # the smaller eigenvalue comes from the determinant, not from a cancelling difference
    F = symgrad.compile(lambda a: np.linalg.eigvalsh(a.reshape(2, 2)), shapes=[(4,)])
    want = np.linalg.eigvalsh(np.reshape(m, (2, 2)))
    np.testing.assert_allclose(F(np.array(m)), want, rtol=4e-16 * 8, atol=1e-300)


def test_J_three_by_three_eigenvalues_are_refused():
    # the closed forms of the 3x3 cubic lose the small eigenvalues next to large ones
    with pytest.raises(symgrad.TraceError, match=r"eigvalsh of a traced 3x3 matrix.*up to 2x2"):
        symgrad.compile(lambda x: np.linalg.eigvalsh(np.diag(x)), shapes=[(3,)])(X3)


def test_K_boolean_mask_of_a_traced_comparison_is_refused():
    with pytest.raises(symgrad.TraceError, match=r"shape would depend on the data.*np\.where"):
        symgrad.compile(lambda x: np.sum(x[x > 0.4]), shapes=[(3,)])(X3)


def test_L_interp_in_fp_and_in_x():
    agree(lambda x: np.interp(0.37, [0.0, 0.5, 1.0], x), X3, [0.26, 0.74, 0.0])
    xp, fp = [0.0, 0.5, 1.0], [1.0, 3.0, 2.0]
    agree(lambda x: np.sum(np.interp(x, xp, fp)), X2, [4.0, -2.0])
    F = symgrad.compile(lambda x: np.interp(x, xp, fp, left=-1.0, right=5.0))
    pts = np.array([-0.5, 0.0, 0.25, 0.5, 0.99, 1.0, 1.5, np.nan])
    np.testing.assert_array_equal(F(pts), np.interp(pts, xp, fp, left=-1.0, right=5.0))


def test_M_logaddexp_heaviside_sinc_linspace():
    agree(lambda x: np.logaddexp(x[0], x[1]) + np.logaddexp2(x[0], x[1]), X2)
    agree(lambda x: np.heaviside(x[0] - 0.5, 0.5) * x[1] + np.sinc(x[0]), X2)
    F = agree(lambda x: np.sum(np.linspace(x[0], x[1], 5) ** 2), X2)
    np.testing.assert_allclose(symgrad.compile(lambda x: np.linspace(x[0], x[1], 4), shapes=[(2,)])(X2),
                               np.linspace(0.3, 0.7, 4), rtol=2e-16)  # the algebra is exact, not numpy's order
    assert F is not None


@pytest.mark.parametrize("fn", [lambda x: np.max(np.abs(x)), lambda x: max(abs(v) for v in x)],
                         ids=["np.max", "builtin-max"])
def test_P_gradient_of_a_max_over_n_entries_grows_linearly(fn):
    sizes = []
    for n in (16, 32, 64):
        G = symgrad.compile(fn, shapes=[(n,)]).grad
        x = np.linspace(-1.0, 0.9, n)
        np.testing.assert_array_equal(G(x), np.eye(n)[0] * -1.0)  # |x| is largest at x[0] = -1
        sizes.append(G.optimized().count_ops())
    assert sizes[1] < 2.5 * sizes[0] and sizes[2] < 2.5 * sizes[1], sizes


def test_P_derivatives_of_long_max_and_min_chains_go_to_the_entry_picked():
    """Chains of selects differentiate through the index of the entry they picked: ties go to
    the first maximum, as numpy's argmax, a NaN to the NaN; second and third derivatives too."""
    n = 40
    x = np.cos(np.arange(n) * 1.3) * 3.0
    x[7] = x[29] = 5.0  # a tie: the first one is picked
    G = symgrad.compile(lambda v: np.max(v * v * v), shapes=[(n,)])
    np.testing.assert_array_equal(G.grad(x), np.eye(n)[7] * 75.0)
    np.testing.assert_array_equal(G.hessian(x), np.diag(np.eye(n)[7] * 30.0))
    m = symgrad.compile(lambda v: np.min(np.sin(v)), shapes=[(n,)]).grad(x)
    k = int(np.argmin(np.sin(x)))
    np.testing.assert_allclose(m, np.eye(n)[k] * np.cos(x[k]), rtol=1e-15, atol=0)
    y = x.copy()
    y[12] = np.nan
    g = symgrad.compile(lambda v: np.max(np.abs(v)), shapes=[(n,)]).grad(y)
    assert np.isnan(g[12]) and not np.any(np.delete(g, 12))

    def scalar(t):  # a chain of builtin max over expressions of one scalar
        return max(t, t * t, math.sin(t), math.exp(t - 2.0), 0.5 * t ** 3)
    F = symgrad.compile(scalar)  # the reverse path, three times
    for t, d3 in ((1.5, 0.0), (2.5, 3.0), (10.0, math.exp(8.0))):
        assert float(F.derivative(3)(t)) == pytest.approx(d3, rel=1e-14)


# -- found by a hostile review ------------------------------------------------------------------
W = np.array([1.0, 5.0, 3.0])


def test_arrays_of_integers_made_in_traced_code_index_as_numpy():
    agree(lambda x: np.sum(W[np.array([0, 2])] * x[:2]) + np.sum(W[np.array([True, False, True])] * x[1:]), X3,
          [1.0, 3.0 + 1.0, 3.0])

    def store(x):
        b = np.zeros(3)
        b[np.array([0, 2])] = x[:2]
        return np.sum(b * W) + np.sum(np.linalg.svd(np.array([[2.0, 0.0], [0.0, 1.0]]))[1]) * x[2]
    agree(store, X3, [1.0, 3.0, 3.0])


def test_logaddexp_at_a_tie_has_the_derivatives_of_a_smooth_function():
    F = symgrad.compile(lambda x: np.logaddexp(0.0, x) + np.logaddexp2(x, 0.0))
    assert F.grad(0.0) == 1.0  # 1/2 + 1/2
    np.testing.assert_allclose(F.hessian(0.0), 0.25 + math.log(2.0) / 4, rtol=1e-15)
    assert F(np.inf) == np.inf and F(-np.inf) == np.logaddexp(0, -np.inf) + np.logaddexp2(-np.inf, 0)
    G = symgrad.compile(lambda x: np.logaddexp(x, x))
    assert G(np.inf) == np.inf and G(-np.inf) == -np.inf and G(1.0) == np.logaddexp(1.0, 1.0)


@pytest.mark.parametrize("x", [0.0, 1e-8, 1e-6, 1e-3, 0.04, 0.05, 0.3])
def test_sinc_near_zero_keeps_its_derivative(x):
    F = symgrad.compile(lambda x: np.sinc(x))
    y = math.pi * x
    exact = 0.0 if x == 0 else math.pi * (y * math.cos(y) - math.sin(y)) / (y * y)
    if 0 < y < 0.3:  # the quotient cancels: a series, to y**9
        exact = math.pi * (-y / 3 + y ** 3 / 30 - y ** 5 / 840 + y ** 7 / 45360 - y ** 9 / 3991680)
    np.testing.assert_allclose(F.grad(x), exact, rtol=4e-15, atol=1e-300)
    np.testing.assert_allclose(F(x), np.sinc(x), rtol=4e-16)
