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


def f_np_size(x):
    return x * np.size(x)  # HERE


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
                                f_np_size, f_norm, f_dot, f_max, f_index], ids=lambda f: f.__name__)
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
