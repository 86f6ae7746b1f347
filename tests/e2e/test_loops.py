"""Array code kept as loops (issue 13): sums over closed-over data, broadcast pairwise
interactions, results of data size. Each against the unrolled path or a closed form, and
the loop form's own promises: the program does not grow with the data, data is part of
the key, results do not depend on batch size or threads."""
from __future__ import annotations

import logging
import pickle
import sys
import os

import numpy as np
import pytest

import symgrad
from helpers import reference_grad, run_python

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
import bench_cases  # noqa: E402
import scaling  # noqa: E402

UNROLLED = symgrad.Options(loop_min_size=0)


def fit_data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = np.linspace(0.0, 5.0, n)
    return X, 2.0 * np.exp(-1.3 * X) + 0.5 + 0.01 * rng.standard_normal(n)


def fit_reference(p, X, Y):
    """Value, gradient and Hessian of sum((a exp(-b X) + c - Y)^2), by hand."""
    a, b, c = p
    e = np.exp(-b * X)
    r = a * e + c - Y
    J = np.stack([e, -a * X * e, np.ones_like(X)], 1)  # d r / d p
    H = 2 * J.T @ J
    H[0, 1] += 2 * np.sum(r * -X * e)
    H[1, 0] = H[0, 1]
    H[1, 1] += 2 * np.sum(r * a * X * X * e)
    return np.sum(r * r), 2 * J.T @ r, H, r, J


def lj_positions(n, seed=0):
    return scaling.lj_inputs(n, 1, np.random.default_rng(seed))[0]  # a jittered grid, as the benchmark's


def lj_broadcast(n):
    """The Lennard-Jones energy by broadcasting, as examples/scaling.py benchmarks it."""
    return scaling.array_case("lj", n)[0]


def lj_pairs(n):
    i, j = np.triu_indices(n, 1)

    def energy(x):
        X = x.reshape(-1, 3)
        d = X[i] - X[j]
        r2 = np.sum(d * d, axis=1)
        return 4 * np.sum(r2 ** -6 - r2 ** -3)
    return energy


# -- sums over closed-over data ---------------------------------------------------------------
def test_fit_value_gradient_hessian_match_closed_forms():
    X, Y = fit_data(3000)

    def loss(p):
        return np.sum((p[0] * np.exp(-p[1] * X) + p[2] - Y) ** 2)
    F = symgrad.compile(loss, shapes=[(3,)])
    assert F.loops and F.program.count_ops() < 20  # one body, not 3000 of them
    for p in ([1.5, 1.0, 0.2], [2.2, 1.4, 0.4]):
        p = np.array(p)
        v, g, H, _, _ = fit_reference(p, X, Y)
        fv, fg = F.value_and_grad(p)
        assert fv == pytest.approx(v, rel=1e-13)
        np.testing.assert_allclose(fg, g, rtol=1e-12, atol=1e-12 * np.abs(g).max())
        np.testing.assert_allclose(F.hessian(p), H, rtol=1e-12, atol=1e-12 * np.abs(H).max())


def test_fit_equals_the_unrolled_trace():
    X, Y = fit_data(300, seed=1)

    def loss(p):
        return np.mean(np.log1p((p[0] * np.exp(-p[1] * X) + p[2] - Y) ** 2))
    loops, unrolled = symgrad.compile(loss, shapes=[(3,)]), symgrad.compile(loss, shapes=[(3,)], options=UNROLLED)
    p = np.array([1.7, 0.9, 0.3])
    assert loops.grad.loops and not unrolled.grad.loops
    np.testing.assert_allclose(loops.grad(p), unrolled.grad(p), rtol=1e-12)
    np.testing.assert_allclose(loops.hessian(p), unrolled.hessian(p), rtol=1e-11)
    np.testing.assert_allclose(loops.grad(p), reference_grad(loss, [p], 0), rtol=1e-8)


