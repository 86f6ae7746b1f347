"""Real by construction, IEEE at the edges: what numpy computes, never a complex detour."""
import math

import mpmath
import numpy as np
import pytest

import symgrad

EDGES = np.array([-2.0, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan])


def same(a, b):
    """Equal as IEEE values, NaN to NaN and the sign of zero included."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return bool(np.all((np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))))


@pytest.mark.parametrize("f", [lambda x: x / 0.0, lambda x: x / -0.0, lambda x: (x + 1.0) / 0.0,
                               lambda x: x / (2.0 - 2.0), lambda x: 1.0 / (x - x) * 0.0 + x / 0.0])
def test_division_by_a_zero_constant_is_what_numpy_gives(f):
    with np.errstate(all="ignore"):
        ref = f(EDGES)
    assert same(symgrad.compile(f)(EDGES), ref)


def test_zero_to_a_negative_power_and_negative_bases():
    with np.errstate(all="ignore"):
        assert same(symgrad.compile(lambda x: x * (0.0 ** -1.0 if False else 1.0) + (x - x) ** -2.0)(2.0), np.inf)
        assert same(symgrad.compile(lambda x: x + (x - x - 8.0) ** (1 / 3))(1.0), np.nan)  # numpy: nan
        assert same(symgrad.compile(lambda x: x + math.log(x - x - 2.0 + 2.0))(1.0), -np.inf)


@pytest.mark.parametrize("f, ref", [
    (lambda x: max(x, math.nan), lambda x: max(x, math.nan)),            # Python: x
    (lambda x: max(math.nan, x), lambda x: max(math.nan, x)),            # Python: nan
    (lambda x: min(x, math.nan), lambda x: min(x, math.nan)),
    (lambda x: symgrad.where(x > math.nan, x, -x), lambda x: -x),        # x > nan is False
    (lambda x: symgrad.where(x != math.nan, x, -x), lambda x: x),        # x != nan is True
    (lambda x: np.where(x > np.nan, x, 2 * x), lambda x: 2 * x),
])
def test_comparisons_with_nan_constants_behave_as_in_python(f, ref):
    F = symgrad.compile(f)
    for x in (-1.5, 0.0, 2.5):
        assert same(F(x), ref(x))


def test_numpy_maximum_and_minimum_propagate_nan_fmax_fmin_ignore_it():
    a = np.array([1.0, np.nan, 2.0, np.nan, -1.0, 3.0])
    b = np.array([np.nan, 1.0, 1.0, np.nan, -1.0, 4.0])
    for fn in (np.maximum, np.minimum, np.fmax, np.fmin):
        assert same(symgrad.compile(lambda x, y: fn(x, y))(a, b), fn(a, b)), fn
        assert same(symgrad.compile(lambda x: fn(x, np.nan))(a), fn(a, np.nan)), fn
        assert same(symgrad.compile(lambda x: fn(np.nan, x))(a), fn(np.nan, a)), fn
    g = symgrad.compile(lambda x, y: np.maximum(x, y)).grad(np.array([1.0, 3.0]), np.array([2.0, 1.0]))
    np.testing.assert_array_equal(g[0], [0.0, 1.0])
    np.testing.assert_array_equal(g[1], [1.0, 0.0])


def test_isnan_isinf_isfinite_are_conditions():
    F = symgrad.compile(lambda x: symgrad.where(np.isnan(x), 0.0, x) + symgrad.where(math.isinf(x), 1.0, 0.0)
                        + symgrad.where(np.isfinite(x), 10.0, 0.0))
    assert same(F(np.array([1.0, np.nan, np.inf])), [11.0, 0.0, np.inf + 1.0])


def test_out_arrays_that_alias_are_refused():
    G = symgrad.compile(lambda x, y: x * y * y)
    a = np.empty(3)
    with pytest.raises(ValueError, match="overlap"):
        G.grad(np.ones(3), np.ones(3), out=(a, a))
    big = np.empty(6)
    with pytest.raises(ValueError, match="overlap"):
        G.grad(np.ones(3), np.ones(3), out=(big[:3], big[2:5]))
    out = (np.empty(3), np.empty(3))
    G.grad(np.ones(3), np.full(3, 2.0), out=out)
    np.testing.assert_array_equal(out[0], 4.0)
    np.testing.assert_array_equal(out[1], 4.0)


def test_cube_root_under_abs_is_real_the_fuzz_case():
    """d/dphi |cbrt(phi) + 5| at phi = -1.0002 (was -0.1666 from re/im/atan2 terms)."""
    F = symgrad.compile(lambda phi: abs(math.cbrt(phi) + 5.0))
    phi = -1.0002
    with mpmath.workdps(60):
        p = mpmath.mpf(phi)
        root = -mpmath.cbrt(-p)
        ref = float(mpmath.sign(root + 5) / (3 * root ** 2))
    assert F.grad(phi) == pytest.approx(ref, rel=1e-14)
    assert F.grad(phi) == pytest.approx(0.3333, abs=1e-3)
    assert "re(" not in str(F.grad.expr) and "im(" not in str(F.grad.expr)


@pytest.mark.parametrize("f", [
    lambda x: abs(x ** 2.0 - 1.0),               # abs of what sympy cannot prove real
    lambda x: x * np.sign(x ** 2.0 - 1.0),        # sign: derivative 0, never Derivative(...)
    lambda x: abs(math.log(x) - 1.0) * x,
    lambda x: abs(x ** 0.5 + math.asin(x / 4.0)),
    lambda x: math.hypot(x, -1.0) + math.hypot(-1.0, 2.0) * x,
    lambda x: abs(math.cbrt(x * x - 4.0)) + math.cbrt(-8.0) * x,
])
def test_derivatives_stay_real(f):
    F = symgrad.compile(f)
    for order in (1, 2, 3):
        D = F.derivative(order)
        for x in (0.7, 1.9, 3.1):
            got = D(x)
            h = 1e-4
            ref = (F.derivative(order - 1)(x + h) - F.derivative(order - 1)(x - h)) / (2 * h)
            assert got == pytest.approx(ref, rel=1e-4, abs=1e-6), (order, x)
