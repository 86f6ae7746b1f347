"""Kernel layouts the speed work introduced: 256- and 512-bit blocks, fixed entries of array
results written from a table, and the two store modes of large batches. Each is checked
against independent values (sympy, closed forms) and the modes against each other, bitwise."""
import math
import os
import shutil

import numpy as np
import pytest
import sympy as sp
from helpers import pairs10

import symgrad
from symgrad.build import compile as build
from symgrad.call.calling import Stores as _Stores
from symgrad.options import DEFAULT
from symgrad.render import TARGETS, render


def compiled(F, vector_bits):
    """The caller of Function F's kernel rendered for ``vector_bits``-bit blocks."""
    target = TARGETS["cpu", str(F.dtype)]
    k = render(F.optimized(), F.c_name, target, vector_bits, F.options)
    lib = build.build_kernel(f"{F.key}_{vector_bits}", k)
    return k, lib.kernel(target.entry(F.c_name, "call"), F.dtype, [c for _, c in F.args], F.result_shapes(), (),
                         0, None)


def run(kernel, mode, ins, outs):
    kernel.run(len(ins[0]), mode, ins, outs)


def seed(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_blocks_of_either_width_give_the_exact_derivative(vector_bits):
    """Kernels of scalars take 8-point blocks with 512-bit vectors, 4-point ones otherwise;
    both are rendered and run here whatever this CPU has (gcc splits wide vectors)."""
    G = symgrad.compile(seed).grad
    k, kernel = compiled(G, vector_bits)
    assert f"sg_j < {8 if vector_bits == 512 else 4}" in k.source
    x = np.random.default_rng(3).uniform(-1.5, 2.5, 1237)
    out = np.empty_like(x)
    run(kernel, 0, [x], [out])
    X = sp.Symbol("x")
    d = sp.lambdify(X, sp.diff(64 * X * (1 - X) * (1 - 2 * X) ** 2 * (1 - 8 * X + 8 * X * X) ** 2, X), "mpmath")
    ref = np.array([float(d(v)) for v in x[:200]])
    np.testing.assert_allclose(out[:200], ref, rtol=1e-12, atol=1e-9)
    for n in (1, 3, 7, 8, 9, 17):  # every point runs through the same block code
        part = np.empty(n)
        run(kernel, 0, [x[:n].copy()], [part])
        np.testing.assert_array_equal(part, out[:n])
    three = np.empty(1)
    run(kernel, 0, [np.array([3.0])], [three])
    assert three[0] == -75279680.0


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_transcendental_kernels_agree_across_block_widths(vector_bits):
    """The vector math of 256- and 512-bit blocks stays within a few ulp of libm's."""
    def f(x, y):
        return math.sin(3 * x) * math.exp(-0.5 * y * y) + math.log(1 + x * x * y * y) + math.atan2(y, x + 3.0)
    G = symgrad.compile(f).grad
    _, kernel = compiled(G, vector_bits)
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-2, 2, 999), rng.uniform(-2, 2, 999)
    gx, gy = np.empty_like(x), np.empty_like(x)
    run(kernel, 0, [x, y], [gx, gy])
    rx = [3 * math.cos(3 * a) * math.exp(-0.5 * b * b) + 2 * a * b * b / (1 + a * a * b * b)
          - b / ((a + 3) ** 2 + b * b) for a, b in zip(x, y)]
    ry = [-b * math.sin(3 * a) * math.exp(-0.5 * b * b) + 2 * a * a * b / (1 + a * a * b * b)
          + (a + 3) / ((a + 3) ** 2 + b * b) for a, b in zip(x, y)]
    np.testing.assert_allclose(gx, rx, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gy, ry, rtol=1e-12, atol=1e-13)


def band(x):
    """Tridiagonal Hessian with a constant diagonal corner: groups of fixed entries (zeros,
    and a group of numbers that are not zero) next to computed ones."""
    return sum((x[i + 1] - x[i] ** 2) ** 2 for i in range(7)) + 2.5 * x[7] ** 2 + 3 * x[0] * x[7]


