"""Sparse Jacobians and Hessians, compiled: F.jacobian(x, sparse=True) and F.hessian(x,
sparse=True / "lower") against the dense kernels bit for bit, and against finite differences
loosely; batches as triplets; the patterns; what sparse= refuses."""
import math
import sys

import numpy as np
import pytest
import scipy.sparse

import symgrad

N = 40  # collocation nodes
H = 10.0 / (N - 1)


def constraints(free):
    """Backward-Euler collocation of a torque-driven pendulum, written over the whole vector."""
    th, om, T = free[:N], free[N:2 * N], free[2 * N:]
    c1 = (th[1:] - th[:-1]) / H - om[1:]
    c2 = (om[1:] - om[:-1]) / H + 9.81 * np.sin(th[1:]) - T[1:]
    return np.concatenate([c1, c2, np.array([th[0], th[-1] - np.pi, om[0], om[-1]])])


def lagrangian(free, sigma, lam):
    return sigma * H * np.sum(free[2 * N:] ** 2) + lam @ constraints(free)


C = symgrad.compile(constraints, [(3 * N,)])
L = symgrad.compile(lagrangian, [(3 * N,), (), (2 * N + 2,)])
RNG = np.random.default_rng(7)
X = RNG.normal(size=(3, 3 * N))
LAM = RNG.normal(size=(3, 2 * N + 2))


def test_sparse_jacobian_is_the_dense_one_bit_for_bit():
    dense = C.jacobian(X)
    for k in range(len(X)):
        J = C.jacobian(X[k], sparse=True)
        assert isinstance(J, scipy.sparse.csr_array) and J.shape == (2 * N + 2, 3 * N)
        assert J.has_sorted_indices and J.nnz == 7 * (N - 1) + 4
        assert np.array_equal(J.toarray(), dense[k])
        assert np.count_nonzero(dense[k]) == J.nnz  # every structural non-zero is non-zero here
    rows, cols, values = C.jacobian(X, sparse=True)
    assert values.shape == (3, 7 * (N - 1) + 4)
    assert np.array_equal(values, dense[:, rows, cols])


def test_sparse_jacobian_against_finite_differences():
    x, eps = X[0], 1e-6
    J = C.jacobian(x, sparse=True).toarray()
    fd = np.stack([(C(x + eps * e) - C(x - eps * e)) / (2 * eps) for e in np.eye(3 * N)], axis=1)
    assert np.allclose(J, fd, rtol=1e-6, atol=1e-6)


def test_sparse_lagrangian_hessian_lower_and_full():
    Hd = L.hessian_wrt(0)
    dense = Hd(X, 1.5, LAM)
    lower = Hd(X[0], 1.5, LAM[0], sparse="lower")
    assert isinstance(lower, scipy.sparse.csr_array)
    assert lower.nnz == 2 * N - 1  # T's diagonal (but T[0]'s: sigma h T0^2) and sin(theta)'s
    assert np.array_equal(lower.toarray(), np.tril(dense[0]))
    full = Hd(X[0], 1.5, LAM[0], sparse=True)
    assert np.array_equal(full.toarray(), dense[0])
    rows, cols, values = Hd(X, 1.5, LAM, sparse="lower")
    assert np.all(rows >= cols) and np.array_equal(values, dense[:, rows, cols])
    theta = X[1, 1:N]
    assert np.allclose(np.diag(dense[1])[1:N], -9.81 * np.sin(theta) * LAM[1, N - 1:2 * N - 2], rtol=1e-14, atol=0)
    assert np.allclose(np.diag(dense[1])[2 * N + 1:], 2 * 1.5 * H, rtol=1e-15, atol=0)


def test_patterns_match_what_the_kernels_compute():
    jp = C.jacobian_sparsity()
    assert jp.dtype == bool and jp.shape == (2 * N + 2, 3 * N)
    assert np.array_equal(jp.toarray(), C.jacobian(X[0]) != 0)
    hp = L.hessian_sparsity(0)
    assert np.array_equal(hp.toarray(), L.hessian_wrt(0)(X[0], 1.0, LAM[0]) != 0)
    assert np.array_equal(L.hessian_sparsity(0, lower=True).toarray(), np.tril(hp.toarray()))


