"""numpy functions symgrad has no traced form of (issue 47, item 8): numpy's own code runs on
the traced values, and where it cannot compute on them the error is symgrad's TraceError at the
user's line, naming the function and what to write instead (never numpy's raw TypeError). And
``.item()`` of a traced entry has its own message (not a forgotten shapes=). IR-level: no C compiler."""
import inspect
import os
import re

import numpy as np
import pytest

import symgrad
from symgrad.errors import ScalarUsedAsArray
from symgrad.ir.evaluate import evaluate
from symgrad.tracing import trace

HERE = os.path.basename(__file__)
X3 = np.array([0.31, -0.57, 0.83])


def _site(fn):
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "# HERE" in text)
    return rf"{re.escape(fn.__name__)}\(\) in \S*{re.escape(HERE)}, line {line}\b"


def fft_abs(x):
    return np.sum(np.abs(np.fft.fft(x)))  # HERE


def rfft_first(x):
    return np.fft.rfft(x)[0].real  # HERE


def covariance(x):
    return np.sum(np.cov(x))  # HERE


def bessel(x):
    return np.i0(x[0])  # HERE


def unwrapped(x):
    return np.sum(np.unwrap(x))  # HERE


@pytest.mark.parametrize("fn, name", [(fft_abs, "numpy.fft.fft"), (rfft_first, "numpy.fft.rfft"),
                                      (covariance, "numpy.cov"), (bessel, "numpy.i0"),
                                      (unwrapped, "numpy.unwrap")], ids=lambda v: getattr(v, "__name__", v))
def test_a_numpy_function_without_a_traced_form_raises_trace_error_at_the_user_s_line(fn, name):
    with pytest.raises(symgrad.TraceError) as e:
        trace(fn, [(3,)])
    msg = str(e.value)
    assert msg.startswith(f"{name} of traced values at ")
    assert re.search(_site(fn), msg), msg
    assert "symgrad has no traced form of it" in msg


def test_the_fft_message_says_what_to_write_instead():
    with pytest.raises(symgrad.TraceError, match=r"np\.fft\.fft\(x\) is C @ x - 1j \* \(S @ x\)"):
        trace(fft_abs, [(4,)])


def test_numpy_functions_made_of_ufuncs_still_trace():
    prog = trace(lambda x: np.sum(np.convolve(x, x)) + np.polynomial.polynomial.polyval(x[0], [1.0, 2.0]) +
                 np.sum(np.fft.fftshift(x) * [1.0, 2.0, 3.0]), [(3,)])
    want = np.sum(np.convolve(X3, X3)) + 1.0 + 2.0 * X3[0] + np.sum(np.fft.fftshift(X3) * [1.0, 2.0, 3.0])
    np.testing.assert_allclose(evaluate(prog, X3)[0], want, rtol=1e-14)
    with pytest.raises(symgrad.TraceError, match="numpy.fft.fft of traced values"):  # (numpy's TypeError before)
        trace(lambda x: np.fft.fft(x)[0].real + np.sum(np.convolve(x, x)), [(3,)])


def test_an_untraced_numpy_function_of_a_scalar_argument_without_shapes_says_shapes():
    with pytest.raises(ScalarUsedAsArray, match=r"numpy\.fft\.fft of argument 'x' at " + _site(fft_abs)):
        trace(fft_abs)


def entry_item(x):
    return x[0].item() * 2.0  # HERE


def entry_tolist(x):
    return x[1].tolist()  # HERE


@pytest.mark.parametrize("fn", [entry_item, entry_tolist], ids=lambda f: f.__name__)
def test_item_of_a_traced_entry_has_its_own_message(fn):
    with pytest.raises(symgrad.TraceError) as e:
        trace(fn, [(3,)])
    msg = str(e.value)
    assert not isinstance(e.value, ScalarUsedAsArray) and "shapes=" not in msg
    assert msg.startswith(".item() / .tolist() of a traced value at ")
    assert re.search(_site(fn), msg), msg
    assert "Use the value itself (`x[0]`, not `x[0].item()`)" in msg


