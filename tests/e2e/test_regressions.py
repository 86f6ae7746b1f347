"""Defects found in review, each pinned by the smallest reproduction."""
import functools
import math

import numpy as np
import pytest

import symgrad



def test_argument_names_never_merge_with_elements_or_temporaries():
    F = symgrad.compile(lambda p, p_0: (p[0] - p_0) ** 2 + p[1], shapes=[(2,), ()])
    assert F(np.array([1.0, 0.0]), 5.0) == 16.0
    gp, g0 = F.grad(np.array([1.0, 0.0]), 5.0)
    np.testing.assert_array_equal(gp, [-8.0, 1.0])
    assert g0 == 8.0

    def g(_t0, t):
        return math.sin(_t0) * _t0 + t
    assert symgrad.compile(g)(2.0, 1.0) == pytest.approx(math.sin(2.0) * 2.0 + 1.0, rel=1e-15)


def test_c_names_of_arguments_never_clash_with_c():
    def e(x, exp, linux):
        return math.exp(x) * exp + linux
    assert symgrad.compile(e)(1.0, 2.0, 3.0) == pytest.approx(2 * math.e + 3, rel=1e-15)

    def u(σ):
        return σ * σ
    assert symgrad.compile(u).grad(3.0) == 6.0


def test_division_by_a_constant_is_printed_as_a_division():
    xs = np.random.default_rng(0).uniform(-10, 10, 1000)
    np.testing.assert_array_equal(symgrad.compile(lambda x: x / 10)(xs), xs / 10)
    np.testing.assert_array_equal(symgrad.compile(lambda x: 2 * x / 3)(xs), 2 * xs / 3)


def test_steps_have_zero_derivative_and_prod_start():
    assert symgrad.compile(lambda x: math.floor(x) * x).grad(2.5) == 2.0
    assert symgrad.compile(lambda x: math.ceil(x) + x).grad(2.5) == 1.0
    assert symgrad.compile(lambda x: math.prod([x, x], start=2.0))(3.0) == 18.0


class _Base:
    def energy(self, x):
        return math.sin(x)


class _Model(_Base):
    def __init__(self, k):
        self.k = k

    def energy(self, x):
        return self.k * super().energy(x)


def test_user_objects_keep_isinstance_and_super():
    m = _Model(2.0)

    def f(x):
        return m.energy(x) if isinstance(m, _Model) else 0.0 * x
    assert symgrad.compile(f).grad(0.5) == pytest.approx(2 * math.cos(0.5), rel=1e-15)


def test_numpy_mean_over_an_axis_of_a_traced_array():
    F = symgrad.compile(lambda X: np.sum(np.mean(X, axis=0) ** 2), shapes=[(2, 3)])
    X = np.arange(6.0).reshape(2, 3)
    assert F(X) == pytest.approx(np.sum(np.mean(X, axis=0) ** 2), rel=1e-15)


def test_partials_with_different_arguments_trace_to_different_programs():
    def g(x, a):
        return x * a

    def make(b):
        p1 = functools.partial(g, a=2.0)
        p2 = functools.partial(g, a=b)
        return symgrad.compile(lambda x: p1(x) + p2(x))
    assert make(3.0).program.key != make(7.0).program.key
    assert make(3.0).program.key == make(3.0).program.key
    assert make(3.0)(1.0) == 5.0 and make(7.0).grad(1.0) == 9.0


def test_huge_array_argument_does_not_overflow_the_stack():
    F = symgrad.compile(lambda x: x[0] + x[-1], shapes=[(150_000,)])
    x = np.arange(300_000.0).reshape(2, 150_000)
    assert F(x[0]) == 149_999.0
    np.testing.assert_array_equal(F(x), [149_999.0, 449_999.0])


# -- second review ------------------------------------------------------------------------
class _Counter:
    calls = 0

    def energy(self, x):
        type(self).calls += 1
        return math.exp(x) if type(self) is _Counter else 0.0 * x


class _Registry:
    seen = []

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        _Registry.seen.append(cls.__name__)


class _Plugin(_Registry):
    def apply(self, x):
        return math.sin(x)


import dataclasses  # noqa: E402


@dataclasses.dataclass(slots=True)
class _Slotted:
    k: float

    def scale(self, x):
        return self.k * math.cos(x)


_SLOTTED = _Slotted(2.0)  # a slotted global in the traced function's module must not break tracing


