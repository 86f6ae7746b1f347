"""The derivative verbs of a Function, made from the kind registry (transforms/kinds.py): the
property ``F.<kind>`` (every argument), the method ``F.<kind>_wrt(argnums)``, the pattern
methods ``F.<kind>_sparsity(argnums)``, and ``J.pattern()``, a Jacobian's or Hessian's own
pattern (sparse.py); and the module verbs ``symgrad.<kind>(f, argnums)``. They reach a
Function's derivatives through ``F._derive(kind, argnums)``, the protocol that
csrc/symgrad_call.c's Verb calls too."""
from __future__ import annotations

from ..signature import checked_keywords
from ..transforms.kinds import KINDS


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
        if k.doc:
            setattr(cls, k.name, verb(k.name, k.doc))
        if k.wrt:
            wrt = _by_argnums(k.name, k.stacked is not None)
            wrt.__name__, wrt.__qualname__, wrt.__doc__ = f"{k.name}_wrt", f"Function.{k.name}_wrt", k.wrt
            setattr(cls, wrt.__name__, checked_keywords(wrt.__qualname__)(wrt))
        if k.sparsity:
            pattern = pattern_method(k.name, k.stacked is not None, k.symmetric)
            pattern.__name__, pattern.__qualname__ = f"{k.name}_sparsity", f"Function.{k.name}_sparsity"
            pattern.__doc__ = k.sparsity
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
