"""Derivatives on the IR, checked without a C compiler: every op's partials against mpmath,
the kinds against closed forms, edge-pushing Hessians against reverse over reverse."""
import math

import mpmath
import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.ir.ops import OPS
from symgrad.ir.program import Arg, Builder, Output
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian

mpmath.mp.dps = 40

# the reference: each op with derivatives, in mpmath, at points inside its domain
REF = {
    "add": (lambda a, b: a + b, (0.7, -1.3)), "sub": (lambda a, b: a - b, (0.7, -1.3)),
    "mul": (lambda a, b: a * b, (0.7, -1.3)), "div": (lambda a, b: a / b, (0.7, -1.3)),
    "neg": (lambda a: -a, (0.7,)), "pow": (lambda a, b: a ** b, (1.7, 1.3)),
    "sin": (mpmath.sin, (0.7,)), "cos": (mpmath.cos, (0.7,)), "tan": (mpmath.tan, (0.7,)),
    "asin": (mpmath.asin, (0.3,)), "acos": (mpmath.acos, (0.3,)), "atan": (mpmath.atan, (0.7,)),
    "sinh": (mpmath.sinh, (0.7,)), "cosh": (mpmath.cosh, (0.7,)), "tanh": (mpmath.tanh, (0.7,)),
    "asinh": (mpmath.asinh, (0.7,)), "acosh": (mpmath.acosh, (1.7,)), "atanh": (mpmath.atanh, (0.3,)),
    "exp": (mpmath.exp, (0.7,)), "expm1": (mpmath.expm1, (0.7,)), "exp2": (lambda x: 2 ** x, (0.7,)),
    "log": (mpmath.log, (0.7,)), "log1p": (mpmath.log1p, (0.7,)), "log2": (lambda x: mpmath.log(x, 2), (0.7,)),
    "log10": (mpmath.log10, (0.7,)), "sqrt": (mpmath.sqrt, (0.7,)), "cbrt": (mpmath.cbrt, (0.7,)),
    "erf": (mpmath.erf, (0.7,)), "erfc": (mpmath.erfc, (0.7,)), "gamma": (mpmath.gamma, (2.7,)),
    "lgamma": (mpmath.loggamma, (2.7,)), "sech2": (lambda x: mpmath.sech(x) ** 2, (0.7,)),
    "abs": (abs, (-0.7,)), "degrees": (lambda x: x * 180 / mpmath.pi, (0.7,)),
    "radians": (lambda x: x * mpmath.pi / 180, (0.7,)), "atan2": (mpmath.atan2, (0.7, -1.3)),
    "hypot": (lambda a, b: mpmath.sqrt(a * a + b * b), (0.7, -1.3)),
    "copysign": (lambda a, b: abs(a) * mpmath.sign(b), (0.7, -1.3)),
    "mod": (lambda a, b: a - b * mpmath.floor(a / b), (5.3, 1.7)),
    "fmod": (lambda a, b: a - b * int(a / b), (5.3, 1.7)),
    "remainder": (lambda a, b: a - b * mpmath.nint(a / b), (5.3, 1.7)),
    "polygamma": (lambda m, x: mpmath.polygamma(int(m), x), (1, 2.7)),
    "fsum": (lambda a, b: a + b, (0.7, -1.3)),
    "logaddexp": (lambda a, b: mpmath.log(mpmath.exp(a) + mpmath.exp(b)), (0.7, -1.3)),
    "logaddexp2": (lambda a, b: mpmath.log(2 ** a + 2 ** b, 2), (0.7, -1.3)),
    "maximum": (max, (0.7, -1.3)), "minimum": (min, (0.7, -1.3)), "fmax": (max, (-1.3, 0.7)),
    "fmin": (min, (-1.3, 0.7)),
}
STEPS = [n for n, o in OPS.items() if o.step]


def _program(name, arity):
    b = Builder()
    xs = [b.node("arg", i, 0) for i in range(arity)]
    if name == "polygamma":
        xs[0] = b.const(1)
    t = b.node(name, *xs)
    return b.program([Arg(f"x{i}", ()) for i in range(arity)], [Output("out", (), (t,))])


def test_every_differentiable_op_has_a_reference():
    assert set(REF) | set(STEPS) | {n for n, o in OPS.items() if o.condition} | {"select"} == set(OPS)


