"""The op record and the registry it is entered in (each family's module adds its ops; the
package's __init__ derives every table from them)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np


@dataclass(frozen=True)
class Op:
    name: str
    arity: int                    # -1: any number of operands (hypot)
    value: Callable               # numpy arrays (float64) -> numpy array, exactly numpy's / C's
    partials: Optional[Callable]  # (graph, node, *operands) -> [partial node or None, ...]; None: condition
    c: object                     # C spelling: "name" (a call; the float target adds "f"),
                                  # ("infix", "+"), ("prefix", "-"), or a function(args, printer) -> text
    condition: bool = False       # gives a condition (0/1), not a number
    step: bool = False            # derivative 0 almost everywhere
    library: bool = False         # its C calls a maths library function (not an instruction)
    vector: Optional[str] = None  # the C function with vector variants (libmvec) it calls, if any
    math: tuple = ()              # math.<name> traced as this op
    numpy: tuple = ()             # numpy.<ufunc> traced as this op
    scipy: tuple = ()             # scipy.special.<ufunc> traced as this op
    sympy: Optional[Callable] = None  # edge module -> sympy constructor on sympy arguments
    reads: Optional[Callable] = None  # edge module -> the sympy functions from_sympy reads as this op
    real: bool = False            # of numbers, sympy's value may leave the reals (numpy's is used)
    swapped: Optional[str] = None  # a comparison: a op b is b swapped a
    pick: bool = False            # gives one of its operands unchanged (select, maximum, ...)
    nan: str = ""                 # its NaN and tie rule, where it has one to state


OPS: dict = {}


def op(name, arity, value, d=None, c=None, **facts):
    """Register op ``name``: ``d`` its partials, ``c`` its C spelling (default: a call of ``name``)."""
    OPS[name] = Op(name, arity, value, d, name if c is None else c, **facts)


def vectorized(f):
    """A math-module function of floats on numpy arrays (for the few numpy lacks); NaN where
    Python raises."""
    def g(*xs):
        def one(*v):
            try:
                return f(*v)
            except (ValueError, OverflowError, ZeroDivisionError):
                return math.nan
        return np.vectorize(one, otypes=[np.float64])(*xs)
    return g


def sq(g, x):
    return g.mul(x, x)


# named constants (from sympy input): name -> (its double, its sympy form)
CONSTANTS = {"pi": (math.pi, lambda sp: sp.pi), "E": (math.e, lambda sp: sp.E),
             "EulerGamma": (0.5772156649015329, lambda sp: sp.EulerGamma)}
