"""A forgotten ``shapes=`` (issue 47, item 1): every argument is a scalar unless shapes= says
otherwise, so a function written for a vector, compiled without shapes= and called with one,
would compute a batch of scalars (np.sum of a scalar is the scalar). Reducing, indexing,
measuring or multiplying with ``@`` such an argument raises ScalarUsedAsArray at the first call,
naming the argument, the user's line and the shapes= to write; elementwise use keeps the batch
meaning, and so does everything where shapes= was given."""
from __future__ import annotations

import inspect
import os
import re

import numpy as np
import pytest

import symgrad
from symgrad.errors import ScalarUsedAsArray

HERE = os.path.basename(__file__)
W = np.array([1.0, -2.0, 0.5])


def _line(fn):
    """The line of ``fn``'s source carrying the marker ``# HERE``."""
    return _marked(fn)[0]


def _marked(fn):
    """(number, text) of the line of ``fn``'s source carrying the marker ``# HERE``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [(start + i, line.strip()) for i, line in enumerate(lines) if "# HERE" in line]
    assert len(hits) == 1, hits
    return hits[0]


def f_sum(x):
    return np.sum(np.exp(x)) / np.sum(x)  # HERE


def f_mean(x):
    return np.mean(x) * 2.0  # HERE


def f_method(x):
    return x.sum()  # HERE


def f_matmul(x):
    return x @ W  # HERE


def f_matmul_left(x):
    return W @ x  # HERE


def f_len(x):
    return x * len(x)  # HERE


def f_shape(x):
    return x * x.shape[0]  # HERE


def f_size(x):
    return x * x.size  # HERE


def f_norm(x):
    return np.linalg.norm(x)  # HERE


def f_dot(x):
    return np.dot(x, x)  # HERE


def f_max(x):
    return np.max(x)  # HERE


def f_index(x):
    return x[0] * x[1]  # HERE


def f_two(x, k):
    return k * np.sum(x ** 2)  # HERE


@pytest.mark.parametrize("fn", [f_sum, f_mean, f_method, f_matmul, f_matmul_left, f_len, f_shape, f_size,
                                f_norm, f_dot, f_max, f_index], ids=lambda f: f.__name__)
def test_an_argument_used_as_an_array_without_shapes_raises_with_the_shapes_to_write(fn):
    F = symgrad.compile(fn)
    with pytest.raises(ScalarUsedAsArray) as e:
        F(np.array([1.0, 2.0, 3.0]))
    msg = str(e.value)
    assert "argument 'x' is used as an array; pass shapes=[(3,)]" in msg
    line, text = _marked(fn)  # where: the user's file, line and its text
    assert re.search(rf"{fn.__name__}\(\) in \S*{re.escape(HERE)}, line {line}: `{re.escape(text)}`", msg), msg
    assert isinstance(e.value, symgrad.TraceError)


def test_the_hessian_of_a_sum_without_shapes_raises_not_a_diagonal():
    F = symgrad.compile(lambda x: np.sum(x ** 2))  # HERE
    with pytest.raises(ScalarUsedAsArray, match=r"argument 'x' is used as an array; pass shapes=\[\(3,\)\]") as e:
        F.hessian(np.array([1.0, 2.0, 3.0]))
    assert f"{HERE}, line {_line(test_the_hessian_of_a_sum_without_shapes_raises_not_a_diagonal)}" in str(e.value)
    H = symgrad.compile(lambda x: np.sum(x ** 2), shapes=[(3,)]).hessian(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(H, 2.0 * np.eye(3))


def test_only_the_argument_used_as_an_array_is_named():
    with pytest.raises(ScalarUsedAsArray, match=r"argument 'x' is used as an array; pass shapes=\[\(4,\), \(\)\]"
                       r".*np\.sum of argument 'x' at f_two\(\)"):
        symgrad.compile(f_two)(np.ones(4), 2.0)


def test_a_scalar_passed_gets_the_shapes_for_a_scalar_too():
    with pytest.raises(ScalarUsedAsArray, match=r"np\.sum of argument 'x' at .*shapes=\[\(\), \(\)\]"):
        symgrad.compile(f_two)(1.5, 2.0)


def test_elementwise_use_keeps_the_batch_meaning():
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(symgrad.compile(lambda x: np.sin(x) * 2)(x), np.sin(x) * 2, rtol=1e-15)
    np.testing.assert_allclose(symgrad.compile(lambda x: np.sum(x * W))(x), x * np.sum(W), rtol=1e-15)
    np.testing.assert_allclose(symgrad.compile(lambda x: np.sum(x * W)).grad(x), np.full(3, np.sum(W)), rtol=1e-15)
    np.testing.assert_allclose(symgrad.compile(lambda x, y: np.max([x, y]) + np.sum([x, 2 * y]))(x, 1.0),
                               np.maximum(x, 1.0) + x + 2.0, rtol=1e-15)


def test_shapes_given_as_scalars_keep_todays_meaning():
    x = np.array([0.3, -1.2, 2.0])
    F = symgrad.compile(lambda x: np.sum(x) * np.max(x) + np.mean(np.exp(x)), shapes=[()])
    np.testing.assert_allclose(F(x), x * x + np.exp(x), rtol=1e-15)
    G = symgrad.compile(lambda v: np.max(v[0]) * np.sum(v[1] ** 2), shapes=[(2,)])
    assert G(np.array([3.0, 2.0])) == 12.0


def test_with_shapes_the_issue_s_function_is_numpy_s():
    x = np.array([1.0, 2.0, 3.0])
    F = symgrad.compile(lambda x: np.sum(np.exp(x)) / np.sum(x), shapes=[(3,)])
    np.testing.assert_allclose(F(x), np.sum(np.exp(x)) / np.sum(x), rtol=1e-15)


# -- numpy treating a 0-d value of the argument as an array: each computed a batch of scalars (or
# raised numpy's own error, without the user's line) before
def f_asarray_sum(x):
    x = np.asarray(x)
    return (x ** 2).sum()  # HERE


def f_array_sum(x):
    return np.sum(np.array(x) * 2.0)  # HERE


def f_add_reduce_none(x):
    return np.add.reduce(x ** 2, axis=None)  # HERE


def f_take(x):
    return np.take(x, 0)  # HERE


def f_ravel(x):
    return np.sum(np.ravel(x))  # HERE


def f_reshape(x):
    return np.sum(np.reshape(x, -1) ** 2)  # HERE


def f_outer(x):
    return np.trace(np.outer(x, x))  # HERE


def f_kron(x):
    return np.sum(np.kron(x, W))  # HERE


def f_tensordot_outer(x):
    return np.sum(np.tensordot(x, W, 0))  # HERE


def f_trace(x):
    return np.trace(x)  # HERE


def f_convolve(x):
    return np.sum(np.convolve(x, W) ** 2)  # HERE


def f_mean_of_comparison(x):
    return np.mean(x > 0)  # HERE


def f_any(x):
    return np.any(x > 2) * x  # HERE


def f_all(x):
    return np.all(x > 0) * x  # HERE


def f_logsumexp(x):
    from scipy.special import logsumexp
    return logsumexp(x)  # HERE


def f_scipy_trapezoid(x):
    from scipy.integrate import trapezoid
    return trapezoid(x ** 2)  # HERE


# numpy's raw errors before (IndexError, TypeError, ValueError; np.gradient: "result has no entries")
def f_add_reduce(x):
    return np.add.reduce(x)  # HERE


def f_tensordot(x):
    return np.tensordot(x, x, 1)  # HERE


def f_logaddexp_reduce(x):
    return np.logaddexp.reduce(x)  # HERE


def f_maximum_reduce(x):
    return np.maximum.reduce(x)  # HERE


def f_multiply_reduce(x):
    return np.multiply.reduce(x)  # HERE


def f_trapezoid(x):
    return np.trapezoid(x)  # HERE


def f_polyval(x):
    return np.polyval(x, 2.0)  # HERE


def f_einsum(x):
    return np.einsum("i->", x)  # HERE


def f_diff(x):
    return np.sum(np.diff(x))  # HERE


def f_gradient(x):
    return np.gradient(x)  # HERE


@pytest.mark.parametrize("fn", [f_asarray_sum, f_array_sum, f_add_reduce_none, f_take, f_ravel, f_reshape, f_outer,
                                f_kron, f_tensordot_outer, f_trace, f_convolve, f_mean_of_comparison, f_any, f_all,
                                f_logsumexp, f_scipy_trapezoid, f_add_reduce, f_tensordot, f_logaddexp_reduce,
                                f_maximum_reduce, f_multiply_reduce, f_trapezoid, f_polyval, f_einsum, f_diff,
                                f_gradient],
                         ids=lambda f: f.__name__)
def test_numpy_taking_the_argument_as_an_array_raises_with_the_shapes_to_write(fn):
    with pytest.raises(ScalarUsedAsArray) as e:
        symgrad.compile(fn)(np.array([1.0, -2.0, 3.0]))
    msg = str(e.value)
    assert "argument 'x' is used as an array; pass shapes=[(3,)]" in msg
    line, text = _marked(fn)  # the user's line, not scipy's or numpy's inside
    assert re.search(rf"{fn.__name__}\(\) in \S*{re.escape(HERE)}, line {line}: `{re.escape(text)}`", msg), msg
    x = np.array([1.0, -2.0, 3.0])
    if fn not in (f_trace, f_add_reduce, f_tensordot, f_logaddexp_reduce, f_maximum_reduce, f_multiply_reduce,
                  f_trapezoid, f_polyval, f_einsum, f_diff, f_scipy_trapezoid):  # (numpy raises on a scalar)
        want = fn(x)  # what shapes=[(3,)] computes: numpy's
        F = symgrad.compile(fn, shapes=[(3,)])
        np.testing.assert_allclose(F(x), want, rtol=1e-14)


def softplus(v):
    """A helper for a scalar or an array, as numpy's answers for a scalar tell."""
    if np.ndim(v) == 0:
        return np.log1p(np.exp(v))
    return np.sum(np.log1p(np.exp(v)))


