"""An n-link pendulum's right-hand side with its mass-matrix solve inside the kernel
(np.linalg.solve traced: LU with partial pivoting in the generated C), against the kernel of
M and F followed by numpy's batched solve, over a batch of states; side by side in one run.

    python examples/pendulum_solve.py [--links N] [--states K]   # default 10 links, 10^5 states

The equations (point masses m_i on massless rods l_i, angles q from the downward vertical):
sum_j mu_max(i,j) l_i l_j [cos(q_i - q_j) q''_j + sin(q_i - q_j) q'_j^2] + mu_i g l_i sin q_i = 0,
mu_i the mass from link i to the tip."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import symgrad

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scaling import steady as median_time  # noqa: E402  (the median of 7 calls after one)


def model(n):
    """(M and F of the state y = (q, u) and parameters p = (m, l, g); the right-hand side)."""
    def mass_forcing(y, p):
        q, u, m, l, g = y[:n], y[n:], p[:n], p[n:2 * n], p[2 * n]
        mu = np.cumsum(m[::-1])[::-1]
        mu_ij = mu[np.maximum.outer(np.arange(n), np.arange(n))]
        d = q[:, None] - q[None, :]
        ll = l[:, None] * l[None, :]
        M = mu_ij * ll * np.cos(d)
        F = -np.sum(mu_ij * ll * np.sin(d) * u[None, :] ** 2, axis=1) - g * mu * l * np.sin(q)
        return np.concatenate([M.ravel(), F])

    def rhs(y, p):
        MF = mass_forcing(y, p)
        return np.concatenate([y[n:], np.linalg.solve(MF[:n * n].reshape(n, n), MF[n * n:])])
    return mass_forcing, rhs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=10)
    ap.add_argument("--states", type=int, default=100_000)
    a = ap.parse_args(argv)
    n = a.links
    mass_forcing, rhs = model(n)
    rng = np.random.default_rng(0)
    Y = np.concatenate([rng.uniform(-1, 1, (a.states, n)), rng.normal(size=(a.states, n))], axis=1)
    p = np.concatenate([rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n), [9.81]])
    t = time.perf_counter()
    MF = symgrad.compile(mass_forcing, [(2 * n,), (2 * n + 1,)])
    MF(Y[0], p)
    t_mf = time.perf_counter() - t
    t = time.perf_counter()
    R = symgrad.compile(rhs, [(2 * n,), (2 * n + 1,)])
    R(Y[0], p)
    t_r = time.perf_counter() - t

    def split():
        out = MF(Y, p)
        M, F = out[:, :n * n].reshape(-1, n, n), out[:, n * n:]
        return np.concatenate([Y[:, n:], np.linalg.solve(M, F[..., None])[..., 0]], axis=1)
    whole = lambda: R(Y, p)  # noqa: E731
    ref, got = split(), whole()
    err = np.max(np.abs(got - ref) / (1 + np.abs(ref)))
    ts, tw = median_time(split), median_time(whole)
    print(f"{n} links, {a.states} states (compile: M and F {t_mf:.1f} s, with the solve {t_r:.1f} s)")
    print(f"  kernel of M, F + numpy's batched solve: {ts * 1e3:8.1f} ms")
    print(f"  one kernel with the solve inside:       {tw * 1e3:8.1f} ms   ({tw / ts:.2f}x)")
    print(f"  max relative difference {err:.1e}")
    return {"split": ts, "whole": tw, "err": err}


if __name__ == "__main__":
    main()
