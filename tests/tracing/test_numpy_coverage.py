"""The numpy people write, walked call by call: each either traces (value against numpy on
floats, gradient against central differences in long double) or raises a TraceError that
names the function and the line and says what to write instead."""
import re

import numpy as np
import pytest

import symgrad
from helpers import reference_grad

X3 = np.array([0.31, -0.57, 0.83])
P3 = np.array([0.42, 1.37, 0.66])            # positive, inside (0, pi/2)
U3 = np.array([0.23, -0.41, 0.62])           # inside (-1, 1)
G3 = np.array([1.31, 2.07, 1.55])            # > 1
M22 = np.array([[1.3, 0.4], [-0.2, 0.9]])
S33 = np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.1]])
C = np.array([0.7, -0.2, 1.1])

UNARY = {  # ufunc -> the points it is smooth at
    "negative": X3, "positive": X3, "absolute": X3, "fabs": X3, "sign": X3, "exp": X3, "exp2": X3,
    "expm1": X3, "log": P3, "log2": P3, "log10": P3, "log1p": P3, "sqrt": P3, "square": X3, "cbrt": X3,
    "reciprocal": P3, "sin": X3, "cos": X3, "tan": X3, "arcsin": U3, "arccos": U3, "arctan": X3, "sinh": X3,
    "cosh": X3, "tanh": X3, "arcsinh": X3, "arccosh": G3, "arctanh": U3, "degrees": X3, "radians": X3,
    "deg2rad": X3, "rad2deg": X3, "floor": X3 * 3, "ceil": X3 * 3, "trunc": X3 * 3, "rint": X3 * 3,
    "fix": X3 * 3, "round": X3 * 3, "around": X3 * 3, "conjugate": X3, "conj": X3, "sinc": X3,
}
BINARY = {  # ufunc -> points for (x, y)
    "add": (X3, C), "subtract": (X3, C), "multiply": (X3, C), "divide": (X3, P3), "true_divide": (X3, P3),
    "power": (P3, C), "float_power": (P3, C), "remainder": (X3 * 3, P3), "mod": (X3 * 3, P3),
    "fmod": (X3 * 3, P3), "floor_divide": (X3 * 3, P3), "arctan2": (X3, C), "hypot": (X3, C),
    "logaddexp": (X3, C), "logaddexp2": (X3, C), "maximum": (X3, C), "minimum": (X3, C), "fmax": (X3, C),
    "fmin": (X3, C), "copysign": (X3, C), "heaviside": (X3, C),
}


def check(fn, shapes, args, rtol=1e-13, grad=True):
    """F(args) against fn on floats; F.grad against long-double central differences."""
    F = symgrad.compile(fn, shapes=shapes)
    with np.errstate(all="ignore"):
        want = fn(*[np.array(a, dtype=float) for a in args])
    np.testing.assert_allclose(F(*args), want, rtol=rtol, atol=1e-15)
    if grad:
        got = F.grad(*args)
        got = got if isinstance(got, tuple) else (got,)
        for k, g in enumerate(got):
            np.testing.assert_allclose(g, reference_grad(fn, args, k), rtol=1e-7, atol=1e-9,
                                       err_msg=f"d/d argument {k}")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ufuncs_and_rounding(name):
    f = getattr(np, name)
    check(lambda x: np.sum(f(x) * np.array([1.0, 2.0, 3.0])), [(3,)], [UNARY[name]])


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ufuncs(name):
    f = getattr(np, name)
    x, y = BINARY[name]
    check(lambda a, b: np.sum(f(a, b) * np.array([1.0, -2.0, 0.5])), [(3,), (3,)], [x, y])
    check(lambda a: np.sum(f(a, 0.75)), [(3,)], [x])           # with a constant
    check(lambda a: np.sum(f(a[0], a)), [(3,)], [x])            # a scalar entry with an array


