"""Array programs (losses and likelihoods over data) beside JAX's jit, in one run.

    python examples/array_benchmark.py                       # every case and size (long)
    python examples/array_benchmark.py --quick               # d = 20, n = 10^3 only
    python examples/array_benchmark.py --cases ridge mlp --timeout 120

Each case is written once, against a numpy-like module ``xp`` (numpy for symgrad, jax.numpy
for JAX). Every figure is measured in a fresh process: "first" is the seconds from before the
tool's import (numpy imported) through the first result, an empty kernel cache for symgrad;
"steady" the median time of a call after three warm-up calls. A measurement that does not end
within --timeout seconds prints as ">T"; one the tool refuses prints its first words. JAX
runs in float64 (jax_enable_x64) on the CPU. Ratios are symgrad / JAX (below 1: symgrad
faster). Peers: pip install -e '.[bench]'."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# -- the cases: name -> (sizes, make(xp, d, n) -> (f, parameter size, kinds)) ----------------


def _data(d, n):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    w = rng.standard_normal(d)
    y = X @ w + 0.1 * rng.standard_normal(n)
    return X, y


def ridge(xp, d, n):
    X, y = _data(d, n)
    return (lambda w: xp.sum((X @ w - y) ** 2) + 0.1 * xp.sum(w * w)), d


def logistic(xp, d, n):
    X, y = _data(d, n)
    s = np.sign(y)
    return (lambda w: xp.sum(xp.log1p(xp.exp(-s * (X @ w))))), d


def logsumexp(xp, d, n):
    X, _ = _data(d, n)

    def f(w):
        z = X @ w
        m = xp.max(z)
        return m + xp.log(xp.sum(xp.exp(z - m)))
    return f, d


def softmax(xp, d, n, classes=10):
    X, y = _data(d, n)
    labels = (np.abs(y * 7).astype(int)) % classes
    onehot = np.eye(classes)[labels]

    def f(w):
        z = X @ w.reshape(d, classes)
        m = xp.max(z, axis=1, keepdims=True)
        return xp.sum(m[:, 0] + xp.log(xp.sum(xp.exp(z - m), axis=1))) - xp.sum(z * onehot)
    return f, d * classes


def mlp(xp, d, n, hidden=(16, 8)):
    """The issue's MLP: 5 inputs, tanh layers of 16 and 8, one output; 241 parameters in one vector."""
    X, y = _data(5, n)
    sizes = [5, *hidden, 1]
    shapes = [s for a, b in zip(sizes, sizes[1:]) for s in ((a, b), (b,))]

    def f(w):
        k, layers = 0, []
        for s in shapes:
            m = int(np.prod(s))
            layers.append(w[k:k + m].reshape(s))
            k += m
        h = X
        for i in range(0, len(layers) - 2, 2):
            h = xp.tanh(h @ layers[i] + layers[i + 1])
        out = h @ layers[-2] + layers[-1]
        return xp.sum((out[:, 0] - y) ** 2)
    return f, sum(int(np.prod(s)) for s in shapes)


def gp(xp, d, n):
    """Negative log-likelihood of a Gaussian process over n points of 2-D inputs; 3 hyperparameters."""
    rng = np.random.default_rng(1)
    P = rng.uniform(0, 1, (n, 2))
    y = np.sin(6 * P[:, 0]) + 0.1 * rng.standard_normal(n)
    D2 = ((P[:, None, :] - P[None, :, :]) ** 2).sum(-1)

    def f(t):
        K = xp.exp(t[0]) * xp.exp(-D2 / (2 * xp.exp(2 * t[1]))) + (xp.exp(t[2]) + 1e-6) * np.eye(n)
        sign, logdet = xp.linalg.slogdet(K)
        return 0.5 * y @ xp.linalg.solve(K, y) + 0.5 * logdet
    return f, 3


def lj(xp, d, n, atoms=100):
    """Lennard-Jones energy of ``atoms`` atoms written with broadcasting."""
    iu = np.triu_indices(atoms, 1)

    def f(x):
        p = x.reshape(atoms, 3)
        diff = p[:, None, :] - p[None, :, :]
        r2 = xp.sum(diff * diff, axis=-1)[iu]
        s6 = 1.0 / r2 ** 3
        return xp.sum(4 * (s6 * s6 - s6))
    return f, 3 * atoms


