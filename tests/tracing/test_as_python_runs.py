"""Traced code behaves as Python runs it: cases a hostile review found, each against what
plain Python/numpy computes for the same code."""
import copy
from fractions import Fraction
import itertools
import math
import operator
import random
import textwrap
import types

import numpy as np
import pytest

import symgrad

WEIGHTS = [0.5, 2.0, 1.5]


def test_min_max_over_an_iterator_of_plain_numbers():
    F = symgrad.compile(lambda x: max((w for w in WEIGHTS), default=1.0) * x + min(w * w for w in WEIGHTS))
    assert F(3.0) == 2.0 * 3.0 + 0.25
    assert symgrad.compile(lambda x: max(map(abs, [-3.0, 1.0])) * x)(2.0) == 6.0


def _h(x, k):
    return x * k


class Scale:
    def __init__(self, k):
        self.k = k
        self.w = 7.0

    def __call__(self, t):
        return self.k * math.sin(t)


ACT = Scale(3.0)
cfg = types.SimpleNamespace(k=1.0)


def test_nested_functions_keep_identity_isinstance_attributes_and_writes():
    add = operator.add

    def f(x):
        def combine(op, a, b):                  # a nested function that calls: rewritten with f
            return op(a, b) * 2.0 if op is add else op(a, b)

        def g(t, *, scale=2.0):
            return scale * math.cos(t)

        def use(act, t):
            if isinstance(act, Scale):          # the global callable object is itself
                return act(t) + act.w
            return t
        cfg.k = 3.0
        return combine(add, x, math.sin(x)) + g(x) + use(ACT, x) + cfg.k * x
    for x in (0.3, 1.7):
        cfg.k = 1.0
        want = f(x)
        cfg.k = 1.0
        assert symgrad.compile(f)(x) == pytest.approx(want, rel=1e-15)
        assert cfg.k == 3.0  # the write reached the real object


def test_locals_are_the_functions_own():
    def f(x):
        a = 2.0
        return x * len(locals()) + a

    def g(x, k=3.0):
        return _h(**locals())
    assert symgrad.compile(f)(1.5) == f(1.5)
    assert symgrad.compile(g)(1.5) == 4.5


def test_negated_comparisons_and_self_comparisons_see_nan():
    x = np.array([np.nan, 1.0, -1.0])
    F = symgrad.compile(lambda t: np.where(~(t > 0), 1.0, 2.0) + np.where(t != t, 10.0, 0.0)
                        + np.where(t == t, 100.0, 0.0))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(F(x), np.where(~(x > 0), 1.0, 2.0) + np.where(x != x, 10.0, 0.0)
                                      + np.where(x == x, 100.0, 0.0))


HUGE = 2 ** 2000  # an int past every double
T = 2 ** 1024 - 2 ** 970  # the least int that rounds to inf (T - 1: to the largest double)
INEXACT = [HUGE, -HUGE, Fraction(1, 3), -Fraction(1, 3), Fraction(HUGE, 3), Fraction(2 ** 53 + 1)]
COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]
POINTS = [-math.inf, -1.7976931348623157e308, -2.0 ** 53, -1.0, 0.0, 1 / 3, 0.3333333333333333, 2.0 ** 53,
          2.0 ** 53 + 2, 1.7976931348623157e308, math.inf, math.nan]


def _compared(x):
    """Each comparison of x with each number no double equals, both ways round, as 0/1 (Python
    compares exactly: 2.0**53 == Fraction(2**53 + 1) is False, inf <= 2**2000 is False)."""
    return [1.0 if op(*pair) else 0.0 for op in COMPARISONS for n in INEXACT for pair in ((x, n), (n, x))]


def test_comparisons_with_numbers_no_double_equals_are_pythons():
    F = symgrad.compile(lambda x: np.array(_compared(x)))
    for x in POINTS:
        assert F(x).tolist() == _compared(x), x
    assert symgrad.compile(lambda x: x * x if x < HUGE else -x).grad(3.0) == 6.0


def test_an_int_a_double_cannot_hold_compares_rounded_as_numpy_does():
    """np.float64(2.0**53) < 2**53 + 1 is False in numpy (the int rounded), as for an array's
    entry or an np.int64 constant."""
    n = 2 ** 53 + 1
    F = symgrad.compile(lambda x: np.sum(np.where(x < n, 1.0, 0.0)) + symgrad.where(x[0] < np.int64(n), 10.0, 0.0),
                        [(2,)])
    x = np.array([2.0 ** 53, 2.0 ** 53 + 2])
    assert F(x) == np.sum(np.where(x < n, 1.0, 0.0)) + (10.0 if x[0] < np.int64(n) else 0.0) == 0.0


def test_min_max_with_an_int_past_every_double():
    F = symgrad.compile(lambda x: min(x, HUGE) + max([x, 1.0, -HUGE]))
    for x in (-2.0, 0.5, 3.0, 1e308):
        assert F(x) == min(x, HUGE) + max([x, 1.0, -HUGE])


def test_arithmetic_with_a_number_past_every_double_raises_as_python_does():
    with pytest.raises(OverflowError):
        2.0 * HUGE
    with pytest.raises(OverflowError):
        2.0 * Fraction(HUGE, 3)
    for f in (lambda x: x * HUGE, lambda x: HUGE - x, lambda x: math.pow(x, HUGE), lambda x: x * Fraction(HUGE, 3)):
        with pytest.raises(OverflowError, match=r"too large to convert to float .*test_as_python_runs\.py, line"):
            symgrad.compile(f)(2.0)
    assert symgrad.compile(lambda x: x * (T - 1))(0.5) == 0.5 * (T - 1)  # (the largest double)


