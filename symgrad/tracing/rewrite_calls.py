"""The syntax changes every function the rewriter (rewrite.py) recompiles gets.

- ``Mangle``: Python's private-name mangling, which compiling outside the class would skip.
- ``Calls``: every call ``f(a)`` becomes ``__symgrad_call__(f)(a)``, so the callee is looked
  at when the call happens."""
from __future__ import annotations

import ast

CALL = "__symgrad_call__"


class Mangle(ast.NodeTransformer):
    """Python's private name mangling (``self.__x`` in class C is ``self._C__x``)."""

    def __init__(self, cls):
        self.prefix = "_" + cls.lstrip("_")
        self.off = not cls.lstrip("_")

    def m(self, name):
        if self.off or not name or not name.startswith("__") or name.endswith("__") or "." in name:
            return name
        return self.prefix + name

    def visit_Name(self, n):
        n.id = self.m(n.id)
        return n

    def visit_Attribute(self, n):
        self.generic_visit(n)
        n.attr = self.m(n.attr)
        return n

    def visit_arg(self, n):
        n.arg = self.m(n.arg)
        return n

    def visit_keyword(self, n):
        self.generic_visit(n)
        n.arg = self.m(n.arg)
        return n

    def visit_Global(self, n):
        n.names = [self.m(x) for x in n.names]
        return n

    visit_Nonlocal = visit_Global

    def visit_alias(self, n):
        if n.asname:
            n.asname = self.m(n.asname)
        return n


class Calls(ast.NodeTransformer):
    """``f(args)`` -> ``__symgrad_call__(f)(args)`` (``super()`` stays as it is)."""

    def visit_Call(self, n):
        self.generic_visit(n)
        if isinstance(n.func, ast.Name) and n.func.id == "super":
            return n
        f = n.func
        hook = ast.copy_location(ast.Name(CALL, ast.Load()), f)
        n.func = ast.copy_location(ast.Call(hook, [f], []), f)
        return n