def start_point(name, size):
    if name == "lj":
        g = np.stack(np.meshgrid(*[np.arange(5)] * 3), -1).reshape(-1, 3)[:size // 3] * 1.12
        return (g + 0.01 * np.random.default_rng(2).standard_normal(g.shape)).ravel()
    return 0.1 * np.random.default_rng(3).standard_normal(size)


CASES = {  # name: (make, [(d, n), ...] of the full run, kinds)
    "ridge": (ridge, [(20, 10**3), (20, 10**5), (100, 10**3), (100, 10**5)], ("value_and_grad", "hessian")),
    "logistic": (logistic, [(20, 10**3), (20, 10**5), (100, 10**3), (100, 10**5)], ("value_and_grad", "hessian")),
    "logsumexp": (logsumexp, [(20, 10**3), (20, 10**5), (100, 10**3), (100, 10**5)], ("value_and_grad", "hessian")),
    "softmax": (softmax, [(20, 10**3), (20, 10**5)], ("value_and_grad", "hessian")),
    "mlp": (mlp, [(5, 10**3), (5, 10**4)], ("value_and_grad", "hessian")),
    "gp": (gp, [(3, 500)], ("value_and_grad", "hessian")),
    "lj": (lj, [(300, 100)], ("value_and_grad", "hessian")),
}
QUICK = {"ridge": [(20, 10**3)], "logistic": [(20, 10**3)], "logsumexp": [(20, 10**3)], "softmax": [(20, 10**3)],
         "mlp": [(5, 10**3)], "gp": [(3, 500)], "lj": [(300, 100)]}


# -- one measurement, in a process of its own ---------------------------------------------------
def worker(tool, name, d, n, kind, repeat=15):
    make = CASES[name][0]
    t0 = time.perf_counter()
    if tool == "symgrad":
        import symgrad
        f, size = make(np, d, n)
        F = symgrad.compile(f, shapes=[(size,)])
        call = getattr(F, kind)
        x = start_point(name, size)
    else:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        f, size = make(jnp, d, n)
        jitted = jax.jit(jax.value_and_grad(f) if kind == "value_and_grad" else jax.hessian(f))
        x = jnp.asarray(start_point(name, size))
        call = lambda x: jax.block_until_ready(jitted(x))  # noqa: E731
    call(x)
    first = time.perf_counter() - t0
    for _ in range(3):
        call(x)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        call(x)
        ts.append(time.perf_counter() - t)
    print(json.dumps({"first": first, "steady": float(np.median(ts)), "size": size}))


def measure(tool, name, d, n, kind, timeout):
    env = dict(os.environ, SYMGRAD_CACHE_DIR=tempfile.mkdtemp(prefix="symgrad-arrays-"), SYMGRAD_QUIET="1")
    try:
        r = subprocess.run([sys.executable, __file__, "--worker", tool, name, str(d), str(n), kind],
                           env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f">{timeout:g}", None
    if r.returncode:
        last = (r.stderr.strip().splitlines() or ["failed"])[-1]
        return last.split(":", 1)[0][:24], None
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return res["first"], res["steady"]


def _cell(v, scale=1.0, fmt="{:.3f}"):
    return fmt.format(v * scale) if isinstance(v, float) else "-" if v is None else str(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--quick", action="store_true", help="d = 20 and n = 10^3 only")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per measurement")
    ap.add_argument("--tools", nargs="*", default=["symgrad", "jax"])
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        tool, name, d, n, kind = a.worker
        return worker(tool, name, int(d), int(n), kind)
    tools = list(a.tools)
    if "jax" in tools:
        try:
            __import__("jax")
        except ImportError:
            print("# jax: not installed, skipped (pip install -e '.[bench]')")
            tools.remove("jax")
    head = (f"{'case':<10} {'d':>4} {'n':>7} {'kind':<15} " +
            " ".join(f"{t + ' first s':>14} {t + ' steady ms':>16}" for t in tools) +
            ("   first x   steady x" if len(tools) == 2 else ""))
    print(head + "\n" + "-" * len(head), flush=True)
    for name in a.cases:
        _, sizes, kinds = CASES[name]
        for d, n in (QUICK[name] if a.quick else sizes):
            for kind in kinds:
                got = {t: measure(t, name, d, n, kind, a.timeout) for t in tools}
                row = f"{name:<10} {d:>4} {n:>7} {kind:<15} " + " ".join(
                    f"{_cell(got[t][0]):>14} {_cell(got[t][1], 1e3):>16}" for t in tools)
                if len(tools) == 2:
                    (f1, s1), (f2, s2) = got[tools[0]], got[tools[1]]
                    ratio = lambda u, v: f"{u / v:.2f}" if isinstance(u, float) and isinstance(v, float) else "-"  # noqa
                    row += f"   {ratio(f1, f2):>7}   {ratio(s1, s2):>8}"
                print(row, flush=True)


if __name__ == "__main__":
    main()
