"""Gradients and Hessians of millions of points on a Dask cluster: the same code on one
machine or many; only the scheduler address changes.

    python examples/dask_cluster.py                         # local clusters of 1 and 2 workers
    python examples/dask_cluster.py --scheduler tcp://10.0.0.5:8786   # an existing cluster

Needs `pip install 'symgrad[dask]'` here and on every worker (plus a C compiler there, or
the kernels in each worker's cache: see docs/cache.md, "Sharing"). The Function travels
to the workers by pickle (its traced program and kernel source, never the Python code), so
the function below may live in a script or a notebook that the workers cannot import."""
from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np


def lj_pair(p):
    """A 4-atom Lennard-Jones cluster energy with a soft repulsion term."""
    e = 0.0
    for i in range(4):
        for j in range(i + 1, 4):
            r2 = sum((p[3 * i + k] - p[3 * j + k]) ** 2 for k in range(3))
            e = e + 4.0 * (r2 ** -6 - r2 ** -3) + math.exp(-r2)
    return e


def run(client, F, points, chunk, repeat):
    import dask.array as da

    import symgrad.extras.dask as sd
    base = np.array([0, 0, 0, 1.1, 0, 0, 0, 1.1, 0, 0, 0, 1.1])
    X = (da.random.RandomState(0).uniform(-0.05, 0.05, (points, 12), chunks=(chunk, 12)) + base).persist()
    G = sd.apply(F.grad, X)
    G.sum().compute()  # first call: every worker loads (or compiles) the kernel
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        total = G.sum(axis=0).compute()
        times.append(time.perf_counter() - t)
    return statistics.median(times), total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scheduler", help="address of a running scheduler (default: local clusters)")
    ap.add_argument("--points", type=int, default=4_000_000)
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    try:
        import distributed
    except ImportError:
        raise SystemExit("this example needs dask.distributed: pip install 'symgrad[dask]'")
    import symgrad
    F = symgrad.compile(lj_pair, shapes=[(12,)])
    F.build(kinds=("grad",))  # compile here once: workers on this machine load it from the cache
    print(f"gradient of a 4-atom LJ energy, {a.points:,} points in chunks of {a.chunk:,} "
          f"(median of {a.repeat})")
    if a.scheduler:
        with distributed.Client(a.scheduler) as client:
            n = len(client.scheduler_info()["workers"])
            t, _ = run(client, F, a.points, a.chunk, a.repeat)
            print(f"{n} workers at {a.scheduler}: {t:.3f} s, {a.points / t / 1e6:.1f} M points/s")
        return
    x = (np.random.default_rng(0).uniform(-0.05, 0.05, (a.points, 12))
         + np.array([0, 0, 0, 1.1, 0, 0, 0, 1.1, 0, 0, 0, 1.1]))
    F.grad(x)
    local = statistics.median([_timed(F.grad, x) for _ in range(a.repeat)])
    print(f"in this process (no dask): {local:.3f} s, {a.points / local / 1e6:.1f} M points/s")
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            t, _ = run(client, F, a.points, a.chunk, a.repeat)
            print(f"LocalCluster, {workers} worker process(es): {t:.3f} s, {a.points / t / 1e6:.1f} M points/s")


def _timed(f, x):
    t = time.perf_counter()
    f(x)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