@pytest.mark.parametrize("name", sorted(REF))
def test_first_and_second_partials_match_mpmath(name):
    f, point = REF[name]
    arity = len(point)
    prog = _program(name, arity)
    live = [i for i in range(arity) if not (name == "polygamma" and i == 0)]
    grad = derive.grad(prog, tuple(live))
    hess = hessian.hessian(prog, tuple(live))
    got_g = evaluate(grad, *point)
    got_h = evaluate(hess, *point)
    for k, i in enumerate(live):
        order = [1 if j == i else 0 for j in range(arity)]
        want = mpmath.diff(lambda *v: f(*v), point, order)
        assert float(got_g[k]) == pytest.approx(float(want), rel=1e-13, abs=1e-15), (name, i)
        for m, j in enumerate(live):
            order = [(1 if q == i else 0) + (1 if q == j else 0) for q in range(arity)]
            want = mpmath.diff(lambda *v: f(*v), point, order)
            assert float(got_h[k * len(live) + m]) == pytest.approx(float(want), rel=1e-11, abs=1e-13), \
                (name, i, j)


@pytest.mark.parametrize("name", STEPS)
def test_steps_have_derivative_zero(name):
    prog = _program(name, 2 if name == "floordiv" else 1)
    g = derive.grad(prog, tuple(range(len(prog.args))))
    assert all(float(v) == 0 for v in evaluate(g, *[2.3] * len(prog.args)))


def founding(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def test_founding_function_derivatives_are_exact():
    import sympy as sp
    X = sp.Symbol("x")
    exact = 64 * X * (1 - X) * (1 - 2 * X) ** 2 * (1 - 8 * X + 8 * X * X) ** 2
    prog = trace(founding, [()])
    assert float(evaluate(derive.grad(prog, (0,)), 3.0)[0]) == -75279680
    for n in range(1, 9):
        want = float(sp.diff(exact, X, n).subs(X, 3))
        assert float(evaluate(derive.nth(prog, n, 0, "d"), 3.0)[0]) == want
    assert float(evaluate(hessian.hessian(prog, (0,)), 3.0)[0]) == float(sp.diff(exact, X, 2).subs(X, 3))


def test_branch_not_taken_stays_zero_at_every_order():
    """d/dy where(y > 0, sqrt(y**2.5), 0.3*y) at y < 0 is 0.3, its second derivative 0: the
    NaN of the branch not taken never reaches the result."""
    prog = trace(lambda y: np.where(y > 0, np.sqrt(y ** 2.5), 0.3 * y), [()])
    g = derive.grad(prog, (0,))
    assert float(evaluate(g, -2.0)[0]) == 0.3
    assert float(evaluate(hessian.hessian(prog, (0,)), -2.0)[0]) == 0
    assert float(evaluate(derive.nth(prog, 3, 0, "d"), -2.0)[0]) == 0
    assert float(evaluate(derive.hvp(prog, (0,), ["v"]), -2.0, 1.0)[0]) == 0
    assert float(evaluate(g, 4.0)[0]) == pytest.approx(1.25 * 4.0 ** 0.25, rel=1e-15)


def test_untaken_branch_stays_zero_through_negated_and_summed_adjoints():
    """The third derivative through atan2 of a select whose untaken branch is NaN (a negative
    base to a power): adjoints negated (-select) and summed over different conditions stay
    guarded (a fuzz find; a leak here was a NaN)."""
    def f(z0, z1, z2):
        return np.arctan2(np.where(math.fabs(z1) > 1 ** z2, math.log1p(z2), math.pow(z0, z2)), math.fabs(-2))
    z = (-0.5595630030294418, -1.0126182323270676, -0.02328700516982707)
    prog = trace(f, [(), (), ()])
    third = evaluate(derive.jacobian(hessian.hessian(prog, (0, 1, 2)), (2,)), *z)
    want = mpmath.diff(lambda t: mpmath.atan2(mpmath.log1p(t), 2), mpmath.mpf(z[2]), 3)
    assert float(third[-1]) == pytest.approx(float(want), rel=1e-13)
    assert [float(v) for v in third[:-3]] == [0.0] * (len(third) - 3)
    assert float(evaluate(derive.nth(prog, 3, 2, "d"), *z)[0]) == pytest.approx(float(want), rel=1e-13)


def _rosen(x):
    return np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2) + np.max(np.sin(x) * x)


