"""Every bad input symgrad can meet gets an exception of the right type with a useful message.

Also: inputs that are merely unusual (ints, float32, strided/transposed/Fortran/big-endian
arrays, non-contiguous ``out=``) are converted, never misread.

Compiling C costs ~0.3 s per distinct kernel, so the compiled Functions are module-scoped
fixtures shared by the tests; most error paths (argument checks, ``out=`` checks, tracing,
API misuse) fire before anything is compiled.
"""
from __future__ import annotations

import array
import cmath
import inspect
import math
import os
import re
import struct

import numpy as np
import pytest

import symgrad

HERE = os.path.basename(__file__)


def _marked_line(fn, marker="# BAD"):
    """The line number (from inspect) of the single source line of ``fn`` carrying ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, hits
    return hits[0]


def _site(fn):
    """Regex for the 'name() in FILE, line N' part of a TraceError message."""
    return rf"{re.escape(fn.__name__)}\(\) in \S*{re.escape(HERE)}, line {_marked_line(fn)}\b"


def _zeros(shapes):
    return [np.zeros(s) for s in shapes]


# ---------------------------------------------------------------------------------------
# Functions shared by the numeric tests (each compiled kernel is built once per module).
# ---------------------------------------------------------------------------------------

def quad(x, v):  # shapes [(), (3,)]
    return x * np.sum(v * v) + math.sin(x)


def quad_ref(x, v):
    x, v = np.asarray(x, float), np.asarray(v, float)
    return x * (v * v).sum(-1) + np.sin(x)


def quad_grad_ref(x, v):
    x, v = np.asarray(x, float), np.asarray(v, float)
    return (v * v).sum(-1) + np.cos(x), 2 * x[..., None] * v


def affine(M, v):  # shapes [(2, 3), (3,)]: a non-square matrix, so a transposed read shows
    return M @ v + np.array([math.sin(M[0, 1]), M[1, 2] * M[1, 0]])


def affine_ref(M, v):
    M, v = np.asarray(M, float), np.asarray(v, float)
    extra = np.stack([np.sin(M[..., 0, 1]), M[..., 1, 2] * M[..., 1, 0]], axis=-1)
    return np.einsum("...ij,...j->...i", M, v) + extra


def lin(x):
    return 2.0 * x + 1.0


def two(x, y):
    return x * y + math.exp(x)


def vec(v):  # vector-valued
    return v * 2.0


@pytest.fixture(scope="module")
def Q():
    return symgrad.compile(quad, shapes=[(), (3,)])


@pytest.fixture(scope="module")
def QG(Q):
    return Q.grad


@pytest.fixture(scope="module")
def QVG(Q):
    return Q.value_and_grad


@pytest.fixture(scope="module")
def A():
    return symgrad.compile(affine, shapes=[(2, 3), (3,)])


@pytest.fixture(scope="module")
def L():
    return symgrad.compile(lin)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(1234)


# =======================================================================================
# Calling a Function with bad arguments
# =======================================================================================

def test_too_few_arguments(Q):
    with pytest.raises(TypeError, match=r"quad .*takes 2 argument\(s\) \(x, v\), got 1"):
        Q(1.0)


def test_too_many_arguments(Q):
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\) \(x, v\), got 3"):
        Q(1.0, np.zeros(3), 2.0)


def test_wrong_argument_count_on_derived_function(QG):
    with pytest.raises(TypeError, match=r"quad \(grad\) takes 2 argument\(s\) \(x, v\), got 0"):
        QG()


def test_keyword_arguments_bind_by_name_and_unknown_ones_are_named(Q):
    v = np.array([1.0, 2.0, 3.0])
    assert Q(v=v, x=1.5) == Q(1.5, v)
    with pytest.raises(TypeError, match=r"quad \(value\) got an unexpected keyword argument 'w'"):
        Q(1.0, w=v)


@pytest.mark.parametrize("bad, got", [
    (np.zeros(4), r"\(4,\)"),
    (2.0, r"\(\)"),
    (np.zeros((3, 2)), r"\(3, 2\)"),
    (np.zeros((3, 1)), r"\(3, 1\)"),
])
def test_wrong_core_shape(Q, bad, got):
    with pytest.raises(ValueError, match=rf"argument 'v' must have trailing \(core\) shape \(3,\), "
                                         rf"got an array of shape {got}"):
        Q(1.0, bad)


def test_wrong_core_shape_of_matrix_argument(A):
    # A (3, 2) array is not silently reinterpreted as the (2, 3) core.
    with pytest.raises(ValueError, match=r"argument 'M' must have trailing \(core\) shape \(2, 3\), "
                                         r"got an array of shape \(3, 2\)"):
        A(np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match=r"'M'.*\(2, 3\)"):
        A(np.zeros(6), np.zeros(3))


def test_wrong_core_shape_of_scalar_argument_in_batch(Q):
    # x is a scalar argument: any shape is a batch shape, so the error is on broadcasting.
    with pytest.raises(ValueError, match=r"do not broadcast: x: \(2,\), v: \(3,\)"):
        Q(np.zeros(2), np.zeros((3, 3)))


def test_batch_dims_do_not_broadcast_matrix(A):
    with pytest.raises(ValueError, match=r"batch dimensions of the arguments do not broadcast: "
                                         r"M: \(4,\), v: \(5,\)"):
        A(np.zeros((4, 2, 3)), np.zeros((5, 3)))


def test_batch_dims_that_broadcast_are_fine(Q):
    x, v = np.linspace(0, 1, 4)[:, None], np.arange(15.0).reshape(5, 3) / 7
    np.testing.assert_allclose(Q(x, v), quad_ref(x, v), rtol=1e-14)


@pytest.mark.parametrize("bad", [1j, np.complex128(1.0 + 0j), np.array([1.0, 2.0], complex)],
                         ids=["python-complex", "complex-zero-imag", "complex-array"])
def test_complex_input_is_rejected(Q, bad):
    with pytest.raises(TypeError, match=r"argument 'x' is complex; symgrad functions take real numbers"):
        Q(bad, np.zeros(3))


@pytest.mark.parametrize("where", ["x", "v"])
def test_masked_array_is_rejected(Q, where):
    """A masked array's hidden entries would be computed as if valid: refused, by name."""
    x, v = np.ma.masked_array(0.5, mask=False), np.ma.masked_array(np.zeros(3), mask=[0, 1, 0])
    args = (x, np.zeros(3)) if where == "x" else (0.5, v)
    with pytest.raises(TypeError, match=rf"argument '{where}' is a masked array; pass plain values"):
        Q(*args)


