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