def band_hessian(v):
    H = np.zeros((8, 8))
    for i in range(7):
        H[i, i] += 12 * v[i] ** 2 - 4 * v[i + 1]
        H[i, i + 1] += -4 * v[i]
        H[i + 1, i] += -4 * v[i]
        H[i + 1, i + 1] += 2
    H[7, 7] += 5
    H[0, 7] += 3
    H[7, 0] += 3
    return H


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fixed_entries_of_array_results_in_every_path(dtype):
    H = symgrad.compile(band, shapes=[(8,)], dtype=dtype).hessian
    assert "_fill_" in H.c_source  # some groups of four entries are numbers only
    rng = np.random.default_rng(5)
    itemsize = np.dtype(dtype).itemsize
    n = DEFAULT.stream_bytes // (64 * itemsize) + 13  # large enough for the tiles, with a tail
    x = rng.uniform(-1, 1, (n, 8)).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-13
    big = H(x)
    np.testing.assert_allclose(big[:40], [band_hessian(v.astype(float)) for v in x[:40]], rtol=tol, atol=tol)
    np.testing.assert_allclose(big[-5:], [band_hessian(v.astype(float)) for v in x[-5:]], rtol=tol, atol=tol)
    for k in (0, 5, n - 1):  # one point at a time: the block and tail paths
        np.testing.assert_array_equal(H(x[k]), big[k])
    small = H(x[:37])
    np.testing.assert_array_equal(small, big[:37])
    plan = H.plan
    assert plan.stores is not None
    for mode in (1, 2, 0):  # non-temporal, plain stores, blocks straight out: the same bytes
        plan.stores.force = mode
        buf = np.full(n * 64 + 3, np.nan, dtype)
        out = buf[1:1 + n * 64].reshape(n, 8, 8)  # off the cache lines
        H(x, out=out)
        np.testing.assert_array_equal(out, big)
        assert np.isnan(buf[0]) and np.isnan(buf[-2:]).all()
    plan.stores.force = None