def test_masked_array_is_rejected_batch_last_and_as_out(Q):
    """batch_last moved a masked array's data out of its mask, and out= wrote results under a
    mask that hid them: both refused."""
    v = np.ma.masked_array(np.zeros((3, 2)), mask=False)
    with pytest.raises(TypeError, match=r"argument 'v' is a masked array"):
        Q.batch_last(np.ones(2), v)
    with pytest.raises(TypeError, match=r"out= must hold plain numpy arrays, got a masked array"):
        Q(0.5, np.zeros(3), out=np.ma.masked_array(np.zeros(()), mask=False))


def test_complex_vector_input_is_rejected(Q):
    with pytest.raises(TypeError, match=r"argument 'v' is complex"):
        Q(1.0, np.zeros(3, complex))


@pytest.mark.parametrize("bad, what", [
    ("1.0", r"str"),
    (b"1.0", r"bytes"),
    (None, r"NoneType"),
    (np.array(1.0, dtype=object), r"dtype object"),
    (np.datetime64("2020-01-01"), r"datetime64"),
    (np.timedelta64(1, "s"), r"timedelta64"),
    (object(), r"object"),
])
def test_non_numeric_scalar_input_is_rejected(Q, bad, what):
    with pytest.raises(TypeError, match=rf"argument 'x' must be real numbers.*{what}"):
        Q(bad, np.zeros(3))


@pytest.mark.parametrize("bad, what", [
    (["a", "b", "c"], r"list of dtype <U1"),
    (np.array([1.0, 2.0, 3.0], dtype=object), r"dtype object"),
    ([1.0, None, 3.0], r"dtype object"),
    (np.zeros(3, dtype=[("a", "f8")]), r"ndarray"),
])
def test_non_numeric_array_input_is_rejected(Q, bad, what):
    with pytest.raises(TypeError, match=rf"argument 'v' must be real numbers.*{what}"):
        Q(1.0, bad)


# =======================================================================================
# Unusual but valid inputs are converted, never misread
# =======================================================================================

def test_int_input_is_converted(Q, QG):
    x, v = np.arange(4), np.arange(12).reshape(4, 3)
    r = Q(x, v)
    assert r.dtype == np.float64
    np.testing.assert_allclose(r, quad_ref(x, v), rtol=1e-14)
    assert np.array_equal(r, Q(x.astype(float), v.astype(float)))
    gx, gv = QG(3, [1, 2, 3])  # Python ints and lists
    np.testing.assert_allclose(gx, 14 + math.cos(3), rtol=1e-14)
    np.testing.assert_allclose(gv, [6.0, 12.0, 18.0], rtol=1e-14)


def test_bool_and_small_int_dtypes_are_converted(Q):
    v = np.array([1, 0, 1], dtype=np.int8)
    assert Q(np.True_, v) == Q(1.0, v.astype(float))
    assert Q(np.uint16(2), np.array([True, False, True])) == Q(2.0, np.array([1.0, 0.0, 1.0]))


def test_float32_input_to_float64_function(Q, QG):
    x = np.linspace(0.1, 2.0, 5, dtype=np.float32)
    v = (np.arange(15, dtype=np.float32).reshape(5, 3) / 7).astype(np.float32)
    r = Q(x, v)
    assert r.dtype == np.float64
    # float32 -> float64 is exact, so the result equals the float64 call bit for bit.
    assert np.array_equal(r, Q(x.astype(np.float64), v.astype(np.float64)))
    np.testing.assert_allclose(r, quad_ref(x, v), rtol=1e-13)
    gx, gv = QG(x, v)
    ex, ev = quad_grad_ref(x, v)
    np.testing.assert_allclose(gx, ex, rtol=1e-13)
    np.testing.assert_allclose(gv, ev, rtol=1e-13)