def test_user_classes_are_the_same_classes_during_the_trace():
    c = _Counter()
    assert symgrad.compile(lambda x: c.energy(x))(1.0) == pytest.approx(math.e, rel=1e-15)
    assert _Counter.calls == 1
    p = _Plugin()
    before = list(_Registry.seen)
    assert symgrad.compile(lambda x: p.apply(x)).grad(0.5) == pytest.approx(math.cos(0.5), rel=1e-15)
    assert _Registry.seen == before  # no subclasses made behind the user's back
    assert _Counter.energy.__module__ == __name__  # methods restored after the trace
    assert symgrad.compile(lambda x: _SLOTTED.scale(x))(0.0) == 2.0


def test_state_read_dynamically_is_what_the_trace_records():
    def make(value):
        lookup = {"a": value}.get  # a bound method of a dict: the dict is read by the trace
        return symgrad.compile(lambda x: lookup("a") * x)
    assert make(3.0).program.key != make(5.0).program.key
    assert make(5.0).grad(1.0) == 5.0

    def dyn(x):
        return globals()["math"].sin(x)
    assert symgrad.compile(dyn).grad(0.0) == 1.0


def test_from_sympy_piecewise_and_multi_axis_reductions():
    import sympy as sp
    x = sp.Symbol("x")
    F = symgrad.from_sympy(sp.Piecewise((x**2, x > 0), (-x, True)), [x])
    assert (F(2.0), F(-3.0), F.grad(2.0), F.grad(-3.0)) == (4.0, 3.0, 4.0, -1.0)
    G = symgrad.compile(lambda X: np.sum(X) + np.max(X) + np.mean(X) + np.sum(X, axis=0)[1], shapes=[(2, 2)])
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert G(X) == 10 + 4 + 2.5 + 6
    np.testing.assert_array_equal(G.grad(X), [[1.25, 2.25], [1.25, 3.25]])


def test_strided_inputs_of_every_batch_shape_take_the_chunked_path():
    F = symgrad.compile(lambda v, w: v[0] * w - v[1], shapes=[(2,), ()])
    rng = np.random.default_rng(4)
    for batch in [(), (7,), (3, 5), (2, 1, 4)]:
        v = np.moveaxis(rng.uniform(-1, 1, (2,) + batch), 0, -1)  # batch + (2,), not C-contiguous
        v = v if batch else rng.uniform(-1, 1, 4)[::2]
        w = rng.uniform(-1, 1, batch[-1:])  # broadcast along the rest
        want = v[..., 0] * w - v[..., 1]
        np.testing.assert_array_equal(F(v, w), want)


def test_branch_not_taken_stays_zero_in_higher_reverse_derivatives():
    """Fuzz find (examples/fuzz.py, batch 24): the third derivative through a select whose
    other branch is NaN at the point (sqrt(z**2.5) at z < 0) was NaN in reverse mode: a
    product of a NaN factor and a sum of selects whose taken branch is 0."""
    def f(z0, z1, z2):
        return symgrad.where(-np.ceil(-0.3) > np.abs(min([z1, -1.5])), math.sqrt(z2 ** 2.5), -(z2 * -0.3))

    F = symgrad.compile(f)
    z = (0.3, 0.7, -0.8)
    assert F(*z) == pytest.approx(0.3 * -0.8, rel=1e-15)
    assert F.grad(*z) == (0.0, 0.0, pytest.approx(0.3, rel=1e-15))
    h = F.hessian(*z)
    d3 = F.hessian.jacobian(*z)
    assert all(v == 0.0 for row in h for v in row)
    assert all(float(v) == 0.0 for a in d3 for b in a for v in b)
    assert F.derivative(3, 2)(*z) == 0.0


def test_results_holding_zero_dimensional_arrays():
    """Fuzz find: a tuple holding np.where(...) of constants (a 0-d array) was refused as ragged."""
    def f(x, y):
        return (np.where(0.5 > 0.5, x, 0.25), x * y)

    F = symgrad.compile(f)
    np.testing.assert_array_equal(F(2.0, 3.0), [0.25, 6.0])
    np.testing.assert_array_equal(F.jacobian(2.0, 3.0), ([0.0, 3.0], [0.0, 2.0]))