def test_constants_fold_exactly():
    assert symgrad.compile(lambda x: math.fsum([x, 1e16, 1.0, -1e16]))(0.5) == math.fsum([0.5, 1e16, 1.0, -1e16])


def test_division_by_a_float_constant_is_a_division():
    xs = np.random.default_rng(0).uniform(-10, 10, 2000)
    for c in (0.1, 3.0, math.pi, 0.3):
        np.testing.assert_array_equal(symgrad.compile(lambda x, c=c: x / c)(xs), xs / c)
        np.testing.assert_array_equal(symgrad.compile(lambda x, c=c: 2.0 * x / c + 1.0)(xs), 2.0 * xs / c + 1.0)
    assert symgrad.compile(lambda x: x / 0.1).grad(0.7) == 1 / 0.1
    # a reciprocal shared by several results stays a division in each
    G = symgrad.compile(lambda x, y: x * y / 3.0 + math.sin(x) / 3.0).grad
    gx, gy = G(xs, xs[::-1].copy())
    np.testing.assert_array_equal(gy, xs / 3.0)


def test_signed_zero_constants():
    xs = np.array([-2.5, 2.5])
    F = symgrad.compile(lambda x: math.atan2(-0.0, x))
    assert [math.copysign(1, v) for v in F(xs)] == [-1.0, -1.0]
    np.testing.assert_array_equal(F(xs), [math.atan2(-0.0, -2.5), math.atan2(-0.0, 2.5)])
    assert symgrad.compile(lambda x: math.copysign(x, -0.0))(2.5) == -2.5
    assert symgrad.compile(lambda x: math.copysign(x, 0.0))(-2.5) == 2.5


class _Rng(random.Random):
    pass


@pytest.mark.parametrize("f", [
    lambda x: _Rng(0).random() * x,
    lambda x: random.Random.random(random.Random(0)) * x,
    lambda x: sum(map(random.gauss, [0.0], [1.0])) * x,
    lambda x: sum(itertools.starmap(random.uniform, [(0.0, 1.0)])) * x,
])
def test_random_draws_are_refused_however_reached(f):
    with pytest.raises(symgrad.TraceError, match="as an argument"):
        symgrad.compile(f)(1.0)


def test_library_functions_calling_helpers_trace_them():
    def helper(t):
        return math.sin(t)
    F = symgrad.compile(lambda x: sum(map(helper, [x, 2 * x])) + sum(filter(lambda t: t is not None, [x, 0.0])))
    assert F(0.5) == pytest.approx(math.sin(0.5) + math.sin(1.0) + 0.5, rel=1e-15)


def test_numpy_details():
    xs = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_array_equal(symgrad.compile(lambda x: np.clip(x, a_min=0.0, a_max=1.0))(xs), [0.0, 0.5, 1.0])
    F = symgrad.compile(lambda v: v[0] * v[1] * (np.int64(1) == np.int64(1)) + np.max(v, initial=5.0), [(2,)])
    assert F(np.array([2.0, 3.0])) == 11.0
    G = symgrad.compile(lambda x: symgrad.where(np.logical_and(x > 0, x < 1), x, 0.0))
    np.testing.assert_array_equal(G(xs), [0.0, 0.5, 0.0])
    assert symgrad.compile(lambda x: pow(x, exp=2))(3.0) == 9.0


def test_copies_math_on_one_element_arrays_and_only_the_base_traced():
    assert symgrad.compile(lambda x: copy.deepcopy(x) * copy.copy(x))(3.0) == 9.0
    assert symgrad.compile(lambda x: math.log(2.0, x))(4.0) == pytest.approx(0.5, rel=1e-15)
    assert symgrad.compile(lambda v: math.sin(v[0:1]), [(2,)])(np.array([0.5, 1.0])) == pytest.approx(math.sin(0.5))
    with pytest.raises(symgrad.TraceError, match=r"sin\(\) takes a number, got an array of shape \(2,\)"):
        symgrad.compile(lambda v: math.sin(v), [(2,)])(np.array([0.5, 1.0]))


class _Static:
    @staticmethod
    def __call__(t):
        return math.exp(t)


def test_callable_objects_with_static_call():
    k = _Static()
    assert symgrad.compile(lambda x: k(x)).grad(0.0) == 1.0


def test_code_without_source_keeps_defaults_objects_and_module_writes():
    ns = {"math": math, "ACT": ACT, "cfg": cfg, "Scale": Scale}
    exec(compile(textwrap.dedent("""
        def g(t, *, scale=2.0):
            return scale * math.cos(t)

        def f(x):
            cfg.k = 3.0
            return g(x) + (ACT(x) + ACT.w if isinstance(ACT, Scale) else 0.0) + cfg.k * x
    """), "<generated>", "exec"), ns)
    cfg.k = 1.0
    want = ns["f"](0.3)
    cfg.k = 1.0
    assert symgrad.compile(ns["f"])(0.3) == pytest.approx(want, rel=1e-15)
    assert cfg.k == 3.0


_PAIR = ("naïve é", lambda x: math.sin(x) * 2.0)  # the lambda's column counts UTF-8 bytes


def test_source_with_non_ascii_text_before_the_function():
    assert symgrad.compile(_PAIR[1]).grad(0.0) == 2.0
