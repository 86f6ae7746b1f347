"""Accuracy of symgrad's compiled elementary functions against glibc's scalar <math.h>.

    python examples/accuracy.py            # 10**6 random inputs per function, float64 and float32

Kernels evaluate these functions on SIMD vectors (glibc's libmvec on x86-64); this
prints, per function, the largest error in ulps against Python's math module (glibc's
scalar functions) over random inputs spread across each domain, plus the count of
special inputs (NaN, +-Inf, +-0, domain edges) whose result was not preserved."""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import symgrad

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 5e-324, -5e-324,
                    2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308])


def _wide(rng, n):
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-20, 20, n)


def _mix(*parts):
    def sample(rng, n):
        k = len(parts)
        return np.concatenate([p(rng, n // k + (i < n % k)) for i, p in enumerate(parts)])
    return sample


U = lambda a, b: (lambda rng, n: rng.uniform(a, b, n))  # noqa: E731
LOGU = lambda a, b: (lambda rng, n: 10.0 ** rng.uniform(a, b, n))  # noqa: E731

# name -> (arity, python reference on floats, sampler per argument)
FUNCTIONS = {
    "sin": (1, math.sin, [_mix(U(-10, 10), U(-1e5, 1e5), _wide)]),
    "cos": (1, math.cos, [_mix(U(-10, 10), U(-1e5, 1e5), _wide)]),
    "tan": (1, math.tan, [_mix(U(-10, 10), U(-1e5, 1e5), _wide)]),
    "asin": (1, math.asin, [U(-1, 1)]),
    "acos": (1, math.acos, [U(-1, 1)]),
    "atan": (1, math.atan, [_mix(U(-10, 10), _wide)]),
    "sinh": (1, math.sinh, [_mix(U(-1, 1), U(-710, 710))]),
    "cosh": (1, math.cosh, [_mix(U(-1, 1), U(-710, 710))]),
    "tanh": (1, math.tanh, [_mix(U(-1, 1), U(-20, 20), _wide)]),
    "asinh": (1, math.asinh, [_mix(U(-10, 10), _wide)]),
    "acosh": (1, math.acosh, [_mix(U(1, 10), lambda r, n: 1 + 10.0 ** r.uniform(-15, 15, n))]),
    "atanh": (1, math.atanh, [U(-1, 1)]),
    "exp": (1, math.exp, [_mix(U(-5, 5), U(-745, 710))]),
    "expm1": (1, math.expm1, [_mix(U(-1, 1), U(-40, 710), _wide)]),
    "log": (1, math.log, [_mix(U(0, 10), LOGU(-300, 300))]),
    "log2": (1, math.log2, [_mix(U(0, 10), LOGU(-300, 300))]),
    "log10": (1, math.log10, [_mix(U(0, 10), LOGU(-300, 300))]),
    "log1p": (1, math.log1p, [_mix(U(-1, 10), LOGU(-300, 300))]),
    "erf": (1, math.erf, [_mix(U(-6, 6), _wide)]),
    "erfc": (1, math.erfc, [_mix(U(-6, 27), _wide)]),
    "sqrt": (1, math.sqrt, [_mix(U(0, 10), LOGU(-300, 300))]),
    "pow": (2, math.pow, [_mix(LOGU(-5, 5), U(-10, 10)), U(-60, 60)]),
    "atan2": (2, math.atan2, [_wide, _wide]),
    "hypot": (2, math.hypot, [_wide, _wide]),
}
if sys.version_info >= (3, 11):
    FUNCTIONS["cbrt"] = (1, math.cbrt, [_mix(U(-10, 10), _wide)])
    FUNCTIONS["exp2"] = (1, math.exp2, [_mix(U(-5, 5), U(-1075, 1024))])


def _kernel(dtype):
    """One compiled function returning every elementary function of its own arguments."""
    names = list(FUNCTIONS)
    params = [f"{n}_{k}" for n in names for k in range(FUNCTIONS[n][0])]
    calls = ", ".join(f"math.{n}({', '.join(f'{n}_{k}' for k in range(FUNCTIONS[n][0]))})" for n in names)
    src = f"def elementary({', '.join(params)}):\n    return ({calls},)\n"
    ns = {"math": math}
    exec(compile(src, "<accuracy kernel>", "exec"), ns)
    return symgrad.compile(ns["elementary"], dtype=dtype), names


_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                "acosh": "arccosh", "atanh": "arctanh", "pow": "power", "atan2": "arctan2"}


def _python_ref(fn, *args):
    """glibc's scalar result; where Python's math raises, C's value (numpy's scalar float64)."""
    try:
        return fn(*args)
    except (ValueError, OverflowError):
        with np.errstate(all="ignore"):
            return getattr(np, _NUMPY_NAMES.get(fn.__name__, fn.__name__))(*[np.float64(a) for a in args])


def measure(n, dtype="float64", seed=0):
    """{name: (max ulp over random inputs, special inputs not preserved, worst input)}."""
    F, names = _kernel(dtype)
    rng = np.random.default_rng(seed)
    args, refs = [], []
    for name in names:
        arity, fn, samplers = FUNCTIONS[name]
        S = len(SPECIAL)  # special inputs: every value (unary), every pair (binary)
        specials = [np.tile(SPECIAL, S)] if arity == 1 else [np.repeat(SPECIAL, S), np.tile(SPECIAL, S)]
        cols = [np.concatenate([s(rng, n), sp]) for s, sp in zip(samplers, specials)]
        if dtype == "float32":
            with np.errstate(over="ignore"):
                cols = [c.astype(np.float32) for c in cols]
        args += cols
        with np.errstate(all="ignore"):
            ref = np.frompyfunc(lambda *a, fn=fn: _python_ref(fn, *map(float, a)), arity, 1)(*cols)
            refs.append(ref.astype(np.float64).astype(dtype))
    outs = F(*args)
    report = {}
    for name, got, ref in zip(names, np.moveaxis(outs, -1, 0), refs):
        special = slice(n, None)
        finite = np.isfinite(ref[:n]) & np.isfinite(got[:n])
        with np.errstate(all="ignore"):
            ulp = np.abs(got[:n].astype(np.float64) - ref[:n]) / np.spacing(np.abs(ref[:n]).astype(dtype))
        ulp = np.where(finite, ulp, np.where((np.isnan(ref[:n]) & np.isnan(got[:n])) | (got[:n] == ref[:n]),
                                             0, np.inf))
        k = int(np.argmax(ulp))
        g, r = got[special], ref[special]
        same = (np.isnan(g) & np.isnan(r)) | ((g == r) & (np.signbit(g) == np.signbit(r)))
        with np.errstate(all="ignore"):
            close = np.isfinite(r) & (r != 0) & (np.abs(g - r) <= 4 * np.spacing(np.abs(r)))
        report[name] = (float(ulp.max()), int(np.count_nonzero(~(same | close))),
                        tuple(float(a[k]) for a in args[len(report):][:FUNCTIONS[name][0]]))
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10**6)
    a = ap.parse_args()
    print(f"max error in ulps over {a.n:,} random inputs per function; "
          "'special' counts NaN/Inf/0/edge inputs not preserved")
    print(f"{'function':>9} {'float64':>9} {'special':>8} {'float32':>9} {'special':>8}")
    r64, r32 = measure(a.n, "float64"), measure(a.n, "float32")
    for name in r64:
        print(f"{name:>9} {r64[name][0]:>9.2f} {r64[name][1]:>8} {r32[name][0]:>9.2f} {r32[name][1]:>8}")
    worst = max(max(v[0] for v in r64.values()), max(v[0] for v in r32.values()))
    bad = sum(v[1] for v in r64.values()) + sum(v[1] for v in r32.values())
    print(f"worst {worst:.2f} ulp (bound 4), special values not preserved: {bad}")


if __name__ == "__main__":
    main()
