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
    """A function whose value is real (or NaN) for every real argument. ``standard`` is the
    same function in sympy's own terms (for showing a result, never for computing one)."""

    standard = None

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
    standard = sp.Abs

    def fdiff(self, argindex=1):
        return Sign(self.args[0])

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return abs(x)
        if isinstance(x, Abs):
            return x
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
    standard = sp.sign

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
    standard = staticmethod(lambda x: sp.real_root(x, 3))

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
    standard = sp.floor


class Ceiling(_Step):
    _f = staticmethod(lambda x: sp.ceiling(x))
    standard = sp.ceiling


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


class _Predicate(BooleanFunction):
    """A test of one real value: an atom of sympy's boolean logic (already in negation
    normal form; it cannot be rewritten as a set of reals)."""

    nargs = 1

    def _eval_as_set(self):
        raise NotImplementedError(f"{type(self).__name__} is not a set of reals")

    def to_nnf(self, simplify=True):
        return self


class IsNan(_Predicate):
    """x is NaN: a condition sympy cannot simplify away (for sympy, x - x is 0 and x != x
    is false; at run time x may be NaN)."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.true if x is sp.nan else sp.false
        return None


class IsInf(_Predicate):
    """x is +inf or -inf."""

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return sp.true if x.is_infinite else sp.false
        return None


def _float_value(fn, *args):
    """numpy's float64 value of ``fn`` at number arguments (NaN outside the domain)."""
    import warnings

    import numpy as np
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        v = float(fn(*[float(a) for a in args]))
    return sp.nan if v != v else sp.oo if v == float("inf") else -sp.oo if v == -float("inf") else sp.Float(v)


class RealPow(RealFunction):
    """base ** exponent for a non-integer exponent, as numpy computes it: NaN for a negative
    base (sympy's Pow would take the complex root), log(base) in the derivative by the
    exponent."""

    nargs = 2
    standard = staticmethod(lambda a, b: a ** b)

    def fdiff(self, argindex=1):
        a, b = self.args
        if argindex == 1:
            return b * RealPow(a, b - 1)
        # by the exponent: a**b * log(a), with log(1) for a base 0 (JAX's rule): 0 ** b is 0
        # for b > 0 and 1 at b = 0, a derivative of 0 there, and NaN (inf * 0) where it is inf
        if a.is_zero:
            return sp.Piecewise((sp.S.Zero, sp.Ge(b, 0, evaluate=False)), (sp.nan, True), evaluate=False)
        if a.is_Number:
            return self * Log(a)
        return self * Log(sp.Piecewise((sp.S.One, sp.Eq(a, 0, evaluate=False)), (a, True), evaluate=False))

    @classmethod
    def eval(cls, a, b):
        if b.is_zero:
            return sp.S.One
        if b == 1:
            return a
        if b.is_Integer or (b.is_Float and float(b).is_integer()):
            return a ** b  # an integer power is real for every real base
        if a.is_Number and b.is_Number:
            if a is sp.nan or b is sp.nan:
                return sp.nan
            if a.is_negative:
                return sp.nan
            if a.is_zero:
                return sp.oo if b.is_negative else sp.S.Zero
            return a ** b
        if isinstance(a, RealPow) and a.args[0].is_extended_nonnegative:
            return RealPow(a.args[0], a.args[1] * b)
        return None


class Log(RealFunction):
    """log(x): -inf at 0, NaN below (sympy's log of a negative number is complex)."""

    nargs = 1
    standard = sp.log

    def fdiff(self, argindex=1):
        return 1 / self.args[0]

    @classmethod
    def _number(cls, x):
        if x.is_zero:
            return -sp.oo
        if x.is_negative:
            return sp.nan
        return sp.log(x)


def _domain_function(name, sympy_fn, derivative, inside, np_name, standard):
    """A real function that sympy evaluates only inside its domain (``inside(x)``), numpy's
    value (NaN, ±inf) elsewhere; ``derivative(x)`` is its real derivative."""

    def _number(cls, x):
        if inside(x):
            return sympy_fn(x)
        import numpy as np
        return _float_value(getattr(np, np_name), x)

    def fdiff(self, argindex=1):
        return derivative(self.args[0])

    return type(name, (RealFunction,), {"nargs": 1, "_number": classmethod(_number), "fdiff": fdiff,
                                        "standard": staticmethod(standard)})


_HALF = sp.Rational(1, 2)
Asin = _domain_function("Asin", sp.asin, lambda x: RealPow(1 - x * x, -_HALF), lambda x: abs(x) <= 1, "arcsin",
                        sp.asin)
Acos = _domain_function("Acos", sp.acos, lambda x: -RealPow(1 - x * x, -_HALF), lambda x: abs(x) <= 1, "arccos",
                        sp.acos)
Acosh = _domain_function("Acosh", sp.acosh, lambda x: RealPow(x * x - 1, -_HALF), lambda x: x >= 1, "arccosh",
                         sp.acosh)
