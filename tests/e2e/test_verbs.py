"""End-to-end: the founding case, the public verbs and their layouts, against independent references."""
import math

import mpmath
import numpy as np
import pytest
import sympy as sp

import symgrad
import symgrad.codegen
from symgrad.function import Function


def seed(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


X = sp.Symbol("x")
SEED = 64 * X * (1 - X) * (1 - 2 * X) ** 2 * (1 - 8 * X + 8 * X * X) ** 2


def mp_eval(expr, *points, dps=40):
    f = sp.lambdify(sorted(expr.free_symbols, key=str), expr, "mpmath")
    with mpmath.workdps(dps):
        return np.array([float(f(*[mpmath.mpf(float(v)) for v in p])) for p in zip(*points)])


def test_founding_question_exact():
    d = symgrad.compile(seed).grad(3.0)
    assert d == -75279680.0
    assert float(d) == -75279680.0
    assert isinstance(d, np.floating)


def test_founding_batch_matches_mpmath():
    xs = np.random.default_rng(1).uniform(-1.5, 2.5, 1000)
    got = symgrad.compile(seed).grad(xs)
    ref = mp_eval(sp.diff(SEED, X), xs)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


def test_fifth_derivative_is_exact_integer_polynomial():
    d5 = sp.diff(SEED, X, 5)
    xs = np.array([-1.0, 0.0, 0.5, 2.0, 3.0, 0.25])
    got = symgrad.derivative(seed, 5)(xs)
    ref = np.array([float(d5.subs(X, sp.nsimplify(v))) for v in xs])
    np.testing.assert_allclose(got, ref, rtol=1e-13)
    assert symgrad.compile(seed).derivative(0)(2.0) == seed(2.0)


def rosen8(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(7))


def test_rosenbrock_gradient_and_hessian_vs_scipy():
    opt = pytest.importorskip("scipy.optimize")
    rosen, rosen_der, rosen_hess = opt.rosen, opt.rosen_der, opt.rosen_hess
    F = symgrad.compile(rosen8, shapes=[(8,)])
    x = np.random.default_rng(2).uniform(-2, 2, (50, 8))
    np.testing.assert_allclose(F(x), [rosen(v) for v in x], rtol=1e-13)
    np.testing.assert_allclose(F.grad(x), [rosen_der(v) for v in x], rtol=1e-12, atol=1e-12)
    H = F.hessian(x)
    assert H.shape == (50, 8, 8)
    np.testing.assert_allclose(H, [rosen_hess(v) for v in x], rtol=1e-12, atol=1e-12)


def test_value_and_grad_shares_one_kernel():
    F = symgrad.compile(rosen8, shapes=[(8,)])
    x = np.random.default_rng(3).uniform(-2, 2, (7, 8))
    v, g = F.value_and_grad(x)
    a, b = x[:, :-1], x[:, 1:]  # Rosenbrock's value and gradient in closed form
    np.testing.assert_allclose(v, np.sum(100 * (b - a ** 2) ** 2 + (1 - a) ** 2, axis=1), rtol=1e-13)
    d = np.zeros_like(x)
    d[:, :-1] += -400 * a * (b - a ** 2) - 2 * (1 - a)
    d[:, 1:] += 200 * (b - a ** 2)
    np.testing.assert_allclose(g, d, rtol=1e-12, atol=1e-12)
    assert "value_and_grad_batch" in F.value_and_grad.c_source
    assert F.value_and_grad.c_source.count("void rosen8_value_and_grad_batch(") == 1


def polar(r, t):
    return (r * math.cos(t), r * math.sin(t), r * r)


def test_jacobian_of_vector_valued_function():
    J = symgrad.compile(polar).jacobian
    r, t = np.array([1.0, 2.0, 0.5]), np.array([0.3, -1.0, 2.0])
    jr, jt = J(r, t)
    assert jr.shape == (3, 3) and jt.shape == (3, 3)
    np.testing.assert_allclose(jr, np.stack([np.cos(t), np.sin(t), 2 * r], -1), rtol=1e-14)
    np.testing.assert_allclose(jt, np.stack([-r * np.sin(t), r * np.cos(t), 0 * r], -1), rtol=1e-14)
    values = symgrad.compile(polar)(r, t)
    np.testing.assert_allclose(values, np.stack([r * np.cos(t), r * np.sin(t), r * r], -1), rtol=1e-15)


def softmax_like(x):
    e = np.exp(x)
    return e / np.sum(e)


def test_jacobian_array_output_and_argument():
    J = symgrad.jacobian(softmax_like, shapes=[(4,)])
    x = np.array([[0.1, -0.3, 2.0, 0.7], [1.0, 1.0, 1.0, 1.0]])
    got = J(x)
    s = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    ref = np.einsum("bi,ij->bij", s, np.eye(4)) - np.einsum("bi,bj->bij", s, s)
    assert got.shape == (2, 4, 4)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-16)


