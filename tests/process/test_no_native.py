"""Without symgrad._native (not built: no compiler when symgrad was installed), kernels are
opened and called through ctypes, with the same results and the same errors."""
from helpers import run_python

SCRIPT = """
import sys
sys.modules["symgrad._native"] = None  # as if it had not been built
import math
import numpy as np
import symgrad
from symgrad.build import library
assert not library.NATIVE

def f(x):
    return 64*x*(1-x)*math.pow(1-2*x, 2)*math.pow(1-8*x+8*x*x, 2)

F = symgrad.compile(f)
print(F.grad(3.0), type(F.grad(3.0)).__name__)
v, g = F.value_and_grad(np.array([3.0, 0.5]))
print(v.tolist(), g.tolist())
out = np.empty(3)
assert F.grad(np.array([3.0, 3.0, 3.0]), out=out) is out
print(out.tolist())
X = np.linspace(0.0, 1.0, 1000)
Y = 2.0 * X + 1.0
loss = symgrad.compile(lambda p: np.sum((p[0] * X + p[1] - Y) ** 2), [(2,)])
print(loss.grad(np.array([2.0, 1.0])).tolist(), loss.grad(np.array([3.0, 1.0]))[0] > 0)
H = symgrad.compile(lambda x, y: x * y, dtype="float32")
print(H(np.float32(1.5), np.float32(2.0)), H(np.ones(5, np.float32), 2.0).dtype)
try:
    F(np.ones(2) + 1j)
except TypeError as e:
    print("TypeError", e)
"""


def test_kernels_are_called_through_ctypes_without_the_native_module(tmp_path):
    r = run_python(SCRIPT, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    assert r.lines[0] == "-75279680.0 float64"
    assert r.lines[1] == "[-23049600.0, 0.0] [-75279680.0, 0.0]"
    assert r.lines[2] == "[-75279680.0, -75279680.0, -75279680.0]"
    assert r.lines[3] == "[0.0, 0.0] True"
    assert r.lines[4] == "3.0 float32"
    assert r.lines[5].startswith("TypeError argument 'x' is complex")

