"""Small calls, as a solver makes them one at a time: symgrad beside numba, side by side.

    python examples/small_calls.py                 # one pendulum state; batches of 1 .. 10^5 points
    python examples/small_calls.py --states 8 --sizes 1 100

Rows: the forcing vector of an n-link pendulum (sympy.physics.mechanics, examples/pendulum.py)
and its Jacobian by the 2n states, one state a call (symgrad compiled by default and with
Options(one_point=True)); then the batch cases of
examples/bench_cases.py at each batch size, symgrad with ``out=`` and without, beside numba's
``njit`` of the same sympy expressions (with CSE) writing into a preallocated array (the faster
of serial and ``parallel=True`` at each size). Per-call times are medians of interleaved rounds; ratios are symgrad / numba."""
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


BATCH_CASES = ("seed_grad", "rosen8_grad", "rosen8_hess", "lj6_grad")


def per_call(fns, rounds=7, budget=0.02):
    """Median seconds per call of each function, rounds interleaved (each round long enough
    to time: about ``budget`` seconds). Seven untimed calls first, as benchmark.py's steady
    state: compiled, loaded, and symgrad's store policy settled (its first six large calls try
    each way of writing results in turn, some of them twice as slow)."""
    counts = {}
    for name, fn in fns.items():
        for _ in range(7):
            fn()
        t, k = time.perf_counter(), 0
        while time.perf_counter() - t < budget / 4:
            fn()
            k += 1
        counts[name] = max(1, int(4 * k))
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t = time.perf_counter()
            for _ in range(counts[name]):
                fn()
            times[name].append((time.perf_counter() - t) / counts[name])
    return {name: statistics.median(ts) for name, ts in times.items()}


def numba_source(syms, exprs, name, batch, parallel=True):
    """A numba function of the sympy expressions (CSE): ``name(X, OUT)`` over the rows of X
    (``batch``; ``parallel``: prange), or ``name(x, out)`` of one point."""
    import sympy as sp
    from sympy.printing.pycode import PythonCodePrinter
    p = PythonCodePrinter({"fully_qualified_modules": True})
    temps, reduced = sp.cse(exprs)
    ind, src = ("        ", "X[i, {k}]") if batch else ("    ", "x[{k}]")
    dst = "OUT[i, {k}]" if batch else "out[{k}]"
    lines = [f"{ind}{s} = {src.format(k=k)}" for k, s in enumerate(syms)]
    lines += [f"{ind}{a} = {p.doprint(e)}" for a, e in temps]
    lines += [f"{ind}{dst.format(k=k)} = {p.doprint(e)}" for k, e in enumerate(reduced)]
    head = (f"@njit(parallel={parallel})\ndef {name}(X, OUT):\n    for i in prange(X.shape[0]):\n" if batch else
            f"@njit\ndef {name}(x, out):\n")
    return "import math\nfrom numba import njit, prange\n" + head + "\n".join(lines) + "\n"


def compile_numba(syms, exprs, batch, parallel=True):
    ns = {}
    exec(compile(numba_source(syms, exprs, "kern", batch, parallel), "<numba-kernel>", "exec"), ns)
    return ns["kern"]


def plain(syms):
    """sympy symbols with plain identifiers (x[3] -> x_3) for the numba printer."""
    import sympy as sp
    return {s: sp.Symbol("".join(ch if ch.isalnum() else "_" for ch in s.name).strip("_") or "s", real=True)
            for s in syms}


def batch_expressions(fname, shapes, what):
    """(input symbols, derivative expressions) of a bench case, by sympy (numba's source)."""
    import sympy as sp
    import symgrad
    from symgrad.edges.to_sympy import to_sympy
    prog = to_sympy(symgrad.compile(bench_cases.FUNCS[fname], shapes).program)
    rename = plain(prog.input_symbols())
    syms = [rename[s] for s in prog.input_symbols()]
    value = prog.inlined()[0].xreplace(rename)
    return syms, ([sp.diff(value, s) for s in syms] if what == "grad" else list(sp.hessian(value, syms)))


