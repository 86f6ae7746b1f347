"""Differential fuzzing: random functions as users write them, symgrad against mpmath.

    python examples/fuzz.py [N] [--seed S] [--start K] [--jobs J] [--one-point]
        # N random functions (default 10000); K: begin at batch K of that sequence;
        # J: processes running every J-th batch side by side (default 1); --one-point:
        # compiled with Options(one_point=True), every kind's single points against its batch

A hypothesis strategy draws expression trees (arithmetic, integer/negative/fractional/
variable powers, every supported math/numpy/builtin spelling, abs/min/max/where, steps,
helpers, closures, loops, generator sums, array arguments). Each batch of trees becomes
one Python module (a real file, so symgrad reads its source like any user's), compiled as
one vector-valued Function; its value, Jacobian, second and third derivatives (and
derivative(3) of a scalar argument) are compared, in float64 and float32, with a
truncated Taylor evaluation in mpmath at 50 digits. The tolerance is a first-order
forward error bound of that evaluation: every operation rounds with relative error u
(4u for elementary functions), propagated through the Taylor coefficients, so a sum of
large terms that cancel gets a large bound and an exact product a small one. The scalar
call and the batch call must agree bit for bit. float32 kernels compute in double (the
default Options.float32_math): their results must be the float64 kernels' results at the
same points rounded to float32, bit for bit, and are held to the bound; a float32 inf
where the exact value is past float32's range counts as an overflow, not a mismatch."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import mpmath
import numpy as np
import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import symgrad

ORDER = 3      # Taylor order: value, first, second and third derivatives
SAFETY = 64    # slack on the error bound (symgrad's formulas are not the Taylor recurrences)
DPS = 50

# name -> (arity, mpmath reference, numpy spelling or None, math spelling or None)
HAS311 = sys.version_info >= (3, 11)
UNARY = {
    "sin": (mpmath.sin, "sin"), "cos": (mpmath.cos, "cos"), "tan": (mpmath.tan, "tan"),
    "asin": (mpmath.asin, "arcsin"), "acos": (mpmath.acos, "arccos"), "atan": (mpmath.atan, "arctan"),
    "sinh": (mpmath.sinh, "sinh"), "cosh": (mpmath.cosh, "cosh"), "tanh": (mpmath.tanh, "tanh"),
    "asinh": (mpmath.asinh, "arcsinh"), "acosh": (mpmath.acosh, "arccosh"), "atanh": (mpmath.atanh, "arctanh"),
    "exp": (mpmath.exp, "exp"), "expm1": (mpmath.expm1, "expm1"), "log": (mpmath.log, "log"),
    "log1p": (mpmath.log1p, "log1p"), "log2": (lambda x: mpmath.log(x, 2), "log2"),
    "log10": (mpmath.log10, "log10"), "sqrt": (mpmath.sqrt, "sqrt"), "erf": (mpmath.erf, None),
    "erfc": (mpmath.erfc, None), "gamma": (mpmath.gamma, None),
    "lgamma": (lambda x: mpmath.log(abs(mpmath.gamma(x))), None),
    "degrees": (lambda x: x * 180 / mpmath.pi, "degrees"), "radians": (lambda x: x * mpmath.pi / 180, "radians"),
}
if HAS311:
    UNARY["cbrt"] = (lambda x: mpmath.sign(x) * abs(x) ** (mpmath.mpf(1) / 3), "cbrt")
    UNARY["exp2"] = (lambda x: mpmath.power(2, x), "exp2")
STEPS = {"floor": (mpmath.floor, ["math.floor", "np.floor"]), "ceil": (mpmath.ceil, ["math.ceil", "np.ceil"]),
         "trunc": (lambda x: mpmath.floor(x) if x >= 0 else mpmath.ceil(x), ["math.trunc", "np.trunc"]),
         "sign": (mpmath.sign, ["np.sign"])}
CONSTS = [0.5, 2, 3, -1.5, 0.25, 1, 10, 0.1, 1.75, -0.3, 2.5, 4, -2, 0.125]


# -- the strategy: expression trees ---------------------------------------------------------
def _leaf(nvars):
    return st.one_of(st.tuples(st.just("var"), st.integers(0, nvars - 1)),
                     st.tuples(st.just("const"), st.sampled_from(CONSTS)),
                     st.tuples(st.just("var"), st.integers(0, nvars - 1)))


def _extend(children):
    c = children
    return st.one_of(
        st.tuples(st.sampled_from(["add", "sub", "mul", "div"]), c, c),
        st.tuples(st.just("neg"), c),
        st.tuples(st.just("fn"), st.sampled_from(sorted(UNARY)), st.sampled_from(["math", "m", "from", "np"]), c),
        st.tuples(st.just("powi"), c, st.integers(-3, 5), st.sampled_from(["**", "math.pow", "np.power", "pow", "**f"])),
        st.tuples(st.just("powf"), c, st.sampled_from([0.5, 1.5, -0.5, 2.5, 1 / 3]),
                  st.sampled_from(["**", "math.pow", "np.power", "math.sqrt"])),
        st.tuples(st.just("powv"), c, c, st.sampled_from(["**", "math.pow", "np.power"])),
        st.tuples(st.just("fn2"), st.sampled_from(["atan2", "hypot", "copysign"]), st.sampled_from(["math", "np"]), c, c),
        st.tuples(st.just("abs"), st.sampled_from(["abs", "math.fabs", "np.abs", "np.absolute"]), c),
        st.tuples(st.sampled_from(["min", "max"]), st.sampled_from(["builtin", "np", "list"]), c, c),
        st.tuples(st.just("where"), st.sampled_from(["symgrad.where", "np.where"]), c, c, c, c),
        st.tuples(st.just("step"), st.sampled_from(sorted(STEPS)), st.integers(0, 1), c),
        st.tuples(st.just("call"), st.sampled_from(["helper", "closure", "loop", "gsum", "lambda"]), c, c),
    )


def trees(nvars):
    return st.recursive(_leaf(nvars), _extend, max_leaves=7)


def batches(size):
    """(style, strategy, trees) for one module: scalar arguments x, y, z or an array v; single-use
    nodes printed inside their users ("inlined") or each a C statement ("statements")."""
    return st.tuples(st.sampled_from(["scalars", "array"]), st.sampled_from(["inlined", "statements"]),
                     st.lists(trees(3), min_size=size, max_size=size))


# -- trees as Python source -----------------------------------------------------------------
_NP = {name: np_name for name, (_, np_name) in UNARY.items()}


class Source:
    """Writes the module: one output expression per tree, helpers as needed."""

    def __init__(self, style):
        self.style, self.helpers, self.imports = style, [], set()

    def var(self, i):
        return ("x", "y", "z")[i] if self.style == "scalars" else f"v[{i}]"

    def expr(self, t, var=None):
        op = t[0]
        e = lambda u: self.expr(u, var)  # noqa: E731
        if op == "var":
            return var if var is not None else self.var(t[1])
        if op == "const":
            return f"({t[1]!r})" if t[1] < 0 else repr(t[1])  # -1.5 ** 2 would be -(1.5 ** 2)
        if op in ("add", "sub", "mul", "div"):
            return f"({e(t[1])} {'+-*/'[('add', 'sub', 'mul', 'div').index(op)]} {e(t[2])})"
        if op == "neg":
            return f"(-{e(t[1])})"
        if op == "fn":
            name, spell, a = t[1], t[2], e(t[3])
            if spell == "np" and _NP[name]:
                return f"np.{_NP[name]}({a})"
            if spell == "m":
                return f"m.{name}({a})"
            if spell == "from":
                self.imports.add(name)
                return f"_m_{name}({a})"
            return f"math.{name}({a})"
        if op == "powi":
            a, n, spell = e(t[1]), t[2], t[3]
            return {"**": f"({a} ** {n})", "math.pow": f"math.pow({a}, {n})", "np.power": f"np.power({a}, {float(n)})",
                    "pow": f"pow({a}, {n})", "**f": f"({a} ** {float(n)})"}[spell]
        if op == "powf":
            a, p, spell = e(t[1]), t[2], t[3]
            if spell == "math.sqrt" and p == 0.5:
                return f"math.sqrt({a})"
            p = "(1 / 3)" if abs(p - 1 / 3) < 1e-12 else repr(p)
            return {"**": f"({a} ** {p})", "math.pow": f"math.pow({a}, {p})", "np.power": f"np.power({a}, {p})",
                    "math.sqrt": f"({a} ** {p})"}[spell]
        if op == "powv":
            a, b, spell = e(t[1]), e(t[2]), t[3]
            return {"**": f"({a} ** {b})", "math.pow": f"math.pow({a}, {b})", "np.power": f"np.power({a}, {b})"}[spell]
        if op == "fn2":
            name, spell, a, b = t[1], t[2], e(t[3]), e(t[4])
            return f"np.{'arctan2' if name == 'atan2' else name}({a}, {b})" if spell == "np" else f"math.{name}({a}, {b})"
        if op == "abs":
            return f"{t[1]}({e(t[2])})"
        if op in ("min", "max"):
            spell, a, b = t[1], e(t[2]), e(t[3])
            if spell == "np":
                return f"np.{'minimum' if op == 'min' else 'maximum'}({a}, {b})"
            if spell == "list":
                return f"{op}([{a}, {b}])"
            return f"{op}({a}, {b})"
        if op == "where":
            p, q, a, b = (e(u) for u in t[2:])
            return f"{t[1]}({p} > {q}, {a}, {b})"
        if op == "step":
            fname = STEPS[t[1]][1][min(t[2], len(STEPS[t[1]][1]) - 1)]
            return f"{fname}({e(t[3])})"
        if op == "call":
            kind, body, arg = t[1], t[2], e(t[3])
            inner = self.expr(body, var="t")
            k = len(self.helpers)
            if kind == "helper":
                self.helpers.append(f"def h{k}(t):\n    return {inner}\n")
            elif kind == "closure":
                self.helpers.append(f"def _make{k}():\n    c = 1.0\n\n    def inner(t):\n        return c * {inner}\n"
                                    f"    return inner\n\n\nh{k} = _make{k}()\n")
            elif kind == "loop":
                self.helpers.append(f"def h{k}(t):\n    acc = 0.0\n    for k in range(1, 4):\n"
                                    f"        acc = acc + {inner} / k\n    return acc\n")
            elif kind == "gsum":
                inner2 = self.expr(body, var="(s * t)")
                k = len(self.helpers)
                self.helpers.append(f"def h{k}(t):\n    return sum({inner2} for s in (1, 2))\n")
            else:
                self.helpers.append(f"h{k} = lambda t: {inner}\n")
            return f"h{k}({arg})"
        raise ValueError(op)

    def module(self, trees_):
        outs = [self.expr(t) for t in trees_]
        sig = "x, y, z" if self.style == "scalars" else "v"
        head = ["import math", "import math as m", "import numpy as np", "import symgrad"]
        head += [f"from math import {n} as _m_{n}" for n in sorted(self.imports)]
        body = ",\n        ".join(outs)
        ret = f"({body},)" if self.style == "scalars" else f"np.array([{body}])"
        return "\n".join(head) + "\n\n\n" + "\n\n".join(self.helpers) + \
            f"\n\ndef fuzz({sig}):\n    return {ret}\n"


# -- the reference: truncated Taylor series with a forward error bound -----------------------
class Invalid(Exception):
    """The point is outside the function's domain, or too close to a kink or an overflow."""


