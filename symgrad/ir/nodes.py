"""What the rest of symgrad asks of an IR node, so that no module outside symgrad/ir/ reads
or compares a node's tag: the structural ops beside the registry (STRUCTURAL next to ops.OPS,
``op_of``), predicates named for what they mean (``is_sum``, ``is_atom``, ``is_condition``
...) and the operands a walk follows (``operands``).

A node stays a plain tuple ``(op, *operands)``, built with an op's name (``g.node("mul", a, b)``):
the tracer builds millions of them, value numbering hashes them, and Program.key (the cache key
of every compiled kernel) is the sha256 of their repr. A record class or a tuple subclass would
cost time and memory per node and a repr of its own (every key changed); a predicate is one
call."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .ops import CALLS, LIBRARY, OPS, PICKS


@dataclass(frozen=True)
class Structural:
    """A node that is no operation on numbers (no value rule, no C spelling): its layout."""
    name: str
    operands: str                  # what follows the name in the tuple
    leaf: bool                     # whether no operand is a node (a sum's body is one)
    partials: Optional[Callable] = None  # (as ops.Op: a sum's are transforms/derive.py's)
    condition: bool = False
    step: bool = False


STRUCTURAL = {s.name: s for s in (
    Structural("arg", "(a, j): entry j (C order) of argument a", True),
    Structural("const", "(tag, *payload): an exact number: ('i', int), ('f', float.hex(x)), ('q', p, q) "
               "a fraction, ('s', name) a named constant (pi, E, EulerGamma)", True),
    Structural("read", "(source, k, index): the entry at affine ``index`` (program.index_text) of "
               "argument k (source 'a') or data array k (source 'd'), over the index's loop variables; source "
               "'i' (k 0): the index itself as a number (which entry an extremum picked)", True),
    Structural("sum", "(body, loops[, order]): node ``body`` summed over loops ((variable, extent), ...); "
               "order (block, run): in numpy's pairwise order (tracing/lazy_sum.py)", False),
    Structural("extremum", "(body, loops, pick, part): the chain pick(pick(b0, b1), b2)... of node ``body`` over "
               "loops (C order of the variables), pick an op of ops.PICKS (maximum, minimum, fmax, fmin); part 0 "
               "its value, 1 the flat index of the entry it picked (tracing/lazy_extremum.py)", False),
)}
_LEAVES = frozenset(n for n, s in STRUCTURAL.items() if s.leaf)
_ATOMS = frozenset({"const", "arg"})
_LOOPS = frozenset({"read", "sum", "extremum"})
_REDUCTIONS = frozenset({"sum", "extremum"})
REDUCTIONS = _REDUCTIONS  # (ir/ modules: the ops whose body varies with loops they bind)
_ADDITIVE = frozenset({"add", "sub"})
_POLYNOMIAL = frozenset({"const", "arg", "add", "sub", "mul", "neg", "pow"})
_PASSIVE = _LEAVES | {name for name, op in OPS.items() if op.condition}


def op_name(n) -> str:
    """The name of node ``n``'s op (a key of ops.OPS or STRUCTURAL): to build a node like it."""
    return n[0]


def op_of(n):
    """The registry entry of node ``n``'s op: an ops.Op, or a Structural."""
    op = OPS.get(n[0])
    return op if op is not None else STRUCTURAL[n[0]]


def operands(n) -> tuple:
    """The nodes node ``n`` reads (a walk's edges): none for a leaf, a sum's body."""
    op = n[0]
    if op in _LEAVES:
        return ()
    if op in _REDUCTIONS:
        return (n[1],)
    return n[1:]


# -- structural nodes -------------------------------------------------------------------------
def is_arg(n) -> bool:
    """An entry of an argument: ``("arg", a, j)``."""
    return n[0] == "arg"


def is_const(n) -> bool:
    """An exact number: ``("const", tag, *payload)`` (program.const_value)."""
    return n[0] == "const"