def test_a_tail_compiled_apart_gives_the_bytes_of_the_blocks():
    """A kernel moving 16 numbers a point or more compiles its tail (and one-point entry) as a
    translation unit of its own, beside the blocks: the same lane code, so the same bytes for a
    point whichever path computes it, vector maths included."""
    def f(x):
        return sum(math.exp(-x[i] * x[i]) * math.sin(x[i + 1]) + math.atan2(x[i], 1.0 + x[i + 1] ** 2)
                   for i in range(7)) + math.log1p(x[0] ** 2)
    G = symgrad.compile(f, shapes=[(8,)]).grad
    assert len(G.kernel.tails) == 1 and "_tail(" in G.kernel.tails[0] and "_tail(" in G.kernel.source
    xs = sp.symbols("x0:8")
    expr = sum(sp.exp(-xs[i] ** 2) * sp.sin(xs[i + 1]) + sp.atan2(xs[i], 1 + xs[i + 1] ** 2) for i in range(7)) \
        + sp.log(1 + xs[0] ** 2)
    grad = sp.lambdify(xs, [sp.diff(expr, v) for v in xs], "mpmath")
    x = np.random.default_rng(11).uniform(-2, 2, (1031, 8))
    big = G(x)
    np.testing.assert_allclose(big[:6], [[float(g) for g in grad(*v)] for v in x[:6]], rtol=1e-13, atol=1e-15)
    for k in (0, 1, 2, 3, 1030):  # single points: the tail, in the other unit
        np.testing.assert_array_equal(G(x[k]), big[k])
    for n in (1, 2, 3, 5, 7, 9):  # blocks and a tail
        np.testing.assert_array_equal(G(x[:n]), big[:n])
    # All of it as one unit (F.c_source; how build compiles it on one core): the same bytes
    one = build.build(G.key + "_one", G.c_source, extra_flags=G.kernel.cflags)
    kernel = one.kernel(TARGETS["cpu", "float64"].entry(G.c_name, "call"), G.dtype, [(8,)], G.result_shapes(), (), 0,
                        None)
    for n in (1031, 3):
        out = np.empty((n, 8))
        run(kernel, 0, [x[:n].copy()], [out])
        np.testing.assert_array_equal(out, big[:n])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tiles_compiled_apart_give_the_bytes_of_the_blocks(dtype):
    """A kernel moving few numbers a point that has tiles compiles them with its tail (and
    one-point entry) as a unit of their own: tiles in each store mode, blocks, tails and single
    points give the same bytes, and so does all of it built as one unit."""
    def f(x, y):
        return (x ** 3 - 2.0 * x * y) / (1.0 + x * x) + math.sqrt(1.0 + y * y) * x
    G = symgrad.compile(f, dtype=dtype).grad
    assert len(G.kernel.tails) == 1 and "_tiles(" in G.kernel.tails[0] and "_tiles(" not in G.kernel.source.split(
        "SYMGRAD_HIDDEN void")[0]
    itemsize = np.dtype(dtype).itemsize
    n = DEFAULT.stream_bytes // (2 * itemsize) + 1237  # past the threshold, not a whole number of tiles
    rng = np.random.default_rng(12)
    x, y = rng.uniform(-2, 2, n).astype(dtype), rng.uniform(-2, 2, n).astype(dtype)
    gx, gy = (np.concatenate(r) for r in zip(*(G(x[k:k + 999], y[k:k + 999]) for k in range(0, n, 999))))
    X, Y = sp.symbols("x y")
    e = (X ** 3 - 2 * X * Y) / (1 + X * X) + sp.sqrt(1 + Y * Y) * X
    d = sp.lambdify((X, Y), [sp.diff(e, X), sp.diff(e, Y)], "mpmath")
    tol = 1e-13 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(np.array([[float(v) for v in d(float(a), float(b))] for a, b in zip(x[:20], y[:20])]),
                               np.stack([gx[:20], gy[:20]], 1), rtol=tol, atol=tol)
    for mode in (1, 2, 0):
        G.plan.stores.force = mode
        big = G(x, y)
        np.testing.assert_array_equal(big[0], gx)
        np.testing.assert_array_equal(big[1], gy)
    G.plan.stores.force = None
    for k in (0, 1, n - 1):
        assert G(x[k], y[k]) == (gx[k], gy[k])
    one = build.build(G.key + "_one", G.c_source, extra_flags=G.kernel.cflags)
    kernel = one.kernel(TARGETS["cpu", dtype].entry(G.c_name, "call"), G.dtype, [(), ()], G.result_shapes(), (), 0,
                        None)
    for mode in (1, 0):
        outs = [np.empty(n, dtype), np.empty(n, dtype)]
        run(kernel, mode, [x, y], outs)
        np.testing.assert_array_equal(outs[0], gx)
        np.testing.assert_array_equal(outs[1], gy)


