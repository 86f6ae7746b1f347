"""symgrad.dask: Functions as gufuncs over dask chunks, on a local process cluster."""
import subprocess
import sys

import numpy as np
import pytest

import symgrad

da = pytest.importorskip("dask.array")


def founding(x):
    import math
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def pair(p, w):
    return w * (p[0] ** 2 + p[0] * p[1]) - p[1] ** 3


def test_every_derivative_over_chunks_matches_the_direct_call():
    import symgrad.extras.dask as sd
    F = symgrad.compile(pair, shapes=[(2,), ()])
    P = np.random.default_rng(0).uniform(-1, 1, (1000, 2))
    W = np.linspace(0.5, 1.5, 1000)
    dP, dW = da.from_array(P, chunks=(128, 2)), da.from_array(W, chunks=128)
    for fn in (F, F.grad, F.hessian, F.value_and_grad, F.jacobian_wrt(stack=True), F.hvp):
        args = (dP, dW, dP, dW) if fn.kind.endswith("hvp") else (dP, dW)
        direct = fn(*[a.compute() for a in args])
        lazy = sd.apply(fn, *args)
        got = lazy if isinstance(lazy, tuple) else (lazy,)
        want = direct if isinstance(direct, tuple) else (direct,)
        flat = lambda r: [y for t in r for y in (flat(t) if isinstance(t, tuple) else [t])]  # noqa: E731
        for g, w in zip(flat(got), flat(want)):
            g = g.compute()
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w), fn.kind
    with pytest.raises(ValueError, match="rechunk"):
        sd.apply(F, da.from_array(P, chunks=(128, 1)), dW)


def test_without_dask_the_module_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
            "import symgrad\n"
            "try:\n    import symgrad.dask\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'symgrad[dask]'" in r.stdout, r.stderr


@pytest.mark.slow
def test_local_cluster_of_two_processes_on_ten_million_points_is_bit_for_bit(tmp_path):
    distributed = pytest.importorskip("distributed")
    import symgrad.extras.dask as sd
    F = symgrad.compile(founding)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  local_directory=str(tmp_path)) as cluster, distributed.Client(cluster) as client:
        X = da.random.RandomState(1).uniform(-1, 1, 10_000_000, chunks=1_000_000)  # made on the workers
        futures = client.compute([X, sd.apply(F.grad, X), sd.apply(F.hessian, X)])
        # a cluster that stops answering fails here, with what the scheduler knows, instead of
        # hanging the test run (seen twice under heavy load on a 2-core machine)
        distributed.wait(futures, timeout=240)
        x, g, h = client.gather(futures)
        workers = client.run(lambda: __import__("os").getpid())
    want_g, want_h = F.grad(x), F.hessian(x)
    assert len(set(workers.values())) == 2
    assert g.dtype == np.float64 and np.array_equal(g, want_g) and np.array_equal(h, want_h)
    assert F.grad(3.0) == -75279680.0
