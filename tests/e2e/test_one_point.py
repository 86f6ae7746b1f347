"""Options.one_point: single points run a one-lane copy of each kernel, and every number it
gives is, bit for bit, what the blocks of W lanes give that point in a batch."""
import math

import numpy as np
import pytest

import symgrad


def many_calls(x):
    """Every vector maths function of csrc/symgrad_rt.h's lists that tracing reaches, and an
    argument whose derivatives are constants (fixed entries: 4 in the gradient, zeros in the
    Hessian)."""
    a, b, c = x[0], x[1], x[2]
    return (math.sin(3 * a) * math.exp(-0.5 * b * b) + math.log(1 + a * a * b * b) + math.atan2(b, a + 3.0)
            + math.tanh(a * b) + math.hypot(a, b) + (1.5 + b * b) ** 0.3 + math.erf(a - b)
            + math.cos(b) * math.atan(a) + math.sinh(0.3 * a) * math.cosh(0.2 * b) + math.asinh(a * b)
            + math.expm1(0.1 * a) + math.log1p(b * b) + math.cbrt(2.0 + a) + math.log2(3.0 + b * b)
            + math.log10(2.0 + a * a) + math.erfc(b) + math.tan(0.2 * a) + math.asin(0.3 * math.tanh(b))
            + math.acos(0.3 * math.tanh(a)) + math.acosh(2.0 + a * a) + math.atanh(0.5 * math.tanh(b))
            + 2.0 ** (0.3 * a) + 4.0 * c)


CONFIGS = [("float64", "double"), ("float32", "double"), ("float32", "float")]


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"{c[0]}-{c[1]}")
def built(request):
    dtype, math32 = request.param
    F = symgrad.compile(many_calls, shapes=[(3,)], dtype=dtype,
                        options=symgrad.Options(one_point=True, float32_math=math32))
    F.build(kinds=("value", "grad", "hessian", "value_and_grad"))
    rng = np.random.default_rng(7)
    return F, rng.uniform(-1.5, 1.5, (301, 3)).astype(dtype)


@pytest.mark.parametrize("kind", ["value", "grad", "hessian", "value_and_grad"])
def test_single_points_run_one_lane_bit_for_bit_the_blocks(built, kind):
    F, X = built
    G = F if kind == "value" else getattr(F, kind)
    assert G.plan.one_point  # the library showed one variant per maths function
    whole = G(X)
    for k in range(len(X)):
        one = G(X[k])
        if kind == "value_and_grad":
            np.testing.assert_array_equal(one[0], whole[0][k])
            np.testing.assert_array_equal(one[1], whole[1][k])
        else:
            np.testing.assert_array_equal(one, whole[k])
    for n in (2, 3, 5):  # tails of a batch keep the blocks
        part = G(X[:n])
        for got, want in zip(part if kind == "value_and_grad" else [part],
                             whole if kind == "value_and_grad" else [whole]):
            np.testing.assert_array_equal(got, want[:n])


def test_one_lane_values_and_fixed_entries(built):
    F, X = built
    exact = X.dtype == np.float64
    for k in range(0, len(X), 30):
        x = X[k]
        want = many_calls([float(v) for v in x])
        np.testing.assert_allclose(F(x), want, rtol=1e-13 if exact else 1e-6)
        g, h = F.grad(x), F.hessian(x)
        assert g[2] == 4.0 and not h[2].any() and not h[:, 2].any()
        v, g2 = F.value_and_grad(x)
        np.testing.assert_array_equal(g2, g)
        eps = 1e-6
        fd = [(many_calls(x.astype(float) + eps * e) - many_calls(x.astype(float) - eps * e)) / (2 * eps)
              for e in np.eye(3)]
        np.testing.assert_allclose(g, fd, rtol=1e-5 if exact else 1e-4, atol=1e-6)


def test_one_lane_path_and_python_path_agree_for_views_and_out(built):
    F, X = built
    G = F.grad
    want = G(X)
    wide = np.zeros((len(X), 9), X.dtype)
    wide[:, ::3] = X
    out = np.full(3, np.nan, X.dtype)
    for k in (0, 100, 300):
        np.testing.assert_array_equal(G(wide[k, ::3]), want[k])  # strided: the Python path, one point
        G(X[k], out=out)
        np.testing.assert_array_equal(out, want[k])


def powers(x):
    """Calls GCC would rewrite as builtins (pow(x, 0.5) as a square root in a vectorised loop,
    pow(x, 2.0) as x*x, hypot(x, 0.0) as fabs): symgrad's flags keep each call as written, in
    the blocks and in the one-lane copy alike."""
    return [x ** 0.5, math.pow(x, 0.5), x ** 1.5, (x * x + 1.0) ** 2.5, x ** 2, x ** -1, math.hypot(x, 0.0),
            math.exp(x) ** 0.5]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_powers_and_folds_one_lane_bit_for_bit_the_blocks(dtype):
    F = symgrad.compile(powers, dtype=dtype,
                        options=symgrad.Options(one_point=True, max_mul_pow=0, float32_math="float"))
    J, H = F.jacobian, F.jacobian.jacobian
    F.build(kinds=("value", "jacobian"))
    x = np.concatenate([np.random.default_rng(5).uniform(0.0, 4.0, 400),
                        [-0.0, 0.0, np.inf, -np.inf, np.nan, 1e-310, 3e38]]).astype(dtype)
    for G in (F, J, H):
        assert G.plan.one_point
        with np.errstate(all="ignore"):
            whole = G(x)
            for k in range(len(x)):
                np.testing.assert_array_equal(G(x[k]), whole[k])


def test_half_power_at_signed_zero_and_infinity_is_pythons():
    """x ** 0.5 is pow: (-0.0) ** 0.5 is +0.0 and (-inf) ** 0.5 is +inf, as in Python, at
    every batch size (GCC's vectoriser had made it a square root: -0.0 and NaN in batches)."""
    F = symgrad.compile(lambda x: x ** 0.5)
    x = np.array([-0.0, -np.inf, -0.0, -np.inf, -0.0, -np.inf, -0.0, -np.inf, 4.0])
    with np.errstate(all="ignore"):
        got = F(x)
    want = [(-0.0) ** 0.5, float("-inf") ** 0.5] * 4 + [2.0]
    assert [math.copysign(1, v) for v in got[::2]] == [1.0] * 5
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal([F(float(v)) for v in x], want)