def test_edge_pushing_equals_reverse_over_reverse_and_hvp():
    rng = np.random.default_rng(0)
    prog = trace(_rosen, [(5,)])
    x = rng.normal(size=5)
    h = evaluate(hessian.hessian(prog, (0,)), x)[0]
    g = derive.grad(prog, (0,))
    rr = evaluate(derive.jacobian(g, (0,)), x)[0]
    assert np.array_equal(h, h.T)
    np.testing.assert_allclose(h, rr, rtol=1e-14, atol=1e-12)
    v = rng.normal(size=5)
    np.testing.assert_allclose(evaluate(derive.hvp(prog, (0,), ["v"]), x, v)[0], h @ v, rtol=1e-13, atol=1e-12)


def test_jacobian_rows_match_mpmath():
    def f(x, y):
        return [x[0] * mpmath.sin(y), mpmath.exp(x[1]) / y, mpmath.sqrt(x[0] ** 2 + x[1] ** 2)]
    prog = trace(lambda x, y: np.array([x[0] * np.sin(y), np.exp(x[1]) / y, np.hypot(x[0], x[1])]),
                 [(2,), ()])
    jx, jy = evaluate(derive.jacobian(prog, (0, 1)), [0.3, -0.4], 1.1)
    for i in range(3):
        for j in range(2):
            want = mpmath.diff(lambda a: f([a if k == j else [0.3, -0.4][k] for k in range(2)], 1.1)[i],
                               [0.3, -0.4][j])
            assert float(jx[i, j]) == pytest.approx(float(want), rel=1e-14)
        assert float(jy[i]) == pytest.approx(float(mpmath.diff(lambda b: f([0.3, -0.4], b)[i], 1.1)), rel=1e-14)


def test_gradient_program_is_linear_in_the_function():
    """Reverse accumulation: the gradient of a chain of n operations has O(n) nodes."""
    def chain(x, n):
        for k in range(n):
            x = np.sin(x) * (1 + 0.5 * x)
        return x
    sizes = [derive.grad(trace(lambda x: chain(x, n), [()]), (0,)).count_ops() for n in (50, 100, 200)]
    assert sizes[2] - sizes[1] == pytest.approx(2 * (sizes[1] - sizes[0]), rel=0.05)
    assert sizes[2] < 12 * 200


def test_second_partials_never_mistake_a_rebuilt_operand_for_an_operand():
    """atan2(x, x*x): atan2's partial rule builds y*y, which is the node of its second operand;
    edge pushing took it for that operand (review find). d2/dx2 atan(1/x) = 2x/(1+x^2)^2."""
    xs = np.array([0.5, 1.0, 2.0])
    for f in (lambda x: math.atan2(x, x * x), lambda x: -np.arctan2(x * x, x) + math.pi / 2):
        h = evaluate(hessian.hessian(trace(f, [()]), (0,)), xs)[0].ravel()
        np.testing.assert_allclose(h, 2 * xs / (1 + xs ** 2) ** 2, rtol=1e-15)


