"""A Program in sympy, for reading it: ``Function.expr`` and ``symgrad show``.

``to_sympy`` turns a Program (plain data) into a ``SymProgram``: inputs become real sympy
symbols, each node one assignment ``t = expr`` (identical right-hand sides shared), and
``inlined`` gives the closed form. Every op has a real meaning (realfns.py); where sympy's
own evaluation of numbers would leave the reals (``log(-2)``, ``x/0``), the value is the one
numpy computes (NaN, ±inf), so nothing complex appears."""
from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp
from sympy.codegen import cfunctions as cf  # noqa: F401  (the registry's sympy forms read m.cf)

from . import realfns as R
from ..ir import ops as _registry
from ..ir.nodes import is_arg, is_const, op_name
from ..ir.program import Program, const_value


@dataclass(frozen=True)
class SymArg:
    name: str
    shape: tuple
    symbols: tuple  # flat, C order

    @property
    def size(self):
        return math.prod(self.shape)


@dataclass(frozen=True)
class SymOutput:
    name: str
    shape: tuple
    exprs: tuple  # flat, C order

    @property
    def size(self):
        return math.prod(self.shape)


@dataclass(frozen=True)
class SymProgram:
    args: tuple     # of SymArg
    body: tuple     # of (Symbol, Expr)
    outputs: tuple  # of SymOutput

    def input_symbols(self):
        return [s for a in self.args for s in a.symbols]

    def output_exprs(self):
        return [e for o in self.outputs for e in o.exprs]

    def inlined(self, limit=None):
        """Output expressions with every temporary substituted away (closed form).

        With ``limit``, returns None as soon as the expanded trees would exceed
        ``limit`` operations in all (the DAG may expand exponentially), or where sympy
        cannot build the closed form (a select folded into a condition it cannot normalise)."""
        outs = self.output_exprs()
        if limit is not None:  # sizes first (cheap): sympy's work only for a closed form that fits
            size = {}
            for t, e in self.body:
                size[t] = expanded_size(e, size)
                if size[t] > limit:
                    return None
            if sum(expanded_size(e, size) for e in outs) > limit:
                return None
        env = {}
        for t, e in self.body:
            try:
                env[t] = _replaced(e, env)
            except (ValueError, TypeError):
                if limit is None:
                    raise
                return None
        return [_replaced(e, env) for e in outs]


def _replaced(e, env):
    """``e.xreplace(env)`` (evaluated: a closed form), a temporary that is a select raised to
    a negative power kept as IEEE computes it (power_of_select: 1/0.0 is inf, not zoo)."""
    extra = {p: power_of_select(env[p.base], p.exp) for p in e.atoms(sp.Pow)
             if p.exp.is_negative and isinstance(env.get(p.base), sp.Piecewise)}
    return e.xreplace({**env, **extra} if extra else env)


def power_of_select(select, exponent):
    """A select to a power, each branch to that power as numpy computes it (sympy's own
    Piecewise power makes 1/0.0 complex infinity, where IEEE gives inf)."""
    return sp.Piecewise(*[(power(v, exponent), c) for v, c in select.args], evaluate=False)


def expanded_size(e, size):
    """Operation count of ``e`` once every temporary in it is replaced by its own expansion
    (``size``: temporary -> its expanded count), each occurrence counted: a temporary used
    twice (as max(a, b) uses its operands) doubles."""
    n = 0
    stack = [e]
    while stack:
        x = stack.pop()
        if x.args:
            n += max(1, len(x.args) - 1)
            stack.extend(x.args)
        elif x in size:
            n += size[x]
    return n


def arg_symbols(arg):
    """The real symbols of one argument: ``x`` for a scalar, ``x[i, j]`` for array entries."""
    if arg.shape == ():
        return (sp.Symbol(arg.name, real=True),)
    return tuple(sp.Symbol(f"{arg.name}[{', '.join(map(str, i))}]", real=True)
                 for i in np.ndindex(*arg.shape))


class Recorder:
    """Assignments in order, with value numbering (numbers and conditions stay inline)."""

    def __init__(self, prefix="t"):
        self.body, self.memo, self.prefix = [], {}, prefix

    def __call__(self, expr):
        if expr.is_Atom or not isinstance(expr, sp.Expr):
            return expr
        t = self.memo.get(expr)
        if t is None:
            t = sp.Symbol(f"{self.prefix}.{len(self.body)}", real=True)  # never a Python name
            self.body.append((t, expr))
            self.memo[expr] = t
        return t


def to_sympy(prog: Program) -> SymProgram:
    args = tuple(SymArg(a.name, a.shape, arg_symbols(a)) for a in prog.args)
    record = Recorder()
    val = []
    for node in prog.nodes:
        if is_arg(node):
            val.append(args[node[1]].symbols[node[2]])
        elif is_const(node):
            val.append(_number(node))
        else:
            val.append(record(node_expr(prog, node, [val[i] for i in node[1:]])))
    outputs = tuple(SymOutput(o.name, o.shape, tuple(val[i] for i in o.refs)) for o in prog.outputs)
    return SymProgram(args, tuple(record.body), outputs)


