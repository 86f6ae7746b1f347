"""symgrad: exact derivatives of plain Python functions, compiled to C.

    F = symgrad.compile(f)          # F(x) evaluates f in compiled C on numpy arrays
    F.grad(3.0), F.hessian, F.jacobian, F.value_and_grad, F.derivative(5)
"""
from __future__ import annotations

import re

from .errors import CompileError, TraceError
from .function import Function, Origin

__version__ = "0.1.0"
__all__ = ["compile", "from_sympy", "grad", "jacobian", "hessian", "value_and_grad", "derivative",
           "where", "Function", "TraceError", "CompileError"]


def compile(f=None, shapes=None, *, dtype="float64"):
    """Compile ``f`` (a plain Python function of real numbers/arrays) into a Function.

    ``shapes`` gives one core shape per positional argument: ``()`` for a scalar (the
    default), ``(n,)`` or ``(m, n)`` for arrays. Usable as ``@compile`` or
    ``@compile(shapes=...)``. Tracing happens on first use."""
    if f is None:
        return lambda g: compile(g, shapes, dtype=dtype)
    if isinstance(f, Function):
        return f
    if not callable(f):
        raise TypeError(f"symgrad.compile expects a Python function, got {type(f).__name__}")
    from .signature import traced_params
    names, core = traced_params(f, shapes)  # check shapes against the signature now
    name = re.sub(r"\W", "_", getattr(f, "__name__", "f")) or "f"
    if name == "_lambda_":
        name = "lambda"

    origin = Origin(f, shapes)

    def make_program():
        from .function import stage
        from .trace import trace
        origin.fingerprint()  # pinned before the trace reads globals that may change later
        with stage(name, "trace"):
            return trace(f, shapes)
    return Function(name, make_program, dtype, args=tuple(zip(names, core)), origin=origin)


def from_sympy(exprs, args, *, dtype="float64", name="sympy_f"):
    """A Function evaluating sympy expressions you already have.

    ``exprs``: an expression, a list, a Matrix or an Array (a one-column or one-row Matrix
    is a vector). ``args``: one entry per argument: a symbol or dynamicsymbol (a scalar
    argument), or a list/Matrix of them (an array argument). Every free symbol of
    ``exprs`` must be in ``args``. ``.grad``, ``.jacobian``, ``.hessian`` work as for
    traced functions; ``symgrad.jacobian(F, argnums=0)`` differentiates by one argument."""
    from .function import stage
    from .sympy_input import program_from_sympy
    with stage(name, "convert sympy expressions"):  # now: errors surface where they were made
        prog = program_from_sympy(exprs, args)
    return Function(re.sub(r"\W", "_", name), lambda: prog, dtype,
                    args=tuple((a.name, a.shape) for a in prog.args))


def _verb(kind):
    def verb(f, argnums=None, shapes=None, *, dtype="float64"):
        F = compile(f, shapes, dtype=dtype)
        return F._derive(kind, argnums)
    verb.__name__ = kind
    verb.__doc__ = (f"``{kind}`` of ``f`` w.r.t. ``argnums`` (default: every argument) as a compiled "
                    "Function; see Function.{kind}.")
    return verb


grad = _verb("grad")
jacobian = _verb("jacobian")
hessian = _verb("hessian")
value_and_grad = _verb("value_and_grad")


def derivative(f, n=1, argnum=0, shapes=None, *, dtype="float64"):
    """n-th derivative of ``f`` w.r.t. its scalar argument ``argnum``, compiled."""
    return compile(f, shapes, dtype=dtype).derivative(n, argnum)


def where(cond, a, b):
    """Traced select: ``a`` where ``cond`` holds, else ``b``. Use it instead of ``if`` on traced values."""
    from .trace import where as _where
    return _where(cond, a, b)