def batch_rows(cases, sizes, numba):
    import symgrad
    rows = []
    rng = np.random.default_rng(0)
    for case in cases:
        fname, shapes, what, _ = bench_cases.CASES[case]
        F = getattr(symgrad.compile(bench_cases.FUNCS[fname], shapes), what)
        exprs = batch_expressions(fname, shapes, what) if numba else None
        kerns = {k: compile_numba(*exprs, batch=True, parallel=k == "numba par") for k in ("numba par", "numba")} \
            if numba else {}
        for n in sizes:
            inputs = bench_cases.make_inputs(fname, n, rng)
            out = F(*inputs)
            fns = {"out=": lambda: F(*inputs, out=out), "new": lambda: F(*inputs)}
            X = np.ascontiguousarray(np.concatenate([a.reshape(n, -1) for a in inputs], axis=1))
            OUT = np.empty((n, out[0].size))
            for k, kern in kerns.items():
                kern(X, OUT)
                np.testing.assert_allclose(OUT.reshape(out.shape), out, rtol=1e-9, atol=1e-9 * np.abs(out).max())
                fns[k] = lambda kern=kern: kern(X, OUT)
            t = per_call(fns)
            best = min((t[k] for k in kerns), default=None)  # numba: the faster of serial and parallel
            rows.append((case, n, t["out="], t["new"], best))
    return rows


def pendulum_rows(states, numba):
    """One state a call: the forcing vector and its Jacobian, for each number of states;
    symgrad as it compiles by default, returning a new array and writing into ``out=`` (as
    numba's function writes into a preallocated one), and with Options(one_point=True) (a
    one-lane copy for single points) into ``out=``: (label, {column: seconds a call})."""
    import symgrad
    from pendulum import build
    rows = []
    for s in states:
        n = s // 2
        km, q, params = build(n)
        F = symgrad.from_sympy(km.forcing_full, [q, params])
        F1 = symgrad.from_sympy(km.forcing_full, [q, params], options=symgrad.Options(one_point=True))
        rng = np.random.default_rng(1)
        x = rng.uniform(-1, 1, 2 * n)
        p = np.concatenate([rng.uniform(0.5, 1.5, 2 * n), [9.81]])
        for label, fn, fn1, exprs in (("forcing", F, F1, list(km.forcing_full)),
                                      ("Jacobian", symgrad.jacobian(F, argnums=0), symgrad.jacobian(F1, argnums=0),
                                       list(km.forcing_full.jacobian(q)))):
            res0, res1 = fn(x, p), fn1(x, p)
            assert np.array_equal(res0, res1)
            fns = {"new": lambda: fn(x, p), "out=": lambda: fn(x, p, out=res0), "one_point out=": lambda: fn1(x, p, out=res1)}
            if numba:
                rename = plain(list(q) + list(params))
                syms = [rename[v] for v in list(q) + list(params)]
                kern = compile_numba(syms, [e.xreplace(rename) for e in exprs], batch=False)
                xp = np.concatenate([x, p])
                res = np.empty(len(exprs))
                kern(xp, res)
                np.testing.assert_allclose(res, np.asarray(fn(x, p)).ravel(), rtol=1e-9, atol=1e-12)
                fns["numba"] = lambda: kern(xp, res)
            rows.append((f"{label} {2 * n} states", per_call(fns)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(BATCH_CASES))
    ap.add_argument("--sizes", type=int, nargs="*", default=[1, 10, 100, 1000, 10_000, 100_000])
    ap.add_argument("--states", type=int, nargs="*", default=[8, 14, 22])
    a = ap.parse_args(argv)
    try:
        import numba  # noqa: F401
        have_numba = True
    except ImportError:
        have_numba = False
        print("# numba not installed: its columns are empty (pip install -e '.[bench]')")
    us = lambda t: f"{t * 1e6:10.2f}" if t is not None else f"{'-':>10}"  # noqa: E731
    ratio = lambda a, b: f"{a / b:8.2f}" if b else f"{'-':>8}"  # noqa: E731
    if a.states:
        print("\n== one state a call (us); 1pt: symgrad.Options(one_point=True), out= ==\n"
              f"{'call':<24}{'new':>10}{'out=':>10}{'1pt':>10}{'numba':>10}{'out=/nb':>8}{'1pt/nb':>8}")
        for label, t in pendulum_rows(a.states, have_numba):
            nb = t.get("numba")
            print(f"{label:<24}{us(t['new'])}{us(t['out='])}{us(t['one_point out='])}{us(nb)}"
                  f"{ratio(t['out='], nb)}{ratio(t['one_point out='], nb)}", flush=True)
    print(f"\n== batches (us a call) ==\n{'case':<14}{'points':>8}{'out=':>10}{'new':>10}{'numba':>10}"
          f"{'out=/nb':>8}{'new/nb':>8}")
    for case, n, o, new, nb in batch_rows(a.cases, a.sizes, have_numba):
        print(f"{case:<14}{n:>8}{us(o)}{us(new)}{us(nb)}{ratio(o, nb)}{ratio(new, nb)}", flush=True)


if __name__ == "__main__":
    main()
