"""A stiff reaction-diffusion system (the 1-D Brusselator, method of lines) solved by BDF
three ways, in one run: with symgrad's exact sparse Jacobian, with scipy's finite differences
told the sparsity pattern (``jac_sparsity=``, the pattern from symgrad), and with dense finite
differences (scipy's default): the same solution, in the times printed.

    python examples/brusselator.py [--points N] [--repeat R] [--no-dense]

N grid points, 2N states (default 1000); each solve is timed R times (default 3), the
median printed. The right-hand side ``f(t, y)`` is written over the whole state vector with
numpy slicing, as for any solver; ``J = symgrad.jacobian(F, argnums=1)`` is its Jacobian by
``y`` (2N x 2N, not the time column), ``J(t, y, sparse=True)`` a scipy csr_array of its
structural non-zeros (8N - 4 of 4N^2), which BDF factorises as a sparse matrix, and
``J.pattern()`` (= ``F.jacobian_sparsity(argnums=1)``) the boolean pattern scipy's
``jac_sparsity=`` takes."""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy.integrate import solve_ivp

import symgrad

ALPHA = 1 / 50


def brusselator(n):
    """The right-hand side dy/dt of n grid points: y = (u_1..u_n, v_1..v_n), u = 1 and v = 3 at
    both ends (Hairer & Wanner, Solving ODEs II, IV.1)."""
    c = ALPHA * (n + 1) ** 2

    def rhs(y):
        u, v = y[:n], y[n:]
        up = np.concatenate([np.array([1.0]), u, np.array([1.0])])
        vp = np.concatenate([np.array([3.0]), v, np.array([3.0])])
        du = 1 + u * u * v - 4 * u + c * (up[:-2] - 2 * u + up[2:])
        dv = 3 * u - u * u * v + c * (vp[:-2] - 2 * v + vp[2:])
        return np.concatenate([du, dv])
    return rhs


def initial(n):
    x = np.arange(1, n + 1) / (n + 1)
    return np.concatenate([1 + np.sin(2 * np.pi * x), np.full(n, 3.0)])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3, help="timed solves of each kind (the median is printed)")
    ap.add_argument("--no-dense", action="store_true", help="skip the dense finite differences (slow past 2000 states)")
    a = ap.parse_args(argv)
    n, y0 = a.points, initial(a.points)
    rhs = brusselator(n)
    t = time.perf_counter()
    F = symgrad.compile(lambda t, y: rhs(y), [(), (2 * n,)])
    J = symgrad.jacobian(F, argnums=1)  # by y only: what solve_ivp's jac= and jac_sparsity= are
    F(0.0, y0)
    jac = J(0.0, y0, sparse=True)
    pattern = J.pattern()
    build = time.perf_counter() - t
    assert pattern.shape == jac.shape == (2 * n, 2 * n) and (pattern != F.jacobian_sparsity(argnums=1)).nnz == 0
    print(f"{2 * n} states: right-hand side and sparse Jacobian compiled in {build:.2f} s; "
          f"Jacobian by y {jac.shape[0]} x {jac.shape[1]}, {jac.nnz} non-zeros")
    ways = {"exact sparse Jacobian": {"jac": lambda t, y: J(t, y, sparse=True)},
            "finite differences, jac_sparsity=": {"jac_sparsity": pattern},
            "dense finite differences": {}}
    if a.no_dense:
        del ways["dense finite differences"]
    times, sols = {w: [] for w in ways}, {}
    for _ in range(a.repeat):  # alternated, so that each sees the same machine
        for w, options in ways.items():
            t = time.perf_counter()
            sols[w] = solve_ivp(F, (0, a.t_end), y0, method="BDF", rtol=1e-6, atol=1e-8, **options)
            times[w].append(time.perf_counter() - t)
            assert sols[w].success, (w, sols[w].message)
    exact = sols["exact sparse Jacobian"]
    med = {w: statistics.median(ts) for w, ts in times.items()}
    for w, sol in sols.items():
        diff = np.max(np.abs(sol.y[:, -1] - exact.y[:, -1]))
        print(f"BDF, {w + ':':35s} {med[w]:7.3f} s ({med[w] / med['exact sparse Jacobian']:5.2f}x exact), "
              f"{sol.njev} Jacobians, {sol.nfev} right-hand sides; max |final state - exact's| {diff:.1e}")
    diffs = {w: np.max(np.abs(sol.y[:, -1] - exact.y[:, -1])) for w, sol in sols.items()}
    return {"build": build, "exact": med["exact sparse Jacobian"], "sparse_fd": med["finite differences, jac_sparsity="],
            "fd": med.get("dense finite differences"), "diff": max(diffs.values()), "nnz": jac.nnz,
            "pattern": pattern.shape, "y": exact.y[:, -1]}


if __name__ == "__main__":
    main()