@pytest.mark.parametrize("fn, args", [
    (lambda a, b: softplus(a) * b, (0.5, 2.0)),
    (lambda x: np.where(x > 0, x, np.zeros(np.shape(x))), (0.7,)),
    (lambda x: np.where(x > 0, x, np.zeros(np.shape(x))), (-0.7,)),
    (lambda x: x * np.size(x) + np.ndim(x), (1.5,)),
    (lambda x: np.sum(np.atleast_1d(x) ** 2) + np.sum(np.array([x])) + np.sum(np.hstack([x])), (1.5,)),
    (lambda x: np.sum(np.reshape(x, (1,))) + np.einsum("...,...", x, x), (1.5,)),
], ids=["np.ndim", "np.shape", "np.shape-", "np.size", "1-entry arrays", "reshape-einsum"])
def test_numpy_s_answers_for_a_scalar_are_kept(fn, args):
    """np.ndim / np.shape / np.size of a scalar are numpy's (helpers dispatch on them), and a
    1-entry array made on purpose is one: no shapes= asked for, values as numpy's."""
    want = fn(*args)
    assert symgrad.compile(fn)(*args) == pytest.approx(want, rel=1e-15)
    x = np.array([0.5, -1.5, 2.0])  # a batch of scalars: numpy's for each
    np.testing.assert_allclose(symgrad.compile(fn)(x, *args[1:]), [fn(v, *args[1:]) for v in x], rtol=1e-15)


