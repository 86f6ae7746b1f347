"""numpy and scipy.special as other people's code uses them: scalar forms, empty reductions,
nan_to_num, 0 ** y, np.gradient, casts, scipy.special's functions. Values against numpy and
scipy on floats, derivatives against closed forms (a few loose checks by differences)."""
import math

import numpy as np
import pytest
import scipy.special as ss

import symgrad

# -- scalar forms: what numpy's functions do with a number --------------------------------------
C3 = np.array([0.5, -1.0, 2.0])
SCALAR = {  # name -> the call on a number x (traced, or a float for numpy)
    "sum": lambda x: np.sum(x), "prod": lambda x: np.prod(x, initial=2.0), "mean": lambda x: np.mean(x),
    "average": lambda x: np.average(x), "var": lambda x: np.var(x), "std": lambda x: np.std(x),
    "var_ddof": lambda x: np.var(x, ddof=1), "max": lambda x: np.max(x), "min": lambda x: np.min(x),
    "amax": lambda x: np.amax(x), "amin": lambda x: np.amin(x), "ptp": lambda x: np.ptp(x),
    "cumsum": lambda x: np.cumsum(x), "cumprod": lambda x: np.cumprod(x), "dot": lambda x: np.dot(x, 3.0),
    "vdot": lambda x: np.vdot(x, 2.0), "inner": lambda x: np.inner(x, 2.0), "outer": lambda x: np.outer(x, C3),
    "kron": lambda x: np.kron(x, C3), "stack": lambda x: np.stack([x, 2.0 * x]),
    "hstack": lambda x: np.hstack([x, x]), "vstack": lambda x: np.vstack([x, 1.0]),
    "column_stack": lambda x: np.column_stack([x, x]), "block": lambda x: np.block([x, 1.0]),
    "reshape": lambda x: np.reshape(x, (1, 1)), "ravel": lambda x: np.ravel(x),
    "transpose": lambda x: np.transpose(x), "flip": lambda x: np.flip(x), "roll": lambda x: np.roll(x, 1),
    "pad": lambda x: np.pad(x, 1), "polyval": lambda x: np.polyval(C3, x), "atleast_1d": lambda x: np.atleast_1d(x),
    "atleast_2d": lambda x: np.atleast_2d(x), "squeeze": lambda x: np.squeeze(x),
    "expand_dims": lambda x: np.expand_dims(x, 0), "broadcast_to": lambda x: np.broadcast_to(x, (2,)),
    "repeat": lambda x: np.repeat(x, 2), "tile": lambda x: np.tile(x, 2), "take": lambda x: np.take(x, 0),
    "nansum": lambda x: np.nansum(x), "nanprod": lambda x: np.nanprod(x), "nanmax": lambda x: np.nanmax(x),
    "nanmin": lambda x: np.nanmin(x), "nanmean": lambda x: np.nanmean(x), "nanvar": lambda x: np.nanvar(x),
    "nancumsum": lambda x: np.nancumsum(x),
    "nancumprod": lambda x: np.nancumprod(x), "real": lambda x: np.real(x), "imag": lambda x: np.imag(x) + x,
    "conj": lambda x: np.conj(x), "conjugate": lambda x: np.conjugate(x), "real_if_close": lambda x: np.real_if_close(x),
    "where": lambda x: np.where(x > 0, x, -x), "clip": lambda x: np.clip(x, -0.5, 0.5),
    "select": lambda x: np.select([x > 1], [x], 2.0), "sinc": lambda x: np.sinc(x),
    "piecewise": lambda x: np.piecewise(x, [x < 0], [lambda t: -t, lambda t: t * t]),
    "nan_to_num": lambda x: np.nan_to_num(x), "angle": lambda x: np.angle(x), "angle_deg": lambda x: np.angle(-x, deg=True),
    "linspace": lambda x: np.linspace(x, 2.0, 4), "interp": lambda x: np.interp(x, [0.0, 1.0], [1.0, 3.0]),
    "astype": lambda x: (x * np.ones(2)).astype("float64"), "abs": lambda x: np.abs(x),
    "gradient": lambda x: x + len(np.gradient(x)),  # numpy: () of a number
    "array": lambda x: np.array(x), "asarray": lambda x: np.asarray(x), "asanyarray": lambda x: np.asanyarray(x),
    "ascontiguousarray": lambda x: np.ascontiguousarray(x), "full": lambda x: np.full(2, x),
    "full_like": lambda x: np.full_like(C3, x), "zeros_like": lambda x: np.zeros_like(x) + x,
    "ones_like": lambda x: np.ones_like(x) * x, "einsum": lambda x: np.einsum(",", x, 2.0),
    "tensordot": lambda x: np.tensordot(x, 2.0, 0), "linalg.norm": lambda x: np.linalg.norm(x),
}
# numpy raises for a number here: symgrad raises the same
SCALAR_ERRORS = {
    "diff": (lambda x: np.diff(x), ValueError), "trace": (lambda x: np.trace(x), ValueError),
    "diag": (lambda x: np.diag(x), ValueError), "concatenate": (lambda x: np.concatenate([x, x]), ValueError),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 1), np.exceptions.AxisError),
    "fliplr": (lambda x: np.fliplr(x), ValueError),
    "cross": (lambda x: np.cross(x, 2.0), ValueError), "linalg.det": (lambda x: np.linalg.det(x), np.linalg.LinAlgError),
    "tril": (lambda x: np.tril(x), TypeError), "triu": (lambda x: np.triu(x), TypeError),
    "matmul": (lambda x: np.matmul(x, 2.0), ValueError), "trapezoid": (lambda x: np.trapezoid(x), IndexError),
    "diagonal": (lambda x: np.diagonal(x), ValueError), "flipud": (lambda x: np.flipud(x), ValueError),
    "moveaxis": (lambda x: np.moveaxis(x, 0, 0), np.exceptions.AxisError),
    **{f"linalg.{n}": (lambda x, n=n: getattr(np.linalg, n)(x), np.linalg.LinAlgError)
       for n in ("inv", "cholesky", "eigvalsh", "slogdet")},
    "linalg.solve": (lambda x: np.linalg.solve(x, x), np.linalg.LinAlgError),
}
NOT_OF_A_NUMBER = {"zeros", "ones", "empty", "eye", "identity", "empty_like",  # shapes in, no values
                   "nanstd"}  # (std of one number is sqrt(0): its derivative there is NaN, not numpy's 0)


