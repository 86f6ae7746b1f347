"""The IR: value numbering, exact constants, the key, the printed form."""
import math
from fractions import Fraction

import numpy as np
import pytest

from symgrad.ir.evaluate import evaluate
from symgrad.ir.program import Arg, Builder, Output, const_key, const_value
from symgrad.tracing import trace

from helpers import run_python


def test_constants_are_exact_and_distinct():
    keys = [const_key(c) for c in (1, 1.0, True, -0.0, 0.0, math.nan, math.inf, Fraction(1, 3),
                                   np.float32(0.1), np.int64(7))]
    assert len(set(keys)) == len(keys) - 1  # True and 1 are the same integer
    assert const_value(const_key(-0.0)) == 0.0 and math.copysign(1, const_value(const_key(-0.0))) == -1
    assert math.isnan(const_value(const_key(math.nan)))
    assert const_value(const_key(np.float32(0.1))) == float(np.float32(0.1))
    assert const_value(const_key(Fraction(1, 3))) == Fraction(1, 3)
    assert const_key(2**80) == ("const", "i", 2**80)
    assert const_key("1.0") is None and const_key(1j) is None


def test_float_subclass_constant_is_its_value_not_its_float_method():
    class Odd(float):
        def __float__(self):
            return 99.0
    assert const_value(const_key(Odd(2.5))) == 2.5  # what float arithmetic uses


@pytest.mark.skipif(not hasattr(np, "longdouble") or np.finfo(np.longdouble).nmant <= 52,
                    reason="longdouble is double here")
def test_longdouble_constant_keeps_its_digits():
    c = np.longdouble(1) / np.longdouble(3)
    assert const_value(const_key(c)) == Fraction(*c.as_integer_ratio())


def test_value_numbering_shares_identical_nodes():
    b = Builder()
    x = b.node("arg", 0, 0)
    two = b.const(2.0)
    assert b.node("mul", x, two) == b.node("mul", x, two)
    assert b.const(2.0) == two and b.const(2) != two
    assert len(b.nodes) == 4


def test_key_changes_with_any_constant_bit_and_is_stable():
    def f(c):
        return trace(lambda x: c * x + 1.0)
    assert f(2.0).key == f(2.0).key
    assert f(2.0).key != f(math.nextafter(2.0, 3.0)).key
    assert f(0.0).key != f(-0.0).key
    assert f(2).key != f(2.0).key


def test_printed_program_reads_like_a_jaxpr():
    prog = trace(lambda x, v: x * v[1] + math.sin(x), [(), (2,)])
    text = str(prog)
    assert text.splitlines()[0] == "{ lambda x, v[2] ."
    assert "= mul x v[1]" in text and "= sin x" in text and text.endswith(" }")
    assert prog.count_ops() == 3


def test_program_is_plain_data():
    import pickle
    prog = trace(lambda x: x * x + 1)
    again = pickle.loads(pickle.dumps(prog))
    assert again == prog and again.key == prog.key
    assert "sympy" not in repr(prog)


def test_outputs_and_args():
    b = Builder()
    x = b.node("arg", 0, 0)
    prog = b.program([Arg("x", ())], [Output("out", (), (x,))])
    assert prog.args[0].size == 1 and prog.outputs[0].size == 1


def test_tracing_never_imports_sympy(tmp_path):
    r = run_python("""
        import math, sys, numpy as np
        from symgrad.tracing import trace
        prog = trace(lambda x, v: math.sin(x) * np.sum(v ** 2) + max(x, 0.5), [(), (3,)])
        print(prog.count_ops(), "sympy" in sys.modules)
    """, tmp_path)
    assert r.lines == ["11 False"]  # (np.sum of 3 entries: numpy's ((0.0 + a) + b) + c)


def test_optimize_drops_dead_nodes_and_returns_a_compact_program_itself():
    """A program whose every node an output needs is its own optimised form (Graph.program
    would rebuild it node for node); one with a dead node loses it, the rest renumbered."""
    from symgrad import options
    from symgrad.transforms import derive, optimize

    def f(x):
        dead = math.exp(x[0]) * 3.0  # noqa: F841 (traced, never used)
        return x[0] * x[1] + math.sin(x[1])
    prog = trace(f, [(2,)])
    assert any(n[0] == "exp" for n in prog.nodes)
    kept = optimize.optimize(prog, options.DEFAULT)
    assert not any(n[0] == "exp" for n in kept.nodes) and len(kept.nodes) < len(prog.nodes)
    grad = derive.grad(prog, [0], with_value=True)
    assert optimize.optimize(grad, options.DEFAULT) is grad
    assert optimize.optimize(kept, options.DEFAULT) is kept


def test_identities_that_hold_bit_for_bit_are_folded_and_no_other():
    """x*1, 1*x, x/1, x - 0 and x + -0.0 are x itself for every double (nan, +-0.0, +-inf):
    Builder.node returns x's node, so a derivative sees through them (np.std of one entry).
    x + 0.0 (-0.0 + 0.0 is 0.0), x - -0.0, x - x (nan at inf) and 0 - x are kept."""
    folded = [lambda x: x * 1, lambda x: 1.0 * x, lambda x: x / 1, lambda x: x / 1.0,
              lambda x: x - 0, lambda x: x - 0.0, lambda x: x + -0.0, lambda x: -0.0 + x]
    for f in folded:
        prog = trace(f)
        assert prog.outputs[0].refs == (prog.nodes.index(("arg", 0, 0)),), prog
    kept = [lambda x: x + 0.0, lambda x: x + 0, lambda x: 0 + x, lambda x: x - -0.0, lambda x: x - x,
            lambda x: 0 - x, lambda x: 1 / x, lambda x: x * 1.0000000000000002, lambda x: x * -1]
    points = [-0.0, 0.0, math.inf, -math.inf, math.nan, 3.0]
    for f in kept:
        prog = trace(f)
        assert prog.outputs[0].refs != (prog.nodes.index(("arg", 0, 0)),), prog
        got = evaluate(prog, np.array(points))[0]
        with np.errstate(all="ignore"):
            want = np.array([f(np.float64(p)) for p in points])
        assert got.tobytes() == want.tobytes(), (prog, got, want)  # signs of zeros included


def test_a_difference_with_itself_has_a_zero_partial_through_a_folded_identity():
    """sqrt((x - x/1.0)**2) is 0 for every finite x, and so is its derivative: the partial of
    x - x is a structural 0, so sqrt's infinite slope at 0 never multiplies it (it was nan)."""
    from symgrad.transforms import derive
    prog = trace(lambda x: np.sqrt((x - x / 1.0) ** 2))
    g = derive.grad(prog, (0,))
    assert evaluate(g, np.array([0.3, -2.0, 0.0]))[0].tolist() == [0.0, 0.0, 0.0]
