"""Compiled kernels of the ops numpy spells as ufuncs (logaddexp, maximum, fmax, clip, ...)
against numpy itself, bit for bit (logaddexp: within 4 ulp, as vector maths is), on awkward points: ties, ±0, ±inf, NaN, overflow of exp.
One multi-output Function, so that the file compiles few kernels."""
import math

import numpy as np
import pytest

import symgrad

NAN, INF = math.nan, math.inf
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, 1e-300, -1e300, 1e308, 710.0, -745.0, 36.0, INF, -INF, NAN]
A, B = (np.array(v, dtype=np.float64) for v in zip(*[(a, b) for a in SPECIAL for b in SPECIAL]))


def f(a, b):
    return [np.logaddexp(a, b), np.logaddexp2(a, b), np.maximum(a, b), np.minimum(a, b), np.fmax(a, b),
            np.fmin(a, b), np.clip(a, -1.0, b)]


@pytest.fixture(scope="module")
def F():
    return symgrad.compile(f, [(), ()])


def _bits(x):
    return np.asarray(x, dtype=np.float64).view(np.int64)


def _numpys(a, b):
    with np.errstate(invalid="ignore"):
        return [np.asarray(v, dtype=np.float64) for v in f(a, b)]


def test_values_are_numpys_bit_for_bit(F):
    got = np.asarray(F(A, B))  # n points: the batch kernel (its SIMD blocks)
    got = got.reshape(len(A), 7) if got.shape[0] == len(A) else got.T
    zeros = (A == 0) & (B == 0)  # a tie of +0.0 and -0.0: numpy's scalar, array and reduce loops differ
    for k, want in enumerate(_numpys(A, B)):
        keep = ~zeros if k >= 2 else np.ones(len(A), bool)
        if k < 2:  # logaddexp: numpy calls libm's scalar exp/log1p, the kernel may call libmvec's
            assert np.array_equal(np.isnan(got[:, k]), np.isnan(want))  # (within 4 ulp of them, and
            finite = np.isfinite(want)                                   # which variant depends on the CPU)
            np.testing.assert_allclose(got[finite, k], want[finite], rtol=4e-16, atol=0)
            keep &= ~np.isnan(want) & ~finite
        assert np.array_equal(_bits(got[keep, k]), _bits(want[keep])), k
    for k in range(2, 7):
        assert np.array_equal(_bits(got[zeros, k]), _bits(A[zeros]))  # the first operand at a tie
    for a, b in [(0.3, -1.2), (-INF, -INF), (INF, 2.0), (1.0, NAN), (-0.0, 0.0)]:  # one point: the scalar kernel
        one = np.asarray(F(a, b), dtype=np.float64)
        assert np.array_equal(_bits(one), _bits(np.asarray(F(np.array([a]), np.array([b])), dtype=np.float64).ravel()))


def test_gradients_at_ties_and_infinities(F):
    J = F.jacobian(np.array([1.0, -INF, INF, 0.3, 1.0]), np.array([1.0, -INF, 2.0, -1.2, NAN]))
    da, db = (np.asarray(j, dtype=np.float64) for j in J)
    da = da.reshape(5, 7) if da.shape[0] == 5 else da.T
    db = db.reshape(5, 7) if db.shape[0] == 5 else db.T
    # logaddexp: 1/2 each at ties (of infinities too), 1/0 against a finite point from +inf
    np.testing.assert_array_equal(da[:3, 0], [0.5, 0.5, 1.0])
    np.testing.assert_array_equal(db[:3, 0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(da[3, 0], 1 / (1 + math.exp(-1.5)), rtol=1e-15)
    # picks: the first operand at a tie; maximum's NaN second operand is picked, fmax's is not
    np.testing.assert_array_equal(da[0, 2:6], [1.0] * 4)
    np.testing.assert_array_equal(db[0, 2:6], [0.0] * 4)
    np.testing.assert_array_equal(da[4, 2:6], [0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(da[3, 2:7], [1.0, 0.0, 1.0, 0.0, 0.0])  # clip(0.3, -1, -1.2) is -1.2
    np.testing.assert_array_equal(db[3, 6], 1.0)
