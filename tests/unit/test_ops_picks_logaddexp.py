"""maximum, minimum, fmax, fmin, logaddexp, logaddexp2 as IR ops, without a C compiler: values
bit for bit against numpy (and the tie rule where numpy's own answer varies), derivatives
against closed forms at ordinary points, ties, ±0, ±inf and NaN; how np.* reaches them."""
import math

import mpmath
import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.ir.ops import OPS
from symgrad.ir.program import Arg, Builder, Output
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian

NAN, INF = math.nan, math.inf
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, 1e-300, -1e300, 1e308, 710.0, -745.0, INF, -INF, NAN]
A, B = (np.array(v, dtype=np.float64) for v in zip(*[(a, b) for a in SPECIAL for b in SPECIAL]))
PICKS = {"maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin}


def _program(name):
    b = Builder()
    t = b.node(name, b.node("arg", 0, 0), b.node("arg", 1, 0))
    return b.program([Arg("a", ()), Arg("b", ())], [Output("out", (), (t,))])


def _bits(x):
    return np.asarray(x, dtype=np.float64).view(np.int64)


def _value(name, a, b):
    return np.asarray(evaluate(_program(name), a, b)[0], dtype=np.float64).reshape(np.shape(a))


def _grad(name, a, b):
    g = evaluate(derive.grad(_program(name), (0, 1)), a, b)
    return [np.asarray(x, dtype=np.float64).reshape(np.shape(a)) for x in g]


@pytest.mark.parametrize("name", sorted(PICKS))
def test_picks_are_numpys_but_at_a_tie_of_zeros_the_first(name):
    got, want = _value(name, A, B), PICKS[name](A, B)
    zeros = (A == 0) & (B == 0)
    assert np.array_equal(_bits(got[~zeros]), _bits(want[~zeros]))  # NaN payloads too
    assert np.array_equal(_bits(got[zeros]), _bits(A[zeros]))  # numpy's own: scalar, array, reduce differ
    assert np.isnan(_value(name, NAN, 1.0)) == (name in ("maximum", "minimum"))
    assert np.isnan(_value(name, 1.0, NAN)) == (name in ("maximum", "minimum"))
    assert np.isnan(_value(name, NAN, NAN))


# when each picks its second operand: b beats a, or the NaN-deciding operand is NaN
SECOND = {"maximum": lambda a, b: (b > a) | np.isnan(b), "minimum": lambda a, b: (b < a) | np.isnan(b),
          "fmax": lambda a, b: (b > a) | np.isnan(a), "fmin": lambda a, b: (b < a) | np.isnan(a)}


@pytest.mark.parametrize("name", sorted(PICKS))
def test_picks_derivative_goes_to_the_operand_picked_the_first_at_a_tie(name):
    da, db = _grad(name, A, B)
    second = SECOND[name](A, B)
    assert np.array_equal(_bits(_value(name, A, B)), _bits(np.where(second, B, A)))
    assert np.array_equal(da, np.where(second, 0.0, 1.0)) and np.array_equal(db, np.where(second, 1.0, 0.0))
    for a, b in [(1.0, 1.0), (-0.0, 0.0), (0.0, -0.0), (INF, INF)]:
        assert [float(v) for v in _grad(name, a, b)] == [1.0, 0.0], (a, b)
    assert [float(v) for v in _grad(name, 1.0, NAN)] == ([0.0, 1.0] if name in ("maximum", "minimum") else [1.0, 0.0])


def test_np_clip_is_minimum_of_maximum_with_numpys_nan_rule():
    F = trace(lambda x: np.clip(x, -1.0, 2.0), [()])
    assert [n[0] for n in F.nodes if n[0] in OPS and not OPS[n[0]].condition] == ["maximum", "minimum"]
    x = np.array([-3.0, -1.0, 0.5, 2.0, 7.0, INF, -INF, NAN, -0.0])
    got = np.asarray(evaluate(F, x)[0], dtype=np.float64)
    assert np.array_equal(_bits(got), _bits(np.clip(x, -1.0, 2.0)))
    d = np.asarray(evaluate(derive.grad(F, (0,)), x)[0], dtype=np.float64)
    assert np.array_equal(d, [0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0])  # a tie: x's (the first)


def test_python_max_stays_pythons_select():
    """max(a, b) is b if b > a else a: NaN first wins, NaN second loses (not numpy's maximum)."""
    prog = trace(lambda a, b: max(a, b) + min(a, b), [(), ()])
    assert not any(n[0] in PICKS for n in prog.nodes) and any(n[0] == "select" for n in prog.nodes)
    for a, b in [(NAN, 1.0), (1.0, NAN), (2.0, 1.0), (1.0, 2.0), (1.0, 1.0)]:
        got = float(np.asarray(evaluate(prog, a, b)[0]))
        want = max(a, b) + min(a, b)
        assert got == want or (math.isnan(got) and math.isnan(want)), (a, b)


def test_np_maximum_and_nanmax_trace_to_the_ops():
    prog = trace(lambda x: np.maximum(x[0], x[1]) + np.fmin(x[0], x[2]) + np.max(x) + np.nanmax(x), [(3,)])
    names = [n[0] for n in prog.nodes]
    assert names.count("maximum") == 2 and names.count("fmin") == 1 and names.count("fmax") == 2  # (one shared)
    assert "select" not in names


def test_logaddexp_values_are_numpys_bit_for_bit():
    with np.errstate(invalid="ignore"):
        want, want2 = np.logaddexp(A, B), np.logaddexp2(A, B)
    assert np.array_equal(_bits(_value("logaddexp", A, B)), _bits(want))
    assert np.array_equal(_bits(_value("logaddexp2", A, B)), _bits(want2))
    prog = trace(lambda a, b: np.logaddexp(a, b) + np.logaddexp2(b, a), [(), ()])
    assert [n[0] for n in prog.nodes if n[0] not in ("arg", "const")] == ["logaddexp", "logaddexp2", "add"]


def _closed(exp):
    """d/da log(exp(a) + exp(b)) in mpmath, where it has a value (finite a, b)."""
    def f(a, b):
        ea, eb = exp(mpmath.mpf(a)), exp(mpmath.mpf(b))
        return float(ea / (ea + eb)), float(eb / (ea + eb))
    return f


@pytest.mark.parametrize("name, exp", [("logaddexp", mpmath.exp), ("logaddexp2", lambda v: mpmath.mpf(2) ** v)])
def test_logaddexp_derivatives(name, exp):
    closed = _closed(exp)
    for a, b in [(0.7, -1.3), (1.0, 1.0), (-0.0, 0.0), (30.0, -30.0), (1e10, 1e10 - 1), (-800.0, 0.0)]:
        da, db = (float(v) for v in _grad(name, a, b))
        wa, wb = closed(a, b)
        assert da == pytest.approx(wa, rel=1e-14, abs=1e-300) and db == pytest.approx(wb, rel=1e-14, abs=1e-300)
    # infinities: no NaN where the limit is plain; a tie of infinities 1/2 each (-inf, -inf included)
    cases = {(INF, 1.0): (1.0, 0.0), (1.0, -INF): (1.0, 0.0), (-INF, 3.0): (0.0, 1.0), (INF, -INF): (1.0, 0.0),
             (-INF, -INF): (0.5, 0.5), (INF, INF): (0.5, 0.5), (1e308, 1e308): (0.5, 0.5)}
    for (a, b), want in cases.items():
        assert tuple(float(v) for v in _grad(name, a, b)) == want, (a, b)
    assert all(math.isnan(float(v)) for v in _grad(name, NAN, 1.0))


def test_logaddexp_second_derivatives_hold_at_a_tie():
    h = evaluate(hessian.hessian(_program("logaddexp"), (0, 1)), 0.5, 0.5)
    assert [float(v) for v in h] == [0.25, -0.25, -0.25, 0.25]
    h2 = evaluate(hessian.hessian(_program("logaddexp2"), (0, 1)), 0.5, 0.5)
    assert float(h2[0]) == pytest.approx(math.log(2.0) / 4, rel=1e-15)


def test_sympy_edges_of_the_new_ops():
    """.expr of each op is worth its value; from_sympy reads sympy's Max/Min as maximum/minimum."""
    import sympy as sp
    from symgrad.edges.from_sympy import program_from_sympy
    from symgrad.edges.to_sympy import to_sympy
    for name in ("maximum", "minimum", "fmax", "fmin", "logaddexp", "logaddexp2"):
        sym = to_sympy(_program(name))
        e = sym.inlined()[0]
        (a,), (b,) = (x.symbols for x in sym.args)
        for pa, pb in [(0.7, -1.3), (-2.0, 0.5)]:
            want = float(_value(name, pa, pb))
            assert float(e.subs({a: pa, b: pb})) == pytest.approx(want, rel=1e-15), name
    x, y = sp.symbols("x y")
    prog = program_from_sympy([sp.Max(x, y, 1), sp.Min(x, y)], [x, y])
    assert [n[0] for n in prog.nodes if n[0] not in ("arg", "const")] == ["maximum", "maximum", "minimum"]
    out = np.ravel(evaluate(prog, 0.5, -1.0)[0]).tolist()
    assert out == [1.0, -1.0]


def test_registry_entries_of_the_new_ops():
    """Each new op's entry names its numpy ufunc and its NaN rule; logaddexp calls its C helper
    through the vector-maths one-lane helpers, the picks are no library call."""
    for name in ("maximum", "minimum", "fmax", "fmin", "logaddexp", "logaddexp2"):
        assert "NaN" in OPS[name].nan and OPS[name].numpy == (name,)
    assert OPS["logaddexp"].vector == "symgrad_logaddexp" and OPS["logaddexp"].library
    assert not OPS["maximum"].library and OPS["maximum"].pick


@pytest.mark.parametrize("name, base", [("logaddexp", math.e), ("logaddexp2", 2.0)])
def test_logaddexp_higher_derivatives_have_no_nan_at_an_infinite_operand(name, base):
    """p (1 - p) log(base)^k at an infinity is 0 (a -inf mask entry of a log-sum-exp): the partial
    1/(1 + base^(b - a)) differentiated as a quotient was inf/inf there (a review find)."""
    prog = _program(name)
    h, third = hessian.hessian(prog, (0, 1)), derive.jacobian(hessian.hessian(prog, (0, 1)), (0, 1))
    for a, b in [(1.0, -INF), (-INF, 1.0), (INF, 1.0), (1.0, INF), (INF, -INF)]:
        assert [abs(float(v)) for v in evaluate(h, a, b)] == [0.0] * 4, (a, b)
        assert all(float(v) == 0.0 for v in np.ravel(evaluate(third, a, b))), (a, b)
    a, b, ln = 0.3, -1.2, math.log(base)  # an ordinary point: p (1 - p) ln, against mpmath
    p = 1 / (1 + mpmath.mpf(base) ** (b - a))
    assert float(evaluate(h, a, b)[0]) == pytest.approx(float(p * (1 - p) * ln), rel=1e-14)


@pytest.mark.parametrize("name, np_fn", [("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2)])
def test_logaddexp_reads_back_from_sympy_without_overflow(name, np_fn):
    """.expr keeps logaddexp as itself (its textbook form log(exp(a) + exp(b)) overflows at
    a = 1000), and from_sympy reads it back as the op (a review find: it became inf)."""
    from symgrad.edges.from_sympy import program_from_sympy
    from symgrad.edges.realfns import standard
    from symgrad.edges.to_sympy import to_sympy
    sym = to_sympy(_program(name))
    e = standard(sym.inlined()[0])
    (a,), (b,) = (x.symbols for x in sym.args)
    back = program_from_sympy(e, [a, b])
    assert [n[0] for n in back.nodes if n[0] not in ("arg", "const")] == [name]
    for pa, pb in [(1000.0, 999.0), (-1000.0, -1001.0), (800.0, 1.0)]:
        assert float(np.ravel(evaluate(back, pa, pb)[0])[0]) == np_fn(pa, pb)
    ga, gb = (float(np.ravel(v)[0]) for v in evaluate(derive.grad(back, (0, 1)), 1000.0, 999.0))
    assert ga == pytest.approx(1 / (1 + math.exp(-1.0)) if name == "logaddexp" else 1 / (1 + 2 ** -1.0), rel=1e-15)
