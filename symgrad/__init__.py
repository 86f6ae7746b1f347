"""symgrad: exact derivatives of plain Python functions, compiled to C.

    F = symgrad.compile(f)          # F(x) evaluates f in compiled C on numpy arrays
    F.grad(3.0), F.hessian, F.jacobian, F.value_and_grad, F.derivative(5)
"""
from __future__ import annotations

from .errors import CacheError, CacheWarning, CompileError, TraceError
from .function import Function
from .signature import checked_keywords as _checked_keywords
from .pipeline.source import Source
from .options import Options

__version__ = "0.1.0"
__all__ = ["compile", "from_sympy", "derivative", "where", "Function", "Options", "TraceError", "CompileError",
           "CacheError", "CacheWarning"]  # and the verbs of call/verbs.py (_verbs)


def compile(f=None, shapes=None, *, dtype=None, options=None):
    """Compile ``f`` (a plain Python function of real numbers/arrays) into a Function.

    ``shapes`` gives one core shape per positional argument: ``()`` for a scalar (the
    default), ``(n,)`` or ``(m, n)`` for arrays. Usable as ``@compile`` or
    ``@compile(shapes=...)``. ``f`` is traced once, at the first call of the Function or
    of any derivative taken from it; ``dtype`` is "float64" (the default) or "float32";
    ``options`` (a symgrad.Options) tunes the code. A Function given as ``f`` is returned as
    it is; asking it for other shapes, dtype or options than its own raises."""
    if f is None:
        return lambda g: compile(g, shapes, dtype=dtype, options=options)
    if isinstance(f, Function):
        return _as_compiled(f, shapes, dtype, options)
    if not callable(f):
        raise TypeError(f"symgrad.compile expects a Python function, got {type(f).__name__}")
    from .signature import in_class_body, is_method, traced_params
    if in_class_body(f, "cls"):
        raise TypeError(f"symgrad.compile on {f.__qualname__}, a classmethod (its first parameter is cls), is not "
                        "supported: compile a method (self first) or a function of the values it reads")
    method = is_method(f)  # defined in a class body with `self` first: bound when read from an instance
    names, core = traced_params(f, shapes, skip=int(method))  # check shapes against the signature now
    name = getattr(f, "__name__", "f")
    if name == "<lambda>":
        name = "lambda"
    from . import options as _options
    loop_min = (options or _options.DEFAULT).loop_min_size
    dtype = "float64" if dtype is None else dtype  # Function checks it before anything is traced
    return Function(name, Source(f, shapes, method=method, loop_min=loop_min, dtype=dtype), dtype,
                    args=tuple(zip(names, core)), options=options)


def _as_compiled(F, shapes, dtype, options):
    """``F`` itself, where what was asked of it is what it is (else a ValueError: a silently
    float64 kernel for a float32 request is a wrong result)."""
    import numpy as np
    own = [s for _, s in F.args]
    asked = [("shapes", shapes is not None and [(s,) if isinstance(s, int) else tuple(s) for s in shapes] != own,
              shapes, f"shapes={own}"),
             ("dtype", dtype is not None and np.dtype(dtype) != F.dtype, dtype, f"dtype={str(F.dtype)!r}"),
             ("options", options is not None and options != F.options, options, repr(F.options))]
    for what, differs, value, has in asked:
        if differs:
            raise ValueError(f"{F.py_name} is already a compiled Function ({has}); it cannot take {what}="
                             f"{value!r}: compile its Python function (or sympy expressions, from_sympy) with "
                             f"{what}=... instead")
    return F


def from_sympy(exprs, args, *, dtype="float64", name="sympy_f", options=None):
    """A Function evaluating sympy expressions you already have.

    ``exprs``: an expression, a list, a Matrix or an Array (a one-column or one-row Matrix
    is a vector). ``args``: one entry per argument: a symbol or dynamicsymbol (a scalar
    argument), or a list/Matrix of them (an array argument). Every free symbol of
    ``exprs`` must be in ``args``. ``.grad``, ``.jacobian``, ``.hessian`` work as for
    traced functions; ``symgrad.jacobian(F, argnums=0)`` differentiates by one argument."""
    from .options import DEFAULT
    from .pipeline.source import stage
    from .edges.from_sympy import program_from_sympy
    with stage(name, "convert sympy expressions"):  # now: errors surface where they were made
        prog = program_from_sympy(exprs, args, cse_nodes=(options or DEFAULT).sympy_cse_nodes)
    return Function(name, Source(program=prog), dtype, args=tuple((a.name, a.shape) for a in prog.args),
                    options=options)


def _verbs():
    """symgrad.grad, .jacobian, ...: one verb per kind call/verbs.OFFERS marks."""
    from .call.verbs import OFFERS, module_verb
    for name, offer in OFFERS.items():
        if offer.verb:
            globals()[name] = module_verb(name, compile)
            __all__.append(name)


_verbs()


@_checked_keywords("symgrad.derivative")
def derivative(f, n=1, argnum=0, shapes=None, *, dtype=None, options=None):
    """n-th derivative of ``f`` w.r.t. its scalar argument ``argnum``, compiled."""
    return compile(f, shapes, dtype=dtype, options=options).derivative(n, argnum)


def where(cond, a, b):
    """Traced select: ``a`` where ``cond`` holds, else ``b``. Use it instead of ``if`` on traced values."""
    from .tracing import where as _where
    return _where(cond, a, b)
