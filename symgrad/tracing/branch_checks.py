"""What may run under a traced condition, for the ``if`` conversion (rewrite_branches.py):
why a branch's statements cannot both run (``why_not``: anything but assignments of local
names, returns, nested ifs and loops of those), and why a function changes something outside
itself (``effects``: it may not be called inside a branch that runs both ways)."""
from __future__ import annotations

import ast

from .selects import MUTATORS

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def walk(node):
    """The nodes of ``node``'s own scope (not of functions, lambdas or classes inside it)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, _SCOPES):
                stack.append(c)


def may_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in walk(s))


def assigned(stmts):
    """Local names the statements assign (nested scopes aside)."""
    names = set()
    for s in stmts:
        for n in walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                names.add(n.id)
    return {x for x in names if not x.startswith("__symgrad")}


def why_not(stmts, declared):
    """Why these branch statements cannot run both (None if they can): anything but
    assignments of local names, returns, nested ifs and loops of those."""
    for s in stmts:
        why = _stmt_reason(s, 0, declared)
        if why:
            return why
    return None


def _stmt_reason(s, loops, declared):
    line = s.lineno
    if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
                    return f"line {line} stores into an item or attribute"
                if isinstance(n, ast.Name) and n.id in declared:
                    return f"line {line} assigns the global or nonlocal variable {n.id!r}"
    elif isinstance(s, ast.If):
        for b in s.body + s.orelse:
            why = _stmt_reason(b, loops, declared)
            if why:
                return why
        return _expr_reason(s.test, line)
    elif isinstance(s, (ast.For, ast.While)):
        if isinstance(s, ast.For):
            for n in ast.walk(s.target):
                if isinstance(n, (ast.Subscript, ast.Attribute)):
                    return f"line {line} stores into an item or attribute"
        for b in s.body + s.orelse:
            if any(isinstance(n, ast.Return) for n in walk(b)):
                return f"line {b.lineno} returns from inside a loop"
            why = _stmt_reason(b, loops + 1, declared)
            if why:
                return why
        return _expr_reason(s.iter if isinstance(s, ast.For) else s.test, line)
    elif isinstance(s, (ast.Break, ast.Continue)):
        if loops == 0:
            return f"line {line} has a `{'break' if isinstance(s, ast.Break) else 'continue'}`"
        return None
    elif isinstance(s, ast.Return):
        pass
    elif isinstance(s, ast.Pass):
        return None
    elif isinstance(s, ast.Expr):
        if isinstance(s.value, ast.Constant):
            return None
        if isinstance(s.value, ast.Call) and _callee_name(s.value) == "print":
            return _expr_reason(s.value, line)
        return f"line {line} evaluates an expression for its effect"
    elif isinstance(s, ast.Raise):
        return f"line {line} raises an exception"
    elif isinstance(s, ast.Assert):
        return None
    else:
        return f"line {line} has a `{type(s).__name__.lower()}` statement"
    return _expr_reason(s, line)


def _callee_name(call):
    f = call.func
    if isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id.startswith("__symgrad") and f.args:
        f = f.args[0]  # the call hook's argument: the callee as written
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _expr_reason(node, line):
    for n in walk(node):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return f"line {line} yields"
    return None


# -- functions called inside a converted branch ------------------------------------------------------
def effects(node, is_module=lambda name: False):
    """Why a function (its AST) changes something outside itself, or None: a global or nonlocal
    declaration, or a store into (or a mutating method call on) a parameter, a global, or a local
    that may alias one. Such a function cannot be called inside a branch that runs both ways."""
    params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
    fresh = set()  # locals bound to new objects (literals, calls, arithmetic)
    for n in walk(node):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return f"it declares {'global' if isinstance(n, ast.Global) else 'nonlocal'} {', '.join(n.names)}"
        if isinstance(n, ast.Assign):
            if isinstance(n.value, (ast.Call, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp,
                                    ast.SetComp, ast.BinOp, ast.Constant, ast.UnaryOp)):
                fresh |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    tainted = lambda root: (root not in fresh or root in params) and not is_module(root)  # noqa: E731
    for n in walk(node):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, ast.Delete):
            targets = n.targets
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, (ast.Subscript, ast.Attribute)) and not isinstance(x.ctx, ast.Load):
                    root = _root(x)
                    if root is None or tainted(root):
                        return f"line {n.lineno} stores into {root or 'an object'} it did not create"
        if isinstance(n, ast.Call) and _callee_name(n) in MUTATORS:
            f = n.func.args[0] if isinstance(n.func, ast.Call) and n.func.args else n.func
            root = _root(f.value) if isinstance(f, ast.Attribute) else None
            if root is None or tainted(root):
                return f"line {n.lineno} calls .{_callee_name(n)}() on {root or 'an object'} it did not create"
    return None


def _root(x):
    while isinstance(x, (ast.Subscript, ast.Attribute)):
        x = x.value
    return x.id if isinstance(x, ast.Name) else None