def test_residual_and_its_jacobian_are_maps():
    X, Y = fit_data(5000)

    def residual(p):
        return p[0] * np.exp(-p[1] * X) + p[2] - Y
    R = symgrad.compile(residual, shapes=[(3,)])
    p = np.array([1.5, 1.0, 0.2])
    _, _, _, r, J = fit_reference(p, X, Y)
    assert R.loops and R.jacobian.loops
    np.testing.assert_allclose(R(p), r, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(R.jacobian(p), J, rtol=1e-13, atol=1e-15)
    batch = np.array([p, p * 1.1])
    np.testing.assert_allclose(R.jacobian(batch)[1], fit_reference(p * 1.1, X, Y)[4], rtol=1e-13, atol=1e-15)


def test_sums_of_sums_and_derivatives_of_any_order():
    X = np.linspace(-1.0, 2.0, 1000)

    def spread(a):  # the mean is itself a sum: a slot of the outer sum
        z = np.sin(a * X)
        return np.sum((z - np.mean(z)) ** 2)
    F = symgrad.compile(spread)
    a = 0.7
    z, dz, d2z = np.sin(a * X), X * np.cos(a * X), -X * X * np.sin(a * X)
    c, dc = z - z.mean(), dz - dz.mean()
    assert F(a) == pytest.approx(np.sum(c * c), rel=1e-13)
    assert F.grad(a) == pytest.approx(np.sum(2 * c * dc), rel=1e-12)
    assert F.derivative(2)(a) == pytest.approx(np.sum(2 * dc * dc + 2 * c * (d2z - d2z.mean())), rel=1e-11)


def test_data_is_read_by_pointer_and_is_part_of_the_key():
    X = np.linspace(0.0, 1.0, 100_000)

    def f(p):
        return np.sum(np.exp(p[0] * X) * p[1])
    F = symgrad.compile(f, shapes=[(2,)])
    assert "100000" in F.c_source and len(F.c_source) < 20_000  # no data in the C
    G = symgrad.compile(lambda p: np.sum(np.exp(p[0] * X2) * p[1]), shapes=[(2,)])
    X2 = X.copy()
    X2[5] += 1e-9
    assert F.key != G.key
    p = np.array([0.3, 2.0])
    assert F(p) == pytest.approx(np.sum(np.exp(0.3 * X) * 2.0), rel=1e-13)
    assert G(p) == pytest.approx(np.sum(np.exp(0.3 * X2) * 2.0), rel=1e-13)


DATA_CHANGED = """
    import sys, numpy as np, symgrad
    X = np.linspace(0.0, 1.0, 5000)
    if sys.argv[1] == "inplace":
        X[17] = 3.0
    elif sys.argv[1] == "reassigned":
        X = X * 1.5
    F = symgrad.compile(lambda p: np.sum((X - p[0]) ** 2) * p[1], shapes=[(2,)])
    print(F.grad.key, repr(float(F.grad(np.array([0.25, 2.0]))[0])), repr(float(np.sum(-4.0 * (X - 0.25)))))
"""


@pytest.mark.slow
def test_data_changed_in_place_or_reassigned_gets_a_new_key_across_processes(tmp_path):
    """Three processes on one cache: the same code over changed data never meets the other's kernel."""
    keys = set()
    for how in ("original", "inplace", "reassigned"):
        r = run_python(DATA_CHANGED, tmp_path, how, SYMGRAD_CACHE_DIR=tmp_path / "cache")
        key, got, want = r.lines[-1].split()
        assert float(got) == pytest.approx(float(want), rel=1e-12), how
        keys.add(key)
    assert len(keys) == 3


# -- broadcast pairwise interactions --------------------------------------------------------------
@pytest.mark.parametrize("make", [lj_broadcast, lj_pairs])
def test_array_lennard_jones_equals_the_loop_style(make):
    n = 30
    x = lj_positions(n)
    E = symgrad.compile(make(n), shapes=[(3 * n,)])
    L = symgrad.compile(lambda p: bench_cases.lj(p, n), shapes=[(3 * n,)])
    assert E.grad.loops and not L.grad.loops
    g, gl = E.grad(x), L.grad(x)
    assert E(x) == pytest.approx(L(x), rel=1e-12)
    assert np.abs(g - gl).max() <= 1e-12 * np.abs(gl).max()
    v, g2 = E.value_and_grad(x)
    assert v == pytest.approx(L(x), rel=1e-12) and np.abs(g2 - gl).max() <= 1e-12 * np.abs(gl).max()


def test_array_lennard_jones_gradient_against_differences():
    n = 100
    x = lj_positions(n, seed=3)
    E = symgrad.compile(lj_broadcast(n), shapes=[(3 * n,)])
    g = E.grad(x)
    ref = reference_grad(lj_broadcast(n), [x], 0)
    assert np.abs(g - ref).max() <= 1e-7 * np.abs(ref).max()


def test_a_batch_gives_each_point_its_single_call_bits():
    """A single point's loops run on the thread team in fixed pieces; a batch runs each point
    alone: the same pieces, the same sums, the same bits."""
    n = 64
    E = symgrad.compile(lj_broadcast(n), shapes=[(3 * n,)])
    xs = np.stack([lj_positions(n, seed=s) for s in range(3)])
    batch = E.grad(xs)
    for k in range(3):
        assert np.array_equal(E.grad(xs[k]), batch[k])


def test_hessian_by_a_large_argument_stays_loops():
    n = 12  # 144 pairs: the broadcast arrays stay loops, the Hessian scatters (transforms/hessian_sums.py)
    x = lj_positions(n)
    E = symgrad.compile(lj_broadcast(n), shapes=[(3 * n,)])
    L = symgrad.compile(lambda p: bench_cases.lj(p, n), shapes=[(3 * n,)])
    assert E.grad.loops and E.hessian.loops
    H, Hl = E.hessian(x), L.hessian(x)
    assert np.abs(H - Hl).max() <= 1e-11 * np.abs(Hl).max()


def test_an_argument_read_by_loops_and_by_constant_index():
    def f(x):
        return x[0] * np.sum(x * x) + np.sum(np.sin(x[1:] - x[:-1]))
    x = np.linspace(0.1, 2.0, 400)
    F = symgrad.compile(f, shapes=[(400,)])
    U = symgrad.compile(f, shapes=[(400,)], options=UNROLLED)
    assert F.grad.loops
    np.testing.assert_allclose(F.grad(x), U.grad(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.grad(x), reference_grad(f, [x], 0), rtol=1e-8, atol=1e-9)


# -- what stays unrolled, and the fallback ------------------------------------------------------------
def test_small_arrays_keep_the_unrolled_program():
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    F = symgrad.compile(rosen, shapes=[(8,)])
    U = symgrad.compile(rosen, shapes=[(8,)], options=UNROLLED)
    assert not F.grad.loops and F.program.count_ops() == U.program.count_ops()
    x = np.linspace(-1.0, 1.5, 8)
    assert F(x) == U(x)  # the same program, its nodes in another order: adjoints summed in another order
    np.testing.assert_allclose(F.value_and_grad(x)[1], U.value_and_grad(x)[1], rtol=1e-15, atol=0)


def test_an_operation_loops_do_not_cover_falls_back_with_a_warning(caplog):
    X = np.linspace(-2.0, 2.0, 300)

    def f(a):
        return np.max(np.cos(a * X)) + np.sum(np.cumsum(X * a))
    F = symgrad.compile(f)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        v = F(0.4)
    assert v == pytest.approx(np.max(np.cos(0.4 * X)) + np.sum(np.cumsum(X * 0.4)), rel=1e-13)
    assert not F.loops
    assert any("cannot keep as a loop" in r.getMessage() and "test_loops.py" in r.getMessage()
               for r in caplog.records)


def test_float32_loops():
    X, Y = fit_data(2000)

    def loss(p):
        return np.sum((p[0] * np.exp(-p[1] * X) + p[2] - Y) ** 2)
    F = symgrad.compile(loss, shapes=[(3,)], dtype="float32")
    p = np.array([1.5, 1.0, 0.2], dtype=np.float32)
    g = F.grad(p)
    assert g.dtype == np.float32
    want = fit_reference(p.astype(np.float64), X, Y)[1]
    np.testing.assert_allclose(g, want.astype(np.float32), rtol=1e-6)


def test_a_function_with_loops_pickles_with_its_data():
    X = np.linspace(0.0, 3.0, 2000)
    F = symgrad.compile(lambda a: np.sum(np.exp(-a * X)))
    G = pickle.loads(pickle.dumps(F.grad))
    assert G(0.5) == pytest.approx(-np.sum(X * np.exp(-0.5 * X)), rel=1e-13)


def test_the_data_as_batch_arguments():
    """The same loss with the data as arguments: each batch point its own data set."""
    def loss(p, X, Y):
        return np.sum((p[0] * np.exp(-p[1] * X) + p[2] - Y) ** 2)
    n = 1500
    F = symgrad.compile(loss, shapes=[(3,), (n,), (n,)])
    sets = [fit_data(n, seed=s) for s in range(3)]
    X, Y = np.stack([s[0] * (1 + 0.1 * k) for k, s in enumerate(sets)]), np.stack([s[1] for s in sets])
    p = np.array([1.5, 1.0, 0.2])
    g = F.grad_wrt(0)(p, X, Y)
    assert F.grad.loops and g.shape == (3, 3)
    for k in range(3):
        np.testing.assert_allclose(g[k], fit_reference(p, X[k], Y[k])[1], rtol=1e-12)
    gp, gX, gY = F.grad(p, X[0], Y[0])  # by the data too: scatters into their gradients
    r = p[0] * np.exp(-p[1] * X[0]) + p[2] - Y[0]
    np.testing.assert_allclose(gY, -2 * r, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gX, 2 * r * p[0] * np.exp(-p[1] * X[0]) * -p[1], rtol=1e-12, atol=1e-14)


# -- a hostile review's findings (each a wrong number, error or hang before its fix) ------------
REVIEW = [
    # an integer beside an index array, a slice between: numpy puts the indexed axis first
    (lambda x: np.sum(x.reshape(3, 16, 16)[0, :, np.array([1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14])]
                      * np.arange(256.0).reshape(16, 16)), 768),
    (lambda x: np.sum(np.where(np.arange(200) % 3 > 0, x, 0.0) + np.where(np.arange(200) % 2, x * x, 1.0)), 200),
    (lambda x: np.sum(x.reshape(20, 20)[..., np.arange(20) % 3 > 0] ** 2), 400),
    (lambda x: np.sum(np.sin(x.reshape(20, 20)[np.array([3, 1, 3]), ...])), 400),
    (lambda x: np.sum(x * np.full(200, 2 ** 63 + 5, np.uint64)), 200),
    (lambda x: np.sum((np.linspace(0.0, 1.0, 40).reshape(2, 20) @ x.reshape(20, 10)) ** 2), 200),
]


@pytest.mark.parametrize("k", range(len(REVIEW)))
def test_review_cases_equal_numpy_and_the_unrolled_path(k):
    f, n = REVIEW[k]
    x = np.random.default_rng(k).standard_normal(n)
    F, U = symgrad.compile(f, shapes=[(n,)]), symgrad.compile(f, shapes=[(n,)], options=UNROLLED)
    assert F(x) == pytest.approx(f(x), rel=1e-12)
    np.testing.assert_allclose(F.grad(x), U.grad(x), rtol=1e-11, atol=1e-12 * np.abs(U.grad(x)).max())


def test_the_spectral_norm_of_a_large_matrix_is_refused_as_unrolled():
    F = symgrad.compile(lambda x: np.linalg.norm(x.reshape(20, 20), ord=2, axis=(0, 1)), shapes=[(400,)])
    with pytest.raises(symgrad.TraceError, match="SVD"):
        F(np.ones(400))


def test_an_array_reused_step_after_step_traces_in_linear_time():
    STEPS = 5
    D = np.linspace(0.5, 1.5, 200)

    def f(x):
        y = x
        for _ in range(STEPS):  # each step reads y three times: 3**STEPS paths without the memo
            y = y - 0.1 * (y * y * y - D)
        return np.sum(y * y)
    F = symgrad.compile(f, shapes=[(200,)])
    assert F.program.count_ops() < 400
    x = np.linspace(0.9, 1.1, 200)
    assert F(x) == pytest.approx(f(x), rel=1e-12)


def test_a_second_derivative_by_a_large_argument_is_taken_unrolled():
    D = np.linspace(-1.0, 1.0, 200)
    F = symgrad.compile(lambda x, t: np.sum(np.sin(t * x) * D), shapes=[(200,), ()])
    x = np.linspace(0.0, 2.0, 200)
    got = F.grad_wrt(1).grad_wrt(0)(x, 0.7)
    np.testing.assert_allclose(got, D * (np.cos(0.7 * x) - 0.7 * x * np.sin(0.7 * x)), rtol=1e-12, atol=1e-14)


def test_data_changed_before_an_unrolled_derivative_is_refused():
    D = np.ones(200)  # (the log of a sum: its Hessian by x is taken of the unrolled trace)
    F = symgrad.compile(lambda x: np.log(np.sum(D * x ** 3)), shapes=[(200,)])
    x = np.ones(200)
    assert F.grad(x)[0] == pytest.approx(3 / 200, rel=1e-15)
    D *= 2
    assert F.grad(x)[0] == pytest.approx(3 / 200, rel=1e-15)  # the Function keeps the data it was traced with
    with pytest.raises(symgrad.CompileError, match="changed after it was traced"):
        F.hessian(x)


def test_a_body_that_reads_itself_step_after_step_stays_one_shared_loop():
    D = np.linspace(0.5, 1.5, 130)

    def f(x):
        y = x
        for _ in range(30):
            y = y - 0.1 * (y * y * y - D)
        return np.sum(y * y)
    F = symgrad.compile(f, shapes=[(130,)])
    # 3**30 operations as a tree; as the IR's DAG (each step traced once: the memo) about 150
    assert F.loops and F.grad.loops and F.grad.program.count_ops() < 400
    x = np.linspace(0.2, 0.9, 130)
    y, dy = x.copy(), np.ones(130)
    for _ in range(30):
        dy = dy * (1 - 0.3 * y * y)
        y = y - 0.1 * (y * y * y - D)
    assert F(x) == pytest.approx(np.sum(y * y), rel=1e-13)
    np.testing.assert_allclose(F.grad(x), 2 * y * dy, rtol=1e-12)


def test_a_zero_of_the_data_takes_its_term_away_in_the_kernel_too():
    X = np.linspace(0, 2, 200)  # X[0] = 0: d/dp sqrt(p * 0) is 0 (the element-by-element trace's), not 0 * inf

    def f(p):
        return np.sum(np.sqrt(p[0] * X)) + np.sum(np.where(X < 1.5, 0.0, np.sqrt(p[1] * (X - 1.5))))
    L, U = symgrad.compile(f, [(2,)]), symgrad.compile(f, [(2,)], options=symgrad.Options(loop_min_size=0))
    assert L.loops and not U.loops
    p = np.array([0.8, 1.3])
    m, k = X > 0, X > 1.5
    want = [np.sum(0.5 * np.sqrt(X[m] / p[0])), np.sum(0.5 * np.sqrt((X[k] - 1.5) / p[1]))]
    np.testing.assert_allclose(L.grad(p), want, rtol=1e-12)
    np.testing.assert_allclose(L.grad(np.stack([p, p])), [want, want], rtol=1e-12)  # a batch: the same
    np.testing.assert_allclose(L.hessian(p), U.hessian(p), rtol=1e-12)
    assert np.all(np.isfinite(L.hessian(p)))


@pytest.mark.parametrize("grad_first", [True, False])
def test_hvp_by_an_array_the_loops_read_does_not_take_the_loops_gradient(grad_first):
    """F.hvp by a large argument is taken of the trace unrolled; it built on the loops'
    gradient (a scatter) after F.grad, and returned uninitialised memory."""
    Z = np.zeros(200)
    Z[::3] = 1.0 + grad_first  # (another program each way: no kernel shared through the cache)
    F = symgrad.compile(lambda x: np.sum(Z * np.sqrt(x)), [(200,)])
    x, v = np.linspace(1, 2, 200), np.linspace(-1, 1, 200)
    calls = [lambda: F.grad(x), lambda: F.hvp(x, v)]
    got = [call() for call in (calls if grad_first else calls[::-1])]
    g, h = got if grad_first else got[::-1]
    np.testing.assert_allclose(h, -0.25 * Z * x ** -1.5 * v, rtol=1e-13)
    np.testing.assert_allclose(g, 0.5 * Z / np.sqrt(x), rtol=1e-13)
    assert F.grad.loops and not F.hvp.loops
