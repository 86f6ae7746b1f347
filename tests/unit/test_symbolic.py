"""sympy at symgrad's edges: programs out (to_sympy, ``Function.expr``) and sympy expressions
in (from_sympy), each checked against the IR interpreter's numpy values or mpmath."""
import math

import numpy as np
import pytest
import sympy as sp
from sympy.codegen import cfunctions as cf
from sympy.logic.boolalg import ITE

import symgrad
from symgrad.edges import realfns as R
from symgrad.ir.evaluate import evaluate
from symgrad.ir.ops import OPS
from symgrad.ir.program import Arg, Builder, Output
from symgrad.edges.to_sympy import to_sympy
from symgrad.edges.from_sympy import _FUNCS, program_from_sympy

X, Y = sp.symbols("x y", real=True)
VALUED = sorted(n for n, o in OPS.items() if not o.condition and n != "select")
# in-domain points of each op (its real value there is sympy's value of the closed form)
POINTS = {1: [(-1.3,), (0.3,), (0.7,), (2.5,)], 2: [(0.7, -1.3), (5.3, 1.7), (-2.2, 0.9), (1.5, 2.5)]}
DOMAIN = {
    "log": [(0.3,), (2.5,)], "log2": [(0.3,), (2.5,)], "log10": [(0.3,), (2.5,)], "sqrt": [(0.3,), (2.5,)],
    "log1p": [(-0.5,), (2.5,)], "lgamma": [(0.3,), (2.5,)], "asin": [(-0.6,), (0.3,)], "acos": [(-0.6,), (0.3,)],
    "atanh": [(-0.6,), (0.3,)], "acosh": [(1.7,), (3.0,)], "pow": [(1.7, 1.3), (0.4, -2.5), (2.5, 3.0)],
    "polygamma": [(1, 2.7), (2, 0.4)], "hypot": [(0.7, -1.3), (3.0, 4.0)],
}
GRID = [-2.5, -1.0, -0.5, 0, 0.0, 0.5, 1.0, 2, 3.0, math.inf, -math.inf, math.nan]
# not numpy's value yet (symbolic.py keeps sympy's): sin(oo) is AccumBounds, gamma(oo) is oo, atan2 at ±inf
SYMPYS_AT_INFINITY = ("sin", "cos", "tan", "atan2", "gamma")
NOT_FOLDED = ("polygamma", "lgamma", "atan2")  # sympy raises at lgamma's poles, atan2 of NaN; polygamma: slow


def one_op(name, operands):
    """A one-output program: op ``name`` of arguments (None) and constants (numbers)."""
    b = Builder()
    args = [b.node("arg", k, 0) for k in range(len(operands))]
    nodes = [args[k] if v is None else b.const(v) for k, v in enumerate(operands)]
    return b.program([Arg(f"x{k}", ()) for k in range(len(operands))], [Output("out", (), (b.node(name, *nodes),))])


def arity(name):
    return 2 if OPS[name].arity < 0 else OPS[name].arity


def convert(build, nargs=1):
    """to_sympy of a one-output program made by ``build(b, args)``, in closed form."""
    b = Builder()
    args = [b.node("arg", k, 0) for k in range(nargs)]
    out = build(b, args)
    prog = b.program([Arg(f"x{k}", ()) for k in range(nargs)], [Output("out", (), (out,))])
    sym = to_sympy(prog)
    return sym.inlined()[0], [a.symbols[0] for a in sym.args]


def value(e, symbols, point):
    """The float value of sympy expression ``e`` at ``point`` (30 digits, then rounded)."""
    v = sp.N(R.standard(e.xreplace({s: sp.Float(p, 30) for s, p in zip(symbols, point)})), 30)
    assert not v.has(sp.I, sp.zoo), v
    return float(v)


def same(got, want, rel=1e-13):
    return (math.isnan(got) and math.isnan(want)) or got == want or got == pytest.approx(want, rel=rel, abs=1e-300)


# -- out: Program -> sympy ------------------------------------------------------------------
@pytest.mark.parametrize("zero, sign", [(0.0, 1), (-0.0, -1)])
def test_division_by_a_zero_constant(zero, sign):
    e, (x,) = convert(lambda b, a: b.node("div", a[0], b.const(zero)))
    assert e == sign * sp.oo * x
    e, _ = convert(lambda b, a: b.node("div", b.const(-3.0), b.const(zero)))
    assert e == -sign * sp.oo
    e, _ = convert(lambda b, a: b.node("div", b.const(0.0), b.const(zero)))
    assert e is sp.nan


