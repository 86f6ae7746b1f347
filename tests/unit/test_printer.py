"""The one printer, on expression strings, for each target's number type."""
import pytest
import sympy as sp

from symgrad import options
from symgrad import realfns as R
from symgrad.render import TARGETS
from symgrad.render.printer import Printer

x, y = sp.symbols("x y", real=True)
NAMES = {x: "x", y: "y"}


def show(e, target=("cpu", "float64")):
    return Printer(NAMES, TARGETS[target], options.DEFAULT).doprint(e)


@pytest.mark.parametrize("expr, double, single", [
    (x ** 2, "(x*x)", "(x*x)"),
    (x ** -3, "1.0/((x*x)*x)", "1.0F/((x*x)*x)"),
    (R.RealPow(x, sp.Rational(1, 2)), "sqrt(x)", "sqrtf(x)"),
    (R.RealPow(x, sp.Rational(-3, 2)), "1.0/((sqrt(x)*sqrt(x))*sqrt(x))", "1.0F/((sqrtf(x)*sqrtf(x))*sqrtf(x))"),
    (R.RealPow(x, y), "pow(x, y)", "powf(x, y)"),
    (x / 10, "(x)/10", "(x)/10"),
    (x * R.Recip(sp.Float(0.1)), "(x)/0.10000000000000001", "(x)/0.1F"),
    (sp.sin(x) * R.Log(y), "log(y)*sin(x)", "logf(y)*sinf(x)"),
    (R.Abs(x) + R.Floor(y), "fabs(x) + floor(y)", "fabsf(x) + floorf(y)"),
    (R.Cbrt(x), "cbrt(x)", "cbrtf(x)"),
    (R.Sign(x), "(isnan(x) ? (x) : (double)(((x) > 0) - ((x) < 0)))",
     "(isnan(x) ? (x) : (float)(((x) > 0) - ((x) < 0)))"),
    (sp.Piecewise((x, x > y), (y, True)), "((x > y) ? (\n   x\n)\n: (\n   y\n))", None),
    (sp.oo * x, "INFINITY*x", "INFINITY*x"),
    (sp.nan + 0 * x, "NAN", "NAN"),
    (R.IsNan(x), "isnan(x)", "isnan(x)"),
    (R.Negation(x > y), "!(x > y)", "!(x > y)"),
    (sp.polygamma(0, x), "symgrad_polygamma(0, x)", "symgrad_polygamma(0, x)"),
    (sp.Integer(2) ** 60 * x, "1.152921504606847e+18*x", None),  # beyond 2**53: a double literal
    (sp.pi * x, "3.1415926535897932*x", None),
])
def test_expression_strings(expr, double, single):
    got = show(expr)
    if double.startswith("((x > y)"):
        assert got.replace(" ", "").replace("\n", "") == "((x>y)?(x):(y))"
        return
    assert got == double
    if single is not None:
        assert show(expr, ("cpu", "float32")) == single


def test_every_target_prints_the_same_expressions():
    e = sp.sin(x) * R.RealPow(y, sp.Float(2.5)) + R.Recip(sp.Float(3.0)) * x
    for dtype in ("float64", "float32"):
        assert len({show(e, (kind, dtype)) for kind in ("cpu", "c99", "cuda")}) == 1


def test_what_is_not_real_is_refused():
    from symgrad import CompileError
    with pytest.raises(CompileError, match="cannot print"):
        show(sp.Function("g")(x))