def test_float16_and_longdouble_inputs(L):
    assert L(np.float16(1.5)) == 4.0
    assert L(np.longdouble(1.5)) == 4.0


def test_big_endian_input_is_not_misread(Q):
    x = np.array([0.5, 1.5], dtype=">f8")
    v = np.arange(6.0).reshape(2, 3).astype(">f8")
    np.testing.assert_array_equal(Q(x, v), Q(x.astype("<f8"), v.astype("<f8")))
    np.testing.assert_allclose(Q(x, v), quad_ref(x, v), rtol=1e-14)


def test_strided_view_input(Q, rng):
    base_x = rng.uniform(-2, 2, 20)
    base_v = rng.uniform(-2, 2, (10, 6))
    x, v = base_x[::2], base_v[:, ::2]  # both non-contiguous
    assert not x.flags.c_contiguous and not v.flags.c_contiguous
    r = Q(x, v)
    assert np.array_equal(r, Q(x.copy(), v.copy()))
    np.testing.assert_allclose(r, quad_ref(x, v), rtol=1e-13)


def test_negative_stride_input(Q, rng):
    x, v = rng.uniform(-2, 2, 6), rng.uniform(-2, 2, (6, 3))
    r = Q(x[::-1], v[::-1, ::-1])
    assert np.array_equal(r, Q(x[::-1].copy(), v[::-1, ::-1].copy()))
    np.testing.assert_allclose(r, quad_ref(x[::-1], v[::-1, ::-1]), rtol=1e-13)


def test_transposed_matrix_argument(A, rng):
    Mt = rng.uniform(-1, 1, (3, 2))
    M = Mt.T  # a (2, 3) view with transposed strides
    assert M.shape == (2, 3) and not M.flags.c_contiguous
    v = rng.uniform(-1, 1, 3)
    r = A(M, v)
    np.testing.assert_array_equal(r, A(np.ascontiguousarray(M), v))
    np.testing.assert_allclose(r, affine_ref(M, v), rtol=1e-14)


def test_batch_of_transposed_matrices(A, rng):
    Ms = np.swapaxes(rng.uniform(-1, 1, (5, 3, 2)), -1, -2)  # (5, 2, 3), non-contiguous
    v = rng.uniform(-1, 1, (5, 3))
    r = A(Ms, v)
    np.testing.assert_array_equal(r, A(Ms.copy(), v))
    np.testing.assert_allclose(r, affine_ref(Ms, v), rtol=1e-14)


def test_fortran_ordered_arrays(A, rng):
    M = np.asfortranarray(rng.uniform(-1, 1, (4, 2, 3)))
    v = np.asfortranarray(rng.uniform(-1, 1, (4, 3)))
    assert M.flags.f_contiguous and not M.flags.c_contiguous
    r = A(M, v)
    np.testing.assert_array_equal(r, A(np.ascontiguousarray(M), np.ascontiguousarray(v)))
    np.testing.assert_allclose(r, affine_ref(M, v), rtol=1e-14)


def test_zero_stride_broadcast_view_input(A, rng):
    M = np.broadcast_to(rng.uniform(-1, 1, (2, 3)), (4, 2, 3))  # stride 0 on the batch axis
    v = rng.uniform(-1, 1, (4, 3))
    np.testing.assert_array_equal(A(M, v), A(M.copy(), v))
    np.testing.assert_allclose(A(M, v), affine_ref(M, v), rtol=1e-14)


def test_inputs_are_not_modified(Q):
    x, v = np.linspace(0, 1, 4), np.arange(12.0).reshape(4, 3)
    x0, v0 = x.copy(), v.copy()
    Q(x, v)
    Q.grad(x, v)
    assert np.array_equal(x, x0) and np.array_equal(v, v0)


def test_float32_function_converts_inputs_and_checks_out():
    F = symgrad.compile(lambda x: x * x + 0.25, dtype="float32")
    x = np.linspace(0, 3, 7)  # float64 in, float32 out
    r = F(x)
    assert r.dtype == np.float32
    np.testing.assert_allclose(r, x * x + 0.25, rtol=1e-6)
    assert F(np.arange(3)).tolist() == [0.25, 1.25, 4.25]
    with pytest.raises(TypeError, match=r"out= array has dtype float64, expected float32"):
        F(x, out=np.empty(7))


# =======================================================================================
# out=
# =======================================================================================

def test_out_wrong_shape(Q):
    with pytest.raises(ValueError, match=r"out= array has shape \(3,\), expected \(4,\)"):
        Q(np.zeros(4), np.zeros(3), out=np.empty(3))
    with pytest.raises(ValueError, match=r"out= array has shape \(\), expected \(4,\)"):
        Q(np.zeros(4), np.zeros(3), out=np.empty(()))


def test_out_wrong_shape_in_gradient_tuple(QG):
    with pytest.raises(ValueError, match=r"out= array has shape \(4, 2\), expected \(4, 3\)"):
        QG(np.zeros(4), np.zeros(3), out=(np.empty(4), np.empty((4, 2))))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.complex128, ">f8"])
def test_out_wrong_dtype(Q, dtype):
    with pytest.raises(TypeError, match=rf"out= array has dtype {re.escape(str(np.dtype(dtype)))}, "
                                        r"expected float64"):
        Q(np.zeros(4), np.zeros(3), out=np.empty(4, dtype))


