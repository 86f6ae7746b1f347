"""Max and min of arrays kept as loops (tracing/lazy_extremum.py) on the IR, without a C
compiler: a large reduction is one extremum node, a small one the unrolled chain per entry;
values and gradients evaluated by the numpy interpreter against numpy and against the same
function traced element by element (ties, NaN, +-inf, +-0.0 included)."""
import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian

N = 300
LOOP = 128
A = np.cos(np.arange(N) * 0.7)


def extrema(prog):
    return [n for n in prog.nodes if n[0] == "extremum"]


def both(f, shapes):
    loop, unrolled = trace(f, shapes, loop_min=LOOP), trace(f, shapes, loop_min=0)
    assert loop.has_loops and not unrolled.has_loops
    return loop, unrolled


@pytest.mark.filterwarnings("ignore:All-NaN")
@pytest.mark.parametrize("fn", [np.max, np.min, np.amax, np.amin, np.nanmax, np.nanmin,
                                lambda z: z.max(), lambda z: z.min(), np.maximum.reduce, np.fmin.reduce])
def test_a_large_reduction_is_one_node_and_picks_the_entry_the_chain_picks(fn):
    loop, unrolled = both(lambda x: fn(x * A), [(N,)])
    assert len(extrema(loop)) == 1
    rng = np.random.default_rng(0)
    for x in [rng.standard_normal(N), np.zeros(N), np.where(np.arange(N) % 3, -0.0, 0.0),
              np.where(np.arange(N) == 7, np.nan, 1.0), np.where(np.arange(N) % 50 == 0, np.nan, 1.0),
              np.full(N, np.nan), np.where(np.arange(N) % 2, np.inf, -np.inf), np.full(N, -np.inf)]:
        got, want = evaluate(loop, x)[0], evaluate(unrolled, x)[0]
        assert got.tobytes() == want.tobytes() or (np.isnan(got) and np.isnan(want))
        assert np.array_equal(got, fn(x * A), equal_nan=True)
        g_loop, g_unrolled = evaluate(derive.grad(loop, (0,)), x)[0], evaluate(derive.grad(unrolled, (0,)), x)[0]
        np.testing.assert_array_equal(g_loop, g_unrolled)


def test_the_gradient_at_a_tie_credits_the_first_entry():
    prog = trace(lambda x: np.max(x), [(N,)], loop_min=LOOP)
    g = evaluate(derive.grad(prog, (0,)), np.ones(N))[0]
    assert g[0] == 1 and not g[1:].any()
    g = evaluate(derive.grad(prog, (0,)), np.where(np.arange(N) == 5, np.nan, 0.0))[0]  # maximum: the NaN
    assert g[5] == 1 and g.sum() == 1


D = np.random.default_rng(3).standard_normal((N, 5))


def _lse(w):
    z = D @ w
    m = np.max(z)
    return m + np.log(np.sum(np.exp(z - m)))


def test_log_sum_exp_hessian_is_the_softmax_covariance():
    prog = trace(_lse, [(5,)], loop_min=LOOP)
    assert len(extrema(prog)) == 1 and not any(n[0] == "maximum" for n in prog.nodes)
    for w in [np.array([0.3, -0.2, 0.1, 0.5, -0.4]), np.zeros(5)]:
        z = D @ w
        p = np.exp(z - z.max())
        p /= p.sum()
        v, gr = evaluate(derive.grad(prog, (0,), with_value=True), w)
        np.testing.assert_allclose(v, np.log(np.sum(np.exp(z))), rtol=1e-14)
        np.testing.assert_allclose(gr, D.T @ p, rtol=1e-12, atol=1e-14)
        h = np.asarray(evaluate(hessian.hessian(prog, (0,)), w)[0]).reshape(5, 5)
        np.testing.assert_allclose(h, D.T @ (np.diag(p) - np.outer(p, p)) @ D, rtol=1e-11, atol=1e-13)


def test_a_small_reduced_axis_is_the_unrolled_chain_per_entry():
    def soft(w):
        z = D @ w.reshape(5, 4)
        m = np.max(z, axis=1, keepdims=True)
        return np.sum(m[:, 0] + np.log(np.sum(np.exp(z - m), axis=1)))
    loop, unrolled = both(soft, [(20,)])
    assert not extrema(loop) and any(n[0] == "maximum" for n in loop.nodes)
    w = np.random.default_rng(4).standard_normal(20)
    assert evaluate(loop, w)[0].tobytes() == evaluate(unrolled, w)[0].tobytes()
    np.testing.assert_allclose(evaluate(derive.grad(loop, (0,)), w)[0], evaluate(derive.grad(unrolled, (0,)), w)[0],
                               rtol=1e-13)


def test_axis_0_of_a_tall_array_is_one_extremum_per_column():
    loop, unrolled = both(lambda w: np.sum(np.min(D * w, axis=0) ** 2), [(5,)])
    assert len(extrema(loop)) == 5
    w = np.array([1.0, -2.0, 0.0, 0.5, np.inf])
    with np.errstate(invalid="ignore"):
        want = np.sum(np.min(D * w, axis=0) ** 2)
    assert np.array_equal(evaluate(loop, w)[0], want, equal_nan=True)
    np.testing.assert_array_equal(evaluate(derive.grad(loop, (0,)), w[:4].tolist() + [1.0])[0],
                                  evaluate(derive.grad(unrolled, (0,)), w[:4].tolist() + [1.0])[0])


def test_the_program_prints_an_extremum():
    text = str(trace(lambda x: np.max(x), [(N,)], loop_min=LOOP))
    assert "maximum" in text and "over i0<300" in text


def test_nth_derivatives_and_hvp_through_a_max_are_the_unrolled_ones():
    f = lambda t: np.max(np.sin(A * t))  # noqa: E731
    loop, unrolled = both(f, [()])
    for n in (1, 2, 3):
        got, want = evaluate(derive.nth(loop, n, 0, "d"), 0.7), evaluate(derive.nth(unrolled, n, 0, "d"), 0.7)
        np.testing.assert_allclose(got, want, rtol=1e-15)
    k = np.argmax(np.sin(A * 0.7))
    np.testing.assert_allclose(evaluate(derive.nth(loop, 2, 0, "d"), 0.7)[0], -A[k] ** 2 * np.sin(A[k] * 0.7), rtol=1e-14)
    np.testing.assert_allclose(evaluate(derive.hvp(loop, (0,), ["v"]), 0.7, 2.0),
                               evaluate(derive.hvp(unrolled, (0,), ["v"]), 0.7, 2.0), rtol=1e-15)


def test_no_fallback_is_logged(caplog):
    import logging
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        trace(_lse, [(5,)], loop_min=LOOP)
        trace(lambda x: np.nanmin(x, axis=0).sum() + x.max(), [(N, 2)], loop_min=LOOP)
    assert "cannot keep as a loop" not in caplog.text
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):  # (what it says where it falls back)
        trace(lambda x: np.max(x, initial=0.0), [(N,)], loop_min=LOOP)
    assert "cannot keep as a loop" in caplog.text
