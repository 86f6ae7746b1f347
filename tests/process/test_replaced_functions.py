"""A function replaced at run time is followed exactly as Python calls it, also where it was
replaced before symgrad was first imported (symgrad's tables hold the libraries' own
functions, never what a module attribute held at import): a Python replacement is traced, a
compiled one that cannot be is refused with a TraceError naming it."""
import pytest

from helpers import run_python

pytestmark = pytest.mark.slow

REPLACED = """
    import cmath, math
    import numpy as np
    math.sin = lambda t: t - t ** 3 / 6  # before symgrad is imported
    np.sum = lambda a: a[0] + 10.0 * a[1]
    import symgrad

    def f(x):
        return math.sin(x)

    def g(v):
        return np.sum(v)

    F = symgrad.compile(f)
    print(float(F(0.7)), f(0.7), float(F.grad(0.7)))
    G = symgrad.compile(g, shapes=[(2,)])
    print(G(np.array([1.0, 2.0])), G.grad(np.array([1.0, 2.0])))
    math.sin = math.cos  # another of math's own, after import
    print(float(symgrad.compile(f)(0.7)), math.cos(0.7))
    math.sin = cmath.sin  # compiled code symgrad cannot trace into
    try:
        symgrad.compile(f)(0.7)
    except symgrad.TraceError as e:
        print("TraceError:", e)
"""


def test_a_function_replaced_before_import_is_followed(tmp_path):
    lines = run_python(REPLACED, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache").lines
    value, python, grad = map(float, lines[0].split())
    assert value == python == 0.7 - 0.7 ** 3 / 6 and grad == 1 - 0.7 ** 2 / 2
    assert lines[1] == "21.0 [ 1. 10.]"
    ours, cos = map(float, lines[2].split())
    assert abs(ours - cos) <= 4e-16  # the cosine (within the vector math's ulps), not the sine
    assert lines[3].startswith("TraceError: cmath.sin() takes complex() of a traced value at f() in ") and \
        "`return math.sin(x)`" in lines[3] and "cannot trace into" in lines[3]