def test_several_arguments_and_results_stack_like_jacobian_wrt_stack():
    def f(a, b):
        return np.array([a[0] * b, math.exp(a[1]) - b ** 2, a[0] + a[1]])
    F = symgrad.compile(f, [(2,), ()])
    a, b = np.array([0.3, -0.8]), 1.7
    J = F.jacobian(a, b, sparse=True)
    assert np.array_equal(J.toarray(), F.jacobian_wrt((0, 1), stack=True)(a, b))
    assert np.array_equal(F.jacobian_sparsity(1).toarray()[:, 0], [True, True, False])
    g = symgrad.compile(lambda a, b: a[0] ** 2 * b + math.sin(a[1]), [(2,), ()])
    Hs = g.hessian(a, b, sparse=True).toarray()
    dense = g.hessian(a, b)
    assert np.array_equal(Hs[:2, :2], dense[0][0]) and np.array_equal(Hs[:2, 2], dense[0][1])
    assert Hs[2, 2] == 0 and Hs[0, 2] == 2 * a[0]


def test_out_is_the_values_array():
    out = np.empty(7 * (N - 1) + 4)
    J = C.jacobian(X[0], sparse=True, out=out)
    assert np.shares_memory(J.data, out) and np.array_equal(J.toarray(), C.jacobian(X[0]))
    Hd = L.hessian_wrt(0)
    lower = np.empty(2 * N - 1)
    assert np.shares_memory(Hd(X[0], 1.0, LAM[0], sparse="lower", out=lower).data, lower)
    with pytest.raises(ValueError, match="pass sparse='lower' to fill out= with its values"):
        Hd(X[0], 1.0, LAM[0], sparse=True, out=lower)


def test_empty_patterns_give_empty_results_without_a_kernel():
    F = symgrad.compile(lambda x, y: 3 * x[0] - x[1] / 2 + y, [(2,), ()])
    H = F.hessian(np.ones(2), 1.0, sparse=True)
    assert isinstance(H, scipy.sparse.csr_array) and H.shape == (3, 3) and H.nnz == 0
    rows, cols, values = F.hessian(np.ones((4, 2)), np.zeros(4), sparse="lower")
    assert rows.shape == cols.shape == (0,) and values.shape == (4, 0)
    G = symgrad.compile(lambda x, unused: x * 2.0, [(), ()])
    assert G.jacobian_wrt(1)(1.0, 2.0, sparse=True).shape == (1, 1)
    assert G.jacobian_wrt(1)(1.0, 2.0, sparse=True).nnz == 0
    with pytest.raises(ValueError, match="trailing .core. shape"):
        F.hessian(np.ones(3), 1.0, sparse=True)


def test_what_sparse_refuses():
    with pytest.raises(ValueError, match="sparse= is for Jacobians and Hessians"):
        L.grad(X[0], 1.0, LAM[0], sparse=True)
    with pytest.raises(ValueError, match="sparse= is for Jacobians and Hessians"):
        C(X[0], sparse=True)
    with pytest.raises(ValueError, match="sparse='lower' is for Hessians"):
        C.jacobian(X[0], sparse="lower")
    with pytest.raises(ValueError, match="sparse must be True, False or 'lower', got 'upper'"):
        C.jacobian(X[0], sparse="upper")
    with pytest.raises(ValueError, match="needs a scalar-valued function"):
        C.hessian_sparsity()
    with pytest.raises(TypeError, match="lower"):
        C.jacobian_sparsity(lower=True)
    assert np.array_equal(C.jacobian(X[0], sparse=False), C.jacobian(X[0]))


def test_a_parameter_named_sparse_is_the_functions_own():
    F = symgrad.compile(lambda x, sparse=2.0: x * x * sparse, [()])
    assert F.grad(3.0, sparse=5.0) == 30.0


