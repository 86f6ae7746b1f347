"""How a user asks for a derivative kind (Offer: docstrings, verbs, what codegen and the CLI
offer; the kinds themselves are transforms/kinds.py's), and the verbs made from it: the
property ``F.<kind>`` (every argument), the method ``F.<kind>_wrt(argnums)``, the pattern
methods ``F.<kind>_sparsity(argnums)``, and ``J.pattern()``, a Jacobian's or Hessian's own
pattern (sparse.py); and the module verbs ``symgrad.<kind>(f, argnums)``. They reach a
Function's derivatives through ``F._derive(kind, argnums)``, the protocol that
csrc/symgrad_call.c's Verb calls too."""
from __future__ import annotations

from dataclasses import dataclass

from ..signature import checked_keywords
from ..transforms.kinds import (GRAD, HESSIAN, HESSIAN_SPARSE, HVP, JACOBIAN, JACOBIAN_SPARSE, KINDS, SHARED,
                                VALUE)


@dataclass(frozen=True)
class Offer:
    """How a user asks for a derivative kind (the registry, transforms/kinds.py, says what it is)."""
    doc: str = ""          # the docstring of the Function property of its name ("": none)
    wrt: str = ""          # the docstring of the Function method <name>_wrt(argnums) ("": none)
    sparsity: str = ""     # the docstring of the Function method <name>_sparsity(argnums) ("": none)
    verb: bool = False     # a module-level verb symgrad.<name>(f, argnums, ...)
    kernel: bool = False   # codegen and the CLI offer its kernel (of a sparse kind: of F.<its dense kind>)


OFFERS = {
    GRAD: Offer(doc="Gradient w.r.t. every argument: one array for one argument, else a tuple.",
                wrt="Gradient by the arguments ``argnums`` only (an int: one array; a tuple: a tuple).",
                verb=True, kernel=True),
    SHARED: Offer(doc="(value, gradient), computed by one kernel that shares subexpressions.", verb=True),
    JACOBIAN: Offer(
        doc="Jacobian: result core shape = output shape + argument shape (a tuple over arguments).",
        wrt="Jacobian by the arguments ``argnums`` (default: all). ``stack=True``: one array of core shape "
            "output shape + (total size of those arguments,), arguments flattened and concatenated in "
            "order: what scipy's curve_fit and least_squares expect.",
        sparsity="Which entries of the Jacobian by ``argnums`` (default: all) are not identically zero: a "
                 "boolean scipy.sparse.csr_array (without scipy: (rows, cols, shape)); rows are the results' "
                 "entries, columns the arguments', each flattened and concatenated in order. What "
                 "F.jacobian(..., sparse=True) computes.",
        verb=True, kernel=True),
    JACOBIAN_SPARSE: Offer(kernel=True),
    HESSIAN: Offer(
        doc="Hessian of a scalar function: core shape s+s; tuple of tuples for several arguments.",
        wrt="Hessian by the arguments ``argnums`` only.",
        sparsity="Which entries of the Hessian by ``argnums`` (default: all) are not identically zero, as "
                 "jacobian_sparsity; ``lower=True``: its lower triangle, what F.hessian(..., sparse='lower') "
                 "computes.",
        verb=True, kernel=True),
    HESSIAN_SPARSE: Offer(kernel=True),
    HVP: Offer(doc="Hessian-vector product of a scalar function: ``F.hvp(x, v)`` is H(x) @ v (for several "
                   "arguments, one tangent each after them: ``F.hvp(x, y, vx, vy)``), by forward-over-reverse "
                   "differentiation: its cost is linear in the program's, no Hessian is formed.", kernel=True),
}
NONE = Offer()
DEFAULT_KERNELS = (VALUE, GRAD)  # what codegen and the CLI generate unless told


def offer(name):
    """The Offer of kind ``name`` (none for the kinds only reached through others, and d<n>)."""
    return OFFERS.get(name, NONE)


def kernel_kinds():
    """What codegen and the CLI offer: the value, then the kinds marked so, in registry order."""
    return (VALUE,) + tuple(n for n in KINDS if offer(n).kernel)


def dense_of(name):
    """The kind with a Function property whose sparse form is kind ``name`` (F.jacobian's of
    jacobian_sparse), or None."""
    return next((n for n, k in KINDS.items() if k.sparse == name and offer(n).doc), None)


def build_kinds():
    """What F.build takes: the value and every kind with a Function property."""
    return (VALUE,) + tuple(n for n in KINDS if offer(n).doc)


class Verb:
    """``F.<kind>``: the derivative by every argument, made once per Function (Function._derive,
    one Function per kind and argnums, under its lock) and then kept. This is the fallback where
    symgrad._native was not built, keeping it in the Function's ``__dict__`` under the verb's
    name (a non-data descriptor: later reads are plain attribute reads); symgrad._native.Verb
    (csrc/symgrad_call.c) keeps it in the Function's C struct and is a method descriptor, so
    ``F.grad(x)`` calls the kernel as ``G(x)`` does with ``G = F.grad``, without a lookup.
    Either way threads that read it at once get the same object; the memo is not pickled
    (Function.__reduce__ carries the spec only: a restored Function makes it again at its first
    read); a method's Function of each instance (Function.__get__) and a forked child's
    Functions keep their own."""

    def __init__(self, name, doc):
        self.name, self.__doc__ = name, doc

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        fn = obj.__dict__[self.name] = obj._derive(self.name, None)
        return fn


def install(cls):
    """The verbs of every kind in the registry, on class ``cls`` (symgrad.Function)."""
    from ..build.library import NATIVE, _native
    from .sparse import own_pattern, pattern_method
    verb = _native.Verb if NATIVE else Verb
    for k in KINDS.values():
        o = offer(k.name)
        if o.doc:
            setattr(cls, k.name, verb(k.name, o.doc))
        if o.wrt:
            wrt = _by_argnums(k.name, k.stacked is not None)
            wrt.__name__, wrt.__qualname__, wrt.__doc__ = f"{k.name}_wrt", f"Function.{k.name}_wrt", o.wrt
            setattr(cls, wrt.__name__, checked_keywords(wrt.__qualname__)(wrt))
        if o.sparsity:
            pattern = pattern_method(k.name, k.stacked is not None, k.symmetric)
            pattern.__name__, pattern.__qualname__ = f"{k.name}_sparsity", f"Function.{k.name}_sparsity"
            pattern.__doc__ = o.sparsity
            setattr(cls, pattern.__name__, checked_keywords(pattern.__qualname__)(pattern))
    own_pattern.__qualname__ = "Function.pattern"
    cls.pattern = checked_keywords(own_pattern.__qualname__)(own_pattern)


def _by_argnums(name, stacks):
    if stacks:
        def wrt(self, argnums=None, *, stack=False):
            return self._derive(name, argnums, stack=stack)
    else:
        def wrt(self, argnums):
            return self._derive(name, argnums)
    return wrt


def module_verb(kind, compile):
    """``symgrad.<kind>(f, argnums)``: ``kind`` of ``compile(f)`` by ``argnums``."""
    def verb(f, argnums=None, shapes=None, *, dtype=None, options=None):
        F = compile(f, shapes, dtype=dtype, options=options)
        return F._derive(kind, argnums)
    verb.__name__ = verb.__qualname__ = kind
    verb.__doc__ = (f"``{kind}`` of ``f`` w.r.t. ``argnums`` (default: every argument) as a compiled "
                    f"Function; see Function.{kind}.")
    return checked_keywords(f"symgrad.{kind}")(verb)
