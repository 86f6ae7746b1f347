"""Real functions of real arguments, as sympy sees them.

sympy's own ``Abs``, ``sign``, cube roots and rounding treat their argument as a complex
number unless it is provably real, and their derivatives then hold ``re``, ``im`` or an
unevaluated ``Derivative``. The classes here are real by construction: each has its own
real derivative rule and real value (NaN outside its domain, as in C), whatever sympy
can prove about the argument."""
from __future__ import annotations

import math

import sympy as sp
from sympy.logic.boolalg import BooleanFunction


class RealFunction(sp.Function):
    """A function whose value is real (or NaN) for every real argument."""

    def _eval_is_extended_real(self):
        return True

    @classmethod
    def _number(cls, *args):
        """The value for number arguments (as an exact sympy number where one exists), or None."""
        return None

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            if any(a is sp.nan for a in args):
                return sp.nan
            return cls._number(*args)
        return None


class Abs(RealFunction):
    nargs = 1

    def fdiff(self, argindex=1):
        return Sign(self.args[0])

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return abs(x)
        if isinstance(x, (Abs, Sign)):
            return x if isinstance(x, Abs) else Abs(x)
        if x.is_extended_nonnegative:
            return x
        if x.is_extended_negative:
            return -x
        if x.could_extract_minus_sign():
            return cls(-x)
        return None

    def _eval_is_extended_nonnegative(self):
        return True


class Sign(RealFunction):
    """numpy's sign: 1, -1, 0 for either zero, NaN for NaN."""

    nargs = 1

    def fdiff(self, argindex=1):
        return sp.S.Zero

    @classmethod
    def _number(cls, x):
        return sp.S.One if x > 0 else sp.S.NegativeOne if x < 0 else sp.S.Zero

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.nan if x is sp.nan else cls._number(x)
        if x.is_extended_positive:
            return sp.S.One
        if x.is_extended_negative:
            return sp.S.NegativeOne
        return None


class Cbrt(RealFunction):
    """The real cube root (negative for negative arguments, as math.cbrt)."""

    nargs = 1

    def fdiff(self, argindex=1):
        return 1 / (3 * Cbrt(self.args[0]) ** 2)

    @classmethod
    def _number(cls, x):
        if x.is_Rational:
            r = sp.real_root(x, 3)
            return r if r.is_Rational else None  # cbrt(2) stays as it is (exact)
        if x.is_infinite:
            return x
        return (1 if x >= 0 else -1) * abs(x) ** sp.Rational(1, 3)  # a Float for a Float


class _Step(RealFunction):
    """A step: derivative 0 almost everywhere."""

    nargs = 1
    _f = None

    def fdiff(self, argindex=1):
        return sp.S.Zero

    @classmethod
    def _number(cls, x):
        if x.is_infinite:
            return x
        return sp.Integer(cls._f(x))


class Floor(_Step):
    _f = staticmethod(lambda x: sp.floor(x))


class Ceiling(_Step):
    _f = staticmethod(lambda x: sp.ceiling(x))


class Trunc(_Step):
    _f = staticmethod(lambda x: sp.floor(x) if x >= 0 else sp.ceiling(x))


class copysign(RealFunction):
    """C's copysign(a, b): |a| with the sign of b."""

    nargs = 2

    def fdiff(self, argindex=1):
        a, b = self.args
        if argindex == 1:
            return Sign(a) * copysign(1, b)
        return sp.S.Zero

    @classmethod
    def _number(cls, a, b):
        return sp.Float(math.copysign(float(a), float(b)))


class IsNan(BooleanFunction):
    """x is NaN: a condition sympy cannot simplify away (for sympy, x - x is 0 and x != x
    is false; at run time x may be NaN)."""

    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.true if x is sp.nan else sp.false
        return None


class IsInf(BooleanFunction):
    nargs = 1

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.true if x.is_infinite else sp.false
        return None
