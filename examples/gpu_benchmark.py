"""symgrad's CUDA kernels against JAX on the same GPU, side by side, on the benchmark cases.

    python examples/gpu_benchmark.py [--repeat 20]

Needs a CUDA GPU, CuPy (pip install 'symgrad[cuda]') and, for the comparison, JAX with CUDA.
Prints, per case, the median time of one batch call (inputs and outputs on the GPU, the
device synchronised after each call) and the ratio to symgrad; exits with a message and
status 0 where there is no GPU or no CuPy."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_cases  # noqa: E402


def median_time(call, sync, repeat):
    call()
    sync()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--cases", nargs="*", default=[c for c in bench_cases.CASES if c != "lj30_grad"])
    a = ap.parse_args()
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no device")
    except Exception as e:  # noqa: BLE001 - no CuPy, no driver, no device: nothing to measure
        print(f"# skipped: no CUDA GPU with CuPy here ({type(e).__name__}: {e})")
        return 0
    import symgrad
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        has_jax = any(d.platform == "gpu" for d in jax.devices())
    except Exception:  # noqa: BLE001
        has_jax = False
    print(f"{'case':<14}{'points':>10}{'symgrad ms':>12}{'jax ms':>10}{'jax / symgrad':>15}")
    for name in a.cases:
        fname, shapes, what, n = bench_cases.CASES[name]
        fn = bench_cases.FUNCS[fname]
        inputs = [cp.asarray(x) for x in bench_cases.make_inputs(fname, n, np.random.default_rng(0))]
        F = symgrad.compile(fn, shapes)
        K = (F.grad if what == "grad" else F.hessian).to_cuda()
        mine = median_time(lambda: K(*inputs), cp.cuda.Device().synchronize, a.repeat)
        theirs = float("nan")
        if has_jax:
            import jax.numpy as jnp
            d = jax.grad(fn) if what == "grad" and len(shapes) == 1 else \
                jax.grad(fn, argnums=tuple(range(len(shapes)))) if what == "grad" else jax.hessian(fn)
            k = jax.jit(jax.vmap(d))
            xs = [jnp.asarray(cp.asnumpy(x)) for x in inputs]
            theirs = median_time(lambda: jax.block_until_ready(k(*xs)), lambda: None, a.repeat)
            got = K(*inputs)
            want = k(*xs)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                np.testing.assert_allclose(cp.asnumpy(g), np.asarray(w), rtol=1e-9, atol=1e-9)
        print(f"{name:<14}{n:>10}{mine * 1e3:>12.3f}{theirs * 1e3:>10.3f}{theirs / mine:>15.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