def test_every_traced_numpy_function_has_its_scalar_form_checked():
    """The two tables above and the refused functions (tracing/test_numpy_keywords.py) cover
    the whole table of stand-ins."""
    from symgrad.tracing import registry
    from tracing.test_numpy_keywords import REFUSED
    names = {f"{'linalg.' if f.__module__ == 'numpy.linalg' else ''}{f.__name__}" for f in registry.TABLE}
    assert names == (set(SCALAR) | set(SCALAR_ERRORS) | NOT_OF_A_NUMBER | REFUSED) - {
        "var_ddof", "angle_deg", "conj", "conjugate", "abs", "astype", "gradient"} | {"gradient"}


def _flat(fns, x):
    return np.concatenate([np.ravel(np.asarray(f(x), dtype=object)) for f in fns])


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_scalar_forms_are_numpy_s():
    fns = list(SCALAR.values())
    F = symgrad.compile(lambda x: _flat(fns, x), shapes=[()])  # a scalar said to be one (else: a forgotten shapes=)
    for v in (0.3, -1.7):
        expected = np.concatenate([np.ravel(np.asarray(f(v), dtype=float)) for f in fns])
        got = F(v)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-300)
        h = 1e-6  # the derivative: a loose check by central differences
        fd = (np.concatenate([np.ravel(np.asarray(f(v + h), dtype=float)) for f in fns])
              - np.concatenate([np.ravel(np.asarray(f(v - h), dtype=float)) for f in fns])) / (2 * h)
        ok = np.isfinite(fd)  # (var with ddof=1 of one number is NaN)
        assert ok.sum() == len(fd) - 1
        np.testing.assert_allclose(F.jacobian(v)[ok], fd[ok], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", SCALAR_ERRORS)
def test_scalar_forms_numpy_refuses_are_refused_alike(name):
    fn, error = SCALAR_ERRORS[name]
    with pytest.raises(error):
        fn(0.3)
    with pytest.raises(error):
        symgrad.compile(fn, shapes=[()]).program


# -- empty reductions: numpy's identity, or numpy's error -------------------------------------------
def test_empty_reductions_give_numpy_s_identity():
    fns = [lambda x: np.trace(x, offset=10), lambda x: np.sum(np.diff(x[0, :1])), lambda x: np.sum(np.repeat(x, 0)),
           lambda x: np.sum(np.linspace(x[0, 0], 1, 0)), lambda x: np.prod(x[:, :0]), lambda x: np.sum(x[:0], axis=0),
           lambda x: np.max(x[:0], initial=-1.5), lambda x: np.sum(x[:0], initial=2.5),
           lambda x: np.sum(x[:, :0], axis=(0, 1), initial=5.0), lambda x: np.prod(x[:0], axis=1, keepdims=True)]
    X = np.arange(110.0).reshape(11, 10) / 7
    expected = np.concatenate([np.ravel(f(X)) for f in fns])
    assert list(expected) == [0.0, 0.0, 0.0, 0.0, 1.0] + [0.0] * 10 + [-1.5, 2.5, 5.0]
    F = symgrad.compile(lambda x: np.concatenate([np.ravel(np.asarray(f(x), dtype=object)) for f in fns]),
                        shapes=[(11, 10)])
    np.testing.assert_array_equal(F(X), expected)


def test_an_empty_reduction_without_identity_is_numpy_s_error():
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        symgrad.compile(lambda x: np.max(x[:0]), shapes=[(3,)]).program


# -- 0 ** y and x ** y ----------------------------------------------------------------------
@pytest.mark.parametrize("f", [lambda y: np.power(0.0, y), lambda y: 0.0 ** y, lambda y: math.pow(0.0, y),
                               lambda y: np.float_power(0.0, y)], ids=["np.power", "**", "math.pow", "float_power"])
def test_zero_to_a_traced_power(f):
    """numpy's values (0 above 0, 1 at 0, inf below); derivative 0 where the value is 0 or 1
    (constant in y there), NaN below 0 (where it is inf)."""
    F = symgrad.compile(f)
    y = np.array([0.5, 2.5, 0.0, -1.0, -0.5])
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(F(y), np.power(0.0, y))
    np.testing.assert_array_equal(F.grad(y), [0.0, 0.0, 0.0, math.nan, math.nan])


def test_a_traced_base_and_exponent():
    """d/dx x**y = y x**(y-1), d/dy = x**y log x; at x = 0 the log is not taken: 0 by y where
    x**y is 0 or 1."""
    G = symgrad.compile(lambda x, y: x ** y)
    x, y = np.array([0.0, 0.0, 2.0, 0.0]), np.array([0.5, 0.0, 0.5, 2.5])
    gx, gy = G.grad(x, y)
    np.testing.assert_array_equal(gx[[0, 2, 3]], [math.inf, 0.5 * 2.0 ** -0.5, 0.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 2.0 ** 0.5 * math.log(2.0), 0.0], rtol=1e-15)


# -- nan_to_num ------------------------------------------------------------------------------
def test_nan_to_num_values_and_derivative():
    """NaN -> 0 (or nan=), +-inf -> the largest float (or posinf=/neginf=); derivative 1 where
    the argument is finite, 0 elsewhere."""
    F = symgrad.compile(lambda x: [x + np.nan_to_num(x + math.nan), np.nan_to_num(x * 1.0),
                                   np.nan_to_num(1.0 / x, nan=-1.0, posinf=7.0, neginf=-7.0)])
    x = np.array([0.3, math.nan, math.inf, -math.inf, 0.0, -0.0])
    with np.errstate(all="ignore"):
        expected = np.stack([x + np.nan_to_num(x + math.nan), np.nan_to_num(x * 1.0),
                             np.nan_to_num(1.0 / x, nan=-1.0, posinf=7.0, neginf=-7.0)], axis=-1)
        np.testing.assert_array_equal(F(x), expected)
        J = F.jacobian(x)
    np.testing.assert_array_equal(J[:, 0], [1.0] * 6)  # d/dx of x, and of a constant 0
    np.testing.assert_array_equal(J[:, 1], [1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    np.testing.assert_allclose(J[:2, 2], [-1.0 / 0.3 ** 2, 0.0], rtol=3e-16, atol=0)  # 0, not NaN, at NaN
    assert F(0.3)[0] == 0.3 and F.jacobian(0.3)[0] == 1.0


def test_nan_to_num_of_float32_kernels_is_float32_s_largest():
    F = symgrad.compile(lambda x: np.nan_to_num(x * 1.0), dtype="float32")
    x = np.array([math.inf, -math.inf, math.nan, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(F(x), np.nan_to_num(x))
    assert F(x).dtype == np.float32 and F(x)[0] == np.finfo(np.float32).max


def test_nan_to_num_of_an_array_kept_as_a_loop():
    D = np.linspace(-1.0, 1.0, 500)
    D[::7] = math.nan

    def f(a):
        return np.sum(np.nan_to_num(np.log(a * D + 0.5)))
    F = symgrad.compile(f)
    assert F.loops
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(F(0.7), f(0.7), rtol=1e-13)
        ok = np.isfinite(np.log(0.7 * D + 0.5))
    np.testing.assert_allclose(F.grad(0.7), np.sum(D[ok] / (0.7 * D[ok] + 0.5)), rtol=1e-12)


# -- np.gradient ----------------------------------------------------------------------------------
GRADIENTS = {  # (shape, spacing...) and keywords of np.gradient
    "uniform": ((7,), (0.5,), {}), "uniform_2": ((7,), (0.5,), {"edge_order": 2}),
    "coordinates": ((6,), (np.array([0.0, 0.1, 0.35, 0.4, 1.0, 1.6]),), {}),
    "coordinates_2": ((6,), (np.array([0.0, 0.1, 0.35, 0.4, 1.0, 1.6]),), {"edge_order": 2}),
    "evenly_spaced_coordinates": ((5,), (np.array([0.0, 0.5, 1.0, 1.5, 2.0]),), {}),
    "default": ((4, 5), (), {}), "axis": ((4, 5), (0.25,), {"axis": 1, "edge_order": 2}),
    "each_axis": ((4, 5), (2.0, np.array([0.0, 1.0, 3.0, 4.0, 7.0])), {"axis": (0, 1)}),
}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradient_is_numpy_s(name):
    shape, spacing, kw = GRADIENTS[name]
    f = lambda x: np.stack(np.gradient(x ** 2, *spacing, **kw)) if len(shape) == 2 and "axis" not in kw or \
        isinstance(kw.get("axis"), tuple) else np.gradient(x ** 2, *spacing, **kw)  # noqa: E731
    F = symgrad.compile(f, shapes=[shape])
    X = np.random.default_rng(3).uniform(-2, 2, shape)
    np.testing.assert_allclose(F(X), f(X), rtol=1e-14, atol=1e-14)
    J = F.jacobian(X)  # linear in x**2: each column numpy's gradient of 2 x_k e_k
    for k in np.ndindex(*shape):
        e = np.zeros(shape)
        e[k] = 2 * X[k]
        np.testing.assert_allclose(J[(...,) + k], np.asarray(np.gradient(e, *spacing, **kw)) if not isinstance(
            np.gradient(e, *spacing, **kw), tuple) else np.stack(np.gradient(e, *spacing, **kw)), atol=1e-13)


def test_gradient_with_traced_spacing():
    F = symgrad.compile(lambda y, h: np.gradient(y, h, edge_order=2), shapes=[(5,), ()])
    y = np.array([1.0, 4.0, 2.0, 0.5, 3.0])
    np.testing.assert_allclose(F(y, 0.3), np.gradient(y, 0.3, edge_order=2), rtol=1e-15)
    np.testing.assert_allclose(F.jacobian_wrt(1)(y, 0.3), -np.gradient(y, 0.3, edge_order=2) / 0.3, rtol=1e-14)


# -- scipy.special ---------------------------------------------------------------------------------
SPECIAL = {  # name -> (call, derivative by x in closed form)
    "erf": (lambda x: ss.erf(x), lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x)),
    "erfc": (lambda x: ss.erfc(x), lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x)),
    "expit": (lambda x: ss.expit(x), lambda x: ss.expit(x) * ss.expit(-x)),
    "log_expit": (lambda x: ss.log_expit(x), lambda x: ss.expit(-x)),
    "logit": (lambda x: ss.logit(ss.expit(x)), lambda x: np.ones_like(x)),
    "gammaln": (lambda x: ss.gammaln(x + 3.0), lambda x: ss.psi(x + 3.0)),
    "gamma": (lambda x: ss.gamma(x + 3.0), lambda x: ss.gamma(x + 3.0) * ss.psi(x + 3.0)),
    "xlogy": (lambda x: ss.xlogy(x, 2.5) + ss.xlogy(1.5, x + 3.0),
              lambda x: np.full_like(x, math.log(2.5)) + 1.5 / (x + 3.0)),
    "xlog1py": (lambda x: ss.xlog1py(x, 0.5), lambda x: np.full_like(x, math.log1p(0.5))),
    "ndtr": (lambda x: ss.ndtr(x), lambda x: np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    "exp10": (lambda x: ss.exp10(x), lambda x: math.log(10) * 10.0 ** x),
    "logsumexp": (lambda x: ss.logsumexp([x, 2.0 * x, 1.0]),
                  lambda x: (np.exp(x) + 2 * np.exp(2 * x)) / (np.exp(x) + np.exp(2 * x) + math.e)),
    "softmax": (lambda x: ss.softmax([x, 1.0])[0], lambda x: ss.expit(x - 1) * ss.expit(1 - x)),
    "log_softmax": (lambda x: ss.log_softmax([x, 1.0])[1], lambda x: -ss.expit(x - 1)),
}


def test_scipy_special_functions_and_their_derivatives():
    calls = [c for c, _ in SPECIAL.values()]
    F = symgrad.compile(lambda x: [c(x) for c in calls])
    x = np.array([-2.5, -0.3, 0.0, 0.7, 1.9])
    np.testing.assert_allclose(F(x), np.array([[c(v) for c in calls] for v in x]),
                               rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(F.jacobian(x), np.stack([d(x) for _, d in SPECIAL.values()], -1), rtol=1e-13)


def test_scipy_special_far_out_and_at_its_special_points():
    F = symgrad.compile(lambda x, y: [ss.expit(x), ss.log_expit(x), ss.xlogy(x, y), ss.logsumexp([x, y])])
    x = np.array([-800.0, 800.0, 0.0, 0.0, 0.0, -math.inf])
    y = np.array([1.0, 1.0, 0.0, 2.0, -1.0, -math.inf])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(F(x, y), np.stack([ss.expit(x), ss.log_expit(x), ss.xlogy(x, y),
                                                         ss.logsumexp(np.stack([x, y]), axis=0)], -1))
        gx, gy = F.jacobian(x, y)
    np.testing.assert_array_equal(gx[:2, 0], [0.0, 0.0])  # not inf/inf
    np.testing.assert_array_equal(gx[:2, 1], [1.0, 0.0])
    assert gx[3, 2] == math.log(2.0) and gy[3, 2] == 0.0  # xlogy(0, y): by x still log y


def test_scipy_special_of_arrays_kept_as_loops():
    D = np.linspace(-3.0, 3.0, 400)

    def f(a):
        return np.sum(ss.expit(a * D)) + ss.logsumexp(a * D)
    F = symgrad.compile(f)
    assert F.loops or F.program.count_ops() > 400
    np.testing.assert_allclose(F(0.8), f(0.8), rtol=1e-13)
    g = np.sum(D * ss.expit(0.8 * D) * ss.expit(-0.8 * D)) + np.sum(D * ss.softmax(0.8 * D))
    np.testing.assert_allclose(F.grad(0.8), g, rtol=1e-12)


def test_an_unknown_scipy_ufunc_is_named():
    with pytest.raises(symgrad.TraceError, match=r"scipy\.special\.struve on traced values"):
        symgrad.compile(lambda x: ss.struve(1.0, x)).program
