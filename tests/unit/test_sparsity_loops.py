"""Sparse Hessians of programs whose arrays stayed loops (transforms/sparsity_loops.py), on the
IR without a C compiler: the pattern equals the one of the function traced element by element,
the values equal its values (ir/evaluate.py), and the work does not grow with the arrays."""
import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian, sparsity, sparsity_loops

LOOP = 128  # Options.loop_min_size's default


def collocation(n):
    h, g = 10.0 / (n - 1), 9.81

    def lagrangian(free, sigma, lam):
        th, om, T = free[:n], free[n:2 * n], free[2 * n:]
        c1 = (th[1:] - th[:-1]) / h - om[1:]
        c2 = (om[1:] - om[:-1]) / h + g * np.sin(th[1:]) - T[1:]
        c = np.concatenate([c1, c2, np.array([th[0], th[-1] - np.pi, om[0], om[-1]])])
        return sigma * h * np.sum(T ** 2) + np.dot(lam, c)
    return lagrangian, [(3 * n,), (), (2 * n + 2,)]


def coupled(n):
    def f(x, w):  # entries reached from several points (i and i + 1), a top-level entry read in the
        return (np.sum(w[1:] * (x[1:] - x[:-1] ** 2) ** 2)  # loop, a term outside the loops
                + np.sum(np.exp(x * x[0]) * w) + x[0] * x[1] ** 2 + np.sum(np.cos(x[::2] * x[1::2])))
    return f, [(n,), (n,)]


def _compare(make, n, nums, rng, exact):
    f, shapes = make(n)
    prog, flat = trace(f, shapes, loop_min=LOOP), trace(f, shapes)
    assert prog.has_loops and not flat.has_loops
    assert sparsity_loops.supported(prog, nums)
    p, q = sparsity.hessian_pattern(prog, nums), sparsity.hessian_pattern(flat, nums)
    np.testing.assert_array_equal(p.rows, q.rows)
    np.testing.assert_array_equal(p.cols, q.cols)
    args = [rng.standard_normal(s) for s in shapes]
    got = evaluate(sparsity.hessian(prog, nums, p), *args)[0]
    want = evaluate(sparsity.hessian(flat, nums, q), *args)[0]
    if exact:  # each entry one term: the same operations in the same order
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max(initial=0))
    return prog, p


def test_the_collocation_lagrangian_hessian_equals_the_unrolled_one():
    _compare(collocation, 300, (0,), np.random.default_rng(1), exact=True)


@pytest.mark.parametrize("nums", [(0,), (0, 1), (1,)])
def test_entries_several_points_reach_add_up(nums):
    _compare(coupled, 400, nums, np.random.default_rng(2), exact=False)


def test_the_symbolic_work_does_not_grow_with_the_arrays():
    sizes = []
    for n in (300, 1200):
        f, shapes = collocation(n)
        prog = trace(f, shapes, loop_min=LOOP)
        p = sparsity.hessian_pattern(prog, (0,))
        h = sparsity.hessian(prog, (0,), p)
        assert p.nnz == 2 * n - 1  # each angle's and torque's diagonal entry, and sigma h T^2's
        sizes.append((len(prog.nodes), len(h.nodes)))
    assert sizes[0] == sizes[1]


@pytest.mark.parametrize("f", [
    lambda x: np.sum(x ** 2) ** 2,  # nonlinear in a sum: a dense rank-one part
    lambda x: x[0] * np.sum(np.sin(x)),  # a sum's coefficient depends on x
    lambda x: np.sum((x - np.mean(x)) ** 2),  # the body reads a sum of x computed outside its loop
])
def test_what_the_loop_form_cannot_take_exactly_is_refused(f):
    prog = trace(f, [(300,)], loop_min=LOOP)
    assert prog.has_loops and not sparsity_loops.supported(prog, (0,))