def test_out_not_an_array(Q):
    with pytest.raises(TypeError, match=r"out= must hold numpy arrays, got list"):
        Q(np.zeros(4), np.zeros(3), out=[0.0] * 4)


@pytest.mark.parametrize("bad", [
    pytest.param(lambda: np.empty(4), id="array-for-tuple"),
    pytest.param(lambda: (np.empty(4),), id="tuple-too-short"),
    pytest.param(lambda: (np.empty(4), np.empty((4, 3)), np.empty(4)), id="tuple-too-long"),
])
def test_out_wrong_structure_for_gradient_tuple(QG, bad):
    with pytest.raises(TypeError, match=r"out= must have the structure of the results \(a tuple of 2\)"):
        QG(np.zeros(4), np.zeros(3), out=bad())


def test_out_tuple_holding_a_float(QG):
    with pytest.raises(TypeError, match=r"out= must hold numpy arrays, got float"):
        QG(np.zeros(4), np.zeros(3), out=(1.0, np.empty((4, 3))))


def test_out_flat_tuple_for_value_and_grad(QVG):
    # value_and_grad returns (value, (gx, gv)); a flat triple is the wrong structure.
    with pytest.raises(TypeError, match=r"structure of the results \(a tuple of 2\)"):
        QVG(np.zeros(4), np.zeros(3), out=(np.empty(4), np.empty(4), np.empty((4, 3))))


def test_out_wrong_structure_for_hessian_of_two_arguments():
    H = symgrad.hessian(two)  # ((hxx, hxy), (hyx, hyy))
    with pytest.raises(TypeError, match=r"structure of the results \(a tuple of 2\)"):
        H(1.0, 2.0, out=tuple(np.empty(()) for _ in range(4)))
    with pytest.raises(TypeError, match=r"structure of the results"):
        H(1.0, 2.0, out=np.empty(()))


def test_out_tuple_for_single_result(Q):
    with pytest.raises(TypeError, match=r"out= must hold numpy arrays, got tuple"):
        Q(np.zeros(4), np.zeros(3), out=(np.empty(4),))


def test_out_read_only(Q):
    ro = np.empty(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"out= array is read-only"):
        Q(np.zeros(4), np.zeros(3), out=ro)


def test_out_read_only_in_tuple(QG):
    ro = np.empty((4, 3))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"read-only"):
        QG(np.zeros(4), np.zeros(3), out=(np.empty(4), ro))


def test_out_broadcast_view_is_read_only(L):
    view = np.broadcast_to(np.zeros(1), (4,))
    with pytest.raises(ValueError, match=r"read-only"):
        L(np.zeros(4), out=view)


def test_out_is_returned_and_filled(Q):
    x, v = np.linspace(0, 1, 4), np.arange(12.0).reshape(4, 3)
    out = np.full(4, np.nan)
    r = Q(x, v, out=out)
    assert r is out
    np.testing.assert_allclose(out, quad_ref(x, v), rtol=1e-14)


def test_out_tuple_is_returned_and_filled(QG):
    x, v = np.linspace(0, 1, 4), np.arange(12.0).reshape(4, 3)
    out = (np.full(4, np.nan), np.full((4, 3), np.nan))
    r = QG(x, v, out=out)
    assert r is out
    ex, ev = quad_grad_ref(x, v)
    np.testing.assert_allclose(out[0], ex, rtol=1e-14)
    np.testing.assert_allclose(out[1], ev, rtol=1e-14)


def test_out_zero_dimensional_for_scalar_call(L):
    out = np.empty(())
    assert L(2.0, out=out) is out
    assert out[()] == 5.0


def test_out_strided_view_is_filled(L):
    x = np.linspace(-1, 1, 5)
    big = np.zeros(10)
    r = L(x, out=big[::2])
    assert r.base is big
    np.testing.assert_array_equal(big[::2], 2 * x + 1)
    np.testing.assert_array_equal(big[1::2], 0.0)  # the gaps are untouched


def test_out_strided_members_of_gradient_tuple(QG):
    x, v = np.linspace(0, 1, 4), np.arange(12.0).reshape(4, 3) / 5
    gx_buf, gv_buf = np.zeros(8), np.zeros((4, 6))
    out = (gx_buf[::2], gv_buf[:, ::2])  # both strided views
    assert QG(x, v, out=out) is out
    ex, ev = quad_grad_ref(x, v)
    np.testing.assert_allclose(gx_buf[::2], ex, rtol=1e-14)
    np.testing.assert_allclose(gv_buf[:, ::2], ev, rtol=1e-14)
    np.testing.assert_array_equal(gx_buf[1::2], 0.0)  # the gaps are untouched
    np.testing.assert_array_equal(gv_buf[:, 1::2], 0.0)


# Fortran-ordered or transposed out= arrays are filled through a C-ordered scratch array.
def test_out_transposed_member_of_gradient_tuple(QG):
    x, v = np.linspace(0, 1, 4), np.arange(12.0).reshape(4, 3) / 5
    gv = np.zeros((3, 4)).T  # a transposed (4, 3) view
    QG(x, v, out=(np.empty(4), gv))
    np.testing.assert_allclose(gv, quad_grad_ref(x, v)[1], rtol=1e-14)