def test_powers_stay_real():
    e, (x,) = convert(lambda b, a: b.node("pow", b.const(-1.5), a[0]))
    assert isinstance(e, R.RealPow)
    assert e.xreplace({x: sp.Float(0.5)}) is sp.nan  # numpy: nan (sympy's Pow: a complex number)
    assert float(e.xreplace({x: sp.Integer(2)})) == 2.25
    e, _ = convert(lambda b, a: b.node("pow", b.const(-8.0), b.const(1 / 3)))
    assert e is sp.nan
    e, _ = convert(lambda b, a: b.node("pow", b.const(0.0), b.const(-2)))
    assert e is sp.oo
    e, (x,) = convert(lambda b, a: b.node("pow", a[0], b.const(3)))
    assert e == x ** 3                      # integer powers stay sympy powers


@pytest.mark.parametrize("op, arg, expected", [
    ("log", -2.0, sp.nan), ("log", 0.0, -sp.oo), ("sqrt", -4.0, sp.nan), ("asin", 2.0, sp.nan),
    ("acosh", 0.5, sp.nan), ("atanh", 1.0, sp.oo), ("log1p", -2.0, sp.nan), ("log10", 100, 2),
    ("cbrt", -8, -2), ("abs", -0.5, 0.5), ("sign", -3.0, -1),
])
def test_functions_of_numbers_are_real_or_nan(op, arg, expected):
    e, _ = convert(lambda b, a: b.node(op, b.const(arg)))
    assert e is sp.nan if expected is sp.nan else (e == expected or sp.simplify(e - expected) == 0)
    assert not e.has(sp.I) and not e.has(sp.zoo)


@pytest.mark.parametrize("name", [n for n in VALUED if n not in NOT_FOLDED])
def test_constants_fold_to_numpys_value(name):
    """Every op of numbers, in its domain or not: what the IR computes (NaN, ±inf, 0 // 0)."""
    for point in np.ndindex(*[len(GRID)] * arity(name)):
        consts = [GRID[i] for i in point]
        if name in SYMPYS_AT_INFINITY and any(abs(c) == math.inf for c in consts):
            continue
        e = to_sympy(one_op(name, consts)).inlined()[0]
        want = float(evaluate(one_op(name, [None] * len(consts)), *[float(c) for c in consts])[0])
        assert not e.free_symbols and same(value(e, [], []), want), (name, consts, e, want)


@pytest.mark.parametrize("name", VALUED)
def test_closed_forms_are_sympys_functions_with_the_ops_values(name):
    """Every op as ``.expr`` shows it (standard): sympy's own functions where sympy has one,
    worth the op's value."""
    prog = one_op(name, [None] * arity(name))
    e = R.standard(to_sympy(prog).inlined()[0])
    assert not any(f.standard is not None for f in e.atoms(R.RealFunction)), e
    assert not e.has(sp.re, sp.im, sp.I, sp.zoo), e
    symbols = [a.symbols[0] for a in to_sympy(prog).args]
    for point in DOMAIN.get(name, POINTS[len(symbols)]):
        want = float(evaluate(prog, *point)[0])
        assert same(value(e, symbols, point), want), (name, point, e)


def test_expr_of_derivatives_is_sympys_derivative():
    """F.grad.expr and F.hessian.expr: standard sympy functions, worth sympy's own derivatives."""
    def f(x, y):
        return math.tanh(x * y) + math.log(y) * math.sqrt(abs(x)) / 0.1 + math.asin(x / 3) * y ** 2.5 + math.cbrt(x)

    hand = sp.tanh(X * Y) + sp.log(Y) * sp.sqrt(sp.Abs(X)) / sp.Float(0.1) + sp.asin(X / 3) * Y ** 2.5 \
        + sp.real_root(X, 3)
    F = symgrad.compile(f, [(), ()])
    grad, hess = F.grad.expr, F.hessian.expr
    for e in [F.expr, *grad, *[h for row in hess for h in row]]:
        assert not e.atoms(R.RealFunction) and not e.has(sp.Derivative, sp.re, sp.im), e
    for point in [(0.7, 1.3), (-0.4, 2.1)]:
        assert same(value(F.expr, (X, Y), point), value(hand, (X, Y), point), 1e-14)
        for i, v in enumerate((X, Y)):
            assert same(value(grad[i], (X, Y), point), value(sp.diff(hand, v), (X, Y), point), 1e-12)
            for j, w in enumerate((X, Y)):
                assert same(value(hess[i][j], (X, Y), point), value(sp.diff(hand, v, w), (X, Y), point), 1e-12)