def node_expr(prog, node, operands):
    """The sympy expression of one operation node on the expressions of its operands."""
    op = op_name(node)
    special = _SPECIAL.get(op)
    e = special(prog.nodes, node, operands) if special is not None else None
    return _apply(op, operands) if e is None else e


def _ieee(nodes, node, operands):
    """A division or a power, IEEE's at a zero (its sign: that of a constant second operand)."""
    return OPS[op_name(node)](*operands, negative_zero=_negative_zero(nodes[node[2]]))


def _atan2(nodes, node, operands):
    if _negative_zero(nodes[node[1]]):
        return -sp.atan2(sp.S.Zero, operands[1])  # atan2(-0.0, x): the lower half plane
    return None


def _copysign(nodes, node, operands):
    if is_const(nodes[node[2]]):  # the sign of a constant, -0.0 included
        return -R.Abs(operands[0]) if math.copysign(1, float(const_value(nodes[node[2]]))) < 0 \
            else R.Abs(operands[0])
    return None


def _number(node):
    v = const_value(node)
    if isinstance(v, bool) or isinstance(v, int):
        return sp.Integer(v)
    if isinstance(v, Fraction):
        return sp.Rational(v.numerator, v.denominator)
    if isinstance(v, float):  # at 113 bits, so that folding constants is exact (math.fsum)
        return sp.Float(v, precision=113) if math.isfinite(v) else sp.nan if math.isnan(v) else \
            sp.oo if v > 0 else -sp.oo
    return _NAMED[v]


_NAMED = {name: form(sp) for name, (_, form) in _registry.CONSTANTS.items()}


def _negative_zero(node):
    return is_const(node) and node[1] == "f" and node[2].startswith("-0x0.0")


def div(a, b, negative_zero=False):
    """a / b; by a zero, what IEEE gives: ±inf, or nan for 0/0 (sympy would say zoo)."""
    if b.is_zero and b.is_Number:
        inf = -sp.oo if negative_zero else sp.oo
        if a.is_Number:
            return sp.nan if a.is_zero or a is sp.nan else inf if a > 0 else -inf
        return a * inf
    return a / b


def power(a, b, negative_zero=False):
    """a ** b as numpy computes it: 0 to a negative power is inf, a non-integer power is a
    RealPow (NaN for a negative base, where sympy's Pow would be complex)."""
    if a.is_Number and a.is_zero and b.is_Number and b.is_extended_negative:
        odd = b.is_Integer and b % 2 == 1
        return -sp.oo if negative_zero and odd else sp.oo
    return R.RealPow(a, b)  # a sympy power for an integer exponent


_SPECIAL = {"div": _ieee, "pow": _ieee, "atan2": _atan2, "copysign": _copysign}  # ops whose sympy form reads
# its operands' nodes (None: the registry's form)


def relation(rel, negate=False):
    def f(a, b):
        if a is sp.nan or b is sp.nan:
            return sp.true if negate else sp.false  # IEEE: only != holds
        if a == b:  # sympy would call x == x true; at run time x may be NaN
            return R.IsNan(a) if negate else sp.false if rel in (sp.Lt, sp.Gt) else R.Negation(R.IsNan(a))
        if a.is_Number and b.is_Number:
            return rel(a, b)
        return rel(a, b, evaluate=False)  # not decided from assumptions: at run time either may be NaN
    return f


def select(c, a, b):
    """a where c holds, else b: a Piecewise built as it is (sympy's evaluation of a Piecewise
    costs more than everything else in a long chain of selects, and adds nothing here)."""
    if c is sp.true or a == b:
        return a
    if c is sp.false:
        return b
    return sp.Piecewise((a, c), (b, True), evaluate=False)


def boolean(c):
    """A condition; a number (a constant condition) is true unless it is 0."""
    return (sp.true if c != 0 else sp.false) if isinstance(c, sp.Number) else c

# op -> sympy constructor on sympy arguments (each op's sympy form is in the registry)
OPS = {name: form(sys.modules[__name__]) for name, form in _registry.SYMPY.items()}
# ops whose sympy value of numbers may leave the reals: numpy's float64 value instead
_FLOAT = frozenset(name for name, o in _registry.OPS.items() if o.real)


def _apply(op, operands):
    if not all(isinstance(a, sp.Number) or a in (sp.pi, sp.E) for a in operands) or op not in _FLOAT:
        return OPS[op](*operands)
    e = OPS[op](*operands)
    if e.is_extended_real or e is sp.nan:
        return e
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            v = float(_registry.OPS[op].value(*[np.float64(float(a)) for a in operands]))
        except (ValueError, OverflowError, ZeroDivisionError):
            v = math.nan
    return _number(("const", "f", float.hex(v)))