def test_out_fortran_ordered_matrix_batch(A, rng):
    M, v = rng.uniform(-1, 1, (3, 5, 2, 3)), rng.uniform(-1, 1, (5, 3))
    out = np.zeros((3, 5, 2), order="F")
    assert A(M, v, out=out) is out
    np.testing.assert_allclose(out, affine_ref(M, v), rtol=1e-14)


def test_out_fortran_ordered_vector_batch(L):
    x = np.arange(6.0).reshape(2, 3)
    out = np.zeros((2, 3), order="F")
    L(x, out=out)
    np.testing.assert_array_equal(out, 2 * x + 1)


def test_out_same_array_as_input(L, QG):
    # numpy semantics: F(x, out=x) computes from the old x.
    x = np.linspace(-1, 1, 9)
    expect = 2 * x + 1
    L(x, out=x)
    np.testing.assert_array_equal(x, expect)
    x, v = np.linspace(0.1, 0.9, 4), np.arange(12.0).reshape(4, 3) / 5
    ex, ev = quad_grad_ref(x, v)
    QG(x, v, out=(x, v))
    np.testing.assert_allclose(x, ex, rtol=1e-14)
    np.testing.assert_allclose(v, ev, rtol=1e-14)


def test_out_overlapping_input_is_not_misread(L):
    buf = np.arange(10.0)
    r = L(buf[:-1], out=buf[1:])
    np.testing.assert_array_equal(r, 2 * np.arange(9.0) + 1)  # numpy: as if the input were copied


# =======================================================================================
# Tracing errors
# =======================================================================================

def branch_raise(x):
    if x < 0:  # BAD
        raise ValueError("negative")
    return x


def test_unconvertible_branch_names_function_file_line_and_suggests_where():
    F = symgrad.compile(branch_raise)
    with pytest.raises(symgrad.TraceError) as info:
        F(1.0)
    msg = str(info.value)
    assert f"branch_raise() in {__file__}, line {_marked_line(branch_raise)}: " in msg
    assert "`if x < 0:" in msg  # the source line itself
    assert "raises an exception" in msg  # why it cannot be converted
    assert "symgrad.where" in msg


def test_trace_error_is_raised_again_not_cached_as_constant():
    F = symgrad.compile(branch_raise)
    for _ in range(2):
        with pytest.raises(symgrad.TraceError, match="symgrad.where"):
            F.expr
    with pytest.raises(symgrad.TraceError, match=_site(branch_raise)):
        F.grad(1.0)  # derived functions trace on first use, like jax.grad
    # a failed trace leaves no tracer state behind: another function still traces
    assert str(symgrad.compile(lambda x: x * 3).expr) == "3*x"


def _helper_branch(y):
    while y > 1:  # BAD
        y = y / 2
    return y


def calls_helper(x):
    return _helper_branch(2 * x)


def test_trace_error_in_helper_names_the_helper_line():
    with pytest.raises(symgrad.TraceError, match=_site(_helper_branch)):
        symgrad.compile(calls_helper)(1.0)


def branch_while(x):
    while x < 3:  # BAD
        x = x + 1
    return x


def branch_break(v):
    s = 0.0
    for a in v:
        if a > 0:  # BAD
            break
        s = s + a
    return s


def branch_store(x, y):
    acc = [0.0]
    if x > y:  # BAD
        acc[0] = x
    return acc[0] + y


def _push(acc, v):
    acc.append(v)
    return v


def branch_calls_mutator(x):
    acc = []
    if x > 0:
        y = _push(acc, x)  # BAD
    else:
        y = -x
    return y + len(acc)


def to_float(x):
    return float(x) * x  # BAD


def to_int(x):
    return int(x) * x  # BAD


def to_complex(x):
    return complex(x).real  # BAD


def np_float64(x):
    return np.float64(x) + x  # BAD


def astype_int16(v):
    return v.astype(np.int16).sum()  # BAD: int16's wrap-around is not traced (int64 is: numpy's truncation)


def stdlib_array(x):
    return array.array("d", [x])[0] + x  # BAD


def via_cmath(x):
    return cmath.sqrt(x).real  # BAD


def percent_format(x):
    return len("%.3f" % x) * x  # BAD


def fstring_format(x):
    return len(f"{x:.3f}") * x  # BAD


def complex_constant(x):
    return (x * 1j).real  # BAD


def range_of(x):
    return sum(range(x))  # BAD


def list_index(x):
    return [1.0, 2.0, 3.0][x]  # BAD


def math_isclose(x):
    return x if math.isclose(x, 1.0) else 0.0  # BAD


def math_factorial(x):
    return math.factorial(x)  # BAD


def pow_mod(x):
    return pow(x, 2, 5)  # BAD


def min_with_key(v):
    return min(v, key=lambda a: a * a)  # BAD


def mask_index(v):
    return np.sum(v[v > 0.4])  # BAD