def test_comparisons_with_nan_are_false_but_not_equal():
    for op, want in (("gt", 2.0), ("lt", 2.0), ("eq", 2.0), ("ne", 1.0)):
        e, _ = convert(lambda b, a, op=op: b.node("select", b.node(op, a[0], b.const(math.nan)),
                                                  b.const(1.0), b.const(2.0)))
        assert float(e) == want, op
    e, (x,) = convert(lambda b, a: b.node("select", b.node("eq", a[0], a[0]), b.const(1.0), b.const(2.0)))
    assert float(e.xreplace({x: sp.nan})) == 2 and float(e.xreplace({x: sp.Float(3)})) == 1  # false for NaN only


def test_abs_of_sign_and_of_abs():
    e, (x,) = convert(lambda b, a: b.node("abs", b.node("sign", a[0])))
    assert isinstance(e, R.Abs) and isinstance(e.args[0], R.Sign)  # |sign(x)|: no simpler form (0 at 0)
    e, (x,) = convert(lambda b, a: b.node("abs", b.node("abs", a[0])))
    assert e == R.Abs(x)


def test_to_sympys_functions_differentiate_as_their_standard_forms():
    """For whoever differentiates to_sympy's expressions itself (examples/benchmark.py)."""
    e, (x, y) = convert(lambda b, a: b.node("log", b.node("add", b.const(1), b.node("mul", a[0], a[1]))), 2)
    assert sp.diff(e, x) == y / (x * y + 1)
    e, (x,) = convert(lambda b, a: b.node("trunc", a[0]))
    assert sp.diff(e, x) == sp.Derivative(e, x)  # no standard form: left unevaluated


# -- in: sympy -> Program -------------------------------------------------------------------
@pytest.mark.parametrize("fn", list(_FUNCS), ids=lambda f: f"{_FUNCS[f]}-{f.__module__.split('.')[1]}")
def test_from_sympy_reads_every_function_it_knows(fn):
    name = _FUNCS[fn]
    symbols = (X, Y)[:arity(name)]
    e = fn(*symbols)
    prog = program_from_sympy(e, list(symbols))
    points = DOMAIN.get(name, POINTS[len(symbols)])
    if fn is cf.Cbrt:  # sympy's Cbrt (no numeric value of its own) is the principal root: complex below 0
        e, points = sp.expand_func(e), DOMAIN["sqrt"]
    for point in points:
        assert same(float(evaluate(prog, *point)[0]), value(e, symbols, point)), (fn, point)


@pytest.mark.parametrize("e, point, want", [
    (sp.Piecewise((X, X > 1), (-Y, sp.And(Y < 0, sp.Not(X > 0))), (2 * X, True)), (0.5, -1.0), 1.0),
    (sp.Max(X, Y, 1), (0.5, -1.0), 1.0), (sp.Min(X, Y), (0.5, -1.0), -1.0),
    (sp.Rational(1, 3) * X + sp.pi * Y ** 2 - sp.E + sp.Float(0.25), (1.5, 2.0), 0.5 + 4 * math.pi - math.e + 0.25),
    (R.Abs(X) + R.Sign(Y) + R.copysign(X, Y) + R.Trunc(-X), (1.5, -2.0), 1.5 - 1 - 1.5 - 1),
    (R.Tanh(X) + R.Sech2(Y), (0.5, -1.0), math.tanh(0.5) + 1 / math.cosh(-1.0) ** 2),
    # if-then-else of conditions (sympy makes them of nested Piecewise conditions)
    (sp.Piecewise((X, ITE(X > 0, Y > 0, Y < -1)), (2 * X, True)), (1.0, -0.5), 2.0),
    (sp.Piecewise((X, ITE(X > 0, Y > 0, Y < -1)), (2 * X, True)), (-1.0, -2.0), -1.0),
])
@pytest.mark.parametrize("cse", [0, 2500], ids=["plain", "cse"])
def test_from_sympy_reads_conditions_and_numbers(e, point, want, cse):
    assert float(evaluate(program_from_sympy(e, [X, Y], cse), *point)[0]) == pytest.approx(want, rel=1e-15)


