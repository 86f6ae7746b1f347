"""numpy's type rules where numpy's value depends on them, against numpy's own values (bit for
bit): casts to int64 and bool (dtype=, astype), numpy's bools (bool + bool is or), np.power's
stride-0 exponent 0.5 (sqrt), the sign of a sum's zero (numpy starts from +0.0), and nanvar.
Each on the element-by-element path (loop_min_size=0), small arrays kept as LazyArrays (the
default) and arrays kept as loops."""
import math
import warnings

import numpy as np
import pytest

import symgrad

O0 = symgrad.Options(loop_min_size=0)
PATHS = {"elements": O0, "lazy": None}


def same(a, b):
    """Equal as IEEE values, NaN to NaN and the sign of zero included, shapes too."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((np.isnan(a) & np.isnan(b)) |
                                              ((a == b) & (np.signbit(a) == np.signbit(b)))))


def _stack(*vals):
    return np.array([np.asarray(v, dtype=object).reshape(-1)[0] if np.ndim(v) == 0 else np.sum(v) for v in vals],
                    dtype=object)


# -- 1. dtype= of reductions, casts -------------------------------------------------------------
W = np.array([1.0, 2.0, 3.0, 5.0, 7.0])


def _int_reductions(x):
    """numpy's integer reductions of x (shape (5,)) and a (3, 5) view of it, each a number."""
    X = np.stack([x, -x, x / 3])
    return [np.sum(x, dtype=int), np.sum(X, axis=1, dtype=np.int64) @ np.array([1.0, 2.0, 4.0]),
            x.sum(dtype=int), np.add.reduce(x, dtype=int), np.cumsum(x, dtype=int) @ W,
            np.nancumsum(x, dtype=int) @ W, x.cumsum(dtype=int) @ W, np.cumsum(X, axis=1, dtype=int)[:, -1] @ W[:3],
            np.cumprod(x / 20, dtype=int) @ W, np.prod(x[:3] / 4, dtype=int), np.mean(x, dtype=int), x.mean(dtype=int),
            np.mean(X, axis=1, dtype=int) @ W[:3], np.nansum(x, dtype=int), np.nanprod(x[:3] / 4, dtype=int),
            np.trace(X[:, :3], dtype=int), x.astype(int) @ W, np.array(x, dtype=np.int64) @ W,
            np.asarray(x, dtype=int) @ W, np.sum(np.full(3, x[0], dtype=int)), np.sum(x > 0, dtype=int),
            x.astype(bool) @ W, np.sum(x, dtype=bool) * 1.0, np.sum(x - x, dtype=bool) * 1.0,
            np.cumsum(x > 10, dtype=bool) @ W, np.sum(x / 7, dtype=int) + 0.25]


@pytest.mark.parametrize("path", list(PATHS) + ["loops"])
def test_integer_and_bool_dtypes_cast_as_numpy_casts(path):
    """dtype=int truncates each entry toward zero (numpy's cast of float64 to int64) before the
    sum (366, not 365.3), cumprod of entries below 1 is 0; dtype=bool is x != 0 and a sum of
    bools their or. A step: the derivative is 0 (it was x's)."""
    rng = np.random.default_rng(3)
    if path == "loops":  # the sums of arrays of 300 entries stay loops; the rest falls back
        x = rng.uniform(-60, 60, 300)
        f = lambda x: np.array([np.sum(x, dtype=int), np.mean(x, dtype=int), x.sum(dtype=int),  # noqa: E731
                                np.add.reduce(x, dtype=int), np.sum(np.sum(x.reshape(3, 100), axis=0, dtype=int)),
                                np.sum(x.astype(int) * 0.5), np.sum(x > 0, dtype=int)])
        F = symgrad.compile(f, shapes=[(300,)])
    else:
        x = np.array([100.7, -2.3, 268.9, -0.4, 37.5])
        f = lambda x: _stack(*_int_reductions(x))  # noqa: E731
        F = symgrad.compile(f, shapes=[(5,)], options=PATHS[path])
    ref = np.array(f(x), dtype=float)
    assert same(F(x), ref)
    assert not np.any(F.jacobian(x))


