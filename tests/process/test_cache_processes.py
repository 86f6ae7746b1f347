"""What must hold across processes sharing one cache: identical bits with any thread count
and warm or cold, and a changed module, helper, constant or base class a changed kernel."""
import math
import stat
import textwrap

import pytest

from helpers import run_python

pytestmark = pytest.mark.slow

BATCH = """
    import hashlib, math, sys
    import numpy as np
    import symgrad
    def lj(p):
        e = 0.0
        for i in range(5):
            for j in range(i + 1, 5):
                r2 = sum((p[3 * i + k] - p[3 * j + k]) ** 2 for k in range(3))
                e = e + 4.0 * (r2 ** -6 - r2 ** -3) + math.exp(-r2)
        return e
    base = np.array([0, 0, 0, 1.1, 0, 0, 0, 1.1, 0, 0, 0, 1.1, 1.1, 1.1, 0])
    p = base + np.random.default_rng(0).uniform(-0.05, 0.05, (300_001, 15))
    g = symgrad.compile(lj, shapes=[(15,)]).grad(p)
    def rosen(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(7))
    H = symgrad.compile(rosen, shapes=[(8,)]).hessian  # streamed in tiles: both store modes
    x = np.random.default_rng(1).uniform(-2, 2, (20_011, 8))
    hs = [H(x)]
    for mode in (1, 2, 0):
        H.plan.stores.force = mode
        hs.append(H(x))
    print(hashlib.sha256(g.tobytes() + b"".join(h.tobytes() for h in hs)).hexdigest())
    print("sympy" in sys.modules)
"""


def test_threads_on_and_off_and_cache_warm_or_cold_give_identical_results(tmp_path):
    cache = str(tmp_path / "cache")
    run = lambda threads: run_python(BATCH, tmp_path, SYMGRAD_CACHE_DIR=cache, OMP_NUM_THREADS=threads).lines  # noqa
    cold, warm, serial, many = run(2), run(2), run(1), run(7)
    assert cold[0] == warm[0] == serial[0] == many[0]
    assert cold[1] == "False"  # the first process traced, differentiated and compiled, without sympy
    assert warm[1] == "False"  # later ones traced and loaded the kernel


LOSS = """
    import sys
    import numpy as np
    import symgrad
    X = np.linspace(0.0, 5.0, 5000)
    Y = 2.0 * np.exp(-1.3 * X) + 0.5
    def loss(p):  # a least-squares fit over closed-over data: the arrays stay loops
        return np.sum((p[0] * np.exp(-p[1] * X) + p[2] - Y) ** 2)
    L = symgrad.compile(loss, shapes=[(3,)])
    F = symgrad.compile(lambda x, y: np.sin(x) * y ** 3, shapes=[(), ()])
    F.build(kinds=("value", "grad", "hessian"))  # one library, stored under each kernel's key
    v, g = L.value_and_grad(np.array([1.5, 1.0, 0.2]))
    print(L.loops, repr(float(v)), [repr(float(t)) for t in g], F.hessian(0.3, 0.7), F(0.3, 0.7))
    print("sympy" in sys.modules)
"""


def test_warm_processes_load_loops_and_libraries_of_several_kernels_without_sympy(tmp_path):
    """A warm cache answers without sympy, also for a program whose arrays stayed loops, and
    each kernel of a library built for several (F.build) loads in a new process."""
    cache = str(tmp_path / "cache")
    cold, warm = (run_python(LOSS, tmp_path, SYMGRAD_CACHE_DIR=cache).lines for _ in range(2))
    assert cold[0] == warm[0] and cold[0].startswith("True ")
    assert warm[1] == "False"


MODEL_V1 = """
    import math
    SCALE = 2.0
    def helper(x):
        return math.sin(x)
"""

USER = """
    import math
    import symgrad
    import model
    OFFSET = {offset}
    def f(x):
        return model.SCALE * model.helper(x) + OFFSET * x
    print(repr(float(symgrad.compile(f).grad(0.5))))
"""


def test_cache_invalidated_when_helper_or_constant_changes(tmp_path):
    cache = str(tmp_path / "cache")
    model = tmp_path / "model.py"

    def run(model_src, offset):
        model.write_text(textwrap.dedent(model_src))
        for stale in tmp_path.glob("__pycache__"):
            for f in stale.iterdir():
                f.unlink()
        return float(run_python(USER.format(offset=offset), tmp_path, SYMGRAD_CACHE_DIR=cache).lines[0])

    near = lambda v: pytest.approx(v, rel=1e-14)  # noqa: E731  (SIMD cos: within a few ulp)
    assert run(MODEL_V1, 1.0) == near(2.0 * math.cos(0.5) + 1.0)
    assert run(MODEL_V1, 1.0) == near(2.0 * math.cos(0.5) + 1.0)  # warm
    assert run(MODEL_V1, 3.0) == near(2.0 * math.cos(0.5) + 3.0)  # a global of the user's module
    assert run(MODEL_V1.replace("SCALE = 2.0", "SCALE = 5.0"), 3.0) == near(5.0 * math.cos(0.5) + 3.0)
    assert run(MODEL_V1.replace("math.sin(x)", "math.cos(x)"), 3.0) == near(-2.0 * math.sin(0.5) + 3.0)


def test_imports_and_helpers_reading_module_attributes_invalidate(tmp_path):
    (tmp_path / "cfgmod.py").write_text("K = 2.0\nscale = 1.0\n")
    code = """
        import symgrad, cfgmod
        def helper(x):
            return x * cfgmod.K
        def g(x):
            return cfgmod.scale * helper(x)
        def f(x):
            import cfgmod as c
            return c.K * x
        print(symgrad.compile(g)(1.0), symgrad.compile(f)(1.0))
    """
    cache = str(tmp_path / "cache")
    assert run_python(code, tmp_path, SYMGRAD_CACHE_DIR=cache).lines == ["2.0 2.0"]
    (tmp_path / "cfgmod.py").write_text("K = 5.0\nscale = 1.0\n")
    for pyc in (tmp_path / "__pycache__").glob("*") if (tmp_path / "__pycache__").exists() else []:
        pyc.unlink()
    assert run_python(code, tmp_path, SYMGRAD_CACHE_DIR=cache).lines == ["5.0 5.0"]


def test_compiler_without_openmp_falls_back_without_deadlock(tmp_path):
    cc = tmp_path / "cc-no-openmp"
    cc.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = "-fopenmp" ] && '
                  '{ echo "cc: error: unsupported option -fopenmp" >&2; exit 1; }; done\nexec gcc "$@"\n')
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    out = run_python("import math, symgrad\nprint(symgrad.compile(lambda x: math.sin(x)).grad(0.5))\n",
                     tmp_path, CC=str(cc), SYMGRAD_CACHE_DIR=str(tmp_path / "cache")).lines
    assert float(out[0]) == pytest.approx(math.cos(0.5), rel=1e-15)


def test_base_class_change_invalidates(tmp_path):
    code = """
        import symgrad
        class Base:
            def scale(self, x):
                return {val} * x
        class Sub(Base):
            pass
        obj = Sub()
        print(symgrad.compile(lambda x: obj.scale(x))(2.0))
    """
    cache = str(tmp_path / "cache")
    assert run_python(code.format(val=3.0), tmp_path, SYMGRAD_CACHE_DIR=cache).lines == ["6.0"]
    assert run_python(code.format(val=5.0), tmp_path, SYMGRAD_CACHE_DIR=cache).lines == ["10.0"]