TRACE_ERRORS = [
    (branch_while, [()], r"`while` loop at .*`while x < 3:.*depends on a traced value.*symgrad\.where"),
    (branch_break, [(3,)], r"`if` at .*depends on a traced value.*has a `break`.*symgrad\.where"),
    (branch_store, [(), ()], r"`if` at .*stores into an item or attribute.*symgrad\.where"),
    (branch_calls_mutator, [()], r"_push\(\) is called inside a branch.*calls \.append\(\) on acc"),
    (to_float, [()], r"float\(\) of a traced value"),
    (to_int, [()], r"int\(\) of a traced value"),
    (to_complex, [()], r"complex\(\) of a traced value"),
    (np_float64, [()], r"float\(\) of a traced value"),
    (astype_int16, [(3,)], r"dtype=int16 of traced values"),
    (stdlib_array, [()], r"float\(\) of a traced value"),
    (via_cmath, [()], r"complex\(\) of a traced value"),
    (percent_format, [()], r"float\(\) of a traced value"),
    (fstring_format, [()], r"format\(\) / f-string formatting of a traced value"),
    (complex_constant, [()], r"complex number 1j combined with a traced value"),
    (range_of, [()], r"int\(\) of a traced value"),
    (list_index, [()], r"int\(\) of a traced value"),
    (math_isclose, [()], r"math\.isclose on a traced value"),
    (math_factorial, [()], r"math\.factorial on a traced value"),
    (pow_mod, [()], r"pow\(x, y, mod\) on traced values"),
    (min_with_key, [(3,)], r"min\(\.\.\., key=\.\.\.\).*symgrad\.where"),
    (mask_index, [(3,)], r"indexed by a traced comparison.*shape would depend on the data.*np\.where"),
]


@pytest.mark.parametrize("fn, shapes, what", TRACE_ERRORS, ids=[t[0].__name__ for t in TRACE_ERRORS])
def test_value_leaving_the_traced_world_raises_trace_error(fn, shapes, what):
    """Never a silent constant: a TraceError naming what happened, the function and the line."""
    F = symgrad.compile(fn, shapes=shapes)
    with pytest.raises(symgrad.TraceError) as info:
        F(*_zeros(shapes))  # the first call traces: nothing is compiled
    msg = str(info.value)
    assert re.search(what, msg, re.S), msg
    assert re.search(_site(fn), msg), msg


def test_trace_error_also_from_derivatives():
    with pytest.raises(symgrad.TraceError, match=_site(to_float)):
        symgrad.grad(to_float)(1.0)
    with pytest.raises(symgrad.TraceError, match=_site(branch_raise)):
        symgrad.derivative(branch_raise, 2)(1.0)
    with pytest.raises(symgrad.TraceError, match=_site(branch_store)):
        symgrad.hessian(branch_store)(1.0, 1.0)


# Constructs symgrad once refused and now traces: each against plain Python on floats.
def branch_if(x):
    if x > 0:
        return x
    return -x


def branch_and(x, y):
    if x > 0 and y > 0:
        return x
    return y


def branch_or(x, y):
    return x if (x > 0 or y > 0) else y


def branch_bool(x):
    return x if bool(x) else -x


def nan_guard(x):
    if x != x:  # the classic NaN test
        return 0.0
    return x


def store_in_float_array(x):
    a = np.zeros(2)
    a[0] = x
    return a[0] + x


def slice_store_in_float_array(v):
    a = np.empty(3)
    a[:] = v
    return a.sum()


def inplace_add_float_array(x):
    a = np.zeros(2)
    a += x
    return a.sum()


def np_array_float_dtype(x):
    return np.array([x, 1.0], dtype=float).sum()


def np_interp(x):
    return np.interp(x, [0.0, 1.0], [0.0, 2.0])


def modulo(x):
    return x % 2


def rmodulo(x):
    return 2 % x


def floordiv(x):
    return x // 2


def rfloordiv(x):
    return 7 // x


def rounding(x):
    return round(x)


def rounding_digits(x):
    return round(x, 2)


def np_round(x):
    return np.round(x)


def divmod_of(x):
    return divmod(x, 2)[0] + divmod(x, 2)[1]


def math_fmod(x):
    return math.fmod(x, 2.0)


def math_isnan(x):
    return x if not math.isnan(x) else 0.0


def np_isnan(x):
    return np.isnan(x) * x


def np_mod(x):
    return np.mod(x, 2.0)


def np_heaviside(x):
    return np.heaviside(x, 0.5)


def condition_arithmetic(x):
    return (x > 0) * x


def condition_to_float(x):
    return float(x > 0) * x


def any_positive(v):
    return v[0] if np.any(v > 0) else v[1]


SUPPORTED = [branch_if, branch_and, branch_or, branch_bool, nan_guard, store_in_float_array,
             slice_store_in_float_array, inplace_add_float_array, np_array_float_dtype, np_interp, modulo, rmodulo,
             floordiv, rfloordiv, rounding, rounding_digits, np_round, divmod_of, math_fmod, math_isnan, np_isnan,
             np_mod, np_heaviside, condition_arithmetic, condition_to_float, any_positive]
POINTS = [-2.6, -0.3, 0.35, 0.6, 4.7, float("nan")]


