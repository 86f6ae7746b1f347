"""Helpers the tests share: paths, and running code in a fresh Python process."""
import os
import subprocess
import sys
import math
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)


def run_python(code, cwd, *argv, timeout=180, check=True, **env):
    """Run ``code`` (dedented) as a script file in a fresh Python process inside ``cwd``,
    with symgrad importable; returns the completed process (stdout lines via .lines)."""
    script = os.path.join(str(cwd), f"script_{abs(hash(code)) % 10**8}.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(code))
    full = {k: v for k, v in os.environ.items() if k != "CC"}
    full["PYTHONPATH"] = os.pathsep.join([ROOT, str(cwd), full.get("PYTHONPATH", "")])
    if "TMPDIR" not in env:  # the private directory of kernels symgrad may fall back to: this test's own
        env["TMPDIR"] = os.path.join(str(cwd), "tmp")
        os.makedirs(env["TMPDIR"], mode=0o700, exist_ok=True)
    full.update({k: str(v) for k, v in env.items()})
    r = subprocess.run([sys.executable, script, *map(str, argv)], env=full, capture_output=True, text=True,
                       timeout=timeout, cwd=str(cwd))
    if check:
        assert r.returncode == 0, r.stderr[-4000:]
    r.lines = r.stdout.split("\n")[:-1] if r.stdout else []
    return r


def reference_grad(fn, args, k, step=1e-4):
    """d fn / d args[k] (fn scalar-valued, on numpy arrays) by fourth-order central differences
    in long double, an independent reference for gradients of numpy code (about 1e-12 relative;
    float64 with a larger step where numpy has no long-double path, as in LAPACK)."""
    import numpy as np
    for dtype, h0 in ((np.longdouble, step), (np.float64, 1e-3)):
        base = [np.array(a, dtype=dtype) for a in args]
        x = base[k]
        g = np.zeros(x.shape)
        try:
            for idx in np.ndindex(*x.shape):
                h = dtype(h0) * max(1, abs(x[idx]))
                vals = []
                for s in (2, 1, -1, -2):
                    xs = [b.copy() for b in base]
                    xs[k][idx] += s * h
                    with np.errstate(all="ignore"):
                        vals.append(dtype(fn(*xs)))
                g[idx] = (-vals[0] + 8 * vals[1] - 8 * vals[2] + vals[3]) / (12 * h)
            return g
        except TypeError:  # no long-double loop (numpy.linalg): float64
            continue
    raise TypeError(f"{fn} cannot be evaluated on float arrays")


def carried(x):
    """Repeated work (each step's product) joined by a running product that reads it and the
    step before: members of a rolled loop that would read each other (render/schedule.py)."""
    v = math.sin(x[0])
    out = [v]
    for q in range(20):
        u = x[q] * x[q + 1]
        v = u * v
        out += [u, v]
    return out + [2.0 * v]


def pairs10(p):
    """A pair energy of 10 atoms whose gradient is 1527 operations: past
    Options.block_vector_ops, below large_kernel_ops."""
    e = 0.0
    for i in range(10):
        for j in range(i + 1, 10):
            d2 = (p[3 * i] - p[3 * j]) ** 2 + (p[3 * i + 1] - p[3 * j + 1]) ** 2 + (p[3 * i + 2] - p[3 * j + 2]) ** 2
            e = e + math.exp(-d2) / d2
    return e


def require_cyipopt():
    """cyipopt, or a skip where it is not installed; under CI (.ci/run installs '.[ipopt]',
    IPOPT bundled) a missing cyipopt is a failure, so the IPOPT tests never skip there."""
    import importlib
    import pytest
    if os.environ.get("CI"):
        return importlib.import_module("cyipopt")
    return pytest.importorskip("cyipopt")
