"""How symgrad's compile cost grows with the size of the function: Lennard-Jones clusters.

    python examples/scaling.py            # array code (fit over 10^3..10^6 points, broadcast
                                          # Lennard-Jones 30..1000 atoms) beside JAX; ljN gradients
                                          # N = 5..40, lj10 and lj30 Hessians, max|x|, lj30
                                          # value_and_grad and Hessian after its gradient, peers,
                                          # pendulum
    python examples/scaling.py --arrays-only

For each case a fresh process compiles with an empty cache and reports the time of each
stage (trace, differentiate, optimize, generate C, C compile), the operation counts and
the peak memory (this process and the C compiler); the ljN and max|x| rows are the run of
median total time of --repeat such processes, the cases taking turns (one cold compile
varies by a third here). Steady-state comparisons with
symengine's LLVM backend and JAX are measured side by side in this run."""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_cases  # noqa: E402


def lj_inputs(atoms, n, rng):
    side = int(np.ceil(atoms ** (1 / 3))) + 1
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:atoms] * 1.1
    return grid.ravel() + rng.uniform(-0.05, 0.05, (n, 3 * atoms))


def max_abs(x):
    """A branchy reduction: each max step uses its operand twice (issue 11, row P)."""
    return np.max(np.abs(x))


CASES = {"lj": lambda n: ((lambda p: bench_cases.lj(p, n)), [(3 * n,)]),
         "maxabs": lambda n: (max_abs, [(n,)])}


def worker(case, size, what):
    """One cold compile, stage by stage, in this (fresh) process, each stage run as the
    pipeline runs it (source.stage: the garbage collector paused in symgrad's own stages)."""
    from symgrad.build import compile as build, host
    from symgrad import options, render
    from symgrad.pipeline.source import stage
    from symgrad.tracing import trace
    from symgrad.transforms import derive, hessian, optimize
    opts = options.DEFAULT
    t = {}
    fn, shapes = CASES[case](size)

    def timed(name, run):
        t0 = time.perf_counter()
        with stage(case, name):
            out = run()
        t[name] = time.perf_counter() - t0
        return out
    prog = timed("trace", lambda: trace(fn, shapes))
    shared = what == "grad" and prog.count_ops() >= opts.large_kernel_ops
    # what F.grad of a large program compiles: its value_and_grad kernel, the value optional
    d = timed("differentiate", lambda: hessian.hessian(prog, [0]) if what == "hessian" else
              derive.grad(prog, [0], with_value=shared))
    o = timed("optimize", lambda: optimize.optimize(d, opts))
    k = timed("generate C", lambda: render.render(o, f"{case}{size}_{what}", render.TARGETS["cpu", "float64"],
                                                  host.vector_bits(), opts, optional=int(shared)))
    timed("C compile", lambda: build.build_kernel(f"scaling_{prog.key[:24]}_{what}", k))
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    print(json.dumps({"stages": t, "program": prog.count_ops(), "derivative": d.count_ops(),
                      "optimized": o.count_ops(), "ops": k.ops, "units": 1 + len(k.parts) + len(k.tails),
                      "peak_mb": peak}))


def after_grad_worker(atoms):
    """Seconds to a first value_and_grad, and to a first Hessian, each after the gradient
    of the same Function compiled and called, in this (fresh) process: the public API."""
    import symgrad
    x = lj_inputs(atoms, 4, np.random.default_rng(0))
    F = symgrad.compile(lambda p: bench_cases.lj(p, atoms), [(3 * atoms,)])
    t0 = time.perf_counter()
    F.grad(x)
    t1 = time.perf_counter()
    F.value_and_grad(x)
    t2 = time.perf_counter()
    F.hessian(x)
    t3 = time.perf_counter()
    print(json.dumps({"grad": t1 - t0, "value_and_grad": t2 - t1, "hessian": t3 - t2}))


# -- array code (issue 13): a least-squares fit over closed-over data, Lennard-Jones by broadcasting
def fit_data(n):
    X = np.linspace(0.0, 5.0, n)
    return X, 2.0 * np.exp(-1.3 * X) + 0.5 + 0.01 * np.sin(7.0 * X)