@pytest.mark.parametrize("fn", SUPPORTED, ids=[f.__name__ for f in SUPPORTED])
def test_formerly_refused_constructs_trace_as_python_computes_them(fn):
    nargs = len(inspect.signature(fn).parameters)
    shapes = [(3,)] if fn in (slice_store_in_float_array, any_positive) else [()] * nargs
    F = symgrad.compile(fn, shapes=shapes)
    for k, p in enumerate(POINTS):
        args = [np.array([p, POINTS[k - 1], -p]) if s else p + j for j, s in enumerate(shapes)]
        with np.errstate(all="ignore"):
            try:
                want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
            except (ValueError, ZeroDivisionError):  # Python refuses round(nan), 2 % nan: nothing to compare
                continue
            got = F(*args)
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0, equal_nan=True, err_msg=f"{fn.__name__}{args}")


def struct_pack(x):
    return struct.unpack("d", struct.pack("d", x))[0]  # BAD


def test_struct_pack_of_traced_value_is_not_a_silent_constant():
    # struct's C code replaces the TraceError raised by __float__ with its own struct.error;
    # what matters is that the value never becomes a constant.
    with pytest.raises((symgrad.TraceError, struct.error)):
        symgrad.compile(struct_pack).expr


@pytest.mark.parametrize("fn, what", [
    (lambda x: "abc", r"returned str 'abc'; expected numbers or traced values"),
    (lambda x: None, r"returned NoneType None"),
    (lambda x: {"a": x}, r"returned dict"),
    (lambda x: [x, [x, x]], r"returned a ragged structure"),
    (lambda x: [[x], [x, x]], r"returned a ragged structure"),
    (lambda x: (x, (x, x)), r"returned a ragged structure"),
    (lambda x: x > 0, r"returned a comparison.*symgrad\.where"),
    (lambda x: np.array(["a", "b"]), r"returned str"),
    (lambda x: (a for a in [x]), r"returned generator"),
], ids=["str", "None", "dict", "ragged-list", "ragged-rows", "ragged-tuple", "comparison",
        "str-array", "generator"])
def test_bad_return_value_raises_trace_error(fn, what):
    with pytest.raises(symgrad.TraceError, match=r"<lambda> " + what):
        symgrad.compile(fn)(1.0)


# =======================================================================================
# API misuse
# =======================================================================================

@pytest.mark.parametrize("get", [lambda F: F.grad, lambda F: F.hessian, lambda F: F.value_and_grad],
                         ids=["grad", "hessian", "value_and_grad"])
def test_scalar_derivative_of_vector_valued_function(get):
    F = symgrad.compile(vec, shapes=[3])
    G = get(F)  # derived lazily (like jax.grad); the check runs on first use
    with pytest.raises(ValueError, match=r"needs a scalar-valued function, but it returns shape \(3,\); "
                                         r"use \.jacobian"):
        G(np.zeros(3))


@pytest.mark.parametrize("verb", [symgrad.grad, symgrad.hessian, symgrad.value_and_grad])
def test_scalar_derivative_verbs_of_vector_valued_function(verb):
    with pytest.raises(ValueError, match=r"scalar-valued.*jacobian"):
        verb(vec, shapes=[3])(np.zeros(3))
    with pytest.raises(ValueError, match=r"returns shape \(2,\).*jacobian"):
        verb(lambda x: (x, 2 * x))(1.0)


def test_jacobian_of_vector_valued_function_is_fine():
    J = symgrad.jacobian(vec, shapes=[3])
    assert J.expr.shape == (3, 3)


def test_derivative_wrt_vector_argument():
    F = symgrad.compile(quad, shapes=[(), (3,)])
    with pytest.raises(ValueError, match=r"derivative\(n\) needs a scalar argument, but 'v' has shape "
                                         r"\(3,\); use \.jacobian or \.hessian"):
        F.derivative(2, argnum=1)
    with pytest.raises(ValueError, match=r"'v' has shape \(3,\)"):
        symgrad.derivative(vec, 2, shapes=[3])


@pytest.mark.parametrize("n", [-1, 1.5, "2", None])
def test_derivative_bad_order(n):
    with pytest.raises(ValueError, match=r"derivative order must be a non-negative int"):
        symgrad.compile(two).derivative(n)


@pytest.mark.parametrize("argnum", [2, -3])
def test_derivative_argnum_out_of_range(argnum):
    with pytest.raises(ValueError, match=rf"argnum must be an int in range for a function of 2 arguments, got {argnum}"):
        symgrad.compile(two).derivative(1, argnum=argnum)


def test_derivative_non_int_argnum():
    with pytest.raises(ValueError, match="argnum"):
        symgrad.compile(two).derivative(1, argnum=1.0)


def test_derivative_bool_order():
    try:
        d = symgrad.compile(two).derivative(True)
    except ValueError as e:
        assert "order" in str(e)
        return
    assert d.expr == symgrad.compile(two).derivative(1).expr


@pytest.mark.parametrize("shapes, what", [
    ([(0,)], r"positive ints.*\(0,\)"),
    ([(-1,)], r"positive ints.*\(-1,\)"),
    ([(2, 0)], r"positive ints.*\(2, 0\)"),
    (["a"], r"positive ints.*'a'"),
    ([(2.5,)], r"positive ints.*\(2\.5,\)"),
    ([(), ()], r"shapes gives 2 argument shapes but ident takes 1 positional arguments"),
    ([(), (), ()], r"shapes gives 3 argument shapes but ident takes 1"),
])
def test_bad_shapes(shapes, what):
    def ident(x):
        return x
    with pytest.raises(ValueError, match=what):
        symgrad.compile(ident, shapes)
    with pytest.raises(ValueError, match=what):
        symgrad.grad(ident, shapes=shapes)