def mixed(x, y):
    return x[0] ** 2 * y + math.sin(x[1] * y)


def test_hessian_of_several_arguments_is_tuple_of_tuples():
    H = symgrad.compile(mixed, shapes=[(2,), ()]).hessian
    x, y = np.array([0.7, -1.2]), 1.3
    (hxx, hxy), (hyx, hyy) = H(x, y)
    assert hxx.shape == (2, 2) and hxy.shape == (2,) and hyx.shape == (2,) and hyy.shape == ()
    s = math.sin(x[1] * y)
    c = math.cos(x[1] * y)
    np.testing.assert_allclose(hxx, [[2 * y, 0], [0, -y * y * s]], rtol=1e-14)
    np.testing.assert_allclose(hxy, [2 * x[0], c - x[1] * y * s], rtol=1e-14)
    np.testing.assert_allclose(hyx, hxy, rtol=1e-14)
    np.testing.assert_allclose(hyy, -x[1] ** 2 * s, rtol=1e-14)


def test_grad_argnums_follow_jax():
    gx = symgrad.grad(mixed, argnums=0, shapes=[(2,), ()])
    gy = symgrad.grad(mixed, argnums=1, shapes=[(2,), ()])
    both = symgrad.grad(mixed, shapes=[(2,), ()])
    x, y = np.array([0.7, -1.2]), 1.3
    assert isinstance(gx(x, y), np.ndarray) and gx(x, y).shape == (2,)
    assert np.ndim(gy(x, y)) == 0
    a, b = both(x, y)
    np.testing.assert_array_equal(a, gx(x, y))
    np.testing.assert_array_equal(b, gy(x, y))
    np.testing.assert_allclose(b, x[0] ** 2 + x[1] * math.cos(x[1] * y), rtol=1e-14)


def kinks(x, y):
    return max(x, y) + 2 * min(x, 0.5) + abs(x * y)


def test_kinks_have_one_sided_derivatives():
    gx, gy = symgrad.grad(kinks)(np.array([-1.0, 0.2, 0.7, 2.0]), np.array([0.0, 1.0, -1.0, 1.5]))
    # d/dx: [x > y] + 2 [x < 0.5] + y sign(xy)
    np.testing.assert_array_equal(gx, [0 + 2 + 0, 0 + 2 + 1, 1 + 0 + 1, 1 + 0 + 1.5])
    np.testing.assert_array_equal(gy, [1 + 0, 1 + 0.2, 0 - 0.7, 0 + 2.0])  # d|xy|/dy = x sign(xy)


def test_broadcasting_two_arguments():
    F = symgrad.compile(lambda x, y: x * math.exp(y) + y * y)
    x = np.linspace(-1, 1, 5)[:, None]
    y = np.linspace(0, 2, 4)[None, :]
    v = F(x, y)
    gx, gy = F.grad(x, y)
    assert v.shape == gx.shape == gy.shape == (5, 4)
    # exp runs as a SIMD function (within 4 ulp of glibc's scalar exp)
    np.testing.assert_allclose(v, x * np.exp(y) + y * y, rtol=1e-15, atol=4e-16)
    np.testing.assert_allclose(gx, np.broadcast_to(np.exp(y), (5, 4)), rtol=4e-15)
    np.testing.assert_allclose(gy, x * np.exp(y) + 2 * y, rtol=4e-15)
    # core shapes stay trailing while batch dimensions broadcast
    G = symgrad.grad(lambda a, s: s * np.dot(a, a), argnums=0, shapes=[(3,), ()])
    a = np.arange(6.0).reshape(2, 1, 3)
    s = np.array([1.0, 2.0, 3.0])
    assert G(a, s).shape == (2, 3, 3)
    np.testing.assert_allclose(G(a, s), 2 * s[None, :, None] * a, rtol=1e-15)