def test_the_findings_numbers():
    x = np.array([100.7, -2.3, 268.9])
    assert symgrad.compile(lambda x: np.sum(x, dtype=int), shapes=[(3,)])(x) == 366.0
    c = np.array([0.3, -0.51, 0.7, -0.9, 0.2])
    for opts in (O0, None):
        F = symgrad.compile(lambda x: np.cumprod(x, dtype=int), shapes=[(5,)], options=opts)
        assert same(F(c), np.cumprod(c, dtype=int))  # [0, 0, 0, 0, 0], not [0.3, -0.51, ...]


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
def test_integers_past_exact_doubles_are_nan_never_a_rounded_number(opts):
    """A sum of int64s that double cannot hold exactly (past 2**53), the cast of NaN: NaN."""
    x = np.array([1e17 + 3.7, 5.5, -1.5])
    F = symgrad.compile(lambda x: np.array([np.sum(x, dtype=int), np.sum(x[1:], dtype=int),
                                            np.sum(x / (x - x), dtype=int)]), shapes=[(3,)], options=opts)
    assert same(F(x), [np.nan, 4.0, np.nan])


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("fn, error, message", [
    (lambda x: np.sum(x, dtype=np.float32), symgrad.TraceError, r"float32"),
    (lambda x: np.add.reduce(x, dtype=np.float32), symgrad.TraceError, r"float32"),
    (lambda x: np.sum(x, dtype=np.int32), symgrad.TraceError, r"dtype=int32 .*int64 and bool only"),
    (lambda x: np.var(x, dtype=int), symgrad.TraceError, r"numpy.var\(\.\.\., dtype=int64\).*float64"),
    (lambda x: x.std(dtype=int), symgrad.TraceError, r"numpy.std\(\.\.\., dtype=int64\)"),
    (lambda x: np.mean(x, dtype=bool) * 1.0, symgrad.TraceError, r"numpy.mean\(\.\.\., dtype=bool\)"),
    (lambda x: np.nanmean(x, dtype=int), TypeError, r"If a is inexact, then dtype must be inexact"),
    (lambda x: np.nanstd(x, dtype=int), TypeError, r"If a is inexact, then dtype must be inexact"),
])
def test_dtypes_symgrad_does_not_trace_are_refused_at_the_users_line(fn, error, message, opts):
    """A float32 sum would round each partial sum to float32, var(dtype=int) truncates the mean,
    the deviations and the result: refused, never a float64 sum; nanmean's TypeError is numpy's."""
    with pytest.raises(error, match=message) as info:
        symgrad.compile(fn, shapes=[(5,)], options=opts)(np.arange(5.0))
    if error is symgrad.TraceError:
        assert "test_numpy_types.py, line" in str(info.value)


# -- 2. numpy's bools ----------------------------------------------------------------------------
def _bool_forms(x):
    return [np.sum((x > 0) + (x > 1)), np.sum((x > 0) * (x > 1)), np.sum(True + (x > 0)),
            np.sum((x > 0) * True), np.sum(x > 0), np.mean(x > 0), (x > 0).sum(), np.sum(np.logical_xor(x > 0, x > 1)),
            np.sum((x > 0) ^ (x > 1)), np.sum((x > 0) & (x > 1)), np.sum(np.maximum(x > 0, x > 1) + (x > 1)),
            np.sum(np.cumsum(x > 0)), np.sum(~(x > 0)), np.sum(np.abs(x > 0) + (x > 1)), (x > 0)[0] + (x > 1)[1],
            np.sum(((x > 0) + (x > 1)) * 2.5), np.sum((x > 0) + 1), np.sum(np.add.reduce(x > 0)),
            np.sum(np.diff(x > 0) * 1.5)]


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
def test_arrays_of_bools_add_as_numpy_bools(opts):
    """bool + bool is logical or in numpy (np.sum((x > 0) + (x > 1)) is 2 here, symgrad gave 3),
    True + bools too; a sum of bools counts; an entry of a bool array is a np.bool_."""
    x = np.array([0.5, 1.5, -1.0])
    F = symgrad.compile(lambda x: _stack(*_bool_forms(x)), shapes=[(3,)], options=opts)
    assert same(F(x), np.array(_bool_forms(x), dtype=float))