@dataclass
class T:
    """Taylor coefficients c[0..ORDER] along one direction, and bounds e[k] on the error of
    a floating-point evaluation of each."""
    c: list
    e: list = field(default_factory=lambda: [mpmath.mpf(0)] * (ORDER + 1))


class Ref:
    def __init__(self, point, direction, u, limit):
        self.point, self.dir, self.u, self.limit = point, direction, u, limit
        self.fu = 4 * u  # elementary functions: within 4 ulp (libm, libmvec)
        self.memo = {}
        self.peak = mpmath.mpf(0)  # largest intermediate Taylor coefficient

    def check(self, r):
        for x in r.c:
            if not isinstance(x, mpmath.mpf) or not mpmath.isfinite(x) or abs(x) > self.limit:
                raise Invalid()
            self.peak = max(self.peak, abs(x))
        return r

    def const(self, v):
        c = [mpmath.mpf(v)] + [mpmath.mpf(0)] * ORDER
        return T(c, [self.u * abs(c[0]) if self.u > 2.0 ** -40 else mpmath.mpf(0)] + [mpmath.mpf(0)] * ORDER)

    def add(self, a, b, sign=1):
        c = [x + sign * y for x, y in zip(a.c, b.c)]
        return self.check(T(c, [ea + eb + self.u * abs(x) for ea, eb, x in zip(a.e, b.e, c)]))

    def mul(self, a, b):
        c, e = [], []
        for k in range(ORDER + 1):
            terms = [(i, k - i) for i in range(k + 1)]
            c.append(sum(a.c[i] * b.c[j] for i, j in terms))
            e.append(sum(abs(a.c[i]) * b.e[j] + abs(b.c[j]) * a.e[i] + a.e[i] * b.e[j] for i, j in terms)
                     + self.u * (k + 1) * sum(abs(a.c[i] * b.c[j]) for i, j in terms))
        return self.check(T(c, e))

    def scale(self, a, s):
        return T([s * x for x in a.c], [abs(s) * x for x in a.e])

    def compose(self, F, a):
        """f(a(t)) from f's derivatives F[0..ORDER+1] at a.c[0] (Faa di Bruno to order 3):
        each term is mult * F[j] * a[i1] * a[i2] ...; its error comes from F[j] (rounding,
        and the error of a[0] it is evaluated at) and from each factor a[i]."""
        terms = [[(1, 0, ())], [(1, 1, (1,))], [(1, 1, (2,)), (mpmath.mpf(1) / 2, 2, (1, 1))],
                 [(1, 1, (3,)), (1, 2, (1, 2)), (mpmath.mpf(1) / 6, 3, (1, 1, 1))]]
        c, e = [], []
        for k in range(ORDER + 1):
            ck, ek, mag = mpmath.mpf(0), mpmath.mpf(0), mpmath.mpf(0)
            for mult, j, idx in terms[k]:
                prod = mpmath.fprod([a.c[i] for i in idx])
                t = mult * F[j] * prod
                ck += t
                mag += abs(t)
                # F[j] itself: 4 ulp, plus what an input rounded by 1 ulp moves it (a libm
                # function near a root of its own, digamma for gamma', errs by that much), plus
                # the error of a[0]
                eF = abs(mult) * (self.fu * abs(F[j]) + abs(F[j + 1]) * (self.u * abs(a.c[0]) + a.e[0]))
                eprod = sum(a.e[i] * mpmath.fprod([abs(a.c[m]) for r, m in enumerate(idx) if r != q])
                            for q, i in enumerate(idx))
                ek += eF * abs(prod) + abs(mult * F[j]) * eprod
            c.append(ck)
            e.append(ek + self.u * len(terms[k]) * mag)
        return self.check(T(c, e))

    def fn(self, f, a):
        # numerical differentiation; again at higher precision where a derivative is near the
        # noise cut off below, which may be one far below the value (tanh'(47) = 4e-41,
        # tanh'(188) = 4e-163; past 8 DPS digits a derivative is below the smallest double)
        for dps in (DPS, 3 * DPS, 8 * DPS):
            try:
                with mpmath.workdps(dps):
                    F = [+x for x in mpmath.diffs(f, a.c[0], ORDER + 1)]
            except (ValueError, ZeroDivisionError, TypeError):
                raise Invalid() from None
            if not all(isinstance(x, mpmath.mpf) and mpmath.isfinite(x) for x in F):
                raise Invalid()
            noise = mpmath.mpf(10) ** (12 - dps) * max(abs(x) for x in F)
            if all(abs(x) > 1e6 * noise for x in F):
                break
        return self.compose([x if abs(x) > noise else mpmath.mpf(0) for x in F], a)

    def away(self, dist, err, scale):
        """A branch decided by the sign of ``dist`` must not flip under rounding."""
        if abs(dist) <= 1000 * err + 1e-9 * scale:
            raise Invalid()

    def powi(self, a, n):
        if n == 0:
            return self.const(1)
        if n < 0 and abs(a.c[0]) < 1e-3:
            raise Invalid()
        F = []
        for j in range(ORDER + 2):
            coef = mpmath.fprod(range(n - j + 1, n + 1))  # n (n-1) ... (n-j+1): 0 once j > n >= 0
            F.append(coef * a.c[0] ** (n - j) if coef != 0 else mpmath.mpf(0))
        return self.compose(F, a)

    def ev(self, t, env=None):
        op = t[0]
        e = lambda u: self.ev(u, env)  # noqa: E731
        if op == "var":
            if env is not None:
                return env
            c = [self.point[t[1]], self.dir[t[1]]] + [mpmath.mpf(0)] * (ORDER - 1)
            return T(c)
        if op == "const":
            return self.const(t[1])
        if op in ("add", "sub"):
            return self.add(e(t[1]), e(t[2]), 1 if op == "add" else -1)
        if op == "mul":
            return self.mul(e(t[1]), e(t[2]))
        if op == "div":
            b = e(t[2])
            if abs(b.c[0]) < 1e-6:
                raise Invalid()
            F = [(-1) ** j * mpmath.factorial(j) / b.c[0] ** (j + 1) for j in range(ORDER + 2)]
            return self.mul(e(t[1]), self.compose(F, b))
        if op == "neg":
            return self.scale(e(t[1]), -1)
        if op == "fn":
            a = e(t[3])
            if t[1] in ("log", "log2", "log10", "sqrt", "acosh", "gamma", "lgamma") and a.c[0] < 1e-3 + (1 if t[1] == "acosh" else 0):
                raise Invalid()  # near the edge of the domain (or a pole)
            if t[1] in ("asin", "acos", "atanh") and abs(a.c[0]) > 0.999:
                raise Invalid()
            if t[1] == "log1p" and a.c[0] < -0.999:
                raise Invalid()
            if t[1] == "cbrt" and abs(a.c[0]) < 1e-3:
                raise Invalid()
            if t[1] in ("gamma", "lgamma") and a.c[0] > 30:
                raise Invalid()
            return self.fn(UNARY[t[1]][0], a)
        if op == "powi":
            return self.powi(e(t[1]), t[2])
        if op == "powf":
            a = e(t[1])
            if a.c[0] < 1e-3:
                raise Invalid()  # numpy: nan below zero (Python: complex)
            p = mpmath.mpf(1) / 3 if abs(t[2] - 1 / 3) < 1e-12 else mpmath.mpf(t[2])
            if t[3] == "math.sqrt" and t[2] == 0.5:
                return self.fn(mpmath.sqrt, a)
            if abs(t[2] - 1 / 3) < 1e-12:
                p = mpmath.mpf(1 / 3)  # Python's (1 / 3) is a double
            return self.fn(lambda x: x ** p, a)
        if op == "powv":
            a, b = e(t[1]), e(t[2])
            if a.c[0] < 1e-3:
                raise Invalid()
            return self.fn(mpmath.exp, self.mul(b, self.fn(mpmath.log, a)))
        if op == "fn2":
            a, b = e(t[3]), e(t[4])
            if t[1] == "hypot":
                s = self.add(self.mul(a, a), self.mul(b, b))
                if s.c[0] < 1e-6:
                    raise Invalid()
                return self.fn(mpmath.sqrt, s)
            if t[1] == "copysign":
                self.away(a.c[0], a.e[0], 1)
                self.away(b.c[0], b.e[0], 1)
                return self.scale(a, mpmath.sign(a.c[0]) * mpmath.sign(b.c[0]))
            y, x = a, b  # atan2(y, x), away from the origin and the cut
            if abs(x.c[0]) + abs(y.c[0]) < 1e-3 or (x.c[0] < 0 and abs(y.c[0]) < 1e-6):
                raise Invalid()
            if abs(x.c[0]) >= abs(y.c[0]):
                r = self.fn(mpmath.atan, self.mul(y, self._recip(x)))
            else:
                r = self.scale(self.fn(mpmath.atan, self.mul(x, self._recip(y))), -1)
            r.c[0] = mpmath.atan2(y.c[0], x.c[0])  # the same derivatives, on the right branch
            r.e[0] += self.fu * abs(r.c[0])
            return r
        if op == "abs":
            a = e(t[2])
            self.away(a.c[0], a.e[0], 1)
            return self.scale(a, mpmath.sign(a.c[0]))
        if op in ("min", "max"):
            a, b = e(t[2]), e(t[3])
            self.away(a.c[0] - b.c[0], a.e[0] + b.e[0], abs(a.c[0]) + abs(b.c[0]))
            pick_b = (b.c[0] > a.c[0]) == (op == "max")
            return b if pick_b else a
        if op == "where":
            p, q = e(t[2]), e(t[3])
            self.away(p.c[0] - q.c[0], p.e[0] + q.e[0], abs(p.c[0]) + abs(q.c[0]))
            return e(t[4]) if p.c[0] > q.c[0] else e(t[5])
        if op == "step":
            a = e(t[3])
            if t[1] == "sign":
                self.away(a.c[0], a.e[0], 1)
            else:
                self.away(a.c[0] - mpmath.nint(a.c[0]), a.e[0], abs(a.c[0]))
            return self.const(STEPS[t[1]][0](a.c[0]))
        if op == "call":
            kind, body, arg = t[1], t[2], e(t[3])
            if kind == "loop":
                acc = self.const(0.0)
                for k in range(1, 4):
                    acc = self.add(acc, self.mul(self.ev(body, arg), self._recip(self.const(k))))
                return acc
            if kind == "gsum":
                return self.add(self.ev(body, arg), self.ev(body, self.scale(arg, 2)))
            return self.ev(body, arg)
        raise ValueError(op)

    def _recip(self, b):
        if abs(b.c[0]) < 1e-6:
            raise Invalid()
        F = [(-1) ** j * mpmath.factorial(j) / b.c[0] ** (j + 1) for j in range(ORDER + 2)]
        return self.compose(F, b)