def array_case(case, size, xp=np):
    """(function, shapes, input) of an array-style case, written once for numpy and jax.numpy."""
    if case in ("fit", "residual"):
        X, Y = (xp.asarray(a) for a in fit_data(size))
        if case == "fit":
            def f(p):
                return xp.sum((p[0] * xp.exp(-p[1] * X) + p[2] - Y) ** 2)
        else:
            def f(p):
                return p[0] * xp.exp(-p[1] * X) + p[2] - Y
        return f, [(3,)], np.array([1.5, 1.0, 0.2])
    eye = xp.asarray(np.eye(size))

    def lj(x):
        P = x.reshape(-1, 3)
        d = P[:, None, :] - P[None, :, :]
        r2 = (d ** 2).sum(-1) + eye
        inv6 = 1 / r2 ** 3
        return 2 * xp.sum((inv6 * inv6 - inv6) * (1 - eye))
    return lj, [(3 * size,)], lj_inputs(size, 1, np.random.default_rng(0))[0]


ARRAY_VERB = {"fit": "value_and_grad", "residual": "jacobian", "lj": "grad"}


def array_worker(case, size):
    """Seconds to the first result of the case's verb, in this fresh process (imports done)."""
    import symgrad
    f, shapes, x = array_case(case, size)
    t = time.perf_counter()
    getattr(symgrad.compile(f, shapes), ARRAY_VERB[case])(x)
    print(json.dumps({"compile": time.perf_counter() - t}))


def arrays(sizes, tmp, checks):
    """Cold compile (a fresh process each) and steady state beside JAX's jit of the same code."""
    import symgrad
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        jnp = jax.numpy
    except ImportError:
        jax = None
        print("# jax not installed: steady-state ratios skipped (pip install -e '.[bench]')")
    print(f"{'array case':<18}{'cold s':>8}{'symgrad ms':>12}{'JAX ms':>10}{'ratio':>8}  loops")
    colds = {}
    for case, n in sizes:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, f"array-{case}{n}"), SYMGRAD_QUIET="1")
        r = subprocess.run([sys.executable, __file__, "--array-worker", case, str(n)], env=env,
                           capture_output=True, text=True, check=True)
        colds[case, n] = json.loads(r.stdout.strip().splitlines()[-1])["compile"]
        f, shapes, x = array_case(case, n)
        F = getattr(symgrad.compile(f, shapes), ARRAY_VERB[case])
        mine = steady(lambda: F(x), 15)
        theirs, ratio = None, None
        if jax is not None:
            jf = array_case(case, n, jnp)[0]
            k = jax.jit({"fit": jax.value_and_grad, "residual": jax.jacfwd, "lj": jax.grad}[case](jf))
            ref, got = k(jnp.asarray(x)), F(x)
            for a, b in zip(jax.tree_util.tree_leaves(ref), [got] if case != "fit" else list(got)):
                assert np.allclose(np.asarray(a), b, rtol=1e-10, atol=1e-10 * np.abs(b).max()), (case, n)
            theirs = steady(lambda: jax.block_until_ready(k(jnp.asarray(x))), 15)
            ratio = mine / theirs
        print(f"{f'{case} {n}':<18}{colds[case, n]:>8.2f}{mine * 1e3:>12.3f}"
              f"{theirs * 1e3 if theirs else float('nan'):>10.3f}{ratio or float('nan'):>8.2f}  {F.loops}", flush=True)
        checks.append((f"{case} {n} {ARRAY_VERB[case]} cold compile {colds[case, n]:.2f} s", colds[case, n] <= 1,
                       "<= 1 s"))
        if ratio is not None:
            bound = 1.0 if case == "lj" else 0.5
            checks.append((f"{case} {n} steady state {ratio:.2f}x JAX jit", ratio <= bound, f"<= {bound}x"))
    for case in ("fit", "residual"):
        ns = sorted(n for c, n in colds if c == case)
        if len(ns) > 1:
            g = colds[case, ns[-1]] / colds[case, ns[0]]
            checks.append((f"{case} cold compile growth {ns[0]} -> {ns[-1]} points: {g:.2f}x", g <= 1.5, "<= 1.5x"))
    if ("lj", 30) in colds:  # the same numbers as the loop-style Lennard-Jones
        x = array_case("lj", 30)[2]
        a = symgrad.compile(array_case("lj", 30)[0], [(90,)]).grad(x)
        b = symgrad.compile(lambda p: bench_cases.lj(p, 30), [(90,)]).grad(x)
        rel = float(np.abs(a - b).max() / np.abs(b).max())
        checks.append((f"array lj30 gradient vs loop-style: {rel:.1e} relative", rel <= 1e-12, "<= 1e-12"))