def constraints(n):
    def g(x):  # differences, products of two reads, a norm (a sum: its gradient a row), a small part
        return np.concatenate([x[1:] - x[:-1] ** 2, np.sin(x[::2] * x[1::2]) * x[:n // 2],
                               [np.sum(x ** 2) - 1.0, x[0] * x[-1]]])
    return g, [(n,)]


def test_a_jacobian_of_loops_equals_the_unrolled_one():
    f, shapes = constraints(400)
    prog, flat = trace(f, shapes, loop_min=LOOP), trace(f, shapes)
    assert sparsity_loops.jacobian_supported(prog, (0,))
    p, q = sparsity.jacobian_pattern(prog, (0,)), sparsity.jacobian_pattern(flat, (0,))
    np.testing.assert_array_equal(p.rows, q.rows)
    np.testing.assert_array_equal(p.cols, q.cols)
    x = np.random.default_rng(4).standard_normal(400)
    got = evaluate(sparsity.jacobian(prog, (0,), p), x)[0]
    want = evaluate(sparsity.jacobian(flat, (0,), q), x)[0]
    np.testing.assert_array_equal(got, want)  # each entry one term, the sweep's products in its order
    h = sparsity.jacobian(prog, (0,), p)
    assert h.count_ops() < 60 and len(h.data) == 6  # one index array a term over loops


@pytest.mark.parametrize("f", [
    lambda x: np.abs(np.sum(x ** 3) - 10.0) + np.sum(x[1:] * x[:-1]),  # the adjoint sign(S) reads the sum
    lambda x: np.maximum(np.sum(np.concatenate([x ** 2, np.sin(x)])) - 1.0, 0.0),
])
def test_an_adjoint_that_reads_its_own_sum_scales_the_loop_after_it(f):
    prog, flat = trace(f, [(300,)], loop_min=LOOP), trace(f, [(300,)])
    assert sparsity_loops.supported(prog, (0,))
    x = np.random.default_rng(6).standard_normal(300) + 0.5
    p, q = sparsity.hessian_pattern(prog, (0,)), sparsity.hessian_pattern(flat, (0,))
    got = evaluate(sparsity.hessian(prog, (0,), p), x)[0]
    want = evaluate(sparsity.hessian(flat, (0,), q), x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14 * np.abs(want).max())
    prog = trace(lambda x: np.concatenate([np.sqrt(np.sum(x ** 2)) * x, x[:2]]), [(300,)], loop_min=LOOP)
    assert not sparsity_loops.jacobian_supported(prog, (0,))  # entries over loops through a sum: a dense block


def test_a_zero_of_the_data_is_no_structural_non_zero():
    w = np.arange(25.0) % 4  # a coefficient 0 at every fourth column
    f = lambda x: np.sum(x.reshape(16, 25) ** 2 * w) + np.sum(np.sin(x) * np.repeat(w, 16))  # noqa: E731
    prog, flat = trace(f, [(400,)], loop_min=LOOP), trace(f, [(400,)])
    x = np.random.default_rng(7).standard_normal(400)
    p, q = sparsity.hessian_pattern(prog, (0,)), sparsity.hessian_pattern(flat, (0,))
    assert p.nnz == q.nnz < 400
    np.testing.assert_array_equal(p.cols, q.cols)
    np.testing.assert_array_equal(evaluate(sparsity.hessian(prog, (0,), p), x)[0],
                                  evaluate(sparsity.hessian(flat, (0,), q), x)[0])


@pytest.mark.parametrize("f", [
    lambda x: np.sum(x) * np.sum(x ** 2),  # each sum's adjoint is the other sum
    lambda x: np.sum(x ** 2) / np.sum(np.exp(x)),
])
def test_sums_whose_adjoints_read_each_other(f):
    for make, kind in ((sparsity.jacobian_pattern, sparsity.jacobian), (sparsity.hessian_pattern, sparsity.hessian)):
        prog, flat = trace(f, [(300,)], loop_min=LOOP), trace(f, [(300,)])
        x = np.random.default_rng(8).standard_normal(300)
        if kind is sparsity.hessian and not sparsity_loops.supported(prog, (0,)):
            continue  # (nonlinear in a sum: taken unrolled)
        p, q = make(prog, (0,)), make(flat, (0,))
        got, want = evaluate(kind(prog, (0,), p), x)[0], evaluate(kind(flat, (0,), q), x)[0]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())


def test_linear_in_two_sums_each_read_by_the_others_adjoint():
    def f(x):
        s1, s2 = np.sum(x ** 2), np.sum(np.sin(x))
        return np.where(s2 > 0, s1, -s1) + np.where(s1 > 0, s2, -s2)
    prog, flat = trace(f, [(300,)], loop_min=LOOP), trace(f, [(300,)])
    assert sparsity_loops.supported(prog, (0,))
    x = np.random.default_rng(9).standard_normal(300)
    p, q = sparsity.hessian_pattern(prog, (0,)), sparsity.hessian_pattern(flat, (0,))
    np.testing.assert_allclose(evaluate(sparsity.hessian(prog, (0,), p), x)[0],
                               evaluate(sparsity.hessian(flat, (0,), q), x)[0], rtol=1e-13, atol=1e-15)


