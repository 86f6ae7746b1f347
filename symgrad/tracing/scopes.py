"""Which scope a name of a traced function lives in (overlay_ast.py), as Python's compiler decides:
the names each function, lambda, comprehension and class body binds and declares, and the
names a file declares ``nonlocal`` (the only cells code outside a function can write)."""
from __future__ import annotations

import ast
import re

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_NONLOCALS = {}  # id(file lines) -> (lines, names declared nonlocal in the file)
_NONLOCAL = re.compile(r"\bnonlocal\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)")


def nonlocal_names(lines):
    """Names declared ``nonlocal`` anywhere in a file (its cells are shared only within it)."""
    hit = _NONLOCALS.get(id(lines))
    if hit is None or hit[0] is not lines:
        names = set()
        for m in _NONLOCAL.finditer("".join(lines)):
            names.update(x.strip() for x in m.group(1).split(","))
        hit = _NONLOCALS[id(lines)] = (lines, frozenset(names))
    return hit[1]


class Scope:
    """A function, lambda, comprehension or class body: the names it binds and declares."""

    def __init__(self, kind, parent, names=(), nodes=()):
        self.kind, self.parent = kind, parent
        self.bound, self.globals, self.nonlocals = set(names), set(), set()
        _scan(self, nodes)


def resolve(s, name, freevars):
    """Where ``name`` read in scope ``s`` lives, as Python's compiler decides: "local", "free" (a
    cell of a function around it, or of ``freevars``: the code's own), "global" or "class"."""
    if s.kind == "class":
        return "class"
    if name in s.globals:
        return "global"
    if name in s.nonlocals:
        return "free"
    if name in s.bound:
        return "local"
    p = s.parent
    while p is not None:
        if p.kind != "class":
            if name in p.globals:
                return "global"
            if name in p.bound or name in p.nonlocals:
                return "free"
        p = p.parent
    return "free" if name in freevars else "global"


def params(a):
    return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x is not None}


def _scan(scope, nodes):
    """The names ``nodes`` (code of ``scope`` itself) bind, and its global/nonlocal declarations."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name):
            if not isinstance(n.ctx, ast.Load):
                scope.bound.add(n.id)
        elif isinstance(n, ast.Global):
            scope.globals.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            scope.nonlocals.update(n.names)
        elif isinstance(n, ast.alias):
            if n.name != "*":
                scope.bound.add(n.asname or n.name.split(".")[0])
        elif isinstance(n, ast.NamedExpr):
            if scope.kind != "comp":  # (in a comprehension it binds in the function around it)
                scope.bound.add(n.target.id)
            stack.append(n.value)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if not isinstance(n, ast.Lambda):
                scope.bound.add(n.name)
                stack.extend(n.decorator_list)
            if isinstance(n, ast.ClassDef):
                stack.extend(n.bases + [k.value for k in n.keywords])
            else:
                stack.extend(n.args.defaults + [d for d in n.args.kw_defaults if d is not None])
        elif isinstance(n, _COMPS):
            stack.append(n.generators[0].iter)
            inner = [n]
            while inner:  # walrus targets inside it bind here
                m = inner.pop()
                if isinstance(m, ast.NamedExpr) and scope.kind != "comp":
                    scope.bound.add(m.target.id)
                if not isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    inner.extend(ast.iter_child_nodes(m))
        else:
            if isinstance(n, ast.ExceptHandler) and n.name:
                scope.bound.add(n.name)
            elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                scope.bound.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                scope.bound.add(n.rest)
            stack.extend(ast.iter_child_nodes(n))


def chain(n):
    """The name an attribute chain ``a.b.c`` starts from, or None (not a chain)."""
    while isinstance(n, ast.Attribute):
        n = n.value
    return n.id if isinstance(n, ast.Name) else None