@pytest.mark.parametrize("name", [n for n in VALUED if n not in ("round", "mod", "fmod", "remainder", "floordiv",
                                                                  "polygamma")])
def test_closed_forms_read_back_as_the_same_function(name):
    """out, then in: the closed form of every op (but those it has no sympy form for) reads back
    as a program with the same values."""
    prog = one_op(name, [None] * arity(name))
    sym = to_sympy(prog)
    e = R.standard(sym.inlined()[0])
    back = program_from_sympy(e, [a.symbols[0] for a in sym.args])
    for point in DOMAIN.get(name, POINTS[len(sym.args)]):
        assert same(float(evaluate(back, *point)[0]), float(evaluate(prog, *point)[0])), (name, point)


@pytest.mark.parametrize("e, point, want", [
    (X - Y, (0.1, 0.3), 0.1 - 0.3), (-X - Y, (0.1, 0.3), -0.1 - 0.3), (-X * Y, (0.1, 0.3), -(0.1 * 0.3)),
    (X - 2 * Y - sp.cos(X), (0.1, 0.3), 0.1 - 2 * 0.3 - math.cos(0.1)),
    # every term negated, two of them the same node (a Float of two precisions): both subtracted
    (-sp.exp(0.5 * X) - sp.exp(sp.N(sp.Rational(1, 2), 30) * X) - Y, (2.0, 0.25), -math.e - math.e - 0.25),
    (-sp.Abs(X - 3) - R.Abs(X - 3), (2.0, 0.0), -2.0),
])
def test_from_sympy_subtracts_and_negates(e, point, want):
    """A term with coefficient -1 is subtracted, a product with it negated (exact: a + (-b) is
    a - b): no multiplication by -1 is left."""
    prog = program_from_sympy(e, [X, Y])
    assert not any(n[0] == "mul" and n[1:2] and prog.nodes[n[1]] == ("const", "i", -1) for n in prog.nodes)
    assert float(evaluate(prog, *point)[0]) == want


def test_from_sympy_sums_in_sympys_order_of_terms():
    """A sum is read in the order of its terms (``expr.args``; sympy's expressions have no
    order of evaluation), a subtracted term where it stands (no positive terms first): where
    terms cancel, the bits are those of adding the terms left to right."""
    Z = sp.Symbol("z", real=True)
    for point in ({X: 1e16, Y: 1e16, Z: 1.0}, {X: 1.0, Y: 1e16, Z: 1e16}):
        for e in (X - Y + Z, Z - X + Y, -X + Y + Z, X + 3 * Y - Z - 2 * X, -Z - X - Y,
                  sp.Abs(X) - Y + Z):  # terms (z, -y, Abs(x)): a negated one between two others
            want = 0.0
            for k, term in enumerate(e.args):
                v = float(term.subs(point))
                want = v if k == 0 else want + v
            assert float(evaluate(program_from_sympy(e, [X, Y, Z]), *point.values())[0]) == want, (e, point)


SHARED = [sp.Piecewise((sp.sin(X * Y), X * Y > 1), (sp.cos(X * Y) * Y, sp.And(X * Y > -1, Y < 0)), (X, True))
          + sp.exp(X * Y) * X * Y, sp.Max(X * Y, X * Y * Y, 1) - 3 * X * Y * sp.sin(X * Y),
          sp.Min(X * Y * Y, Y) * (X + Y) ** 3 / (1 + X * Y * Y)]