def test_tanh_derivatives_keep_their_digits_where_tanh_is_near_one():
    """Fuzz find: d tanh(u) was 1 - tanh(u)**2, which cancels (5e-8 relative error at u = 8.4)."""
    import mpmath
    F = symgrad.compile(lambda u: np.tanh(u * u))
    for u in (0.5, 2.9, 4.1, -5.0):
        want = 2 * u / mpmath.cosh(u * u) ** 2
        assert F.grad(u) == pytest.approx(float(want), rel=1e-14)
        want2 = 2 / mpmath.cosh(u * u) ** 2 - 8 * u * u * mpmath.tanh(u * u) / mpmath.cosh(u * u) ** 2
        assert F.hessian(u) == pytest.approx(float(want2), rel=1e-13)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tanh_higher_derivatives_stay_finite_where_cosh_overflows(dtype):
    """Fuzz find (10k run, 2026-12-02): d tanh = 1/cosh**2 differentiated by sympy gives
    -2 sinh/cosh**3, inf/inf = NaN where cosh overflows (tanh(x**3) at x = 8, 20). The exact
    derivatives there are 0 to far below the smallest float."""
    import mpmath
    F = symgrad.compile(lambda x: math.tanh(x * x * x), dtype=dtype)
    x = np.array([0.3, 2.0, 8.0, 20.0, -20.0], dtype)
    rtol = 1e-13 if dtype == "float64" else 2e-6
    for k in (1, 2, 3):
        want = [float(mpmath.diff(lambda t: mpmath.tanh(t ** 3), mpmath.mpf(float(v)), k)) for v in x]
        np.testing.assert_allclose(F.derivative(k)(x), want, rtol=rtol, atol=0, err_msg=f"order {k}")


def test_float32_hessian_whose_float_intermediates_overflow():
    """Fuzz find (10k run): in float arithmetic (y**2 + c**2)**2 overflows for y = 1000**(x**2.5)
    at x = 1.7 and the Hessian of atan2(y, c) came out 1.27e-8, finite, of the wrong sign
    (exact: -7.1e-9). float32 kernels compute in double: the float64 result, rounded."""
    import mpmath
    c = math.tanh(4)
    F = symgrad.compile(lambda x: math.atan2(1000 ** (x ** 2.5), c), dtype="float32")
    x = np.float32(1.7)
    mpmath.mp.dps = 50
    want = mpmath.diff(lambda t: mpmath.atan2(mpmath.mpf(1000) ** (t ** 2.5), c), mpmath.mpf(float(x)), 2)
    assert F.hessian(x) == np.float32(float(want))
    assert F.grad(x) == pytest.approx(float(mpmath.diff(
        lambda t: mpmath.atan2(mpmath.mpf(1000) ** (t ** 2.5), c), mpmath.mpf(float(x)))), rel=1e-7)


def test_from_sympy_reads_symgrad_s_own_tanh_derivative():
    """Review find: the derivative of tanh is symgrad's Sech2, which from_sympy did not read."""
    F = symgrad.compile(lambda x: math.tanh(x))
    e = F.grad.expr
    G = symgrad.from_sympy(e, sorted(e.free_symbols, key=str))
    assert G(0.7) == pytest.approx(1 / math.cosh(0.7) ** 2, rel=1e-15)
    assert G.grad(0.7) == pytest.approx(-2 * math.tanh(0.7) / math.cosh(0.7) ** 2, rel=1e-14)


def test_untaken_branch_with_nan_in_third_derivatives_through_atan2():
    """Fuzz find (batch 41): a select whose zero branch comes first, under atan2; the third
    derivative by the argument of the branch not taken (pow of a negative base) was NaN."""
    def f(z0, z1, z2):
        return np.arctan2(np.where(math.fabs(z1) > 1 ** z2, math.log1p(z2), math.pow(z0, z2)), math.fabs(-2))

    z = (-0.5595630030294418, -1.0126182323270676, -0.02328700516982707)
    d3 = symgrad.compile(f).hessian.jacobian(*z)
    assert float(d3[0][0][0]) == 0.0
    import mpmath
    mpmath.mp.dps = 40
    ref = mpmath.diff(lambda t: mpmath.atan2(mpmath.log1p(t), 2), mpmath.mpf(z[2]), 3)
    assert float(d3[2][2][2]) == pytest.approx(float(ref), rel=1e-13)


