"""Real functions of real arguments, for sympy at symgrad's edges (``.expr``, ``from_sympy``).

sympy's own ``Abs``, ``sign``, ``log``, cube roots, rounding and powers treat their argument
as a complex number unless it is provably real (``log(-2)`` is complex, ``Abs`` may hold
``re`` and ``im``). The functions here are real by construction: at numbers they take
numpy's value (NaN outside the domain, ±inf), whatever sympy can prove about the argument;
``standard`` writes them as sympy's own functions, for showing (or differentiating) a result."""
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

    def _eval_derivative(self, s):
        """The derivative of the standard form (symgrad itself differentiates its IR, not these)."""
        return super()._eval_derivative(s) if self.standard is None else sp.diff(self.standard(*self.args), s)

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


def standard(expr):
    """``expr`` with symgrad's real functions written as sympy's own (for reading it)."""
    return expr.replace(lambda e: isinstance(e, RealFunction) and e.standard is not None,
                        lambda e: e.standard(*e.args))


class Abs(RealFunction):
    nargs = 1
    standard = sp.Abs

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

    @classmethod
    def _number(cls, x):
        if x.is_Rational:
            r = sp.real_root(x, 3)
            return r if r.is_Rational else None  # cbrt(2) stays as it is (exact)
        if x.is_infinite:
            return x
        return (1 if x >= 0 else -1) * abs(x) ** sp.Rational(1, 3)  # a Float for a Float


class _Step(RealFunction):
    """A step function of one argument (``_f`` at a finite number); ±inf stays."""

    nargs = 1
    _f = None

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


class Round(_Step):
    """Rounding half to even (Python's round, np.round, np.rint): C's rint."""
    _f = staticmethod(lambda x: sp.Integer(round(x)) if x.is_Rational else sp.Integer(round(float(x))))


class copysign(RealFunction):
    """C's copysign(a, b): |a| with the sign of b."""

    nargs = 2

    @classmethod
    def _number(cls, a, b):
        return sp.Float(math.copysign(float(a), float(b)))


class _Remainder(RealFunction):
    """x - y * q(x / y) for a step q."""

    nargs = 2
    _q = None

    @classmethod
    def _number(cls, x, y):
        if y.is_zero or x.is_infinite:
            return sp.nan
        if y.is_infinite:
            return cls._at_infinity(x, y)
        return x - y * cls._q(x / y)


class Mod(_Remainder):
    """Python's x % y (np.mod): the sign of y."""
    _q = staticmethod(lambda v: Floor(v))

    @staticmethod
    def _at_infinity(x, y):
        return x if (x >= 0) == (y > 0) or x.is_zero else y


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
    """Python's x // y (np.floor_divide): floor of the exact quotient."""

    nargs = 2

    @classmethod
    def _number(cls, x, y):
        if y.is_zero:
            return sp.nan if x.is_zero else sp.oo if (x > 0) == (y >= 0) else -sp.oo
        if x.is_infinite:
            return sp.nan
        return sp.Integer(sp.floor(x / y)) if x.is_Rational and y.is_Rational else \
            sp.Float(float(x) // float(y))


def _float_value(name, *args):
    """The float64 value of numpy's function ``name`` at number arguments (NaN outside the domain)."""
    import warnings

    import numpy as np
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        v = float(getattr(np, name)(*[float(a) for a in args]))
    return sp.nan if v != v else sp.oo if v == float("inf") else -sp.oo if v == -float("inf") else sp.Float(v)


class RealPow(RealFunction):
    """base ** exponent as numpy computes it: NaN for a negative base to a non-integer power
    (sympy's Pow would take the complex root); a sympy power for an integer exponent."""

    nargs = 2
    standard = staticmethod(lambda a, b: a ** b)

    @classmethod
    def eval(cls, a, b):
        if b.is_zero:
            return sp.S.One
        integer = b.is_Integer or (b.is_Float and float(b).is_integer())
        if a.is_Number and b.is_Number and (not (a.is_finite and b.is_finite) or a.is_zero and b.is_negative
                                            or a.is_negative and not integer):
            return _float_value("power", a, b)  # NaN, ±inf, 1 ** nan: numpy's
        if b == 1:
            return a
        if integer or a.is_Number and b.is_Number:
            return a ** b  # an integer power is real for every real base
        if isinstance(a, RealPow) and a.args[0].is_extended_nonnegative:
            return RealPow(a.args[0], a.args[1] * b)
        return None


def _domain_function(name, sympy_fn, inside, np_name):
    """A real function: ``sympy_fn`` (also its standard form), at numbers outside its domain
    (``inside(x)`` false) numpy's ``np_name`` (NaN, ±inf) instead."""

    def _number(cls, x):
        return sympy_fn(x) if inside(x) else _float_value(np_name, x)

    return type(name, (RealFunction,), {"nargs": 1, "_number": classmethod(_number),
                                        "standard": staticmethod(sympy_fn)})


Log = _domain_function("Log", sp.log, lambda x: x > 0, "log")
Log1p = _domain_function("Log1p", lambda x: sp.log(1 + x), lambda x: x > -1, "log1p")
Log2 = _domain_function("Log2", lambda x: sp.log(x) / sp.log(2), lambda x: x > 0, "log2")
Log10 = _domain_function("Log10", lambda x: sp.log(x) / sp.log(10), lambda x: x > 0, "log10")
Asin = _domain_function("Asin", sp.asin, lambda x: abs(x) <= 1, "arcsin")
Acos = _domain_function("Acos", sp.acos, lambda x: abs(x) <= 1, "arccos")
Acosh = _domain_function("Acosh", sp.acosh, lambda x: x >= 1, "arccosh")
Atanh = _domain_function("Atanh", sp.atanh, lambda x: abs(x) < 1, "arctanh")
Tanh = sp.tanh  # real for every real argument as it is


class LogAddExp(RealFunction):
    """numpy's logaddexp, log(exp(a) + exp(b)) without overflow: kept as itself in ``.expr``
    (its textbook form overflows at a = 1000, and from_sympy reads this back as the op); at
    numbers numpy's value."""

    nargs = 2
    base = sp.E

    @classmethod
    def _number(cls, a, b):
        return _float_value("logaddexp" if cls.base is sp.E else "logaddexp2", a, b)

    def fdiff(self, argindex=1):
        a, b = self.args if argindex == 1 else self.args[::-1]
        return 1 / (1 + self.base ** (b - a))


class LogAddExp2(LogAddExp):
    """numpy's logaddexp2, log2(2**a + 2**b) without overflow."""

    base = sp.Integer(2)


def Sech2(x):
    """1/cosh(x)**2, the derivative of tanh."""
    return 1 / sp.cosh(x) ** 2


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