def test_bool_arrays_kept_as_loops_and_bool_data():
    """The same on arrays of 300 entries kept as loops, and with a closed-over bool mask."""
    x = np.linspace(-2.0, 2.0, 300)
    mask = np.arange(300) % 3 == 0
    f = lambda x: np.array([np.sum((x > 0) + (x > 1)), np.sum(True + (x > 0)), np.sum(mask + (x > 0)),  # noqa: E731
                            np.sum((mask & (x > 0)) + (x > 1)), np.sum(mask * (x > 0)), np.sum(x > 0)])
    F = symgrad.compile(f, shapes=[(300,)])
    assert same(F(x), np.array(f(x), dtype=float))


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("fn, error, message", [
    (lambda x: np.sum((x > 0) - (x > 1)), TypeError, "numpy boolean subtract"),
    (lambda x: np.sum(-(x > 0)), TypeError, "numpy boolean negative"),
    (lambda x: (x > 0)[0] - (x > 1)[1], TypeError, "numpy boolean subtract"),
    (lambda x: np.sum(~((x > 0) * 1)), symgrad.TraceError, r"~ \(numpy.invert\) of a traced number.*-x - 1"),
    (lambda x: np.sum(np.bitwise_and(x, 1)), symgrad.TraceError, "numpy.bitwise_and of a traced number"),
])
def test_what_numpy_refuses_of_bools_or_symgrad_cannot_tell_is_refused(fn, error, message, opts):
    """bool - bool and -bool are numpy's TypeErrors; ~ of a number is bitwise for numpy's
    integers (~1 is -2; symgrad gave 0, logical not) and a TypeError for floats: refused."""
    with pytest.raises(error, match=message):
        symgrad.compile(fn, shapes=[(3,)], options=opts)(np.array([0.5, 1.5, -1.0]))


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
def test_comparisons_stored_into_or_joined_with_float_arrays_are_numbers(opts):
    """A comparison stored into a float array is its 1.0 (numpy's float array), so z + z is 2
    there; np.array / concatenate of comparisons and numbers is a float array too."""
    def f(x):
        z = np.zeros(3)
        z[0], z[1] = x[0] > 0, x[1] > 0
        j = np.concatenate([x > 0, x])
        return np.array([np.sum(z + z), np.sum(np.array([x[0] > 0, x[1]]) * 2.0 + (x[0] > 0)), np.sum(j + j)])
    x = np.array([0.5, 1.5, -1.0])
    assert same(symgrad.compile(f, shapes=[(3,)], options=opts)(x), f(x))


def test_comparisons_of_traced_scalars_keep_pythons_bools():
    """A traced scalar is a Python float: its comparisons are Python's bools (True + True == 2)."""
    F = symgrad.compile(lambda x: np.array([(x > 0) + (x > 0.2), (x > 0) * (x > 0.2), (x > 0) - (x > 1),
                                            True + (x > 0), (x > 0) * True, -(x > 0), np.sum(x > 0), np.mean(x > 0)]),
                        shapes=[()])
    for x in (0.5, -0.5, 2.0):
        assert same(F(x), [(x > 0) + (x > 0.2), (x > 0) * (x > 0.2), (x > 0) - (x > 1), True + (x > 0),
                           (x > 0) * True, -(x > 0), 1.0 * (x > 0), 1.0 * (x > 0)])


# -- 3. np.power's stride-0 exponent ----------------------------------------------------------
EDGES = np.array([-np.inf, -0.0, 0.0, 2.0, -2.0, np.inf, np.nan, 0.25])
POWERS = {
    "power": lambda x: np.power(x, 0.5), "**": lambda x: x ** 0.5, "0-d": lambda x: np.power(x, np.array(0.5)),
    "full exponent": lambda x: np.power(x, np.full(8, 0.5)), "1.5": lambda x: np.power(x, 1.5),
    "entries **": lambda x: np.array([v ** 0.5 for v in x]), "float_power": lambda x: np.float_power(x, 0.5),
}


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("form", POWERS)
def test_numpy_power_of_one_half_is_numpys(form, opts):
    """numpy's float power loop computes x ** 0.5 as sqrt(x) where it reads the exponent with
    stride 0 (nan at -inf, -0.0 at -0.0; symgrad's C pow gave inf, 0.0); an exponent array of
    0.5s, an entry's ** (np.float64's scalar power) and float_power are C's pow (inf, 0.0)."""
    fn = POWERS[form]
    with np.errstate(invalid="ignore"):
        ref = fn(EDGES)
    assert same(symgrad.compile(fn, shapes=[(8,)], options=opts)(EDGES), ref)