REDUCTIONS = {
    "sum": lambda x: np.sum(x), "prod": lambda x: np.prod(x), "mean": lambda x: np.mean(x),
    "var": lambda x: np.var(x), "var_ddof": lambda x: np.var(x, ddof=1), "std": lambda x: np.std(x),
    "std_ddof": lambda x: np.std(x, ddof=1), "max": lambda x: np.max(x), "min": lambda x: np.min(x),
    "amax": lambda x: np.amax(x), "amin": lambda x: np.amin(x), "ptp": lambda x: np.ptp(x),
    "cumsum": lambda x: np.sum(np.cumsum(x) ** 2), "cumprod": lambda x: np.sum(np.cumprod(x)),
    "diff": lambda x: np.sum(np.diff(x) ** 2), "axis": lambda x: np.sum(np.max(x.reshape(2, 3), axis=1)),
    "average": lambda x: np.average(x, weights=[1.0, 2.0, 3.0, 1.0, 1.0, 1.0]),
    "method_sum": lambda x: x.sum(), "method_max": lambda x: x.max(), "method_mean": lambda x: x.mean(),
    "method_prod": lambda x: x.prod(), "method_clip": lambda x: x.clip(-0.3, 0.5).sum(),
    "method_dot": lambda x: x.dot(x), "nested": lambda x: np.sum(np.sum(x * x)),
    "of_scalar": lambda x: np.max(x[0]) + np.sum(x[1]) + np.prod(x[2]),
}
V6 = np.array([0.31, -0.57, 0.83, 1.21, -0.12, 0.44])


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_and_array_methods(name):
    check(REDUCTIONS[name], [(6,)], [V6])