def test_float32_kernels_compute_in_double_and_round_once():
    """float32 in memory, double arithmetic: each result is the float64 result rounded."""
    F, F64 = symgrad.compile(seed, dtype="float32"), symgrad.compile(seed)
    xs = np.linspace(-1.0, 2.0, 101).astype(np.float32)
    g = F.grad(xs)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, F64.grad(xs.astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(F.hessian(xs), F64.hessian(xs.astype(np.float64)).astype(np.float32))
    ref = mp_eval(sp.diff(SEED, X), xs)
    scale = np.maximum(np.abs(ref), 1e3)  # cancellation near the roots of f': compare on the scale of its terms
    assert np.all(np.abs(g - ref) <= np.spacing(np.abs(ref).astype(np.float32)) / 2 + 1e-12 * scale)
    assert symgrad.compile(lambda x: math.sin(x), dtype="float32")(np.float32(1.0)).dtype == np.float32


def test_float32_equals_float64_rounded_with_vector_maths_and_array_arguments():
    """Review find: float32 kernels ran 8 double lanes, float64 ones 4: libmvec's 8-lane tanh
    differs from its 4-lane one in the last bit, and a cancellation made that a float32 ulp."""
    def f(x):
        return np.tanh(x[0]) - np.tanh(x[1]) + np.cbrt(x[0]) - np.cbrt(x[1]) + np.log1p(x[0] ** 2) \
            - np.log1p(x[1] ** 2) + np.expm1(x[0]) - np.expm1(x[1]) + np.arctan(x[0]) - np.arctan(x[1])
    a = np.random.default_rng(0).uniform(-2, 2, 20000).astype(np.float32)
    X = np.stack([a, np.nextafter(a, np.float32(3))], -1)
    for F32, F64 in ((symgrad.compile(f, shapes=[(2,)], dtype="float32"), symgrad.compile(f, shapes=[(2,)])),
                     (symgrad.compile(f, shapes=[(2,)], dtype="float32").grad, symgrad.compile(f, shapes=[(2,)]).grad)):
        np.testing.assert_array_equal(F32(X), F64(X.astype(np.float64)).astype(np.float32))


def test_float32_equals_float64_rounded_in_loops_of_arrays():
    """Review find: a loop over an array (a kernel that keeps arrays as loops) runs its
    remainder iterations apart; GCC gave the float64 kernel's libmvec's 2-lane tanh there and
    the float32 one's scalar tanh (46 of 40,000 entries a float32 ulp off)."""
    def f(x):
        return np.tanh(x[:, 0]) - np.tanh(x[:, 1])
    a = np.random.default_rng(0).uniform(-2, 2, (10, 1000)).astype(np.float32)
    X = np.stack([a, np.nextafter(a, np.float32(3))], -1)
    F32, F64 = symgrad.compile(f, shapes=[(1000, 2)], dtype="float32"), symgrad.compile(f, shapes=[(1000, 2)])
    assert F64.loops
    np.testing.assert_array_equal(F32(X), F64(X.astype(np.float64)).astype(np.float32))


def test_float32_scalar_call_past_float32_range_warns_as_the_array_call():
    """Review find: a Python float past 3.4e38 became inf in the scalar fast path silently."""
    G = symgrad.compile(lambda x, y: x * y, dtype="float32")
    for x in (1e39, np.array(1e39), 10 ** 50):
        with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
            assert G(x, 1e-10) == np.inf
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        G(1e39, 1.0)
    assert G(3.0, 2.0) == np.float32(6.0) and G(math.inf, 2.0) == np.inf
    # the other arguments keep their own checks and shapes (review find: they were cast first)
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        r = G(1e39, np.array([2.0, -3.0]))
    np.testing.assert_array_equal(r, np.array([np.inf, -np.inf], np.float32))
    for y, error in (("5", "argument 'y' must be real numbers"), (1j, "argument 'y' is complex")):
        with pytest.warns(RuntimeWarning, match="overflow"), pytest.raises(TypeError, match=error):
            G(1e39, y)  # x is cast first


def test_a_compiled_function_is_never_silently_recompiled_as_something_else(tmp_path):
    F = symgrad.compile(seed)
    assert symgrad.compile(F) is F and symgrad.compile(F, dtype="float64") is F
    for kw, match in ((dict(dtype="float32"), "dtype='float64'.*cannot take dtype='float32'"),
                      (dict(options=symgrad.Options(float32_math="float")), "cannot take options="),
                      (dict(shapes=[(2,)]), "cannot take shapes=")):
        with pytest.raises(ValueError, match=match):
            symgrad.compile(F, **kw)
        with pytest.raises(ValueError, match=match):
            symgrad.grad(F, **kw)
        with pytest.raises(ValueError, match=match):
            symgrad.codegen.generate(F, tmp_path / "gen", **kw)
    G = symgrad.compile(seed, dtype="float32")
    assert symgrad.compile(G) is G and symgrad.grad(G)(np.float32(3.0)) == np.float32(-75279680)
    assert symgrad.compile(F, shapes=[()]) is F  # its own shapes, in either spelling
    A = symgrad.compile(lambda x: x @ x, shapes=[3])
    assert symgrad.compile(A, shapes=[(3,)]) is A and symgrad.compile(A, shapes=[3]) is A
    for bad in (0, "", "float16"):
        with pytest.raises(ValueError, match="dtype must be 'float64' or 'float32'"):
            symgrad.compile(seed, dtype=bad)


def test_float32_math_float_is_single_precision_throughout():
    opts = symgrad.Options(float32_math="float")
    F = symgrad.compile(seed, dtype="float32", options=opts)
    xs = np.linspace(-1.0, 2.0, 101).astype(np.float32)
    g = F.grad(xs)
    ref = mp_eval(sp.diff(SEED, X), xs)
    scale = np.maximum(np.abs(ref), 1e3)
    assert g.dtype == np.float32 and np.max(np.abs(g - ref) / scale) < 1e-4
    assert "double" not in F.grad.c_source.split("symgrad_rt.h")[1]
    assert "double" in symgrad.compile(seed, dtype="float32").grad.c_source.split("symgrad_rt.h")[1]
    assert "sinf(" in symgrad.compile(math.sin, dtype="float32", options=opts).c_source
    with pytest.raises(ValueError, match="float32_math must be 'double' or 'float', got 'half'"):
        symgrad.Options(float32_math="half")


def test_out_argument():
    F = symgrad.compile(mixed, shapes=[(2,), ()])
    x = np.random.default_rng(4).uniform(-1, 1, (6, 2))
    y = np.linspace(0, 1, 6)
    ox, oy = np.empty((6, 2)), np.empty(6)
    res = F.grad(x, y, out=(ox, oy))
    assert res[0] is ox and res[1] is oy
    rx, ry = F.grad(x, y)
    np.testing.assert_array_equal(ox, rx)
    np.testing.assert_array_equal(oy, ry)
    o = np.empty(6)
    assert F(x, y, out=o) is o
    np.testing.assert_array_equal(o, F(x, y))


def test_expr_and_c_source():
    F = symgrad.compile(seed)
    assert sp.expand(F.expr - SEED.subs(X, sp.Symbol("x", real=True))) == 0
    xr = sp.Symbol("x", real=True)
    assert sp.expand(F.grad.expr - sp.diff(SEED.subs(X, xr), xr)) == 0
    src = F.grad.c_source
    assert "void seed_grad(" in src and "seed_grad_batch(int64_t n" in src
    assert "pow(" not in src  # integer powers are multiplications


def test_constant_and_identity_functions():
    F = symgrad.compile(lambda x, y: 3.5)
    assert F(1.0, 2.0) == 3.5
    gx, gy = F.grad(np.ones(3), 2.0)
    np.testing.assert_array_equal(gx, 0)
    np.testing.assert_array_equal(gy, 0)
    np.testing.assert_array_equal(symgrad.grad(lambda x: x)(np.arange(3.0)), 1)


def test_empty_batch():
    F = symgrad.compile(seed)
    assert F.grad(np.empty(0)).shape == (0,)


def test_value_and_grad_and_hessian_build_on_the_gradient_already_taken(monkeypatch):
    """One gradient program per Function family: F.grad, F.value_and_grad and F.hessian
    take the gradient of the traced program once (the Hessian starts from it)."""
    from symgrad.transforms import derive
    calls = []
    grad = derive.grad
    monkeypatch.setattr(derive, "grad", lambda prog, argnums, **kw: calls.append(argnums) or grad(prog, argnums, **kw))
    c = 100.0 + 2.0 ** -10  # a program no other test compiles: no kernel loaded before (those skip differentiating)

    def rosen(x):
        return sum(c * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))
    x0, x1, x2, x3 = x = np.array([0.3, -0.2, 1.1, 0.7])
    want = [-4 * c * x0 * (x1 - x0 ** 2) - 2 * (1 - x0),
            2 * c * (x1 - x0 ** 2) - 4 * c * x1 * (x2 - x1 ** 2) - 2 * (1 - x1),
            2 * c * (x2 - x1 ** 2) - 4 * c * x2 * (x3 - x2 ** 2) - 2 * (1 - x2),
            2 * c * (x3 - x2 ** 2)]
    for opts in (symgrad.Options(), symgrad.Options(max_inlined_nodes=8)):  # two kernels: each takes it once
        calls.clear()
        F = symgrad.compile(rosen, shapes=[(4,)], options=opts)
        g = F.grad(x)
        v, g2 = F.value_and_grad(x)
        h = F.hessian(x)
        assert calls == [(0,)], calls  # the gradient once
        np.testing.assert_allclose(g, want, rtol=1e-14)
        np.testing.assert_allclose(g2, g, rtol=1e-14)
        assert v == pytest.approx(rosen(x), rel=1e-15)
        assert h[0, 0] == pytest.approx(12 * c * x0 ** 2 - 4 * c * x1 + 2, rel=1e-14)
        assert h[3, 3] == 2 * c and h[0, 1] == pytest.approx(-4 * c * x0, rel=1e-15)