def test_power_of_a_traced_scalar_and_a_traced_exponent():
    """np.power of a traced scalar is numpy's (a 0-d call: sqrt); x ** 0.5 of a traced scalar
    stays Python's (C's pow: inf at -inf). A traced exponent at 0.5: sqrt's value at -inf and
    +-0 only, its derivative pow's (x**y log x)."""
    with np.errstate(invalid="ignore"):
        assert same(symgrad.compile(lambda x: np.power(x, 0.5))(EDGES), np.power(EDGES, 0.5))
        assert same(symgrad.compile(lambda x: x ** 0.5)(EDGES[[0, 1, 2, 3, 5]]),
                    [math.inf, 0.0, 0.0, 2 ** 0.5, math.inf])
        F = symgrad.compile(lambda x, y: np.power(x, y), shapes=[(8,), ()])
        G = symgrad.compile(lambda x, y: np.sum(np.power(x, y)), shapes=[(8,), ()])
        for y in (0.5, 1.5, 2.0):
            assert same(F(EDGES, y), np.power(EDGES, y))
            assert G.grad(np.full(8, 4.0), y)[1] == pytest.approx(8 * 4.0 ** y * math.log(4.0), rel=1e-14)


@pytest.mark.parametrize("bs, es", [((2, 3), (2, 1)), ((4, 200), (4, 1)), ((200, 4), (200, 1)), ((2, 3), (1, 1)),
                                    ((5,), (1,)), ((1,), (1,)), ((1, 1), (1,))])
def test_power_exponent_arrays_broadcast_as_numpys_loop_reads_them(bs, es):
    """Where numpy's nditer reads a broadcast exponent with stride 0 (a (4, 200) base's (4, 1)
    exponent) its sqrt; where it buffers it ((2, 3) and (2, 1)), pow."""
    b, e = np.full(bs, -np.inf), np.full(es, 0.5)
    with np.errstate(invalid="ignore"):
        ref = np.power(b, e)
    for opts in (O0, None) if np.prod(bs) < 100 else (None,):
        assert same(symgrad.compile(lambda x, y: np.power(x, y), shapes=[bs, es], options=opts)(b, e), ref)


def test_the_stride_zero_model_against_numpy_on_random_layouts():
    from symgrad.tracing.dtypes import exponent_stride_zero
    rng = np.random.default_rng(1)

    def make(shape, fill, broadcast):
        s = tuple(1 if broadcast and rng.random() < 0.4 else n for n in shape)
        if broadcast and rng.random() < 0.3:
            s = s[rng.integers(0, len(s) + 1):]
        kind = rng.integers(0, 3) if len(s) > 1 else 0
        if kind == 1:
            return np.full(s[::-1], fill).T
        if kind == 2:
            return np.full(tuple(2 * n for n in s), fill)[tuple(slice(None, None, 2) for _ in s)]
        return np.full(s, fill)
    checked = 0
    for _ in range(1500):
        shape = tuple(int(v) for v in rng.choice([1, 1, 2, 3, 8, 100, 9000], rng.integers(0, 4)))
        if np.prod(shape) > 200_000:
            continue
        swap = rng.random() < 0.5
        b, e = make(shape, -np.inf, swap), make(shape, 0.5, not swap)
        with np.errstate(invalid="ignore"):
            r = np.power(b, e)
        if r.size:
            assert exponent_stride_zero(b, e) == bool(np.isnan(r).all()), (b.shape, b.strides, e.shape, e.strides)
            checked += 1
    assert checked > 1000


# -- 4. the sign of a sum's zero; nanvar ----------------------------------------------------------
def _zero_sums(x):
    """Sums over one entry (x has shape (1,)) and numpy's products with one term."""
    X = x.reshape(1, 1)
    return [np.sum(x), np.mean(x), x.sum(), np.add.reduce(x), np.nansum(x), np.nanmean(x), np.average(x),
            np.trace(X), x @ np.array([1.0]), X @ np.array([[1.0, 3.0]]), np.dot(x, np.array([1.0])),
            np.dot(X, np.ones((1, 2))), np.inner(x, np.array([1.0])), np.einsum("i->", x), np.cumsum(x), np.prod(x),
            np.sum(np.array([x[0], x[0]])), np.var(x), np.std(x), sum(x)]


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
def test_a_sum_of_one_negative_zero_is_numpys_positive_zero(opts):
    """numpy's sums start from +0.0: np.sum([-0.0]) is 0.0 (symgrad gave -0.0), so are the mean,
    matmul (BLAS) and dot's of more than one product; dot's one product, cumsum and prod keep -0.0."""
    z = np.array([-0.0])
    F = symgrad.compile(lambda x: np.concatenate([np.ravel(v) for v in _zero_sums(x)]), shapes=[(1,)], options=opts)
    assert same(F(z), np.concatenate([np.ravel(v) for v in _zero_sums(z)]))