def test_division_by_a_select_with_a_zero_branch():
    """1 / np.maximum(y - 1, 0.0) is inf where the select gives 0.0 (sympy's own power of a
    Piecewise made it complex infinity, and the kernel did not compile)."""
    F = symgrad.compile(lambda x, y: (x * x + x) / np.maximum(y - 1, 0.0))
    assert F(2.0, 3.0) == 3.0 and F(2.0, 0.5) == math.inf
    gx, gy = F.grad(2.0, 3.0)
    assert gx == 5.0 / 2.0 and gy == -6.0 / 4.0
    assert F.grad(2.0, 0.5)[0] == math.inf


def test_builtin_max_and_min_of_a_traced_value_and_a_numpy_scalar():
    """Fuzz find: min(traced, np.float64) compared through numpy (an object array, not a
    condition) and asked for its truth; numpy scalars compare as the numbers they hold."""
    def f(v):
        return min(max([v[1], v[2]]), -np.arcsinh(1)) + max(np.float32(0.5), v[0])
    F = symgrad.compile(f, shapes=[(3,)])
    for v in ([0.1, 0.2, -3.0], [0.7, -2.0, -3.0], [0.3, -1.0, -0.5]):
        v = np.array(v)
        assert F(v) == f(v)
        want = np.zeros(3)
        m = max(v[1], v[2])
        if m < -np.arcsinh(1):
            want[1 if v[2] <= v[1] else 2] = 1.0
        if v[0] > 0.5:
            want[0] = 1.0
        np.testing.assert_array_equal(F.grad(v), want)


def test_review_finds_at_the_edges_of_the_double_range():
    """A derivative constant past the double range is inf (was an OverflowError printing it);
    math.fsum whose partial sums overflow is the exactly rounded sum (was NaN); math.hypot of
    one argument is |x| (was sqrt(x*x): 0 at 1e-300)."""
    assert symgrad.compile(lambda x: 1e200 * (1e200 * x)).grad(1.0) == math.inf
    assert symgrad.compile(lambda x: (1e200 * x) ** 2).hessian(0.0) == math.inf
    F = symgrad.compile(lambda x: math.fsum([x, 1e308, 1e308, -1e308]))
    assert F(0.0) == 1e308 and F(4.0) == 1e308 + 4.0 and F.grad(0.0) == 1.0  # (CPython raises)
    assert symgrad.compile(lambda x: math.fsum([x, 2.0, 3.0, 1e308, 1e308]))(1.0) == math.inf
    xs = np.array([0.0, 1e-300, -1e300, -2.0])
    H = symgrad.compile(lambda x: math.hypot(x))
    np.testing.assert_array_equal(H(xs), np.abs(xs))
    np.testing.assert_array_equal(H.grad(xs), np.sign(xs))
    for dtype in ("float32",):
        assert symgrad.compile(lambda x: x * 1e300, dtype=dtype)(np.float32(2.0)) == math.inf


def test_second_review_finds():
    """math.fsum as CPython's where it does not raise (a subnormal term beside cancelling huge
    ones; the sign of a zero sum), F.build of a function whose arrays stayed loops (each kernel
    binds its own data), and a derivative constant past the double range kept as a product."""
    F = symgrad.compile(lambda a: math.fsum(a), shapes=[(3,)])
    for v in ([1e308, -1e308, 5e-324], [-1e308, 1e308, -5e-324], [-0.0, -0.0, -0.0], [0.1, 0.2, 0.3]):
        got, want = F(np.array(v)), math.fsum(v)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), (v, got)
    assert F(np.array([1e308, 1e308, -1e308])) == 1e308  # (CPython raises: an intermediate overflow)
    A = np.linspace(0.1, 2.0, 300)
    L = symgrad.compile(lambda x: np.sum(np.sin(A * x)))
    assert L.loops
    L.build(kinds=("value", "grad"))
    assert L(0.3) == pytest.approx(np.sum(np.sin(A * 0.3)), rel=1e-13)
    assert L.grad(0.3) == pytest.approx(np.sum(A * np.cos(A * 0.3)), rel=1e-13)
    G = symgrad.compile(lambda x: 1e200 * (1e200 * (x * x)))
    assert G.derivative(1)(1e-250) == pytest.approx(2e150, rel=1e-15)