def reference(tree, point, u, limit):
    """value, gradient, Hessian and d3/dx_i3 of ``tree`` at ``point``, with error bounds, and
    the largest intermediate Taylor coefficient met."""
    n = len(point)
    with mpmath.workdps(DPS):
        pt = [mpmath.mpf(float(p)) for p in point]
        refs = [Ref(pt, [mpmath.mpf(int(i == j)) for j in range(n)], u, limit) for i in range(n)]
        axes = [r.ev(tree) for r in refs]
        val = (axes[0].c[0], axes[0].e[0])
        grad = [(a.c[1], a.e[1]) for a in axes]
        hess = [[None] * n for _ in range(n)]
        for i in range(n):
            hess[i][i] = (2 * axes[i].c[2], 2 * axes[i].e[2])
            for j in range(i + 1, n):
                d = Ref(pt, [mpmath.mpf(int(k in (i, j))) for k in range(n)], u, limit).ev(tree)
                h = d.c[2] - axes[i].c[2] - axes[j].c[2]
                err = d.e[2] + axes[i].e[2] + axes[j].e[2]
                hess[i][j] = hess[j][i] = (h, err)
        d3 = [(6 * a.c[3], 6 * a.e[3]) for a in axes]
    return val, grad, hess, d3, float(max(r.peak for r in refs))