def test_results_that_are_numbers_only():
    """A quadratic's Hessian is all numbers: the lane code computes nothing for it."""
    A = np.array([[2.0, 1.0, 0.0, 0.0, 0.5], [1.0, 3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 4.0, 0.0, 0.0],
                  [0.0, 0.0, 0.0, 1.0, 0.0], [0.5, 0.0, 0.0, 0.0, 6.0]])

    def q(x):
        return 0.5 * sum(A[i, j] * x[i] * x[j] for i in range(5) for j in range(5))
    H = symgrad.compile(q, shapes=[(5,)]).hessian
    x = np.random.default_rng(6).normal(size=(DEFAULT.stream_bytes // 200 + 3, 5))
    np.testing.assert_array_equal(H(x), np.broadcast_to(A, (len(x), 5, 5)))
    np.testing.assert_array_equal(H(x[:3]), np.broadcast_to(A, (3, 5, 5)))


def test_store_modes_of_single_results_give_the_same_bytes():
    G = symgrad.compile(seed).grad
    n = DEFAULT.stream_bytes // 8 + 77
    x = np.random.default_rng(7).uniform(-1.5, 2.5, n)
    ref = G(x)
    plan = G.plan
    for mode in (1, 2, 0):
        plan.stores.force = mode
        np.testing.assert_array_equal(G(x), ref)
    plan.stores.force = None


def test_store_policy_tries_every_mode_then_keeps_the_fastest_and_rechecks():
    cost = {1: 3.0, 2: 1.0, 0: 2.0}  # ranked unlike MODES: the policy must follow the timings
    s = _Stores()
    trials = []
    for _ in range(len(_Stores.MODES) * _Stores.TRIALS):  # every mode first, in turn
        m = s.pick()
        trials.append(m)
        s.record(m, cost[m])
    assert trials == list(_Stores.MODES) * _Stores.TRIALS
    picks = []
    for _ in range(4 * _Stores.EXPLORE):
        m = s.pick()
        picks.append(m)
        s.record(m, cost[m])
    rechecks = [m for k, m in enumerate(picks) if m != 2]
    assert sorted(rechecks) == [0, 0, 1, 1]  # the slower modes re-timed in turn, every EXPLORE-th call
    assert picks.count(2) == len(picks) - 4
    for _ in range(_Stores.WINDOW):  # mode 2 gets slow: the fastest recent mode takes over
        s.record(2, 5.0)
    assert s.pick() == 0
    assert _Stores(force=1).pick() == 1 and _Stores(force=0).pick() == 0


def test_store_policy_keeps_calls_into_new_results_apart():
    """Calls writing results they make (page faults first) do not choose the mode of calls
    writing the caller's out=, nor these theirs."""
    fresh_cost, out_cost = {1: 9.0, 2: 1.0, 0: 2.0}, {1: 1.0, 2: 3.0, 0: 3.0}
    s = _Stores()
    for _ in range(len(_Stores.MODES) * _Stores.TRIALS):
        m = s.pick(True)
        s.record(m, fresh_cost[m], True)
        m = s.pick(False)
        s.record(m, out_cost[m], False)
    assert s.pick(False) == 1 and s.pick(True) == 2


def test_large_calls_feed_the_store_policy_and_derived_functions_keep_it():
    F = symgrad.compile(seed)
    assert F.grad is F.grad  # one derived Function, one loaded kernel, one policy
    x = np.random.default_rng(11).uniform(-1.5, 2.5, DEFAULT.stream_bytes // 8 + 5)
    ref = F.grad(x)
    calls = 1 + len(_Stores.MODES) * _Stores.TRIALS
    for _ in range(calls - 1):
        np.testing.assert_array_equal(F.grad(x), ref)
    stores = F.grad.plan.stores
    assert sum(stores.used.values()) == calls
    assert all(stores.used[m] >= _Stores.TRIALS for m in _Stores.MODES)


def test_small_batches_take_no_store_policy():
    G = symgrad.compile(seed).grad
    G(np.ones(10))
    before = dict(G.plan.stores.used)
    G(np.ones(1000))
    G(np.ones(2000)[::2])  # strided: the Python path, whose threshold this checks too
    assert G.plan.stores.used == before  # below STREAM_BYTES: plain blocks, nothing timed


def test_function_of_no_arguments():
    F = symgrad.compile(lambda: 2.0 * math.pi)
    assert F() == 2.0 * math.pi
    assert F() == 2.0 * math.pi  # the scalar path, once loaded


def test_result_without_entries_is_refused_clearly():
    F = symgrad.compile(lambda x: x[:0], shapes=[(3,)])
    with pytest.raises(symgrad.CompileError, match="no entries"):
        F(np.ones(3))


def test_arrays_not_aligned_to_their_items():
    """Inputs and outputs at odd byte offsets go through aligned copies: same numbers."""
    G = symgrad.compile(seed).grad
    x = np.random.default_rng(9).uniform(-1.5, 2.5, 1001)
    buf = bytearray(x.nbytes + 1)
    raw_in = np.ndarray(x.shape, np.float64, buffer=buf, offset=1)
    raw_in[...] = x
    assert not raw_in.flags.aligned
    raw_out = np.ndarray(x.shape, np.float64, buffer=bytearray(x.nbytes + 3), offset=3)
    assert G(raw_in, out=raw_out) is raw_out
    np.testing.assert_array_equal(raw_out, G(x))


@pytest.mark.parametrize("shape", [(3,), (5,), (9,)])
def test_tiles_are_whole_cache_lines_of_every_result(shape):
    """Results of 3, 5, 9 numbers per point: the tile still ends on a line boundary of each."""
    def f(x):
        return sum(math.sin(x[i]) * x[(i + 1) % len(x)] for i in range(len(x)))
    F = symgrad.compile(f, shapes=[shape])
    V = F.value_and_grad
    n = DEFAULT.stream_bytes // (8 * shape[0]) + 29
    x = np.random.default_rng(10).uniform(-2, 2, (n,) + shape)
    v, g = V(x)
    plan = V.plan
    for mode in (1, 2, 0):
        plan.stores.force = mode
        v2, g2 = V(x)
        np.testing.assert_array_equal(v2, v)
        np.testing.assert_array_equal(g2, g)
    plan.stores.force = None
    k = x[n // 2]
    np.testing.assert_allclose(g[n // 2], [math.cos(k[i]) * k[(i + 1) % len(k)] + math.sin(k[i - 1])
                                           for i in range(len(k))], rtol=1e-12)
    src = V.c_source
    assert "_tiles(" in src and plan.stores is not None
    tile = int(src.split("sg_nb = n / ")[1].split(";")[0])
    assert tile * 8 % 64 == 0 and tile * shape[0] * 8 % 64 == 0


def test_fixed_entry_table_is_not_miscompiled():
    """GCC 12 with AVX-512 folded the copy of a constant table's range [228, 284) of a
    441-float result into a repeating vector pattern (ones at 248..258 that the table does
    not hold): found by the differential fuzz in a float32 Hessian. Tables are now read
    through an optimisation barrier."""
    v = sp.symbols("v0:3", real=True)
    computed = [(0, 4), (44, 52), (76, 80), (88, 96), (112, 116), (224, 228), (284, 288), (296, 300),
                (304, 308), (332, 336), (364, 368), (380, 384), (392, 396), (412, 416), (440, 441)]
    comp = {k for a, b in computed for k in range(a, b)}
    exprs = [v[0] * v[1] + k if k in comp else (1 if k in (244, 246) else 0) for k in range(441)]
    want = np.array([1 + k if k in comp else (1 if k in (244, 246) else 0) for k in range(441)])
    for dtype in ("float32", "float64"):
        F = symgrad.from_sympy(exprs, [list(v)], dtype=dtype)
        np.testing.assert_array_equal(F(np.ones((5, 3), dtype=dtype)), np.tile(want, (5, 1)))


def test_a_compiler_without_a_preferred_vector_width_builds_long_kernels(monkeypatch, tmp_path):
    """GCC before 8 knows no -mprefer-vector-width (block_flags of a kernel past
    Options.block_vector_ops): the kernel is built without it, and computes the same numbers."""
    from symgrad.build import host, pch
    old = tmp_path / "cc"
    old.write_text("#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in -mprefer-vector-width=*)\n"
                   "  echo \"cc: error: unrecognized command line option '$a'\" >&2; exit 1;; esac; done\n"
                   f"exec {host.compiler()[0]} \"$@\"\n")
    old.chmod(0o755)
    x = np.linspace(0.0, 3.0, 30) + np.repeat([0.0, 0.5, 1.0], 10)
    want = symgrad.compile(pairs10, [(30,)]).grad(x)
    monkeypatch.setenv("CC", str(old))
    monkeypatch.setattr(pch, "DIR", f"__pch_test_{os.getpid()}__")
    try:
        G = symgrad.compile(pairs10, [(30,)], options=symgrad.Options(max_stack_bytes=DEFAULT.max_stack_bytes + 8)).grad
        assert set(TARGETS["cpu", "float64"].block_flags) <= set(G.kernel.cflags)  # asked for, and refused
        np.testing.assert_array_equal(G(x), want)
    finally:
        shutil.rmtree(build.csrc_dir() / pch.DIR, ignore_errors=True)
