"""Predicted against measured compile time, stage by stage, for every case of
examples/benchmark.py and examples/scaling.py (and a few long compiles besides), each compiled
cold: a fresh process with an empty kernel cache (SYMGRAD_CACHE_DIR, a temporary directory).

    python examples/progress_estimates.py            # every case
    python examples/progress_estimates.py --quick    # without the pendulum and the long extra cases

Each stage's estimate is the one its progress line prints (symgrad/estimate.py, made just before
the stage starts, from what is known then: the program's operations, the C source's units);
the trace has none (nothing is known before it), so the totals compare the estimated stages.
A case is within 2x when its total is, and each of its stages that took or was expected to take
a second or more. Compile times here move with the machine's load (printed per case), which the
estimates take into account."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_cases  # noqa: E402

STAGES = ["trace", "differentiate", "optimize", "generate C", "C compile"]
JUDGED = 1.0  # s: a stage this long (taken or expected) must be within 2x on its own


def cases(quick):
    """(label, group, worker spec) of every case: benchmark.py's, scaling.py's (with its defaults),
    then long compiles that neither has."""
    out = [(name, "benchmark", ["bench", name]) for name in bench_cases.CASES]
    for case, verb, sizes in (("fit", "value_and_grad", [10**3, 10**4, 10**5, 10**6]),
                              ("residual", "jacobian", [10**3, 10**4, 10**5, 10**6]),
                              ("lj", "grad", [30, 100, 1000])):
        out += [(f"array {case} {n} {verb}", "scaling", ["array", case, str(n)]) for n in sizes]
    out += [(f"lj{n} grad", "scaling", ["lj", str(n), "grad"]) for n in (5, 10, 20, 30, 40)]
    out += [(f"lj{n} hessian", "scaling", ["lj", str(n), "hessian"]) for n in (10, 30)]
    out += [(f"max|x| {n} grad", "scaling", ["maxabs", str(n)]) for n in (16, 64, 256)]
    out += [("lj30 after grad", "scaling", ["after_grad", "30"])]
    if not quick:
        out += [("pendulum16 jacobian", "scaling", ["pendulum", "16"])]
        out += [(f"logreg p={p} N={n} hessian", "extra", ["logreg", str(p), str(n)])
                for p, n in ((10, 1000), (15, 1000), (20, 1000), (10, 100), (20, 100))]
        out += [("lj80 grad", "extra", ["lj", "80", "grad"]), ("lj40 hessian", "extra", ["lj", "40", "hessian"]),
                ("solve 20x20 grad", "extra", ["solve", "20"])]
    return out


def worker(spec):
    """Compile one case in this (fresh) process; print the stages of each compile it makes:
    {label suffix: [(function, stage, expected s or None, taken s), ...]}."""
    import symgrad
    from symgrad.pipeline import source
    import scaling
    source.RECORDS = records = []
    marks = {}
    kind, args = spec[0], spec[1:]
    rng = np.random.default_rng(0)
    if kind == "bench":
        fname, shapes, what, _ = bench_cases.CASES[args[0]]
        F = symgrad.compile(bench_cases.FUNCS[fname], shapes)
        (F.grad if what == "grad" else F.hessian)(*bench_cases.make_inputs(fname, 4, rng))
    elif kind == "array":
        f, shapes, x = scaling.array_case(args[0], int(args[1]))
        getattr(symgrad.compile(f, shapes), scaling.ARRAY_VERB[args[0]])(x)
    elif kind == "lj":
        n = int(args[0])
        F = symgrad.compile(lambda p: bench_cases.lj(p, n), [(3 * n,)])
        getattr(F, args[1])(scaling.lj_inputs(n, 4, rng))
    elif kind == "maxabs":
        n = int(args[0])
        symgrad.compile(scaling.max_abs, [(n,)]).grad(rng.uniform(-1, 1, (4, n)))
    elif kind == "after_grad":  # scaling.py's: value_and_grad, then the Hessian, after the gradient
        n = int(args[0])
        F = symgrad.compile(lambda p: bench_cases.lj(p, n), [(3 * n,)])
        x = scaling.lj_inputs(n, 4, rng)
        F.grad(x)
        del records[:]
        F.value_and_grad(x)
        marks[" value_and_grad"] = records[:]
        del records[:]
        F.hessian(x)
        marks[" hessian"] = records[:]
    elif kind == "pendulum":
        import pendulum
        n = int(args[0])
        km, states, params = pendulum.build(n)
        del records[:]
        F = symgrad.from_sympy(km.forcing_full, [states, params])
        symgrad.jacobian(F, argnums=0)(np.zeros(2 * n), np.ones(2 * n + 1))
    elif kind == "logreg":  # logistic regression over closed-over data (issue 47)
        p, n = int(args[0]), int(args[1])
        X = rng.normal(size=(n, p))
        y = (rng.uniform(size=n) < 0.5).astype(float)

        def loss(w):
            z = X @ w
            return np.sum(np.log1p(np.exp(-z)) + (1 - y) * z)
        symgrad.compile(loss, [(p,)]).hessian(np.full(p, 0.01))
    elif kind == "solve":
        n = int(args[0])
        A = rng.normal(size=(n, n)) + n * np.eye(n)
        symgrad.compile(lambda a: np.sum(np.linalg.solve(a.reshape(n, n), np.ones(n))), [(n * n,)]).grad(A.ravel())
    else:
        raise ValueError(kind)
    print(json.dumps(marks or {"": records}))


def cold(spec, tmp, k):
    env = dict(os.environ, SYMGRAD_CACHE_DIR=os.path.join(tmp, f"cache-{k}"), SYMGRAD_QUIET="1")
    load = os.getloadavg()[0]
    r = subprocess.run([sys.executable, __file__, "--worker", *spec], env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{spec}: {r.stderr[-2000:]}")
    return load, json.loads(r.stdout.strip().splitlines()[-1])


def summarise(records):
    """{stage: (expected or None, taken)} summed over the compiles of one case, other stages
    (sympy's conversion, sparsity patterns) under "other"."""
    out = {}
    for _, what, expected, taken in records:
        what = what if what in STAGES else "other"
        e, t = out.get(what, (None, 0.0))
        if expected is not None:
            e = (e or 0.0) + expected
        out[what] = (e, t + taken)
    return out


def verdict(stages):
    """(expected total, taken total of the estimated stages, whether within 2x)."""
    est = [(e, t) for e, t in stages.values() if e is not None]
    pe, me = sum(e for e, _ in est), sum(t for _, t in est)
    ok = pe == me == 0 or me > 0 and 0.5 <= pe / me <= 2  # (none: nothing compiled)
    for e, t in est:
        if max(e, t) >= JUDGED and not 0.5 <= e / max(t, 1e-9) <= 2:
            ok = False
    return pe, me, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="leave out the pendulum and the long extra cases")
    ap.add_argument("--repeat", type=int, default=1, help="cold compiles of each case; the one of median total shown")
    ap.add_argument("--cases", nargs="*", help="only the cases whose label contains one of these")
    ap.add_argument("--json", help="also write every measurement to this file")
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker)
    tmp = tempfile.mkdtemp(prefix="symgrad-estimates-")
    todo = [c for c in cases(a.quick) if not a.cases or any(s in c[0] for s in a.cases)]
    for spec in (["bench", "seed_grad"], ["lj", "30", "grad"], ["array", "fit", "1000"], ["lj", "10", "hessian"]):
        cold(spec, tmp, f"warm-{'-'.join(spec)}")  # untimed: the precompiled headers made (pch.py)
    time.sleep(2.0)
    print(f"# {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.2f}; seconds expected/taken")
    head = f"{'case':<34}{'load':>5}" + "".join(f"{s:>15}" for s in STAGES) + f"{'other':>7}{'total':>15}{'ratio':>7}"
    print(head)
    print("-" * len(head))
    rows, ok_all, dump = [], {}, []
    for k, (label, group, spec) in enumerate(todo):
        runs = []
        for r in range(a.repeat):
            load, got = cold(spec, tmp, f"{k}-{r}")
            runs.append((load, got))
        results = {}
        for suffix in runs[0][1]:
            trials = sorted(((load, summarise(got[suffix])) for load, got in runs),
                            key=lambda x: verdict(x[1])[1])
            results[suffix] = trials[len(trials) // 2]
        for suffix, (load, stages) in results.items():
            pe, me, ok = verdict(stages)
            ok_all.setdefault(group, []).append(ok)
            cells = "".join(f"{_cell(stages.get(s)):>15}" for s in STAGES)
            other = stages.get("other", (None, 0.0))[1]
            ratio = f"{pe / me:.2f}" if me else "-"
            print(f"{label + suffix:<34}{load:>5.1f}{cells}{other:>7.2f}{f'{pe:.2f}/{me:.2f}':>15}{ratio:>7}"
                  f"{'' if me else '  (nothing compiled)'}{'' if ok else '  NOT within 2x'}", flush=True)
            dump.append({"case": label + suffix, "group": group, "load": load,
                         "stages": {s: list(v) for s, v in stages.items()}})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dump, f, indent=1)
    print()
    for group, oks in ok_all.items():
        print(f"{group}: {sum(oks)} of {len(oks)} cases within 2x"
              + (" (all)" if all(oks) else ""))
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0 if all(all(v) for g, v in ok_all.items() if g != "extra") else 1


def _cell(v):
    if v is None:
        return "-"
    e, t = v
    return f"-/{t:.2f}" if e is None else f"{e:.2f}/{t:.2f}"


if __name__ == "__main__":
    sys.exit(main())