@pytest.mark.parametrize("point", [(0.5, -1.5), (2.0, 0.75), (-1.2, 0.3), (0.0, 2.0)])
def test_from_sympy_through_cse_has_the_values_with_fewer_operations(point):
    """Options.sympy_cse_nodes: the expressions through sympy's cse (shared products, sums,
    conditions) have the values of the plain reading, in fewer nodes; above the bound, no cse."""
    plain, shared = (program_from_sympy(SHARED, [X, Y], n) for n in (0, 2500))
    want = [complex(e.subs({X: point[0], Y: point[1]}).evalf(30)).real for e in SHARED]
    for prog in (plain, shared):
        assert evaluate(prog, *point)[0].tolist() == pytest.approx(want, rel=1e-14)
    assert len(shared.nodes) < len(plain.nodes)
    assert program_from_sympy(SHARED, [X, Y], 10).nodes == plain.nodes


@pytest.mark.parametrize("cse", [0, 2500], ids=["plain", "cse"])
def test_from_sympy_names_what_it_cannot_read_in_the_users_symbols(cse):
    """The message shows the expression as written (the user's symbols, not the dummies that
    stand for them, nor cse's temporaries)."""
    e = sp.besselj(0, sp.sin(X * Y) + Y) + sp.sin(X * Y)
    with pytest.raises(ValueError, match=r"cannot evaluate besselj \(in besselj\(0, y \+ sin\(x\*y\)\)\)"):
        program_from_sympy(e, [X, Y], cse)


@pytest.mark.parametrize("cse", [0, 2500], ids=["plain", "cse"])
def test_from_sympy_of_deep_shared_nesting_costs_its_distinct_parts(cse):
    """e = sin(e)*e - e*y + k nested 30 deep: 150 distinct subexpressions, a tree of 10^14
    nodes. Reading it walks each distinct part once (no xreplace, atoms or free_symbols, which
    walk the tree, and no cse, whose ordering counts it): done in well under the 20 s alarm."""
    import signal
    e = X
    for k in range(30):  # built without evaluation: sympy's own is exponential in this depth
        e = sp.Add(sp.Mul(sp.sin(e, evaluate=False), e, evaluate=False),
                   sp.Mul(-1, e, Y, evaluate=False), sp.Integer(k), evaluate=False)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("from_sympy took 20 s")))
    signal.alarm(20)
    try:
        prog = program_from_sympy(e, [X, Y], cse)
    finally:
        signal.alarm(0)
    want = 0.3
    for k in range(30):
        want = math.sin(want) * want - want * 0.7 + k
    assert float(evaluate(prog, 0.3, 0.7)[0]) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("number", [sp.Integer(2) ** 2000, -sp.Integer(10) ** 5000, sp.Rational(10 ** 400, 3),
                                    sp.Float("1e400")])
def test_from_sympy_refuses_arithmetic_with_a_number_past_the_doubles(number):
    """2**2000*x in doubles is inf*x: nan at x = 0, where the expression is 0; refused, naming it."""
    x = sp.Symbol("x")
    with pytest.raises(ValueError, match=r"from_sympy: the number .* has no double"):
        program_from_sympy([number * x + x ** 2], [x])


def test_from_sympy_compares_with_numbers_past_the_doubles_exactly():
    """x <= 2**2000 at inf is False (2**2000 rounded to inf would say True); Max keeps x;
    0.3333333333333333 < 1/3 (1/3 rounded would say False)."""
    x, huge, third = sp.Symbol("x"), sp.Integer(2) ** 2000, 0.3333333333333333
    prog = program_from_sympy([sp.Piecewise((1.0, x <= huge), (2.0, True)), sp.Max(x, -huge),
                               sp.Piecewise((1.0, x < sp.Rational(1, 3)), (2.0, True))], [x])
    got = np.ravel(evaluate(prog, [np.array([math.inf, 1.5, -math.inf, third])])).reshape(4, 3).T.tolist()
    assert got == [[2.0, 1.0, 1.0, 1.0], [math.inf, 1.5, -math.inf, third], [2.0, 2.0, 1.0, 1.0]]


def test_from_sympy_takes_numbers_up_to_the_largest_double():
    x = sp.Symbol("x")
    largest = sp.Integer(2 ** 1024 - 2 ** 970 - 1)  # rounds to the largest double (one more: to inf)
    prog = program_from_sympy([largest * x], [x])
    assert np.ravel(evaluate(prog, [np.array([0.5])])[0]).tolist() == [1.7976931348623157e308 * 0.5]
    with pytest.raises(ValueError, match="has no double"):
        program_from_sympy([(largest + 1) * x], [x])