class Tanh(RealFunction):
    """tanh, differentiated as Sech2: sympy's 1 - tanh(x)**2 cancels to few digits where
    tanh(x) is near 1 (at x = 8 it keeps 8 of 16)."""

    nargs = 1
    standard = sp.tanh

    def fdiff(self, argindex=1):
        return Sech2(self.args[0])

    @classmethod
    def _number(cls, x):
        return sp.tanh(x)

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return super().eval(x)
        if x.could_extract_minus_sign():
            return -cls(-x)
        return None


class Sech2(RealFunction):
    """1/cosh(x)**2, the derivative of tanh, differentiated as -2 tanh(x) sech2(x): every
    derivative stays 0 where cosh overflows (sympy's -2 sinh/cosh**3 is inf/inf there)."""

    nargs = 1
    standard = staticmethod(lambda x: 1 / sp.cosh(x) ** 2)

    def fdiff(self, argindex=1):
        return -2 * Tanh(self.args[0]) * self

    @classmethod
    def _number(cls, x):
        return 1 / sp.cosh(x) ** 2

    @classmethod
    def eval(cls, x):
        if x.is_Number:
            return super().eval(x)
        if x.could_extract_minus_sign():
            return cls(-x)
        return None


Atanh = _domain_function("Atanh", sp.atanh, lambda x: 1 / (1 - x * x), lambda x: abs(x) < 1, "arctanh", sp.atanh)
Log1p = _domain_function("Log1p", lambda x: sp.log(1 + x), lambda x: 1 / (1 + x), lambda x: x > -1, "log1p",
                         lambda x: sp.log(1 + x))
Log2 = _domain_function("Log2", lambda x: sp.log(x) / sp.log(2), lambda x: 1 / (x * sp.log(2)), lambda x: x > 0,
                        "log2", lambda x: sp.log(x) / sp.log(2))
Log10 = _domain_function("Log10", lambda x: sp.log(x) / sp.log(10), lambda x: 1 / (x * sp.log(10)),
                         lambda x: x > 0, "log10", lambda x: sp.log(x) / sp.log(10))


def standard(expr):
    """``expr`` with symgrad's real functions written as sympy's own (for reading it)."""
    return expr.replace(lambda e: isinstance(e, RealFunction) and e.standard is not None,
                        lambda e: e.standard(*e.args))


class Negation(BooleanFunction):
    """not c, kept as it is: sympy's Not(x > 0) becomes x <= 0, which is false for NaN."""

    nargs = 1

    @classmethod
    def eval(cls, c):
        if c is sp.true or c is sp.false:
            return sp.false if c is sp.true else sp.true
        if isinstance(c, Negation):
            return c.args[0]
        return None

    def _eval_as_set(self):
        raise NotImplementedError("Negation is kept as it is")


class Recip(RealFunction):
    """1 / c for a float constant c, printed as a division by c (x / 0.1 is not x * 10.0 in
    floating point; sympy would fold 1/0.1 into a rounded number)."""

    nargs = 1
    standard = staticmethod(lambda c: 1 / c)

    @classmethod
    def eval(cls, c):
        if not c.is_Float:
            return 1 / c
        return None

    def fdiff(self, argindex=1):
        return -Recip(self.args[0]) ** 2


class Round(_Step):
    """Rounding half to even (Python's round, np.round, np.rint): C's rint."""
    _f = staticmethod(lambda x: sp.Integer(round(x)) if x.is_Rational else sp.Integer(round(float(x))))


class _Remainder(RealFunction):
    """x - y * q(x / y) for a step q: derivative 1 by x, -q(x/y) by y (almost everywhere)."""

    nargs = 2
    _q = None

    def fdiff(self, argindex=1):
        x, y = self.args
        return sp.S.One if argindex == 1 else -self._q(x / y)

    @classmethod
    def _number(cls, x, y):
        if y == 0 or x.is_infinite:
            return sp.nan
        if y.is_infinite:
            return cls._at_infinity(x, y)
        return x - y * cls._q(x / y)


class Mod(_Remainder):
    """Python's x % y (np.mod): the sign of y."""
    _q = staticmethod(lambda v: Floor(v))

    @staticmethod
    def _at_infinity(x, y):
        return x if (x >= 0) == (y > 0) or x == 0 else y


class Fmod(_Remainder):
    """C's fmod (math.fmod, np.fmod): the sign of x."""
    _q = staticmethod(lambda v: Trunc(v))

    @staticmethod
    def _at_infinity(x, y):
        return x


class Remainder(_Remainder):
    """IEEE's remainder (math.remainder): x - y * round_half_even(x / y)."""
    _q = staticmethod(lambda v: Round(v))

    @staticmethod
    def _at_infinity(x, y):
        return x


class FloorDiv(RealFunction):
    """Python's x // y (np.floor_divide): floor of the exact quotient; derivative 0."""

    nargs = 2

    def fdiff(self, argindex=1):
        return sp.S.Zero

    @classmethod
    def _number(cls, x, y):
        if y == 0 or x.is_infinite:
            return sp.nan if x == 0 or x.is_infinite or y == 0 and x == 0 else \
                (sp.oo if (x > 0) == (y >= 0) else -sp.oo)
        return sp.Integer(sp.floor(x / y)) if x.is_Rational and y.is_Rational else \
            sp.Float(float(x) // float(y))