def test_numbers_numpy_gives_as_0d_arrays_enter_math_functions():
    """The fuzz (seed 20261206): np.where of constants is a 0-d array, which math.hypot takes
    as a number in Python; traced, it was a TraceError."""
    def f(v):
        return np.array([max(math.hypot(abs(v[1]), np.where(0.25 > 0.5, -2, -0.3)), pow(np.copysign(v[0], v[1]), -2))])
    F = symgrad.compile(f, [(2,)])
    v = np.array([0.7, -1.3])
    np.testing.assert_allclose(F(v), f(v), rtol=1e-15)  # (x**-2 as 1 / x**2: the last bit)
    g = lambda x: math.hypot(x, np.float64(0.5) * np.array(2.0)) + math.atan2(np.array(0.3), x)  # noqa: E731
    G = symgrad.compile(g)
    assert G(1.5) == g(1.5)
    assert G.grad(1.5) == pytest.approx(1.5 / math.hypot(1.5, 1.0) - 0.3 / (0.09 + 2.25), rel=1e-14)


def test_std_over_one_entry_has_gradient_zero():
    """np.std over an axis of length 1 is identically 0, so is its gradient (it was nan:
    x - x/1.0 was not x - x). Over two entries it is |a - b|/2."""
    x = np.array([[0.3, -1.2, 2.5]])
    F = symgrad.compile(lambda x: np.sum(np.std(x, axis=0)), shapes=[(1, 3)])
    assert F(x) == 0.0
    np.testing.assert_array_equal(F.grad(x), np.zeros((1, 3)))
    G = symgrad.compile(lambda x: np.sum(np.std(x, axis=0)), shapes=[(2, 3)])
    y = np.array([[0.3, -1.2, 2.5], [1.0, 0.5, -0.5]])
    assert G(y) == pytest.approx(np.sum(np.abs(y[0] - y[1])) / 2, rel=1e-15)
    s = np.sign(y[0] - y[1]) / 2
    np.testing.assert_allclose(G.grad(y), np.array([s, -s]), rtol=1e-15)


@pytest.mark.parametrize("join", ["vstack", "hstack", "concatenate", "concatenate1", "concatenateN", "stack"])
def test_joining_functions_given_one_array_iterate_its_first_axis(join):
    """numpy's joining functions take an array as the sequence of its first axis's entries:
    np.vstack(x) of a 2-D x is x, np.hstack(x) its rows end to end (a TypeError before)."""
    fn = {"vstack": np.vstack, "hstack": np.hstack, "concatenate": np.concatenate, "stack": np.stack,
          "concatenate1": lambda a: np.concatenate(a, axis=1),
          "concatenateN": lambda a: np.concatenate(a, axis=None)}[join]
    x = np.arange(24.0).reshape(2, 3, 4) / 7 - 1
    ref = fn(x)
    w = np.cos(np.arange(ref.size)).reshape(ref.shape)
    F = symgrad.compile(lambda x: np.sum(np.sin(fn(x)) * w), shapes=[(2, 3, 4)])
    assert F(x) == pytest.approx(np.sum(np.sin(ref) * w), rel=1e-14)
    where = fn(np.arange(24).reshape(2, 3, 4))  # which entry of x each entry of the join is
    g = np.zeros(24)
    np.add.at(g, where.ravel(), (np.cos(ref) * w).ravel())  # d/dx of sum(sin(join) * w)
    np.testing.assert_allclose(F.grad(x), g.reshape(2, 3, 4), rtol=1e-14, atol=1e-16)
    two = symgrad.compile(lambda x: np.sum(fn(x) ** 2), shapes=[(2, 3)])  # np.sum(np.vstack(x)) of (2, 3)
    y = np.arange(6.0).reshape(2, 3) - 2
    if join not in ("concatenate1",):
        assert two(y) == np.sum(y ** 2)
        np.testing.assert_array_equal(two.grad(y), 2 * y)


def test_concatenate_of_one_array_raises_as_numpy_does():
    with pytest.raises(ValueError, match="zero-dimensional arrays cannot be concatenated"):
        symgrad.compile(lambda x: np.sum(np.concatenate(x)), shapes=[(3,)])(np.ones(3))
    with pytest.raises(np.exceptions.AxisError):
        symgrad.compile(lambda x: np.sum(np.concatenate(x, axis=1)), shapes=[(2, 3)])(np.ones((2, 3)))
    for arrays in (lambda x: x, lambda x: [x, x]):
        with pytest.raises(TypeError, match="an integer is required for the axis"):
            symgrad.compile(lambda x: np.sum(np.concatenate(arrays(x), axis=True)), shapes=[(2, 3)])(np.ones((2, 3)))