# -- numpy's error classes: a TraceError that is numpy's exception too, whatever its __init__ ---
def fitted(x):
    return np.sum(np.polyfit(np.arange(5.0), x, 2))  # HERE


def fitted_polynomial(x):
    return np.sum(np.polynomial.polynomial.polyfit(np.arange(5.0), x, 2))  # HERE


def fitted_chebyshev(x):
    return np.sum(np.polynomial.chebyshev.chebfit(np.arange(5.0), x, 2))  # HERE


def fitted_classmethod(x):
    return np.sum(np.polynomial.Polynomial.fit(np.arange(5.0), x, 2).coef)  # HERE


@pytest.mark.parametrize("fn", [fitted, fitted_polynomial, fitted_chebyshev, fitted_classmethod],
                         ids=lambda f: f.__name__)
def test_numpy_s_casting_error_becomes_a_trace_error_that_is_a_type_error_too(fn):
    """numpy's _UFuncInputCastingError takes five arguments to be made: the TraceError made from
    a message is one still (TypeError before: its __init__ missing 4 arguments); a classmethod of
    numpy's classes (Polynomial.fit) is guarded too (numpy's raw UFuncTypeError before)."""
    with pytest.raises(symgrad.TraceError) as e:
        trace(fn, [(5,)])
    msg = str(e.value)
    assert re.search(_site(fn), msg), msg
    assert "symgrad has no traced form of it" in msg and "numpy.polynomial" in msg or "numpy.polyfit" in msg
    assert isinstance(e.value, TypeError) and isinstance(e.value, np._core._exceptions.UFuncTypeError)


def _numpy_exceptions():
    import sys
    found = set()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "numpy" and module is not None:
            found.update(v for v in vars(module).values() if isinstance(v, type) and issubclass(v, BaseException)
                         and (v.__module__ or "").split(".")[0] == "numpy")
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_every_numpy_exception_class_makes_a_trace_error_from_a_message():
    from symgrad.tracing.standins import _kind
    classes = _numpy_exceptions()
    assert len(classes) > 10
    for cls in classes:
        k = _kind(cls)
        e = k("a message")
        assert isinstance(e, symgrad.TraceError) and isinstance(e, cls) and str(e) == "a message", cls

    class Unmakeable(TypeError):  # (made only with two arguments, even past its __init__)
        def __new__(cls, a, b):
            return super().__new__(cls, a, b)
    e = _kind(Unmakeable)("a message")  # the nearest builtin class it is one of
    assert isinstance(e, symgrad.TraceError) and isinstance(e, TypeError) and str(e) == "a message"


# -- numpy's own error where numpy raises it on numbers too ---------------------------------------
def inserted_out_of_bounds(x):
    return np.sum(np.insert(x, 10, 1.0))  # HERE


def lower_indices_of_a_vector(x):
    return np.sum(x[np.tril_indices_from(x)])  # HERE


@pytest.mark.parametrize("fn, kind, text", [(inserted_out_of_bounds, IndexError, "index 10 is out of bounds for "
                                             "axis 0 with size 3"),
                                            (lower_indices_of_a_vector, ValueError, "input array must be 2-d")],
                         ids=["insert", "tril_indices_from"])
def test_the_user_s_own_error_is_numpy_s_at_the_user_s_line(fn, kind, text):
    """numpy raises the same on floats: its own error (the user's line added), not 'no traced form'."""
    with pytest.raises(kind, match=re.escape(text)):
        fn(np.ones(3))
    with pytest.raises(kind) as e:
        trace(fn, [(3,)])
    msg = str(e.value)
    assert not isinstance(e.value, symgrad.TraceError) and msg.startswith(text), msg
    assert re.search(_site(fn), msg) and "no traced form" not in msg, msg
