"""The Hessian of ridge regression over closed-over data at growing d: the first call (compile
included) and the lines of C, which stay flat (one loop nest over (row, j, k)).

    python examples/hessian_probe.py            # d = 5, 10, 20, 50 over 10^3 rows, d = 100 over 10^5
"""
import time

import numpy as np

import symgrad

for d, n in [(5, 1000), (10, 1000), (20, 1000), (50, 1000), (100, 100_000)]:
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    F = symgrad.compile(lambda w: np.sum((X @ w - y) ** 2), shapes=[(d,)])
    w = rng.standard_normal(d)
    t = time.perf_counter()
    H = F.hessian(w)
    seconds = time.perf_counter() - t
    err = np.abs(H - 2 * X.T @ X).max() / np.abs(2 * X.T @ X).max()
    print(f"d = {d:3d}, n = {n:6d}: first Hessian {seconds:.2f} s, {F.hessian.c_source.count(chr(10))} lines of C, "
          f"relative error {err:.1e}")
