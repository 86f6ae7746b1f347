"""Large programs: reverse accumulation, segmented kernels, from_sympy, progress reports."""
import logging

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad
from symgrad.pipeline import source

import helpers  # noqa: F401  (puts examples/ on the path)
import bench_cases  # noqa: E402
import pendulum  # noqa: E402


def lj_inputs(atoms, n, seed):
    grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)[:atoms] * 1.1
    return grid.ravel() + np.random.default_rng(seed).uniform(-0.05, 0.05, (n, 3 * atoms))


def lj_forces(p, atoms):
    """The analytic gradient: dE/dp_i = sum_j 4 (3 r^-8 - 6 r^-14) * 2 (p_i - p_j), r^2 = |p_i - p_j|^2."""
    x = p.reshape(p.shape[0], atoms, 3)
    d = x[:, :, None, :] - x[:, None, :, :]
    r2 = np.sum(d * d, -1)
    np.einsum("bii->bi", r2)[:] = 1.0  # no self-interaction
    coef = 4.0 * (-6.0 * r2 ** -7 + 3.0 * r2 ** -4) * 2.0
    np.einsum("bii->bi", coef)[:] = 0.0
    return np.einsum("bij,bijk->bik", coef, d).reshape(p.shape)


def test_large_gradient_matches_analytic_forces():
    atoms = 12  # 66 pairs: the reverse-accumulation path, several C segments
    F = symgrad.compile(lambda p: bench_cases.lj(p, atoms), [(3 * atoms,)])
    G = F.grad
    p = lj_inputs(atoms, 50, 0)
    np.testing.assert_allclose(G(p), lj_forces(p, atoms), rtol=1e-11, atol=1e-9)


def test_small_lj_both_strategies_agree_with_analytic():
    G = symgrad.compile(lambda p: bench_cases.lj(p, 4), [(12,)]).grad
    p = lj_inputs(4, 20, 1)
    np.testing.assert_allclose(G(p), lj_forces(p, 4), rtol=1e-12, atol=1e-10)


def test_segmented_kernel_is_bitwise_the_single_function_kernel(monkeypatch):
    p = lj_inputs(5, 33, 2)
    whole = symgrad.compile(lambda p: bench_cases.lj(p, 5), [(15,)]).grad(p)
    opts = symgrad.Options(max_segment=7, segments_per_unit=2)
    F = symgrad.compile(lambda p: bench_cases.lj(p, 5), [(15,)], options=opts).grad
    assert len(F.kernel.parts) > 3  # several translation units, compiled in parallel
    np.testing.assert_array_equal(F(p), whole)


def test_hessian_symmetric_and_matches_sympy_on_small_cluster():
    atoms = 3
    H = symgrad.compile(lambda p: bench_cases.lj(p, atoms), [(9,)]).hessian
    p = lj_inputs(atoms, 3, 3)
    got = H(p)
    np.testing.assert_allclose(got, np.swapaxes(got, 1, 2), rtol=1e-13, atol=1e-9)
    xs = sp.symbols("x0:9", real=True)
    e = bench_cases.lj(list(xs), atoms)
    f = sp.lambdify(xs, sp.hessian(e, xs), "mpmath")
    with mpmath.workdps(40):
        ref = np.array([np.array(f(*map(mpmath.mpf, row)).tolist(), dtype=float) for row in p])
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-8)


def test_from_sympy_pendulum_matches_lambdify():
    n = 3
    km, states, params = pendulum.build(n)
    F = symgrad.from_sympy(km.forcing_full, [states, params])
    assert F.args == (("arg0", (2 * n,)), ("arg1", (2 * n + 1,)))
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (7, 2 * n))
    p = np.concatenate([rng.uniform(0.5, 1.5, 2 * n), [9.81]])
    value = sp.lambdify(states + params, km.forcing_full, "numpy")
    jac = sp.lambdify(states + params, km.forcing_full.jacobian(states), "numpy")
    ref_v = np.array([np.array(value(*row, *p), dtype=float).ravel() for row in x])
    ref_j = np.array([np.array(jac(*row, *p), dtype=float) for row in x])
    np.testing.assert_allclose(F(x, p), ref_v, rtol=1e-12, atol=1e-12)
    J = symgrad.jacobian(F, argnums=0)
    got = J(x, p)
    assert got.shape == (7, 2 * n, 2 * n)
    np.testing.assert_allclose(got, ref_j, rtol=1e-12, atol=1e-12)


def test_from_sympy_shapes_and_errors():
    x, y, a = sp.symbols("x y a")
    F = symgrad.from_sympy(x**2 * sp.sin(y), [x, y])
    assert F.args == (("x", ()), ("y", ()))
    gx, gy = F.grad(2.0, 0.5)
    assert gx == pytest.approx(4 * np.sin(0.5), rel=1e-15) and gy == pytest.approx(4 * np.cos(0.5), rel=1e-15)
    V = symgrad.from_sympy(sp.Matrix([x * y, x + y, y**3]), [sp.Matrix([x, y])])
    assert V(np.array([2.0, 3.0])).shape == (3,)
    np.testing.assert_array_equal(V.jacobian(np.array([2.0, 3.0])), [[3, 2], [1, 1], [0, 27]])
    H = symgrad.from_sympy(x**3 * y, [[x, y]]).hessian
    np.testing.assert_array_equal(H(np.array([1.0, 2.0])), [[12, 3], [3, 0]])
    with pytest.raises(ValueError, match=r"depend on a, which are not in args"):
        symgrad.from_sympy(a * x, [x])
    with pytest.raises(TypeError, match=r"not a symbol"):
        symgrad.from_sympy(x, [x + 1])
    with pytest.raises(ValueError, match=r"appears twice"):
        symgrad.from_sympy(x, [x, [x, y]])


def test_progress_lines_for_slow_stages_and_silencing(monkeypatch, caplog):
    logger = logging.getLogger("symgrad.progress")
    monkeypatch.setattr(logger, "propagate", True)
    monkeypatch.setattr(source, "PROGRESS_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="symgrad.progress"):
        symgrad.compile(lambda p: bench_cases.lj(p, 3), [(9,)]).grad(lj_inputs(3, 2, 5))
    stages = " ".join(r.getMessage() for r in caplog.records)
    for what in ("trace", "differentiate", "optimize", "generate C", "C compile"):
        assert what in stages
    caplog.clear()
    monkeypatch.setattr(source, "PROGRESS_SECONDS", None)
    with caplog.at_level(logging.INFO, logger="symgrad.progress"):
        symgrad.compile(lambda p: bench_cases.lj(p, 2), [(6,)]).grad(lj_inputs(2, 2, 5))
    assert not caplog.records
