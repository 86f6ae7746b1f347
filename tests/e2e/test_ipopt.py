"""symgrad.ipopt: HS071 (Hock & Schittkowski 71, IPOPT's own example) as callbacks, checked
against its derivatives by hand, solved through them by scipy's trust-constr and, where
cyipopt is installed, by IPOPT to its known optimum."""
import math
import sys
import types

import numpy as np
import pytest

import symgrad.ipopt
from helpers import require_cyipopt

F_STAR = 17.014017145179164  # HS071's optimum (IPOPT's output)
X_STAR = np.array([1.0, 4.74299963, 3.82114998, 1.37940829])


def f(x):
    return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]


def g(x):
    return np.array([x[0] * x[1] * x[2] * x[3], x[0] ** 2 + x[1] ** 2 + x[2] ** 2 + x[3] ** 2])


CB = symgrad.ipopt.Callbacks(f, g, 4)
X0 = np.array([1.0, 5.0, 5.0, 1.0])


def test_callbacks_of_two_lambdas():
    """An objective and constraints that are both lambdas: kernels of the same C names, which
    are built into different libraries (in one, their C clashed: a compile error)."""
    cb = symgrad.ipopt.Callbacks(lambda x: x[0] ** 2 + 3.0 * x[1], lambda x: np.array([x[0] * x[1], x[1] ** 3]), 2)
    x = np.array([1.5, -0.5])
    assert cb.objective(x) == 1.5 ** 2 - 1.5
    assert np.array_equal(cb.gradient(x), [3.0, 3.0])
    assert np.array_equal(cb.constraints(x), [-0.75, -0.125])
    assert np.array_equal(_matrix(cb.jacobianstructure(), cb.jacobian(x), 2, 2), [[-0.5, 1.5], [0.0, 0.75]])


def test_callbacks_of_functions_of_the_math_module():
    """The Lagrangian (symgrad's code) calls the user's functions as the tracer calls user code:
    math.exp and a generator of math.sin calls are traced (they asked a traced value for its
    float() before)."""
    def obj(x):
        return math.exp(x[0]) + sum(math.sin(v) for v in x)

    def con(x):
        return np.array([math.cos(x[0]) * x[1]])
    cb = symgrad.ipopt.Callbacks(obj, con, 3)
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(cb.objective(x), math.exp(0.3) + sum(map(math.sin, x)), rtol=1e-15)
    np.testing.assert_allclose(cb.gradient(x), [math.exp(0.3) + math.cos(0.3), math.cos(-1.2), math.cos(2.0)], rtol=1e-15)
    H = _matrix(cb.hessianstructure(), cb.hessian(x, [0.7], 2.0), 3, lower=True)
    a, b = x[0], x[1]
    expect = np.diag([2.0 * (math.exp(a) - math.sin(a)) - 0.7 * math.cos(a) * b, -2.0 * math.sin(b), -2.0 * math.sin(2.0)])
    expect[0, 1] = expect[1, 0] = -0.7 * math.sin(a)
    np.testing.assert_allclose(H, expect, rtol=1e-14, atol=1e-15)


def _matrix(structure, values, n, m=None, lower=False):
    out = np.zeros((m or n, n))
    out[structure] = values
    return out + np.tril(out, -1).T if lower else out


def test_callbacks_are_hs071s_derivatives():
    x = np.array([1.3, 4.1, 3.2, 1.7])
    a, b, c, d = x
    assert CB.n == 4 and CB.m == 2
    assert CB.objective(x) == f(x)
    assert np.allclose(CB.gradient(x), [d * (2 * a + b + c), a * d, a * d + 1, a * (a + b + c)], rtol=1e-15)
    assert np.array_equal(CB.constraints(x), g(x))
    J = _matrix(CB.jacobianstructure(), CB.jacobian(x), 4, 2)
    assert np.allclose(J, [[b * c * d, a * c * d, a * b * d, a * b * c], 2 * x], rtol=1e-15)
    sigma, lam = 0.7, np.array([1.5, -2.0])
    H = _matrix(CB.hessianstructure(), CB.hessian(x, lam, sigma), 4, lower=True)
    hf = np.array([[2 * d, d, d, 2 * a + b + c], [d, 0, 0, a], [d, 0, 0, a], [2 * a + b + c, a, a, 0]])
    hg1 = np.array([[0, c * d, b * d, b * c], [c * d, 0, a * d, a * c], [b * d, a * d, 0, a * b],
                    [b * c, a * c, a * b, 0]])
    assert np.allclose(H, sigma * hf + lam[0] * hg1 + lam[1] * 2 * np.eye(4), rtol=1e-14, atol=1e-14)
    rows, cols = CB.hessianstructure()
    assert np.all(rows >= cols)