def is_read(n) -> bool:
    """An entry of an array a loop reads: ``("read", source, k, index)``."""
    return n[0] == "read"


def is_sum(n) -> bool:
    """A sum over loops: ``("sum", body, loops[, order])``."""
    return n[0] == "sum"


def is_extremum(n) -> bool:
    """A max or min over loops: ``("extremum", body, loops, pick, part)`` (part 0 value, 1 index)."""
    return n[0] == "extremum"


def is_reduction(n) -> bool:
    """A node that binds loop variables of its body: a sum or an extremum."""
    return n[0] in _REDUCTIONS


def extremum_value(n) -> bool:
    """The value of an extremum (not the index of the entry it picked)."""
    return n[0] == "extremum" and n[4] == 0


def reads_index(n) -> bool:
    """A read of the loop index itself (``("read", "i", 0, index)``): a number of no argument."""
    return n[0] == "read" and n[1] == "i"


def is_leaf(n) -> bool:
    """A node no other node is an operand of (const, arg, read: a read's operands are its index)."""
    return n[0] in _LEAVES


def is_atom(n) -> bool:
    """A constant or an argument's entry: printed as itself, varying with no loop."""
    return n[0] in _ATOMS


def is_loop(n) -> bool:
    """A node only a program whose arrays stayed loops has: a read, a sum or an extremum."""
    return n[0] in _LOOPS


def reads_data(n) -> bool:
    """A read of a data array's entry or of the index itself (a number of the trace, not of an argument)."""
    return n[0] == "read" and n[1] != "a"


def argument_of(n):
    """The argument an ``arg`` node or a read of an argument stands for, else None."""
    op = n[0]
    if op == "arg":
        return n[1]
    return n[2] if op == "read" and n[1] == "a" else None


def looped_argument(n):
    """The argument a read of an argument's entry reads (a loop over it), else None."""
    return n[2] if n[0] == "read" and n[1] == "a" else None


# -- operations -------------------------------------------------------------------------------
def is_select(n) -> bool:
    """``("select", condition, if_true, if_false)``."""
    return n[0] == "select"


def is_pick(n) -> bool:
    """A select or an op that picks one of its operands (maximum, minimum, fmax, fmin): their
    chains (np.max) are printed link by link."""
    return n[0] in PICKS


def is_neg(n) -> bool:
    return n[0] == "neg"


def is_mul(n) -> bool:
    return n[0] == "mul"


def is_add(n) -> bool:
    return n[0] == "add"


def is_additive(n) -> bool:
    """A sum or a difference of two nodes (a link of a running sum)."""
    return n[0] in _ADDITIVE


def is_pow(n) -> bool:
    """``("pow", base, exponent)``."""
    return n[0] == "pow"


def is_negation(n) -> bool:
    """A logical not of a condition."""
    return n[0] == "not"


def is_conjunction(n) -> bool:
    """A logical and of two conditions."""
    return n[0] == "and"


def is_junction(n) -> bool:
    """A logical and or or of two conditions."""
    return n[0] == "and" or n[0] == "or"


def is_condition(n) -> bool:
    """An op that gives a condition (0/1: a comparison, a test, logic), not a number."""
    op = OPS.get(n[0])
    return op is not None and op.condition


def is_passive(n) -> bool:
    """A node no derivative passes through: a leaf or a condition."""
    return n[0] in _PASSIVE


def is_call(n) -> bool:
    """An op whose C spelling is a function call (ops.CALLS: the kernel's count of calls)."""
    return n[0] in CALLS


def calls_library(n) -> bool:
    """An op that calls a maths library function (ops.LIBRARY: a vector one in a SIMD loop)."""
    return n[0] in LIBRARY


def is_polynomial(n) -> bool:
    """A node that keeps a polynomial one: a constant, an argument, +, -, *, negation, or a
    power (whose exponent the caller checks)."""
    return n[0] in _POLYNOMIAL