def test_without_scipy_results_are_triplets(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    rows, cols, values = C.jacobian(X[0], sparse=True)
    assert values.shape == (7 * (N - 1) + 4,)
    assert np.array_equal(values, C.jacobian(X[0])[rows, cols])
    r, c, shape = C.jacobian_sparsity()
    assert shape == (2 * N + 2, 3 * N) and np.array_equal(r, rows) and np.array_equal(c, cols)


def _bits(a):
    a = np.array(a, dtype=np.float64)
    a[np.isnan(a)] = np.nan  # a NaN's sign and payload depend on which operand the CPU kept
    return a.view(np.uint64)


def test_maths_functions_give_the_dense_bits_in_both_kernels():
    """The sparse and the dense kernel must both vectorise their lane loops (libmvec's
    functions) or both not (libm's): abs's derivative (a sign) once kept one of them scalar."""
    def f(x):
        return np.array([x[0] ** x[1], 2.0 ** x[2], np.abs(x[3]) ** 0.5 * np.sinh(x[0]),
                         np.hypot(x[1], x[2]) + np.arctan2(x[0], x[3]), np.cbrt(x[2] * x[3])])
    F = symgrad.compile(f, [(4,)])
    X = np.random.default_rng(3).normal(size=(1000, 4))
    rows, cols, values = F.jacobian(X, sparse=True)
    assert np.array_equal(_bits(values), _bits(F.jacobian(X)[:, rows, cols]))
    G = symgrad.compile(lambda x: 2.0 ** x[0] * np.abs(x[1]) ** 1.5 + np.cbrt(x[2]) * x[3], [(4,)])
    rows, cols, values = G.hessian(X, sparse="lower")
    assert np.array_equal(_bits(values), _bits(G.hessian(X)[:, rows, cols]))


def test_constant_entries_among_computed_ones_at_every_batch_size():
    """A sparse kernel writes its constant entries (a linear part's coefficients) from a table
    and scatters the computed ones between them, by tables of runs: every batch size (a
    tail of 1-3 points, whole blocks, tiles) gives the dense kernel's entries."""
    M = np.arange(1.0, 145.0).reshape(12, 12)

    def f(x):  # constants everywhere but on the diagonal: 12 runs of computed entries, 13 of fixed ones
        return np.concatenate([M @ x + x ** 3, np.array([np.sin(x[0]) * x[11]])])
    F = symgrad.compile(f, [(12,)])
    G = symgrad.compile(lambda x: M @ x, [(12,)])  # constants only
    X = np.random.default_rng(11).normal(size=(1000, 12))
    for n in (1, 2, 3, 4, 5, 7, 9, 1000):
        rows, cols, values = F.jacobian(X[:n], sparse=True)
        assert np.array_equal(values, F.jacobian(X[:n])[:, rows, cols]), n
        rows, cols, values = G.jacobian(X[:n], sparse=True)
        assert np.array_equal(values, np.broadcast_to(M[rows, cols], (n, len(rows)))), n
    assert F.jacobian_sparsity().nnz == 144 + 2


def test_a_hessian_of_loops_is_taken_as_loops_and_equals_the_unrolled_one():
    """A Lagrangian over 600 entries whose arrays stay loops: its sparse Hessian kernel is a
    loop over index arrays bound as data (transforms/sparsity_loops.py), equal to the kernel of
    the function traced element by element, one point and a batch."""
    n = 600

    def f(x, lam):
        c = np.concatenate([x[1:] - x[:-1] ** 2, np.sin(x[::2] * x[1::2]), [x[0] * x[-1]]])
        return np.dot(lam, c) + np.sum(np.exp(x * x[3]))
    shapes = [(n,), (n - 1 + n // 2 + 1,)]
    F = symgrad.compile(f, shapes)
    U = symgrad.compile(f, shapes, options=symgrad.Options(loop_min_size=0))
    S, T = F.hessian_wrt(0).sparse_form(), U.hessian_wrt(0).sparse_form()
    assert S.loops and not T.loops and S.program.count_ops() < 100
    np.testing.assert_array_equal(F.hessian_sparsity(lower=True).toarray(), U.hessian_sparsity(lower=True).toarray())
    rng = np.random.default_rng(5)
    x, lam = rng.standard_normal((3,) + shapes[0]), rng.standard_normal((3,) + shapes[1])
    got, want = S(x, lam), T(x, lam)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
    np.testing.assert_array_equal(S(x[1], lam[1]), got[1])


@pytest.mark.parametrize("f, kind", [
    (lambda x: np.concatenate([x[1:] - x[:-1], [np.sum(x) * np.sum(x ** 2)]]), "jacobian"),  # adjoints: the other sum
    (lambda x: np.where(np.sum(np.sin(x)) > 0, np.sum(x ** 2), -np.sum(x ** 2))
     + np.abs(np.sum(np.sin(x))) * 2.0, "hessian"),  # linear in two sums, each adjoint reads the other
])
def test_loops_whose_scatters_read_other_loops_sums_compile_and_equal_the_unrolled_kernel(f, kind):
    n = 300
    F, U = symgrad.compile(f, [(n,)]), symgrad.compile(f, [(n,)], options=symgrad.Options(loop_min_size=0))
    x = np.random.default_rng(11).standard_normal(n)
    got, want = getattr(F, kind)(x, sparse=True).toarray(), getattr(U, kind)(x)
    assert getattr(F, kind).sparse_form().loops
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())


# -- by argument: f(t, y) and the pattern by y alone (issue 47) -------------------------------
M = 12


def ode(t, y):
    """A stiff right-hand side f(t, y) read by solve_ivp: tridiagonal in y, t only scales it."""
    inner = y[:-2] - 2 * y[1:-1] + y[2:]
    return np.concatenate([np.array([-y[0] + t]), 50 * inner - y[1:-1] ** 3 * math.cos(1.0), np.array([-y[-1]])])


def test_the_pattern_by_y_is_n_by_n_and_the_sparse_jacobian_by_y_fills_it():
    F = symgrad.compile(ode, [(), (M,)])
    t, y = 0.7, np.linspace(0.5, 1.5, M)
    dense = F.jacobian_wrt(1)(t, y)
    assert F.jacobian_sparsity().shape == (M, M + 1)  # every argument: the time column too
    for pattern in (F.jacobian_sparsity(argnums=1), F.jacobian_wrt(1).pattern(),
                    symgrad.jacobian(ode, argnums=1, shapes=[(), (M,)]).pattern()):
        assert pattern.shape == (M, M) and pattern.dtype == bool
        assert np.array_equal(pattern.toarray(), dense != 0)
    J = symgrad.jacobian(F, argnums=1)  # the verb's argnums are its sparse form's
    sparse = J(t, y, sparse=True)
    assert sparse.shape == (M, M) and np.array_equal(sparse.toarray(), dense)
    assert np.array_equal(sparse.toarray() != 0, J.pattern().toarray())


def test_a_hessian_by_some_arguments_gives_its_own_pattern():
    g = symgrad.compile(lambda a, y: a * np.sum(y[1:] * y[:-1]) + a ** 3 * y[0], [(), (5,)])
    y = np.linspace(1, 2, 5)
    dense = g.hessian_wrt(1)(2.0, y)
    H = symgrad.hessian(g, argnums=1)
    for pattern in (g.hessian_sparsity(argnums=1), H.pattern()):
        assert pattern.shape == (5, 5) and np.array_equal(pattern.toarray(), dense != 0)
    assert np.array_equal(H.pattern(lower=True).toarray(), np.tril(dense != 0))
    assert np.array_equal(H(2.0, y, sparse=True).toarray(), dense)
    assert g.hessian.pattern().shape == (6, 6)
    with pytest.raises(ValueError, match="pattern of a Jacobian or Hessian"):
        g.pattern()
    with pytest.raises(ValueError, match="for Hessians"):
        symgrad.jacobian(g, argnums=1).pattern(lower=True)


def test_solve_ivp_takes_the_pattern_by_y():
    integrate = pytest.importorskip("scipy.integrate")
    F = symgrad.compile(ode, [(), (M,)])
    J = symgrad.jacobian(F, argnums=1)
    y0 = np.linspace(0.5, 1.5, M)
    fd = integrate.solve_ivp(F, (0, 1), y0, method="BDF", jac_sparsity=J.pattern(), rtol=1e-8, atol=1e-10)
    exact = integrate.solve_ivp(F, (0, 1), y0, method="BDF", jac=lambda t, y: J(t, y, sparse=True),
                                rtol=1e-8, atol=1e-10)
    assert fd.success and exact.success
    np.testing.assert_allclose(fd.y[:, -1], exact.y[:, -1], rtol=1e-6)