# -- running a batch --------------------------------------------------------------------------
@dataclass
class Report:
    functions: int = 0
    compared: dict = field(default_factory=lambda: {"value": 0, "grad": 0, "hessian": 0, "d3": 0})
    skipped: int = 0          # no point of the sample inside the domain
    invalid: int = 0          # plain Python fails on them (math.asin(3.0)): not generated
    mismatches: list = field(default_factory=list)
    crashes: list = field(default_factory=list)
    overflows: int = 0        # float32 inf where the exact value is past float32's range

    def add(self, other):
        self.functions += other.functions
        self.overflows += other.overflows
        self.skipped += other.skipped
        self.invalid += other.invalid
        for k in self.compared:
            self.compared[k] += other.compared[k]
        self.mismatches += other.mismatches
        self.crashes += other.crashes

    def __str__(self):
        c = self.compared
        return (f"{self.functions} functions: compared {c['value']} values, {c['grad']} gradient entries, "
                f"{c['hessian']} Hessian entries, {c['d3']} third derivatives; {self.skipped} without a point "
                f"in their domain, {self.invalid} failing in plain Python; {self.overflows} float32 overflows; "
                f"{len(self.mismatches)} mismatches, {len(self.crashes)} crashes")


_counter = [0]


def load(text, where):
    _counter[0] += 1
    name = f"fuzzmod_{os.getpid()}_{_counter[0]}"
    path = os.path.join(where, name + ".py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def python_runs(tree, style, where, rng):
    """False if plain Python fails on this function at every one of a few points (a constant
    subexpression outside its domain, such as math.asin(3.0)): not a function to test."""
    fn = load(Source(style).module([tree]), where).fuzz
    for p in rng.uniform(-2.0, 2.0, (4, 3)):
        try:
            with np.errstate(all="ignore"):
                r = fn(*p) if style == "scalars" else fn(p)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            continue
        if not any(np.iscomplexobj(x) for x in np.asarray(r, dtype=object).flat):  # a 0-d complex array too
            return True
    return False


def refused(tree, style, where):
    """Whether symgrad refuses to trace the function by design: a complex number of Python's
    (``(-1.5) ** 1.5`` in a branch not taken at the points where plain Python runs) combined
    with a traced value raises TraceError (docs/tracing.md: refused). Not a function to test."""
    fn = load(Source(style).module([tree]), where).fuzz
    try:
        symgrad.compile(fn, None if style == "scalars" else [(3,)]).program
    except symgrad.TraceError as e:
        return "complex number" in str(e)
    except Exception:  # noqa: BLE001 - anything else is a finding of the batch
        return False
    return False


def run_batch(style, strategy, trees_, seed, where, dtypes=("float64", "float32"), points=4):
    rng = np.random.default_rng(seed)
    dropped = len(trees_)
    trees_ = [t for t in trees_ if python_runs(t, style, where, rng) and not refused(t, style, where)]
    dropped -= len(trees_)
    src = Source(style)
    text = src.module(trees_)
    mod = load(text, where)
    report = Report(functions=len(trees_), invalid=dropped)
    pts = rng.uniform(-2.0, 2.0, (points, 3))
    opts = symgrad.Options(max_inlined_nodes=0 if strategy == "statements" else symgrad.options.DEFAULT.max_inlined_nodes,
                           one_point=ONE_POINT)
    valid_any = [False] * len(trees_)
    for dtype in dtypes:
        dt = np.dtype(dtype)
        u = mpmath.mpf(2) ** (-53 if dtype == "float64" else -24)
        limit = 1e150 if dtype == "float64" else 1e30
        P = pts.astype(dt)
        try:
            results = _evaluate(mod.fuzz, style, P, dt, opts)
        except Exception as exc:  # noqa: BLE001 - a crash is a finding, attributed below
            report.crashes.append(_attribute(exc, style, trees_, where, dt, opts, text))
            return report
        if dtype == "float32":  # computed in double, rounded once: the float64 kernels' bits, rounded
            wide = _evaluate(mod.fuzz, style, P.astype(np.float64), np.dtype("float64"), opts)
            for kind in results:
                if not _rounded_equal(results[kind], wide[kind]):
                    report.mismatches.append(dict(kind=kind, index=(), got="float32 kernel", want="float64 rounded",
                                                  bound=0.0, dtype=dtype, point=P.tolist(), function=None,
                                                  tree=None, source=text))
        for k, tree in enumerate(trees_):
            for p in range(points):
                try:
                    ref = reference(tree, P[p].astype(np.float64), u, limit)
                except Invalid:
                    continue
                valid_any[k] = True
                _compare(report, results, ref, k, p, style, dtype, tree, text, P[p])
    report.skipped = valid_any.count(False)
    return report


def _rounded_equal(narrow, wide):
    """float32 results equal the float64 results rounded to float32, bit for bit (NaN = NaN)."""
    if isinstance(narrow, tuple):
        return all(_rounded_equal(a, b) for a, b in zip(narrow, wide))
    with np.errstate(over="ignore"):
        return np.array_equal(np.asarray(narrow), np.asarray(wide).astype(np.float32), equal_nan=True)


def _evaluate(fn, style, P, dt, opts):
    shapes = None if style == "scalars" else [(3,)]
    F = symgrad.compile(fn, shapes, dtype=dt, options=opts)
    args = [P[:, 0], P[:, 1], P[:, 2]] if style == "scalars" else [P]
    kernels = {"value": F, "grad": F.jacobian, "hessian": F.jacobian.jacobian, "d3": F.jacobian.jacobian.jacobian}
    if style == "scalars":
        kernels["d3x"] = F.derivative(3, 0)
    with ThreadPoolExecutor(4) as pool:  # the C compiles run side by side
        list(pool.map(lambda G: G.plan, kernels.values()))
    out = {k: G(*args) for k, G in kernels.items()}
    if opts.one_point:  # every kind: single points (the one-lane copy) give the batch's bits
        for kind, G in kernels.items():
            for p in range(len(P)):
                single = G(*[float(a[p]) for a in args]) if style == "scalars" else G(P[p])
                if not _same(single, _at(out[kind], p)):
                    raise AssertionError(f"{kind}: single point differs from batch at point {p}")
    if style == "scalars":
        for p in range(len(P)):  # the scalar entry point gives the batch's bits
            one = F(*[float(a[p]) for a in args])
            if not np.array_equal(np.asarray(one), out["value"][p], equal_nan=True):
                raise AssertionError(f"scalar call differs from batch at point {p}")
    else:
        for p in range(len(P)):
            if not np.array_equal(F(P[p]), out["value"][p], equal_nan=True):
                raise AssertionError(f"single point differs from batch at point {p}")
    return out


def _at(r, p):
    """Point p of a batch's results (nested tuples of arrays)."""
    return tuple(_at(x, p) for x in r) if isinstance(r, tuple) else np.asarray(r)[p]


def _same(a, b):
    """Equal bit for bit (NaN = NaN), through nested tuples."""
    if isinstance(b, tuple):
        return isinstance(a, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), b, equal_nan=True)