def test_grad_and_value_and_grad_share_one_compiled_kernel(caplog, monkeypatch):
    """F.grad of a large program runs F.value_and_grad's kernel with the value not stored:
    after one, the other compiles nothing, and the gradients are the same bits (batches with
    tails, the one-point call, tiles of a large batch, float32, several arguments); the
    standalone gradient prints the same statements. A small program's pair keep a kernel each."""
    import logging

    from symgrad.pipeline import source
    monkeypatch.setattr(logging.getLogger("symgrad.progress"), "propagate", True)
    monkeypatch.setattr(source, "PROGRESS_SECONDS", 0.0)
    rng = np.random.default_rng(11)

    def f(x, y):
        return sum(math.sin(x[i] * y) / (1.25 + x[i + 1] ** 2) for i in range(3)) + math.exp(0.3125 * y)
    small = symgrad.compile(f, shapes=[(4,), ()])
    assert "f_grad_batch(" in small.grad.c_source and "f_value_and_grad" not in small.grad.c_source
    for dtype, opts in (("float64", symgrad.Options(stream_bytes=4096, large_kernel_ops=1)),
                        ("float32", symgrad.Options(large_kernel_ops=1))):
        F = symgrad.compile(f, shapes=[(4,), ()], dtype=dtype, options=opts)
        assert F.grad.c_source == F.value_and_grad.c_source
        x, y = rng.uniform(-1, 1, (1001, 4)), rng.uniform(-1, 1, 1001)
        gx, gy = F.grad(x, y)
        with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
            caplog.clear()
            v, (vx, vy) = F.value_and_grad(x, y)
            assert caplog.text == ""  # nothing traced, differentiated or compiled again
        assert gx.dtype == vx.dtype == np.dtype(dtype)
        for n in (1, 3, 5, 17, 1001):
            a, b = F.grad(x[:n], y[:n]), F.value_and_grad(x[:n], y[:n])[1]
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        assert np.array_equal(gx, vx) and np.array_equal(gy, vy)
        p, q = x[7].astype(float), float(y[7])
        want_y = sum(p[i] * math.cos(p[i] * q) / (1.25 + p[i + 1] ** 2) for i in range(3)) + 0.3125 * math.exp(0.3125 * q)
        assert float(gy[7]) == pytest.approx(want_y, rel=1e-6 if dtype == "float32" else 1e-13)
        assert v[7] == pytest.approx(f(p, q), rel=1e-6 if dtype == "float32" else 1e-14)
        g0 = F.grad(list(p), q)  # one point
        assert np.array_equal(g0[0], F.grad(x[7], y[7])[0])
        G = F.grad_wrt(1)  # by y alone: runs a value_and_grad kernel by y
        np.testing.assert_allclose(G(x, y), gy, rtol=1e-6 if dtype == "float32" else 1e-13)


