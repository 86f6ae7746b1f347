"""What the speed work (SIMD blocks, vector math, threads, the warm-start cache) must not break."""
import math

import numpy as np
import pytest

import symgrad

import helpers  # noqa: E402,F401  (puts examples/ on sys.path)
import accuracy  # noqa: E402


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vector_math_within_4_ulp_and_special_values_preserved(dtype):
    report = accuracy.measure(3000, dtype, seed=1)
    assert set(report) >= {"sin", "exp", "log", "atan2", "pow", "erf", "tanh"}
    for name, (ulp, special_bad, worst) in report.items():
        assert ulp <= 4, f"{name}: {ulp} ulp at {worst}"
        assert special_bad == 0, f"{name}: {special_bad} special inputs not preserved"


def trig2(x, y):
    return math.sin(3 * x) * math.exp(-0.5 * y * y) + math.log(1 + x * x * y * y) + math.atan2(y, x + 3.0)


def lj4(p):
    e = 0.0
    for i in range(4):
        for j in range(i + 1, 4):
            r2 = sum((p[3 * i + k] - p[3 * j + k]) ** 2 for k in range(3))
            e = e + 4.0 * (r2 ** -6 - r2 ** -3)
    return e


LJ_BASE = np.array([0, 0, 0, 1.1, 0, 0, 0, 1.1, 0, 0, 0, 1.1])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_small_batches_and_single_points_match_large_batch_bitwise(dtype):
    rng = np.random.default_rng(2)
    G = symgrad.compile(trig2, dtype=dtype).grad
    x, y = rng.uniform(-2, 2, (2, 1003)).astype(dtype)
    big = np.stack(G(x, y))
    for n in range(1, 10):
        np.testing.assert_array_equal(np.stack(G(x[:n], y[:n])), big[:, :n])
    for k in (0, 5, 1002):
        assert np.array_equal(np.array(G(float(x[k]), float(y[k])), dtype=dtype), big[:, k])
        assert np.array_equal(np.array(G(x[k], y[k])), big[:, k])  # numpy scalars: the array path
    H = symgrad.compile(lj4, shapes=[(12,)], dtype=dtype).hessian
    p = (LJ_BASE + rng.uniform(-0.05, 0.05, (37, 12))).astype(dtype)
    full = H(p)
    for n in (1, 2, 3, 5):
        np.testing.assert_array_equal(H(p[:n]), full[:n])


def test_odd_strides_give_bitwise_the_contiguous_results():
    rng = np.random.default_rng(3)
    G = symgrad.compile(lj4, shapes=[(12,)]).grad
    base = LJ_BASE + rng.uniform(-0.05, 0.05, (60, 12))
    wide = np.zeros((60, 36))
    wide[:, ::3] = base
    views = [base[::-1], base[::3], wide[:, ::3], np.asfortranarray(base), base.T.copy().T]
    for v in views:
        np.testing.assert_array_equal(G(v), G(np.ascontiguousarray(v)))
    T = symgrad.compile(trig2).grad
    x = rng.uniform(-2, 2, 200)
    np.testing.assert_array_equal(np.stack(T(x[::-2], x[1::2])),
                                  np.stack(T(x[::-2].copy(), x[1::2].copy())))


def test_program_key_tracks_closures_defaults_arrays_and_objects():
    def key(f):
        return symgrad.compile(f).program.key

    def make(c, w):
        def f(x, k=c):
            return k * x + np.dot(w, w) * x
        return f
    w = np.arange(3.0)
    base = key(make(2.0, w))
    assert base == key(make(2.0, w.copy()))
    assert key(make(2.5, w)) != base
    assert key(make(2.0, w + 1)) != base

    class Opaque:
        __slots__ = ("v",)
    o = Opaque()
    o.v = 1.0
    k1 = key(lambda x: x * o.v)
    o.v = 2.0
    assert key(lambda x: x * o.v) != k1


def test_streamed_results_of_large_batches_equal_small_batches():
    """Batches whose results exceed config.STREAM_BYTES run in tiles that leave as whole lines."""
    rosen_hess = pytest.importorskip("scipy.optimize").rosen_hess
    H = symgrad.compile(lambda x: sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
                                      for i in range(7)), shapes=[(8,)]).hessian
    assert "symgrad_stream_double" in H.c_source
    x = np.random.default_rng(6).uniform(-2, 2, (40_003, 8))  # 40003 * 512 bytes > 8 MiB
    big = H(x)
    for k in (0, 17, 40_002):
        np.testing.assert_array_equal(H(x[k]), big[k])
    np.testing.assert_allclose(big[:50], [rosen_hess(v) for v in x[:50]], rtol=1e-12, atol=1e-12)
    out = np.zeros((40_003, 8, 8))[:, :, :]  # caller's array, possibly unaligned for 16 bytes: still right
    H(x, out=out)
    np.testing.assert_array_equal(out, big)


def bench_seed(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def sympy_seed_derivative(x0):
    import sympy as sp
    x = sp.Symbol("x")
    d = sp.diff(64 * x * (1 - x) * (1 - 2 * x) ** 2 * (1 - 8 * x + 8 * x * x) ** 2, x)
    return d.evalf(30, subs={x: sp.Float(x0, 30)})


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_streamed_single_results_at_every_alignment(dtype):
    """One number per point, batch past config.STREAM_BYTES: the kernel runs in tiles whose
    whole cache lines leave with non-temporal (or plain) stores and whose partial lines with
    plain ones. Every offset of the caller's array against a cache line gives the small-batch
    bytes, in both store modes."""
    G = symgrad.compile(bench_seed, dtype=dtype).grad
    assert "_tiles(" in G.c_source
    itemsize = np.dtype(dtype).itemsize
    n = (8 << 20) // itemsize + 1237  # past the threshold, not a whole number of tiles
    x = np.random.default_rng(8).uniform(-1.5, 2.5, n).astype(dtype)
    ref = np.concatenate([G(x[k:k + 1000]) for k in range(0, n, 1000)])
    for mode in (1, 2, 0):
        G.plan.stores.force = mode
        for offset in range(64 // itemsize):
            buf = np.full(n + 64 // itemsize, np.nan, dtype)
            out = buf[offset:offset + n]
            assert G(x, out=out) is out
            np.testing.assert_array_equal(out, ref)
            assert np.isnan(buf[:offset]).all() and np.isnan(buf[offset + n:]).all()  # nothing outside
    G.plan.stores.force = None
    # an array not even aligned to its item size (a byte buffer at offset 1)
    raw = np.frombuffer(bytearray(n * itemsize + 1), dtype=dtype, offset=1, count=n)
    np.testing.assert_array_equal(G(x, out=raw), ref)
    tol = 1e-4 if dtype == "float32" else 1e-12
    for k in (0, n // 2, n - 1):
        assert float(ref[k]) == pytest.approx(float(sympy_seed_derivative(float(x[k]))), rel=tol, abs=tol)