def test_scipy_trust_constr_through_the_callbacks_reaches_the_optimum():
    from scipy.optimize import Bounds, NonlinearConstraint, minimize
    J = lambda x: _matrix(CB.jacobianstructure(), CB.jacobian(x), 4, 2)  # noqa: E731
    H = lambda x, v: _matrix(CB.hessianstructure(), CB.hessian(x, v, 0.0), 4, lower=True)  # noqa: E731
    Hf = lambda x: _matrix(CB.hessianstructure(), CB.hessian(x, np.zeros(2), 1.0), 4, lower=True)  # noqa: E731
    r = minimize(CB.objective, X0, jac=CB.gradient, hess=Hf, method="trust-constr", bounds=Bounds(1, 5),
                 constraints=[NonlinearConstraint(CB.constraints, [25, 40], [np.inf, 40], jac=J, hess=H)],
                 options={"gtol": 1e-10, "xtol": 1e-12, "maxiter": 2000})
    assert r.fun == pytest.approx(F_STAR, rel=1e-5)
    assert np.allclose(r.x, X_STAR, atol=1e-4)


def test_problem_passes_the_callbacks_and_bounds_to_cyipopt(monkeypatch):
    made = {}
    monkeypatch.setitem(sys.modules, "cyipopt", types.SimpleNamespace(Problem=lambda **kw: made.update(kw) or kw))
    symgrad.ipopt.problem(f, g, lb=[1, 1, 1, 1], ub=5, cl=[25, 40], cu=[2e19, 40])
    assert made["n"] == 4 and made["m"] == 2 and isinstance(made["problem_obj"], symgrad.ipopt.Callbacks)
    assert np.array_equal(made["lb"], np.ones(4)) and np.array_equal(made["ub"], np.full(4, 5.0))
    assert np.array_equal(made["cl"], [25, 40]) and np.array_equal(made["cu"], [2e19, 40])
    with pytest.raises(ValueError, match="give n"):
        symgrad.ipopt.problem(f, g)


def test_without_cyipopt_problem_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    with pytest.raises(ImportError, match=r"pip install 'symgrad\[ipopt\]'"):
        symgrad.ipopt.problem(f, g, n=4)


def test_bad_objectives_and_constraints_are_named():
    with pytest.raises(ValueError, match="the objective must return one number"):
        symgrad.ipopt.Callbacks(g, None, 4)
    with pytest.raises(ValueError, match="n .the number of variables. must be a positive int"):
        symgrad.ipopt.Callbacks(f, g, 0)


def test_an_unconstrained_problem_has_empty_constraint_callbacks():
    cb = symgrad.ipopt.Callbacks(lambda x: (x[0] - 1) ** 2 + x[1] ** 4, None, 2)
    assert cb.m == 0 and cb.constraints(np.ones(2)).shape == (0,) and cb.jacobian(np.ones(2)).shape == (0,)
    assert [a.tolist() for a in cb.jacobianstructure()] == [[], []]
    assert np.array_equal(_matrix(cb.hessianstructure(), cb.hessian(np.ones(2), [], 2.0), 2, lower=True),
                          [[4, 0], [0, 24]])


def test_ipopt_solves_hs071():
    require_cyipopt()
    nlp = symgrad.ipopt.problem(f, g, lb=[1, 1, 1, 1], ub=[5, 5, 5, 5], cl=[25, 40], cu=[2e19, 40])
    nlp.add_option("tol", 1e-10)
    nlp.add_option("print_level", 0)
    x, info = nlp.solve(X0)
    assert info["obj_val"] == pytest.approx(F_STAR, rel=1e-8)
    assert np.allclose(x, X_STAR, atol=1e-7)


def test_callbacks_refuse_what_ipopt_never_passes():
    with pytest.raises(ValueError, match=r"x must have shape \(4,\)"):
        CB.gradient(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"lagrange must have shape \(2,\)"):
        CB.hessian(X0, np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="pass constraints=None"):
        symgrad.ipopt.Callbacks(f, lambda x: np.zeros(0), 4)


def test_n_comes_from_a_bound_of_one_number_per_variable(monkeypatch):
    made = {}
    monkeypatch.setitem(sys.modules, "cyipopt", types.SimpleNamespace(Problem=lambda **kw: made.update(kw) or kw))
    symgrad.ipopt.problem(f, g, lb=1.0, ub=[5] * 4)
    assert made["n"] == 4 and np.array_equal(made["lb"], np.ones(4))
    with pytest.raises(ValueError, match="cl and cu bound the constraints, and there are none"):
        symgrad.ipopt.problem(lambda x: x[0] ** 2, None, n=2, cl=[1.0])