def _entry(results, kind, k, p, idx, style):
    r = results[kind]
    if style == "scalars":  # tuples over arguments, each (points, K)
        for i in idx:
            r = r[i]
        return float(r[p][k])
    return float(r[(p, k) + tuple(idx)])


ORDERS = {"value": 0, "grad": 1, "hessian": 2, "d3": 3, "d3x": 3}


def _compare(report, results, ref, k, p, style, dtype, tree, text, point):
    val, grad, hess, d3, peak = ref
    checks = [("value", (), val)] + [("grad", (i,), g) for i, g in enumerate(grad)]
    checks += [("hessian", (i, j), hess[i][j]) for i in range(3) for j in range(3)]
    checks += [("d3", (i, i, i), d) for i, d in enumerate(d3)]
    if style == "scalars":
        checks.append(("d3x", (), d3[0]))
    tiny = 1e-300 if dtype == "float64" else 1e-37
    for kind, idx, (want, err) in checks:
        got = _entry(results, kind, k, p, idx, style)
        report.compared["d3" if kind == "d3x" else kind] += 1
        bound = SAFETY * float(err) + tiny
        if dtype == "float32" and math.isinf(got) and abs(float(want)) - bound > np.finfo(np.float32).max:
            # the exact value is past float32's range: inf is its rounding (float32 kernels
            # compute in double, so no intermediate overflows before the result does)
            report.overflows += 1
            continue
        if not (math.isfinite(got) and abs(got - float(want)) <= bound):
            report.mismatches.append(dict(kind=kind, index=idx, got=got, want=float(want), bound=bound,
                                          dtype=dtype, point=[float(x) for x in point], function=k,
                                          tree=tree, source=text))