A = np.array([[0.3, -1.1, 0.7], [0.2, 0.5, -0.4]])
PRODUCTS = {
    "dot": lambda x: np.dot(A, x) @ np.dot(A, x), "vdot": lambda x: np.vdot(x, x[::-1]),
    "inner": lambda x: np.inner(x, C), "outer": lambda x: np.sum(np.outer(x, C) ** 2),
    "matmul": lambda x: np.sum(np.matmul(A, x) ** 2), "at": lambda x: x @ x + np.sum(A @ x),
    "einsum": lambda x: np.einsum("ij,j,i->", A, x, [1.0, 2.0]), "tensordot": lambda x: np.tensordot(x, x, 1),
    "kron": lambda x: np.sum(np.kron(x, C) ** 2), "cross": lambda x: np.sum(np.cross(x, C) ** 2),
    "trace": lambda x: np.trace(np.outer(x, x)), "diag": lambda x: np.sum(np.diag(x) @ C),
    "tril": lambda x: np.sum(np.tril(np.outer(x, C))), "triu": lambda x: np.sum(np.triu(np.outer(x, C))),
    "transpose": lambda x: np.sum(np.transpose(np.outer(x, C)) @ x), "T": lambda x: np.sum(np.outer(x, C).T[0]),
    "stack": lambda x: np.sum(np.stack([x, C]) ** 2), "concatenate": lambda x: np.sum(np.concatenate([x, C]) ** 3),
    "hstack": lambda x: np.sum(np.hstack([x, x * 2]) ** 2), "vstack": lambda x: np.sum(np.vstack([x, C]) @ x),
    "reshape": lambda x: np.sum(np.reshape(np.outer(x, x), 9) * np.arange(9)),
    "flip": lambda x: np.sum(np.flip(x) * C), "roll": lambda x: np.sum(np.roll(x, 1) * C),
    "pad": lambda x: np.sum(np.pad(x, 1) * np.arange(5)), "polyval": lambda x: np.polyval(x, 0.7),
    "fancy_index": lambda x: np.sum(x[[0, 2, 2]] * C), "bool_const_index": lambda x: np.sum(x[np.array([True, False, True])]),
    "slice": lambda x: np.sum(x[::-2] ** 2), "norm": lambda x: np.linalg.norm(x),
    "norm_1": lambda x: np.linalg.norm(x, 1), "norm_inf": lambda x: np.linalg.norm(x, np.inf),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_shapes_and_indexing(name):
    check(PRODUCTS[name], [(3,)], [X3])


def _zeros(x):
    b = np.zeros(4)
    b[1:3] = x[:2]
    b[0] = x[2]
    return np.sum(b ** 2)


def _empty(x):
    b = np.empty((2, 2))
    b[0, :] = x[:2]
    b[1] = [x[2], 1.0]
    return np.sum(b @ b)


def _full_like(x):
    b = np.full_like(x, 2.0)
    b[1] = x[0] * x[1]
    return np.sum(b * x)


SELECTS = {
    "where": lambda x: np.sum(np.where(np.abs(x) > 0.5, x, 0.1 * x)),
    "select": lambda x: np.sum(np.select([x < 0, x < 0.5], [x ** 2, -x], default=np.sin(x))),
    "piecewise": lambda x: np.sum(np.piecewise(x, [x < 0, x >= 0], [lambda v: v ** 2, lambda v: v ** 3])),
    "clip": lambda x: np.sum(np.clip(x, -0.4, 0.5) * C), "maximum": lambda x: np.sum(np.maximum(x, 0.0)),
    "interp_x": lambda x: np.sum(np.interp(x, [-1.0, 0.0, 0.5, 1.0], [2.0, 1.0, 3.0, 0.0])),
    "interp_fp": lambda x: np.interp(0.37, [0.0, 0.5, 1.0], x),
    "linspace": lambda x: np.sum(np.linspace(x[0], x[1], 5) ** 2), "zeros": _zeros, "empty": _empty,
    "full_like": _full_like, "max_abs": lambda x: np.max(np.abs(x)),
    "list_arithmetic": lambda x: np.sum((x[0] - [1.0, 2.0]) ** 2 + (x[1:] - [1.0, 2.0]) ** 2),
    "comparison_as_number": lambda x: np.sum((x > 0) * x) + float(x[0] >= 0) * x[1],
}


@pytest.mark.parametrize("name", sorted(SELECTS))
def test_selects_interpolation_and_stores(name):
    check(SELECTS[name], [(3,)], [X3])


def _matrix(x):
    return np.array([[2.0 + x[0], x[1]], [0.5 * x[1], 1.5 + x[2] * x[0]]])


def _spd(x):
    return S33 + np.diag(x) * 0.3 + 0.1 * np.outer(x, x)


LINALG = {
    "det": lambda x: np.linalg.det(_matrix(x)), "inv": lambda x: np.sum(np.linalg.inv(_matrix(x)) * M22),
    "solve": lambda x: np.sum(np.linalg.solve(_matrix(x), [1.0, -2.0])),
    "slogdet": lambda x: np.linalg.slogdet(_matrix(x))[1], "norm_fro": lambda x: np.linalg.norm(_matrix(x)),
    "det3": lambda x: np.linalg.det(_spd(x)), "inv3": lambda x: np.sum(np.linalg.inv(_spd(x))),
    "cholesky3": lambda x: np.sum(np.linalg.cholesky(_spd(x)) * np.tril(np.ones((3, 3)))),
    "eigvalsh2": lambda x: np.linalg.eigvalsh(_matrix(x) + _matrix(x).T) @ [1.0, 3.0],
    "det5": lambda x: np.linalg.det(np.outer(np.concatenate([x, x[:2]]), np.ones(5)) + np.eye(5)),  # LU beyond 4x4
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_small_linear_algebra(name):
    check(LINALG[name], [(3,)], [X3], rtol=1e-12)


REFUSED = [
    ("boolean mask", lambda x: np.sum(x[x > 0.4]), r"indexed by a traced comparison.*np\.where"),
    ("np.where(cond)", lambda x: np.sum(np.where(x > 0)[0]), r"np\.where\(cond\) with one argument.*np\.where\(cond, x, y\)"),
    ("eigvalsh 3x3", lambda x: np.sum(np.linalg.eigvalsh(np.diag(x))), r"eigvalsh.*up to 2x2"),
    ("svd", lambda x: np.sum(np.linalg.svd(np.outer(x, x))[1]), r"np\.linalg\.svd of traced values.*eigvalsh"),
    ("sort", lambda x: np.sum(np.sort(x) * C), r"np\.sort of traced values.*an order.*np\.max/np\.min"),
    ("argmax", lambda x: x[np.argmax(x)], r"np\.argmax of traced values.*np\.max\(x\) for the value"),
    ("median", lambda x: np.median(x), r"np\.median of traced values"),
    ("int16 array", lambda x: np.sum(x.astype(np.int16)), r"dtype=int16 of traced values.*int64 and bool only"),
    ("float32 array", lambda x: np.sum(x.astype(np.float32)), r"cast of traced values to float32.*dtype='float32'"),
]


@pytest.mark.parametrize("what, fn, message", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_does_not_trace_says_what_to_write(what, fn, message):
    with pytest.raises(symgrad.TraceError) as info:
        symgrad.compile(fn, shapes=[(3,)])(X3)
    msg = str(info.value)
    assert re.search(message, msg, re.S), msg
    assert re.search(r"<lambda>\(\) in \S*test_numpy_coverage\.py, line \d+", msg), msg
