"""Sums round as numpy's (issue 47 item 5): np.sum, mean and .sum() add in the order of
numpy's float64 add.reduce (pairwise in blocks of 8 along a stretch of memory, entry by entry
along an outer axis), element by element and in loops kept over 10^6 entries, bit for bit."""
from __future__ import annotations

import numpy as np

import symgrad

UNROLLED = symgrad.Options(loop_min_size=0)


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def spread(rng, shape):
    """Random numbers of very different sizes: a sum in another order differs in its bits."""
    return rng.standard_normal(shape) * np.exp(rng.uniform(-12, 12, shape))


def rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_rosenbrock_50_is_numpy_s_bits_traced_either_way():
    rng = np.random.default_rng(1)
    for F in (symgrad.compile(rosen, shapes=[(50,)]), symgrad.compile(rosen, shapes=[(50,)], options=UNROLLED)):
        for _ in range(30):
            x = rng.uniform(-2, 2, 50)
            assert bits(F(x)) == bits(rosen(x))


def sums_2d(X):
    """Sums of X and X**2: whole, by rows (axis=-1), by columns (axis=0), and of X.T, mean."""
    Y = X ** 2
    return np.concatenate([np.sum(X, axis=-1), np.sum(Y, axis=-1), np.sum(X, axis=0), Y.sum(axis=0),
                           np.array([np.sum(X), np.sum(Y), np.sum(X.T), np.mean(Y), np.add.reduce(X, axis=None)])])


def test_sums_of_a_thousand_entries_element_by_element():
    rng = np.random.default_rng(2)
    F = symgrad.compile(sums_2d, shapes=[(40, 25)], options=UNROLLED)
    for _ in range(10):
        X = spread(rng, (40, 25))
        assert np.array_equal(bits(F(X)), bits(sums_2d(X)))


def test_sums_over_a_thousand_points_of_data_in_a_loop():
    rng = np.random.default_rng(3)
    D = spread(rng, 1000)

    def f(p):
        return np.array([np.sum(D * p), np.sum((D - p) ** 2), np.mean(D + p)])
    F = symgrad.compile(f, shapes=[()])
    assert F.traced.has_loops
    for p in rng.standard_normal(10):
        assert np.array_equal(bits(F(p)), bits(f(p)))
    G = symgrad.compile(lambda p: np.sum((D - p) ** 2), shapes=[()]).value_and_grad  # the value beside a gradient
    for p in rng.standard_normal(5):
        assert bits(G(p)[0]) == bits(np.sum((D - p) ** 2))


def test_python_s_sum_stays_left_to_right_from_zero():
    x = np.random.default_rng(5).standard_normal(50) * 1e8
    for F in (symgrad.compile(lambda x: sum(x), shapes=[(50,)]),
              symgrad.compile(lambda x: sum(x), shapes=[(50,)], options=UNROLLED)):
        assert bits(F(x)) == bits(sum(x.tolist()))


def million(X):
    """Loop-kept sums of 10^6 entries, as one result: of X and X**2 whole (one run of 10^6 over
    two loops) and by rows (runs of 250000), by columns (4 entries each, term by term), and by
    the columns of the (250000, 4) reshape (entry by entry down 250000 rows)."""
    Y = X ** 2
    R = X.reshape(250000, 4)
    return np.concatenate([np.sum(X, axis=0), np.sum(Y, axis=-1), np.sum(R, axis=0), np.sum(R ** 2, axis=0),
                           np.array([np.sum(X), np.sum(Y), X.sum(), np.mean(Y)])])


def test_loop_kept_sums_of_a_million_entries():
    rng = np.random.default_rng(4)
    F = symgrad.compile(million, shapes=[(4, 250000)])
    assert F.traced.has_loops
    for _ in range(3):
        X = spread(rng, (4, 250000))
        assert np.array_equal(bits(F(X)), bits(million(X)))
    X = -np.zeros((4, 250000))  # numpy's sum starts at 0.0: of -0.0s it is 0.0
    assert np.array_equal(bits(F(X)), bits(million(X)))
