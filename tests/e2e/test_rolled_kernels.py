"""Rolled kernels (repeated work as loops over tables: render/roll.py) compute every
number bit for bit as the same kernel printed statement by statement (Options(roll_min=0)):
gradients, Hessians, value beside gradient, float32, maths calls, sparse values, batches and
single points. (Where GCC leaves a flat kernel's lane loop with maths calls scalar, libm's
functions stand for libmvec's and the last bit can differ, as between any two kernels: the
calls here are ones GCC vectorises in both.)"""
import math

import numpy as np
import pytest
from helpers import carried

import symgrad

ROLL = symgrad.Options(large_kernel_ops=0, roll_alone_min=16)
FLAT = symgrad.Options(large_kernel_ops=0, roll_min=0)


def lj(p, atoms=8):
    e = 0.0
    for i in range(atoms):
        for j in range(i + 1, atoms):
            dx, dy, dz = p[3 * i] - p[3 * j], p[3 * i + 1] - p[3 * j + 1], p[3 * i + 2] - p[3 * j + 2]
            r2 = dx * dx + dy * dy + dz * dz
            e = e + math.exp(-r2) * math.cos(dx) + 1.0 / r2 ** 3
    return e


def tanh_pairs(p, atoms=8):
    """tanh's derivative calls a helper (symgrad_sech2) twice in a flat unit: inlined, or the
    flat lane loop stayed scalar libm beside the rolled one's libmvec (a review find)."""
    e = 0.0
    for i in range(atoms):
        for j in range(i + 1, atoms):
            d = p[i] - p[j]
            e = e + np.tanh(d) + np.log1p(d * d)
    return e


def chained(x):
    """A running total of terms: each member reads the one before (through the scratch)."""
    acc = 0.0
    for k in range(40):
        acc = acc * 0.5 + math.sin(x[k] * x[(k + 3) % 40] + 1.0)
    return acc


def springs(x):
    """Results written by the loops: one residual per spring, each of a few entries."""
    return [(x[k + 1] - x[k]) ** 3 * (x[k] + 2.0) / (1.0 + x[k] * x[k]) for k in range(len(x) - 1)]


def prefix_sums(x):
    """Every link of a running sum a result: copies at 40 depths, one loop."""
    acc, out = 0.0, []
    for k in range(len(x)):
        acc = acc + math.sin(x[k])
        out.append(acc)
    return out


def _c(fn):
    """All the C of a Function's kernel (every translation unit)."""
    return fn.c_source


def _bits(a):
    a = np.asarray(a)
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(_bits(a), _bits(b))


def _points(rng, n, size):
    base = np.stack(np.meshgrid(*[np.arange(2)] * 3, indexing="ij"), -1).reshape(-1, 3)[:size // 3].ravel() * 1.3
    return base + rng.uniform(-0.1, 0.1, (n, size)) if size % 3 == 0 else rng.uniform(-1.5, 1.5, (n, size))


@pytest.mark.parametrize("fn,size,verbs", [
    (lj, 24, ("grad", "value_and_grad", "hessian")),
    (tanh_pairs, 8, ("grad",)),
    (chained, 40, ("grad",)),
    (springs, 40, ("jacobian",)),
    (carried, 21, ("jacobian",)),
    (prefix_sums, 40, ("value", "jacobian")),
], ids=["pairs", "tanh-pairs", "running-sum", "residuals", "carried", "prefix-sums"])
def test_rolled_kernels_equal_flat_ones_bit_for_bit(fn, size, verbs):
    rng = np.random.default_rng(3)
    X = _points(rng, 37, size)  # blocks and a tail
    rolled, flat = symgrad.compile(fn, [(size,)], options=ROLL), symgrad.compile(fn, [(size,)], options=FLAT)
    for verb in verbs:
        r, f = (rolled, flat) if verb == "value" else (getattr(rolled, verb), getattr(flat, verb))
        for x in (X, X[0], X.astype(np.float32)):
            a, b = r(x), f(x)
            for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
                _same(np.asarray(u), np.asarray(v))
    r, f = (rolled, flat) if verbs[0] == "value" else (getattr(rolled, verbs[0]), getattr(flat, verbs[0]))
    assert "sg_ix +=" in _c(r) and "sg_ix +=" not in _c(f)


def test_rolled_sparse_values_equal_flat_ones():
    rng = np.random.default_rng(4)
    X = _points(rng, 21, 40)
    r = symgrad.compile(springs, [(40,)], options=ROLL).jacobian(X, sparse=True)
    f = symgrad.compile(springs, [(40,)], options=FLAT).jacobian(X, sparse=True)
    for u, v in zip(r, f):
        _same(np.asarray(u), np.asarray(v))


def test_rolled_pairs_against_closed_form():
    """Not only equal to the flat kernel: the gradient of a pair potential, against its
    closed form summed in numpy."""
    def pot(p):
        e = 0.0
        for i in range(10):
            for j in range(i + 1, 10):
                d2 = (p[2 * i] - p[2 * j]) ** 2 + (p[2 * i + 1] - p[2 * j + 1]) ** 2
                e = e + 1.0 / d2
        return e
    rng = np.random.default_rng(5)
    x = rng.uniform(-3, 3, 20)
    F = symgrad.compile(pot, [(20,)], options=ROLL)
    assert "sg_ix +=" in _c(F.grad)
    P = x.reshape(10, 2)
    d = P[:, None, :] - P[None, :, :]
    d2 = (d ** 2).sum(-1) + np.eye(10)
    want = (-2 * d / d2[..., None] ** 2 * (1 - np.eye(10))[..., None]).sum(1).ravel()
    np.testing.assert_allclose(F.grad(x), want, rtol=1e-12)
