"""sympy's C99 printer with symgrad's conventions, for the kernels of programs whose arrays
stayed loops (render/loops.py prints their sympy form). Every other kernel is printed from
the IR through the op table (render/c.py).

What differs between targets (the number type of the arithmetic, so the suffix of math
functions) comes from the Target. The printer never post-processes its own output."""
from __future__ import annotations

import sympy as sp
from sympy.codegen.ast import float32, real
from sympy.printing.c import C99CodePrinter

from ..errors import CompileError
from .c import ipow
from ..realfns import Recip


class Printer(C99CodePrinter):
    """C99 printer with symgrad's names, literal constants and multiplication powers."""

    def __init__(self, names, target, options):
        settings = {"order": "none"}  # print terms in sympy's stored order: no costly sorting
        if target.math == "float":
            settings["type_aliases"] = {real: float32}
        super().__init__(settings)
        self.names, self.target, self.options = names, target, options

    def _print_Symbol(self, s):
        try:
            return self.names[s]
        except KeyError:
            raise CompileError(f"symbol {s} is not an input or temporary of this kernel") from None

    def _literal(self, value):
        return self._print(sp.Float(value, 17))

    def _one(self):
        return "1.0F" if self.target.math == "float" else "1.0"

    def _print_Mul(self, e):
        # x/10 and x/0.1 as divisions, as written, not as x times a rounded 1/10
        recips = [f for f in e.args if isinstance(f, Recip)]
        if recips:
            rest = sp.Mul(*[f for f in e.args if not isinstance(f, Recip)])
            den = "*".join(self._print(f.args[0]) for f in recips)
            return f"({self._print(rest)})/{den if len(recips) == 1 else '(' + den + ')'}"
        c, rest = e.as_coeff_Mul()
        if c.is_Rational and not c.is_Integer and rest != 1:
            return f"({self._print(c.p * rest)})/{self._print(sp.Integer(c.q))}"
        return super()._print_Mul(e)

    def _print_Recip(self, e):
        return f"{self._one()}/{self._print(e.args[0])}"

    def _print_Negation(self, e):
        return f"!({self._print(e.args[0])})"

    def _print_Integer(self, e):
        # Beyond 2**53 a C integer literal could overflow; a double literal is what is meant.
        return super()._print_Integer(e) if abs(e.p) < 2**53 else self._literal(e.p)

    def _print_BooleanTrue(self, e):
        return "1"

    def _print_BooleanFalse(self, e):
        return "0"

    def _print_Pi(self, e):
        return self._literal(sp.pi.evalf(20))

    def _print_Exp1(self, e):
        return self._literal(sp.E.evalf(20))

    def _print_EulerGamma(self, e):
        return self._literal(sp.EulerGamma.evalf(20))

    def _print_Pow(self, e):
        b, x = e.args
        if x.is_Integer and 1 < abs(x) <= self.options.max_mul_pow:
            s = self._ipow(self.parenthesize(b, 50), abs(int(x)))
            return s if x > 0 else f"{self._one()}/{s}"
        if x == -1:
            return f"{self._one()}/{self.parenthesize(b, 50)}"
        if x.is_Rational and x.q in (2, 3) and abs(x.p) <= self.options.max_mul_pow:
            root = f"{'sqrt' if x.q == 2 else 'cbrt'}{self._suffix()}({self._print(b)})"
            s = self._ipow(root, abs(int(x.p)))
            return s if x > 0 else f"{self._one()}/{s}"
        return super()._print_Pow(e)

    def _suffix(self):
        return "f" if self.target.math == "float" else ""

    def _ipow(self, base, n):
        return ipow(base, n)

    def _print_Piecewise(self, e):
        *pieces, (last, cond) = e.args
        if cond != sp.true:
            pieces.append((last, cond))
            last = sp.nan
        s = self._print(last)
        for value, cond in reversed(pieces):
            s = f"(({self._print(cond)}) ? ({self._print(value)}) : ({s}))"
        return s

    def _print_polygamma(self, e):
        m, x = e.args
        return f"symgrad_polygamma({self._print(m)}, {self._print(x)})"

    def _call(self, fn, e):
        return f"{fn}{self._suffix()}({', '.join(self._print(a) for a in e.args)})"

    def _print_RealPow(self, e):
        b, x = e.args
        if x.is_Rational and x.q == 2 and abs(x.p) <= self.options.max_mul_pow:
            return self._print_Pow(sp.Pow(b, x, evaluate=False))  # sqrt: NaN below 0 as pow
        return f"pow{self._suffix()}({self._print(b)}, {self._print(x)})"

    def _print_Sign(self, e):
        # numpy's sign: 0 for either zero, nan for nan. One select, not a nest of them: GCC's
        # combiner takes time quadratic in nested vector selects (seconds for np.max of 256).
        x = self._print(e.args[0])
        return f"(isnan({x}) ? ({x}) : ({self.target.math})((({x}) > 0) - (({x}) < 0)))"

    def _print_IsNan(self, e):
        return f"isnan({self._print(e.args[0])})"

    def _print_IsInf(self, e):
        return f"isinf({self._print(e.args[0])})"

    def _print_Infinity(self, e):
        return "INFINITY"

    def _print_NegativeInfinity(self, e):
        return "(-INFINITY)"

    def _print_NaN(self, e):
        return "NAN"

    def _print_DiracDelta(self, e):
        return "0"  # the derivative of a step, almost everywhere

    def _print_Heaviside(self, e):
        x = self._print(e.args[0])
        return f"(({x}) > 0 ? {self._one()} : (({x}) < 0 ? 0 : 0.5))"

    def emptyPrinter(self, e):
        raise CompileError(f"symgrad cannot print {type(e).__name__} in C: {e}")

    def _print_not_supported(self, e):
        raise CompileError(f"symgrad cannot print {type(e).__name__} in C: {e}")


# symgrad's real functions (realfns.py) -> the <math.h> function of that name (with the
# target's suffix: floorf for float).
CALLS = {"Floor": "floor", "Ceiling": "ceil", "Trunc": "trunc", "Log": "log", "Asin": "asin", "Acos": "acos",
         "Acosh": "acosh", "Atanh": "atanh", "Tanh": "tanh", "Sech2": "symgrad_sech2", "Log1p": "log1p", "Log2": "log2", "Log10": "log10", "Cbrt": "cbrt",
         "Abs": "fabs", "copysign": "copysign", "Round": "rint", "Fmod": "fmod", "Remainder": "remainder",
         "Mod": "symgrad_mod", "FloorDiv": "symgrad_floordiv"}
for _cls, _fn in CALLS.items():
    setattr(Printer, f"_print_{_cls}", lambda self, e, _fn=_fn: self._call(_fn, e))