def test_sums_over_an_axis_of_one_kept_as_loops():
    z = np.full((1, 200), -0.0)
    f = lambda x: np.concatenate([np.sum(x, axis=0), np.mean(x, axis=0), (x.T @ np.ones((1, 3))).ravel()])  # noqa: E731
    assert same(symgrad.compile(f, shapes=[(1, 200)])(z), f(z))


@pytest.mark.parametrize("shape, opts", [((1, 3), O0), ((1, 3), None), ((1, 200), None)],
                         ids=["elements", "lazy", "loops"])
def test_std_and_nanstd_over_one_entry_have_gradient_zero(shape, opts):
    """np.std, np.var, np.nanstd, np.nanvar over an axis of length 1 are identically 0, so are
    their gradients (nanstd's was NaN: its deviation was x - (x / 1), no structural 0; std's
    is 0 with numpy's 0.0 + x for the one entry's sum, which the derivative sees through)."""
    x = np.cos(np.arange(np.prod(shape)) + 0.3).reshape(shape)
    for fn in (np.std, np.var, np.nanstd, np.nanvar):
        F = symgrad.compile(lambda x: np.sum(fn(x, axis=0)), shapes=[shape], options=opts)
        assert F(x) == 0.0
        np.testing.assert_array_equal(F.grad(x), np.zeros(shape))


@pytest.mark.parametrize("opts", PATHS.values(), ids=PATHS.keys())
def test_nanvar_is_numpys_where_degrees_of_freedom_run_out_and_at_inf(opts):
    """numpy's nanvar is NaN where the count less ddof is 0 or less (symgrad gave inf: var / 0)
    and NaN where an entry is inf (its deviation inf - inf; symgrad masked that NaN to 0)."""
    y = np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, 5.0], [1.0, 1.0, 1.0]])
    e = np.array([[np.nan, np.inf, -0.0, 1.5]])
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's "Degrees of freedom <= 0"
        for ddof in (0, 1, 2, 3):
            F = symgrad.compile(lambda x: np.nanvar(x, axis=1, ddof=ddof), shapes=[(3, 3)], options=opts)
            assert same(F(y), np.nanvar(y, axis=1, ddof=ddof))
        assert same(symgrad.compile(lambda x: np.nanvar(x, axis=0), shapes=[(1, 4)], options=opts)(e),
                    np.nanvar(e, axis=0))


def test_the_partial_of_a_sum_of_one_entry_sees_through_its_zero_start():
    """derive.partials takes a node's partial by 0.0 + x as its partial by x (exactly 1 between
    them), so x - (0.0 + x) has no partial by x (a structural 0), not 1 + -1 evaluated."""
    from symgrad.ir.graph import Graph
    from symgrad.ir.program import Arg, Builder
    from symgrad.transforms.derive import partials
    b = Builder()
    x = b.node("arg", 0, 0)
    s = b.node("add", b.const(0.0), x)
    d = b.node("sub", x, s)
    p = b.node("mul", s, b.node("add", x, b.const(0)))
    prog = b.program([Arg("x", ())], [])
    g = Graph(prog)
    assert partials(g, d) == {}
    assert set(partials(g, p)) == {x}


_MASKS = np.array([-1.7, -0.5, -0.0, 0.3, 2.9, -3.99, 1.5])


@pytest.mark.parametrize("x", [_MASKS, np.random.default_rng(0).normal(size=300) * 3], ids=["small", "loops"])
@pytest.mark.parametrize("f", [
    lambda v: np.sum((v > 0).astype(float) + (v > 1)),            # a float cast of a mask adds as numbers
    lambda v: np.sum(np.array(v > 0, dtype=float) + (v > 1)),
    lambda v: np.sum(np.asarray(v > 0, dtype=np.float64) - (v > 1)),
    lambda v: np.sum(-(v > 0).astype(float)),
    lambda v: np.sum(np.where(v > 0, v > 1, v < -1) + (v > 2)),   # np.where of bools is bool: + is or
    lambda v: ((v > 0) @ (v > 1)) * 1.0,                          # bool @ bool: an or of ands
], ids=["astype", "array", "asarray-sub", "neg", "where", "matmul"])
def test_masks_cast_selected_and_multiplied_as_numpy(f, x):
    """The second hostile review: a float cast of a mask kept numpy's bool + (5 -> 3 on 7
    entries), np.where of masks lost it (4 -> 5), bool @ bool counted in loops (1 -> 109)."""
    assert symgrad.compile(f, shapes=[x.shape])(x) == f(x)