def _attribute(exc, style, trees_, where, dt, opts, text):
    """Which function of a batch crashes: each compiled alone."""
    for k, tree in enumerate(trees_):
        one = Source(style)
        try:
            mod = load(one.module([tree]), where)
            _evaluate(mod.fuzz, style, np.random.default_rng(0).uniform(-2, 2, (2, 3)).astype(dt), dt, opts)
        except symgrad.TraceError as e:
            return dict(function=k, tree=tree, error=f"TraceError: {e}", source=one.module([tree]))
        except Exception as e:  # noqa: BLE001
            return dict(function=k, tree=tree, error=f"{type(e).__name__}: {e}", source=one.module([tree]))
    return dict(function=None, error=f"{type(exc).__name__}: {exc}", source=text)


def fuzz(n, seed, batch=50, where=None, verbose=False, start=1, dump=None, stride=1, offset=0):
    """Run ``n`` random functions in batches (the first ``start - 1`` are generated but not
    run, to reproduce a later batch; of the rest, those whose number from ``start`` is
    ``offset`` modulo ``stride``: one share of a parallel run); returns the Report. With
    ``dump``, the module of each batch with a finding is written there."""
    where = where or tempfile.mkdtemp(prefix="symgrad-fuzz-")
    sys.path.insert(0, where)
    total = Report()
    count = [0]

    @hypothesis.seed(seed)
    @settings(max_examples=max(1, n // batch), deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(batches(batch))
    def run(b):
        style, strategy, trees_ = b
        count[0] += 1
        if count[0] < start or (count[0] - start) % stride != offset:
            return
        r = run_batch(style, strategy, trees_, seed * 100003 + count[0], where)
        total.add(r)
        if verbose:
            print(f"batch {count[0]} ({style}, {strategy}): {r}", flush=True)
            for m in r.mismatches[:3]:
                print("  MISMATCH", {k: v for k, v in m.items() if k != "source"}, flush=True)
            for c in r.crashes:
                print("  CRASH", {k: v for k, v in c.items() if k != "source"}, flush=True)
        if dump and (r.mismatches or r.crashes):
            with open(os.path.join(dump, f"batch{count[0]}.py"), "w") as f:
                f.write((r.mismatches or r.crashes)[0]["source"])

    run()
    return total


ONE_POINT = "--one-point" in sys.argv  # Options(one_point=True), single points of every kind checked


def _option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    args = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--")
            and not sys.argv[i - 1].startswith("--")]
    n = int(args[0]) if args else 10000
    seed, start, jobs = _option("--seed", 0), _option("--start", 1), _option("--jobs", 1)
    stride, offset = _option("--stride", 1), _option("--offset", 0)
    t = time.perf_counter()
    if jobs > 1:
        report, dumps = _parallel(n, seed, start, jobs)
    else:
        dumps = [tempfile.mkdtemp(prefix="symgrad-fuzz-findings-")]
        report = fuzz(n, seed, verbose=True, start=start, dump=dumps[0], stride=stride, offset=offset)
    print(f"\n{report} in {time.perf_counter() - t:.0f} s")
    if "--json" in sys.argv:  # a share of a parallel run: its parent adds the reports
        print("REPORT " + json.dumps({**report.__dict__, "mismatches": len(report.mismatches),
                                      "crashes": len(report.crashes)}))
    for m in report.mismatches[:20]:
        print("MISMATCH", {k: v for k, v in m.items() if k != "source"})
    if report.mismatches or report.crashes:
        print(f"modules of the batches with findings: {' '.join(dumps)}")
    for c in report.crashes[:20]:
        print("CRASH", {k: v for k, v in c.items() if k != "source"}, "\n", c.get("source", "(in the module named above)"))
    return 1 if report.mismatches or report.crashes else 0


def _parallel(n, seed, start, jobs):
    """The run in ``jobs`` processes, each taking every jobs-th batch; their lines are
    printed as they come, prefixed by the share, and their counts added into one Report
    (whose mismatches and crashes are counted, their details printed by the shares)."""
    import subprocess
    import threading
    cmd = [sys.executable, __file__, str(n), "--seed", str(seed), "--start", str(start), "--stride", str(jobs), "--json"]
    cmd += ["--one-point"] if ONE_POINT else []
    procs = [subprocess.Popen(cmd + ["--offset", str(r)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(jobs)]
    total, dumps, lock = Report(), [], threading.Lock()

    def follow(r, proc):
        for line in proc.stdout:
            if line.startswith("REPORT "):
                d = json.loads(line[7:])
                with lock:
                    total.add(Report(**{**d, "mismatches": [{}] * d["mismatches"], "crashes": [{}] * d["crashes"]}))
                continue
            if line.startswith("modules of the batches with findings: "):
                dumps.extend(line.split(": ", 1)[1].split())
            with lock:
                print(f"[{r}] {line}", end="", flush=True)
        proc.wait()

    threads = [threading.Thread(target=follow, args=(r, p)) for r, p in enumerate(procs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if any(p.returncode not in (0, 1) for p in procs):
        total.crashes.append({"error": f"a share exited with {[p.returncode for p in procs]}"})
    return total, dumps


if __name__ == "__main__":
    sys.exit(main())