def careful_diff(v):
    try:
        return np.sum(np.diff(v) ** 2)
    except ValueError:  # numpy's for a scalar: no differences
        return 0.0 * v


def test_a_helper_catching_numpy_s_error_for_a_scalar_still_does():
    """The forgotten shapes= said where numpy raises is numpy's exception too."""
    assert symgrad.compile(careful_diff)(1.5) == 0.0
    with pytest.raises(ValueError) as e:
        symgrad.compile(lambda x: np.diff(x))(1.5)
    assert isinstance(e.value, ScalarUsedAsArray) and "np.diff of argument 'x'" in str(e.value)


def test_a_product_of_a_constant_array_and_the_argument_asks_for_shapes_unless_shapes_says_scalar():
    """np.dot(w, x) with a constant array w: the forgotten shapes= of a vector x (numpy would scale
    w by a scalar x); shapes=[()] says that scalar is meant."""
    f = lambda x: np.sum(np.dot(W, x) ** 2)  # noqa: E731
    for g in (f, lambda x: np.sum(np.inner(W, x)), lambda x: np.sum(np.vdot(x, 2.0)) + np.sum(W @ np.atleast_1d(x))):
        with pytest.raises(ScalarUsedAsArray, match=r"shapes=\[\(\)\] if 'x' is meant to be scalar"):
            symgrad.compile(g)(1.5)
    assert symgrad.compile(f, shapes=[()])(1.5) == pytest.approx(f(1.5), rel=1e-15)
    assert symgrad.compile(lambda x: np.sum(np.inner(W, x)), shapes=[()])(1.5) == pytest.approx(np.sum(W) * 1.5)