def cold(case, size, what, tmp, k=0):
    """The worker's report of a cold compile, in a fresh process with a fresh cache (``k``: which)."""
    env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, f"{case}{size}{what}-{k}"), SYMGRAD_QUIET="1")
    r = subprocess.run([sys.executable, __file__, "--worker", case, str(size), what], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def colds(runs, tmp, repeat):
    """For each (case, size, what) of ``runs``: of ``repeat`` cold compiles, the report of median
    total time. The cases take turns, round after round, so that a machine whose speed drifts
    (2-3x here, over minutes) weighs alike on every case, and on the growth between them."""
    reports = {r: [] for r in runs}
    for k in range(repeat):
        for r in runs:
            reports[r].append(cold(*r, tmp, k))
    return {r: sorted(v, key=lambda x: sum(x["stages"].values()))[len(v) // 2] for r, v in reports.items()}


def steady(fn, repeat=7):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def peers(rows):
    """Steady state on 20,000 points: lj30 gradient vs symengine LLVM, lj10 Hessian vs JAX."""
    import symgrad
    rng = np.random.default_rng(0)
    X30 = lj_inputs(30, 20_000, rng)
    G = symgrad.compile(lambda p: bench_cases.lj(p, 30), [(90,)]).grad
    out = np.empty_like(X30)
    mine = {"lj30": steady(lambda: G(X30, out=out))}
    try:
        import symengine as se
        t = time.perf_counter()
        p = [se.Symbol(f"p{i}") for i in range(90)]
        e = bench_cases.lj(p, 30)
        f = se.Lambdify(p, [e.diff(s) for s in p], backend="llvm", cse=True)
        rows.append(("symengine LLVM compile (its own diff)", time.perf_counter() - t))
        ref = f(X30)
        assert np.allclose(ref, G(X30), rtol=1e-9, atol=1e-9)
        mine["symengine lj30"] = steady(lambda: f(X30))
    except ImportError:
        print("# symengine not installed: skipped (pip install -e '.[bench]')")
    X10 = lj_inputs(10, 20_000, rng)
    H = symgrad.compile(lambda p: bench_cases.lj(p, 10), [(30,)]).hessian
    hout = np.empty((20_000, 30, 30))
    mine["lj10 hessian"] = steady(lambda: H(X10, out=hout))
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        t = time.perf_counter()
        k = jax.jit(jax.vmap(jax.hessian(lambda p: bench_cases.lj(p, 10))))
        xs = jax.numpy.asarray(X10)
        jax.block_until_ready(k(xs))
        rows.append(("JAX jit(vmap(hessian)) lj10 compile", time.perf_counter() - t))
        assert np.allclose(np.asarray(k(xs)), H(X10), rtol=1e-9, atol=1e-6)
        mine["jax lj10 hessian"] = steady(lambda: jax.block_until_ready(k(xs)))
    except ImportError:
        print("# jax not installed: skipped (pip install -e '.[bench]')")
    return mine


def pendulum_time(n=16):
    import pendulum
    import symgrad
    km, states, params = pendulum.build(n)
    t = time.perf_counter()
    F = symgrad.from_sympy(km.forcing_full, [states, params])
    J = symgrad.jacobian(F, argnums=0)
    J(np.zeros(2 * n), np.ones(2 * n + 1))
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", type=int, nargs="*", default=[5, 10, 20, 30, 40])
    ap.add_argument("--max-sizes", type=int, nargs="*", default=[16, 64, 256],
                    help="n for the gradient of np.max(np.abs(x)), x of shape (n,)")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--repeat", type=int, default=5,
                    help="cold compiles of each ljN/max|x| case; the table shows the one of median time")
    ap.add_argument("--hessian-sizes", type=int, nargs="*", default=[10, 30], metavar="ATOMS",
                    help="ljATOMS Hessians compiled cold, stage by stage")
    ap.add_argument("--after-grad", type=int, nargs="*", default=[30], metavar="ATOMS",
                    help="value_and_grad and Hessian of ljATOMS after its gradient, cold (none: skip)")
    ap.add_argument("--after-grad-worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--fit-sizes", type=int, nargs="*", default=[10**3, 10**4, 10**5, 10**6],
                    help="data points of the least-squares fit and its residual's Jacobian")
    ap.add_argument("--lj-array-sizes", type=int, nargs="*", default=[30, 100, 1000],
                    help="atoms of the broadcasting Lennard-Jones")
    ap.add_argument("--arrays-only", action="store_true", help="only the array-code rows")
    ap.add_argument("--array-worker", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.array_worker:
        return array_worker(a.array_worker[0], int(a.array_worker[1]))
    if a.worker:
        return worker(a.worker[0], int(a.worker[1]), a.worker[2])
    if a.after_grad_worker:
        return after_grad_worker(a.after_grad_worker)
    tmp = tempfile.mkdtemp(prefix="symgrad-scaling-")
    checks = []
    arrays([("fit", n) for n in a.fit_sizes] + [("residual", n) for n in a.fit_sizes]
           + [("lj", n) for n in a.lj_array_sizes], tmp, checks)
    print()
    if a.arrays_only:
        return report(checks)
    stages = ["trace", "differentiate", "optimize", "generate C", "C compile"]
    head = (f"{'case':<12}" + "".join(f"{s:>14}" for s in stages) + f"{'total s':>9}{'program':>9}"
            f"{'deriv.':>8}{'ops':>8}{'units':>6}{'peak MB':>8}")
    print(head)
    print("-" * len(head))
    totals = {}
    runs = [("lj", n, "grad") for n in a.sizes] + [("lj", n, "hessian") for n in a.hessian_sizes] + \
        [("maxabs", n, "grad") for n in a.max_sizes]
    for (case, size, what), r in colds(runs, tmp, a.repeat).items():
        total = sum(r["stages"].values())
        totals[(size, what) if case == "lj" else (case, size)] = total
        print(f"{f'{case}{size} {what}':<12}" + "".join(f"{r['stages'][s]:>14.2f}" for s in stages)
              + f"{total:>9.2f}{r['program']:>9}{r['derivative']:>8}{r['ops']:>8}{r['units']:>6}"
              f"{r['peak_mb']:>8.0f}", flush=True)
    print()
    for (atoms, what), limit in {(30, "grad"): 3, (40, "grad"): 6, (10, "hessian"): 3, (30, "hessian"): 10}.items():
        if (atoms, what) in totals:
            checks.append((f"lj{atoms} {what} cold compile {totals[atoms, what]:.2f} s", totals[atoms, what] <= limit,
                           f"<= {limit} s"))
    if (20, "grad") in totals and (40, "grad") in totals:
        g = totals[40, "grad"] / totals[20, "grad"]
        checks.append((f"growth lj20 -> lj40 (4x the pairs): {g:.2f}x", g <= 2.5, "<= 2.5x"))
    for n in a.max_sizes:
        checks.append((f"grad of np.max(np.abs(x)), n={n}, cold {totals['maxabs', n]:.2f} s",
                       totals["maxabs", n] <= 1, "<= 1 s"))
    if 64 in a.max_sizes and 256 in a.max_sizes:
        g = totals["maxabs", 256] / totals["maxabs", 64]
        checks.append((f"growth max|x| n=64 -> 256: {g:.2f}x", g <= 6, "<= 6x"))
    for atoms in a.after_grad:
        env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, f"after{atoms}"), SYMGRAD_QUIET="1")
        r = json.loads(subprocess.run([sys.executable, __file__, "--after-grad-worker", str(atoms)], env=env,
                                      capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
        print(f"lj{atoms}, one process, cold cache: gradient {r['grad']:.2f} s, then value_and_grad "
              f"{r['value_and_grad']:.2f} s, then Hessian {r['hessian']:.2f} s")
        checks.append((f"lj{atoms} value_and_grad after grad {r['value_and_grad']:.2f} s", r["value_and_grad"] <= 0.5,
                       "<= 0.5 s"))
        checks.append((f"lj{atoms} Hessian after grad {r['hessian']:.2f} s", r["hessian"] <= 20, "<= 20 s"))
    if not a.no_peers:
        rows = []
        mine = peers(rows)
        for label, s in rows:
            print(f"{label}: {s:.1f} s")
        for k, v in mine.items():
            print(f"steady 20,000 points, {k}: {v * 1e3:.2f} ms")
        if "symengine lj30" in mine:
            r = mine["lj30"] / mine["symengine lj30"]
            checks.append((f"lj30 gradient steady state {r:.2f}x symengine LLVM", r <= 0.8, "<= 0.8x"))
        if "jax lj10 hessian" in mine:
            r = mine["lj10 hessian"] / mine["jax lj10 hessian"]
            checks.append((f"lj10 Hessian steady state {r:.2f}x JAX", r < 1, "< 1x"))
        p = pendulum_time()
        checks.append((f"16-link pendulum Jacobian via from_sympy {p:.2f} s after the model", p <= 10,
                       "<= 10 s"))
    report(checks)


def report(checks):
    print("\n== targets ==")
    for text, ok, bound in checks:
        print(f"{text}: {'MET' if ok else 'NOT MET'} ({bound})")


if __name__ == "__main__":
    main()