def test_shapes_bare_int():
    with pytest.raises(ValueError, match=r"one core shape per argument"):
        symgrad.compile(vec, shapes=3)


def test_shapes_none_entry():
    with pytest.raises(ValueError, match=r"shape"):
        symgrad.compile(vec, shapes=[None])


def test_fewer_shapes_than_required_parameters():
    with pytest.raises(ValueError, match=r"shapes"):
        symgrad.compile(two, shapes=[()])


@pytest.mark.parametrize("argnums, what", [
    (2, r"argnums must be ints in range for 2 argument\(s\), got 2"),
    (-3, r"in range for 2 argument\(s\), got -3"),
    ((0, 2), r"in range for 2 argument\(s\), got \(0, 2\)"),
    ("0", r"argnums must be an int or a tuple of ints"),
    ((0, 1.0), r"argnums must be ints"),
    ((0, 0), r"argnums repeats an argument: \(0, 0\)"),
    ([1, 1], r"argnums repeats an argument: \[1, 1\]"),
    ((0, -2), r"argnums repeats an argument: \(0, -2\)"),
])
@pytest.mark.parametrize("verb", [symgrad.grad, symgrad.jacobian, symgrad.hessian, symgrad.value_and_grad])
def test_bad_argnums(verb, argnums, what):
    with pytest.raises(ValueError, match=what):
        verb(two, argnums=argnums)


def test_argnums_float():
    with pytest.raises(ValueError, match=r"argnums must be an int or a tuple of ints, got 1.0"):
        symgrad.grad(two, argnums=1.0)


@pytest.mark.parametrize("dtype", ["int32", "float16", "complex128", np.int64, "float128"])
def test_bad_dtype(dtype):
    with pytest.raises(ValueError, match=r"dtype must be 'float64' or 'float32', got"):
        symgrad.compile(two, dtype=dtype)
    with pytest.raises(ValueError, match=r"dtype must be 'float64' or 'float32'"):
        symgrad.grad(two, dtype=dtype)


def test_unknown_dtype_name():
    with pytest.raises(ValueError, match=r"dtype must be 'float64' or 'float32'"):
        symgrad.compile(two, dtype="banana")


@pytest.mark.parametrize("bad", [3, "f", [1.0], object(), np.zeros(2)],
                         ids=["int", "str", "list", "object", "ndarray"])
def test_non_callable(bad):
    with pytest.raises(TypeError, match=r"symgrad\.compile expects a Python function, got"):
        symgrad.compile(bad)
    with pytest.raises(TypeError, match=r"expects a Python function"):
        symgrad.grad(bad)
    with pytest.raises(TypeError, match=r"expects a Python function"):
        symgrad.derivative(bad, 2)


def test_varargs_without_shapes():
    with pytest.raises(TypeError, match=r"takes \*args: pass shapes=\[\.\.\.\]"):
        symgrad.compile(lambda *a: a[0])


# =======================================================================================
# No (working) C compiler
# =======================================================================================

def test_no_c_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("CC", "symgrad-no-such-cc")
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    F = symgrad.compile(lambda x: x * 1.3671875 + 0.0078125)  # never compiled before
    with pytest.raises(symgrad.CompileError) as info:
        F(2.0)
    msg = str(info.value)
    assert re.search(r"no C compiler: 'symgrad-no-such-cc' is not on PATH", msg), msg
    assert "set CC" in msg and "install" in msg, msg
    # The failure is not cached: with a compiler back, the same Function works.
    monkeypatch.undo()
    assert F(2.0) == 2.0 * 1.3671875 + 0.0078125


def test_no_c_compiler_absolute_path(monkeypatch, tmp_path):
    missing = str(tmp_path / "bin" / "cc")
    monkeypatch.setenv("CC", missing)
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(symgrad.CompileError, match=rf"no C compiler: '{re.escape(missing)}'.*CC="):
        symgrad.compile(lambda x: x * 1.515625)(1.0)


def test_failing_c_compiler(monkeypatch, tmp_path):
    if not os.path.exists("/bin/false") and not os.path.exists("/usr/bin/false"):
        pytest.skip("no `false` program")
    monkeypatch.setenv("CC", "false")
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(symgrad.CompileError, match=r"C compiler failed compiling the kernel \(false .*source kept at"):
        symgrad.compile(lambda x: x * 1.640625)(1.0)


def test_scalar_fast_path_checks_core_shape():
    F = symgrad.compile(lambda v: v[0] * 0.75, shapes=[(1,)])
    with pytest.raises(ValueError, match=r"argument 'v' must have trailing \(core\) shape \(1,\)"):
        F(np.float32(2.0))  # the checked path
    with pytest.raises(ValueError, match=r"argument 'v' must have trailing \(core\) shape \(1,\)"):
        F(2.0)  # the fast path