def test_a_data_zero_under_a_branch_is_no_structural_non_zero():
    d = np.where(np.arange(300) % 7 == 0, 0.0, np.linspace(0.5, 1.5, 300))
    f = lambda x: np.concatenate([np.where(x < 0.3, np.sin(x), -x) * d, x[:2]])  # noqa: E731
    prog, flat = trace(f, [(300,)], loop_min=LOOP), trace(f, [(300,)])
    p, q = sparsity.jacobian_pattern(prog, (0,)), sparsity.jacobian_pattern(flat, (0,))
    assert p.nnz == q.nnz < 300


N_FUZZ, LOOP_FUZZ = 64, 16  # small arrays kept as loops from 16 entries: the unrolled references stay quick
D_FUZZ = np.where(np.arange(N_FUZZ) % 5 == 0, 0.0, np.linspace(0.5, 1.5, N_FUZZ))
PIECES = [  # pieces of a constraint vector over x of N_FUZZ entries, as array code writes them
    lambda x: x[1:] - x[:-1] ** 2,
    lambda x: np.sin(x[::2] * x[1::2]),
    lambda x: x ** 3 * D_FUZZ,
    lambda x: np.exp(-x[10:50]) * x[:40],
    lambda x: np.where(x > 0.2, x * x[::-1], np.tanh(x)),
    lambda x: np.array([x[0] * x[-1], x[5] ** 2]),
    lambda x: (x[2:] - 2 * x[1:-1] + x[:-2]) / 0.1 + np.cos(x[1:-1]),
    lambda x: x[::-1][:30] * x[20:50],
]


@pytest.mark.parametrize("seed", range(16))
def test_random_joined_constraints_have_the_unrolled_patterns_and_values(seed):
    """Constraint vectors joined from random pieces, and Lagrangians of them: the loop form's
    patterns are the unrolled trace's (which hold every non-zero of the dense derivative at
    random points), its values the unrolled sparse kernel's (to rounding)."""
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(PIECES), size=rng.integers(2, 5), replace=False)

    def g(x):
        return np.concatenate([PIECES[k](x) for k in picks])
    m = sum(PIECES[k](np.ones(N_FUZZ)).size for k in picks)

    def lag(x, lam):
        return np.dot(lam, g(x)) + 0.5 * np.sum(g(x)[:20] * x[:20])
    x, lam = rng.standard_normal(N_FUZZ), rng.standard_normal(m)
    for f, shapes, args, pat, build, dense in (
            (g, [(N_FUZZ,)], (x,), sparsity.jacobian_pattern, sparsity.jacobian, lambda p: derive.jacobian(p, (0,))),
            (lag, [(N_FUZZ,), (m,)], (x, lam), sparsity.hessian_pattern, sparsity.hessian,
             lambda p: hessian.hessian(p, (0,)))):
        prog, flat = trace(f, shapes, loop_min=LOOP_FUZZ), trace(f, shapes)
        assert prog.has_loops
        p, q = pat(prog, (0,)), pat(flat, (0,))
        np.testing.assert_array_equal(p.rows, q.rows)
        np.testing.assert_array_equal(p.cols, q.cols)
        d = np.asarray(evaluate(dense(flat), *args)[0]).reshape(p.shape)
        inside = np.zeros(p.shape, bool)
        inside[p.rows, p.cols] = True
        assert not ((np.tril(d) if f is lag else d) != 0)[~inside].any()
        a, b = evaluate(build(prog, (0,), p), *args)[0], evaluate(build(flat, (0,), q), *args)[0]
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max(initial=0))


def test_the_collocation_constraints_jacobian_equals_the_unrolled_one():
    h, G = 10.0 / 299, 9.81

    def constraints(free):
        th, om, T = free[:300], free[300:600], free[600:]
        return np.concatenate([(th[1:] - th[:-1]) / h - om[1:], (om[1:] - om[:-1]) / h + G * np.sin(th[1:]) - T[1:],
                               np.array([th[0], th[-1] - np.pi, om[0], om[-1]])])
    prog, flat = trace(constraints, [(900,)], loop_min=LOOP), trace(constraints, [(900,)])
    assert prog.outputs[0].stores
    p, q = sparsity.jacobian_pattern(prog, (0,)), sparsity.jacobian_pattern(flat, (0,))
    assert p.nnz == q.nnz == 7 * 299 + 4
    np.testing.assert_array_equal(p.cols, q.cols)
    x = np.random.default_rng(12).standard_normal(900)
    np.testing.assert_array_equal(evaluate(sparsity.jacobian(prog, (0,), p), x)[0],
                                  evaluate(sparsity.jacobian(flat, (0,), q), x)[0])
