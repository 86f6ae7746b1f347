"""A stiff reaction-diffusion system (the 1-D Brusselator, method of lines) solved by BDF
with symgrad's exact sparse Jacobian, against the same solve with finite-difference
Jacobians (scipy's default): the same solution, in less time.

    python examples/brusselator.py [--points N]   # N grid points, 2N states (default 1000)

The right-hand side is written over the whole state vector with numpy slicing, as for any
solver; ``F.jacobian(y, sparse=True)`` gives its 2N x 2N Jacobian as a scipy csr_array of
its structural non-zeros (8N - 4 of 4N^2), which BDF factorises as a sparse matrix."""
from __future__ import annotations

import argparse
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
    a = ap.parse_args(argv)
    n, y0 = a.points, initial(a.points)
    t = time.perf_counter()
    F = symgrad.compile(brusselator(n), [(2 * n,)])
    F(y0)
    J = F.jacobian(y0, sparse=True)
    build = time.perf_counter() - t
    print(f"{2 * n} states: right-hand side and sparse Jacobian compiled in {build:.2f} s; "
          f"Jacobian {J.shape[0]} x {J.shape[1]}, {J.nnz} non-zeros")
    fun = lambda t, y: F(y)  # noqa: E731

    t = time.perf_counter()
    exact = solve_ivp(fun, (0, a.t_end), y0, method="BDF", rtol=1e-6, atol=1e-8,
                      jac=lambda t, y: F.jacobian(y, sparse=True))
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    fd = solve_ivp(fun, (0, a.t_end), y0, method="BDF", rtol=1e-6, atol=1e-8)
    t_fd = time.perf_counter() - t
    assert exact.success and fd.success, (exact.message, fd.message)
    diff = np.max(np.abs(exact.y[:, -1] - fd.y[:, -1]))
    print(f"BDF, exact sparse Jacobian:         {t_exact:7.2f} s, {exact.njev} Jacobians, {exact.nfev} right-hand sides")
    print(f"BDF, finite-difference Jacobian:    {t_fd:7.2f} s, {fd.njev} Jacobians, {fd.nfev} right-hand sides")
    print(f"speed-up {t_fd / t_exact:.1f}x; max |difference| of the final states {diff:.2e} (tolerances 1e-6 / 1e-8)")
    return {"build": build, "exact": t_exact, "fd": t_fd, "diff": diff, "nnz": J.nnz, "y": exact.y[:, -1]}


if __name__ == "__main__":
    main()