def test_hessian_of_pair_terms_vs_mpmath():
    """Pair terms summed (the edge-pushing Hessian's case: sparse, symmetric), a select, a
    function of the whole sum, against mpmath's partial derivatives at 40 digits."""
    def pairs(x, exp, log, atan):
        e = 0.0
        for i in range(4):
            for j in range(i + 1, 4):
                d = x[i] - x[j]
                e = e + exp(-d * d) * (x[i] if x[i] > x[j] else 0.5 * x[j])
        return e * log(2 + x[0] ** 2) + atan(x[1] * x[3])
    F = symgrad.compile(lambda x: pairs(x, math.exp, math.log, math.atan), shapes=[(4,)])
    x0 = [0.3, -0.7, 1.1, 0.45]
    H = F.hessian(np.array(x0))
    mpmath.mp.dps = 40
    ref = lambda *x: pairs(x, mpmath.exp, mpmath.log, mpmath.atan)  # noqa: E731
    for i in range(4):
        for j in range(4):
            order = [0] * 4
            order[i] += 1
            order[j] += 1
            want = float(mpmath.diff(ref, [mpmath.mpf(v) for v in x0], tuple(order)))
            assert H[i, j] == pytest.approx(want, rel=1e-13, abs=1e-14), (i, j)
    assert np.array_equal(H, H.T)