def test_derivatives_keep_their_range_at_huge_and_tiny_arguments():
    """x*log(x): the Hessian is 1/x; edge pushing's x * ((1/x)/x) underflowed at 1e300."""
    prog = trace(lambda x: np.where(x > 0, x * np.log(x), 0.0), [()])
    xs = np.array([1e300, 1e-300, 2.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(evaluate(hessian.hessian(prog, (0,)), xs)[0].ravel(), 1 / xs)


def test_hypot_of_one_argument_is_abs():
    prog = trace(lambda x: math.hypot(x), [()])
    xs = np.array([0.0, 1e-300, -1e300, math.inf, -2.0])
    np.testing.assert_array_equal(evaluate(prog, xs)[0], np.abs(xs))
    np.testing.assert_array_equal(evaluate(derive.grad(prog, (0,)), xs)[0], np.sign(xs))


def _rows_both_ways(prog, argnums):
    """(reverse rows, their graph), (forward rows, their graph) of ``prog``'s outputs."""
    from symgrad.ir.graph import Graph
    ys = [y for o in prog.outputs for y in o.refs]
    r = Graph(prog)
    rev = [derive.reverse(r, y, derive.arg_nodes(r, argnums)) for y in ys]
    f = Graph(prog)
    cols = [derive.forward(f, ys, {w: f.const(1)}) for w in derive.arg_nodes(f, argnums)]
    return (rev, r), ([[c[k] for c in cols] for k in range(len(ys))], f)


def _values(graph, rows, *point):
    prog = graph.program([(f"r{k}", (len(row),), list(row)) for k, row in enumerate(rows)])
    return [np.asarray(v, float) for v in evaluate(prog, *point)]


def test_the_cheaper_accumulation_is_chosen():
    """pick_rows builds the program of the lower cost: the founding function's gradient by
    forward accumulation (its tangents near x are constants that fold, where every adjoint is
    a product), rosen8's gradient (eight entries) in reverse."""
    def cost(rows, graph):
        return derive.cost(graph, [d for row in rows for d in row if d is not None])
    cases = [(founding, [()], "forward"),
             (lambda x: np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2), [(8,)], "reverse")]
    for fn, shapes, winner in cases:
        prog = trace(fn, shapes)
        (rev, r), (fwd, f) = _rows_both_ways(prog, (0,))
        g, rows = derive.pick_rows(prog, [prog.outputs[0].refs[0]], (0,))
        assert cost(rows, g) == min(cost(rev, r), cost(fwd, f))
        assert (cost(fwd, f) < cost(rev, r)) == (winner == "forward")
    prog = trace(founding, [()])
    assert float(evaluate(derive.grad(prog, (0,)), 3.0)[0]) == -75279680


@pytest.mark.parametrize("fn, x, want", [
    (lambda x: math.log(math.exp(-x / 1e20)), 7e22, -1e-20),
    (lambda x: math.log(1 / (1e100 * x)) + 8 * (1 - x) * (1 - 2 * x) ** 2, 1e-250, -1e250),
])
def test_gradients_of_more_than_polynomials_are_reverse_accumulated(fn, x, want):
    """A forward tangent can underflow or overflow where the adjoint does not: exp(-x/1e20)'s
    tangent at 7e22 is 1e-324, its log's derivative then -0.0 (a review find of forward
    accumulation taken by cost alone). Only polynomials are tried forward."""
    prog = trace(fn, [()])
    assert float(evaluate(derive.grad(prog, (0,)), x)[0]) == pytest.approx(want, rel=1e-14)


ONE_VARIABLE = [  # (traced, mpmath) functions of x and y, each a path forward accumulation takes
    (lambda x, y: np.where(x > 0, np.sqrt(x ** 2.5) * y, 0.3 * x * y), lambda x, y: (mpmath.sqrt(x ** 2.5) if x > 0 else 0.3 * x) * y),
    (lambda x, y: math.pow(1.5 + x, y) / (1 + x * x), lambda x, y: (1.5 + x) ** y / (1 + x * x)),
    (lambda x, y: np.maximum(np.sin(x), np.cos(y)) * np.exp(-x * y), lambda x, y: max(mpmath.sin(x), mpmath.cos(y)) * mpmath.exp(-x * y)),
    (lambda x, y: np.arctan2(x, y) + np.hypot(x, 2 * y) - np.log1p(x * x), lambda x, y: mpmath.atan2(x, y) + mpmath.sqrt(x * x + 4 * y * y) - mpmath.log1p(x * x)),
]


@pytest.mark.parametrize("k", range(len(ONE_VARIABLE)))
@pytest.mark.parametrize("point", [(0.7, 1.3), (-0.4, 2.1), (1.9, -0.6)])
def test_forward_and_reverse_accumulation_agree_with_mpmath(k, point):
    """Both accumulations, whichever pick_rows takes, against mpmath (and a select's branch not
    taken stays 0 forward as in reverse: the first function at x < 0)."""
    fn, ref = ONE_VARIABLE[k]
    prog = trace(fn, [(), ()])
    for rows, graph in _rows_both_ways(prog, (0, 1)):
        got = _values(graph, rows, *point)[0]
        for j in range(2):
            want = mpmath.diff(lambda t: ref(*[t if i == j else mpmath.mpf(point[i]) for i in range(2)]),
                               mpmath.mpf(point[j]))
            assert float(got[j]) == pytest.approx(float(want), rel=1e-13, abs=1e-15)