def test_build_of_several_kinds_is_one_c_compile(caplog, monkeypatch, cache_dir):
    """F.build(kinds=...) puts the kernels asked for into one library: one C compile (the cache
    holds the same library under each kind's key); each kind then runs its own kernel from it,
    and a kind asked for later compiles alone."""
    import glob
    import logging
    import os

    from symgrad.pipeline import source
    monkeypatch.setattr(logging.getLogger("symgrad.progress"), "propagate", True)
    monkeypatch.setattr(source, "PROGRESS_SECONDS", 0.0)

    def f(x, y):
        return math.sin(x) * y ** 3 + math.exp(0.4375 * x * y)  # a function no other test compiles
    F = symgrad.compile(f)
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F.build(kinds=("value", "grad", "hessian"))
        compiles = [r.getMessage() for r in caplog.records if "C compile took" in r.getMessage()]
        assert len(compiles) == 1 and "(3 kernels," in compiles[0], compiles
        libraries = []
        for G in (F, F.grad, F.hessian):
            [path] = [p for p in glob.glob(os.path.join(cache_dir, "**", f"_sg_{G.key}-*"), recursive=True)
                      if not p.endswith((".c", ".json"))]
            with open(path, "rb") as fh:
                libraries.append(fh.read())
        assert libraries[0] == libraries[1] == libraries[2]
        caplog.clear()
        x, y = np.array([0.3, -1.2]), np.array([0.7, 2.0])
        e = np.exp(0.4375 * x * y)
        np.testing.assert_allclose(F(x, y), np.sin(x) * y ** 3 + e, rtol=1e-15)
        gx, gy = F.grad(x, y)
        np.testing.assert_allclose(gx, np.cos(x) * y ** 3 + 0.4375 * y * e, rtol=1e-14)
        np.testing.assert_allclose(gy, 3 * np.sin(x) * y ** 2 + 0.4375 * x * e, rtol=1e-14)
        (hxx, hxy), (hyx, hyy) = F.hessian(x, y)
        np.testing.assert_allclose(hxx, -np.sin(x) * y ** 3 + 0.4375 ** 2 * y * y * e, rtol=1e-14)
        np.testing.assert_allclose(hxy, 3 * np.cos(x) * y ** 2 + 0.4375 * e + 0.4375 ** 2 * x * y * e, rtol=1e-14)
        np.testing.assert_array_equal(hxy, hyx)
        np.testing.assert_allclose(hyy, 6 * np.sin(x) * y + 0.4375 ** 2 * x * x * e, rtol=1e-14)
        assert not [r for r in caplog.records if "C compile" in r.getMessage()]  # all three were built
        F.jacobian(x, y)
        assert len([r for r in caplog.records if "C compile took" in r.getMessage()]) == 1  # the Jacobian alone


def test_a_verb_called_as_a_method_is_its_function_called(monkeypatch):
    """F.grad(x) runs F.grad's Function with x (in C, the verb a method descriptor: no
    attribute lookup, no argument tuple), keywords and out= included; Function.grad(F, x) too."""
    F = symgrad.compile(lambda x, y: math.sin(x) * y + x * x)
    G = F.grad
    x, y = np.array([0.5, -1.0, 2.0]), np.array([3.0, 0.25, -1.5])
    monkeypatch.setattr(Function, "_derive", lambda *a, **k: pytest.fail("a verb was derived again"))
    for got in (F.grad(x, y), Function.grad(F, x, y), F.grad(x, y=y), F.grad(x[0], y[0])):
        want = G(*np.broadcast_arrays(x, y)) if np.ndim(got[0]) else G(x[0], y[0])
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(F.grad(x, y)[0], np.cos(x) * y + 2 * x, rtol=1e-15)
    out = (np.empty(3), np.empty(3))
    r = F.grad(x, y, out=out)
    assert r[0] is out[0] and r[1] is out[1]
    np.testing.assert_allclose(out[1], np.sin(x), rtol=1e-15)
    with pytest.raises(TypeError, match="symgrad Function"):
        Function.grad(3.0, 1.0)
