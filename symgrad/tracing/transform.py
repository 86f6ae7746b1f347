"""The changes the rewriter (rewrite.py) makes to a traced function's syntax tree.

- ``Mangle``: Python's private-name mangling, which compiling outside the class would skip.
- ``Calls``: every call ``f(a)`` becomes ``__symgrad_call__(f)(a)``, so the callee is looked
  at when the call happens.
- ``convert``: an ``if`` whose branches only assign local variables and return values becomes
  code that asks at run time whether its condition is traced; if not, the original ``if``
  runs; if so, both branches run from the same state and every variable they assign (and the
  value returned) becomes a select of its two values (selects.py). Early returns are first
  made the last statement of their path (what follows such an ``if`` moves into its
  branches). Conditional expressions, ``and``, ``or``, ``not`` and chained comparisons become
  calls that keep Python's short-circuit where the operands are plain. Anything else under a
  traced condition (``while``, ``break``, ``raise``, a store into an item or attribute, a call
  made for its effect) raises a TraceError naming the line and the reason.
- ``effects``: whether a function changes something outside itself (it may not be called
  inside a branch that runs both ways)."""
from __future__ import annotations

import ast
import copy
import itertools

from .selects import HOOK, RESULT, MUTATORS

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


# -- the transformation ---------------------------------------------------------------------------
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk(node):
    """The nodes of ``node``'s own scope (not of functions, lambdas or classes inside it)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, _SCOPES):
                stack.append(c)


def _h(attr, at):
    return ast.copy_location(ast.Attribute(ast.Name(HOOK, ast.Load()), attr, ast.Load()), at)


def _call(attr, args, at):
    return ast.copy_location(ast.Call(_h(attr, at), args, []), at)


def _thunk(e):
    return ast.copy_location(ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                      kw_defaults=[], kwarg=None, defaults=[]), e), e)


def _lazy_ok(e):
    """An operand that may run inside a lambda: no yield, await, walrus or zero-argument super()."""
    for n in _walk(e):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return False
        if isinstance(n, ast.Name) and n.id == "super":
            return False
    return True


class _Expressions(ast.NodeTransformer):
    """Conditional expressions, and/or/not, chained comparisons -> calls of the hook."""

    def visit_IfExp(self, n):
        self.generic_visit(n)
        if not (_lazy_ok(n.body) and _lazy_ok(n.orelse)):
            return n
        return _call("ifexp", [n.test, _thunk(n.body), _thunk(n.orelse), ast.Constant(_site(n))], n)

    def visit_BoolOp(self, n):
        self.generic_visit(n)
        if not all(_lazy_ok(v) for v in n.values[1:]):
            return n
        name = "and_" if isinstance(n.op, ast.And) else "or_"
        return _call(name, [n.values[0]] + [_thunk(v) for v in n.values[1:]], n)

    def visit_UnaryOp(self, n):
        self.generic_visit(n)
        return _call("not_", [n.operand], n) if isinstance(n.op, ast.Not) else n

    def visit_Compare(self, n):
        self.generic_visit(n)
        if len(n.ops) < 2 or not all(_lazy_ok(c) for c in n.comparators):
            return n
        args = [n.left]
        for op, c in zip(n.ops, n.comparators):
            args += [ast.Constant(type(op).__name__), _thunk(c)]
        return _call("chain", args, n)

    def visit_Lambda(self, n):
        self.generic_visit(n)
        return n


_FILE = [""]


def _site(n):
    return f"{_FILE[0]}, line {n.lineno}"


def _may_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in _walk(s))


def _normalise(stmts, budget):
    """Make every ``return`` under an ``if`` the last statement of its path: the statements
    after an ``if`` that may return move into both of its branches (not inside loops).
    ``budget``: how many nodes may still be copied (_TooLarge past it)."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.If) and _may_return([s]):
            rest = stmts[k + 1:]
            budget[0] -= 2 * _size(rest)
            if budget[0] < 0:
                raise _TooLarge
            s.body = _normalise(s.body + [_copy(r) for r in rest], budget)
            s.orelse = _normalise(s.orelse + [_copy(r) for r in rest], budget)
            out.append(s)
            return out
        out.append(s)
        if isinstance(s, ast.Return):
            return out  # what follows is dead
    return out


def _copy(node):
    return copy.deepcopy(node)


def _assigned(stmts):
    """Local names the statements assign (nested scopes aside)."""
    names = set()
    for s in stmts:
        for n in _walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                names.add(n.id)
    return {x for x in names if not x.startswith("__symgrad")}


def _why_not(stmts, declared):
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
            if any(isinstance(n, ast.Return) for n in _walk(b)):
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
    for n in _walk(node):
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return f"line {line} yields"
    return None


class _TooLarge(Exception):
    """Moving the statements after early returns into both branches would copy too much."""


class _Statements:
    """The ``if`` conversion of one function body."""

    def __init__(self, declared, returns_refused=None):
        self.declared = declared
        self.returns_refused = returns_refused
        self.count = itertools.count()

    def block(self, stmts, capture):
        out = []
        for s in stmts:
            out.extend(self.stmt(s, capture))
        return out or [ast.Pass()]

    def stmt(self, s, capture):
        if isinstance(s, ast.If):
            return self.if_(s, capture)
        if isinstance(s, ast.Return) and capture:
            # inside a converted ``if``: while a traced condition runs both branches of an ``if``
            # of this frame the value is kept for the merge; otherwise it is returned as written
            value = s.value if s.value is not None else ast.Constant(None)
            keep = ast.Assign([ast.Name(RESULT, ast.Store())], value)
            ret = ast.If(ast.UnaryOp(ast.Not(), _call("both", [], s)), [ast.Return(ast.Name(RESULT, ast.Load()))],
                         [])
            return [ast.fix_missing_locations(ast.copy_location(x, s)) for x in (keep, ret)]
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) and capture:
            check = _call("inplace", [ast.Name(s.target.id, ast.Load()), ast.Constant(type(s.op).__name__),
                                      ast.Constant(s.target.id), ast.Constant(_site(s))], s)
            return [ast.fix_missing_locations(ast.copy_location(ast.Expr(check), s)), s]
        if isinstance(s, ast.While):
            s.test = _call("plain", [s.test, ast.Constant("the `while` loop"),
                                     ast.Constant(" (a loop cannot run a traced number of times)")], s.test)
        if isinstance(s, (ast.For, ast.While, ast.AsyncFor)):
            s.body, s.orelse = self.block(s.body, capture), (self.block(s.orelse, capture) if s.orelse else [])
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            s.body = self.block(s.body, capture)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            s.body = self.block(s.body, capture)
            for h in s.handlers:
                h.body = self.block(h.body, capture)
            s.orelse = self.block(s.orelse, capture) if s.orelse else []
            s.finalbody = self.block(s.finalbody, capture) if s.finalbody else []
        elif isinstance(s, ast.FunctionDef):
            _statements(s)
        return [s]

    def if_(self, s, capture):
        why = _why_not(s.body + s.orelse, self.declared)
        returns = _may_return(s.body + s.orelse)
        if why is None and returns and self.returns_refused:
            why = self.returns_refused
        if why is not None:  # kept as it is: refused when its condition is traced
            s.test = _call("plain", [s.test, ast.Constant("the `if`"),
                                     ast.Constant(f", and its branches cannot both run: {why}")], s.test)
            s.body = self.block(s.body, capture)
            s.orelse = self.block(s.orelse, capture) if s.orelse else []
            return [s]
        k = next(self.count)
        names = sorted(_assigned(s.body + s.orelse) | ({RESULT} if returns else set()))
        cond, tr, path = f"__symgrad_c{k}__", f"__symgrad_tr{k}__", f"__symgrad_p{k}__"
        at = s

        def name(n, ctx=ast.Load):
            return ast.copy_location(ast.Name(n, ctx()), at)

        def grab(src, dst):  # dst = src, or UNBOUND if src is unbound
            return ast.copy_location(ast.Try(
                body=[ast.Assign([name(dst, ast.Store)], name(src))],
                handlers=[ast.ExceptHandler(name("NameError"), None,
                                            [ast.Assign([name(dst, ast.Store)], _h("UNBOUND", at))])],
                orelse=[], finalbody=[]), at)

        def put(dst, src):  # dst = src, or unbind dst if src is UNBOUND
            unbind = ast.Try(body=[ast.Delete([name(dst, ast.Del)])],
                             handlers=[ast.ExceptHandler(name("NameError"), None, [ast.Pass()])],
                             orelse=[], finalbody=[])
            test = ast.Compare(name(src), [ast.Is()], [_h("UNBOUND", at)])
            return ast.copy_location(ast.If(test, [unbind], [ast.Assign([name(dst, ast.Store)], name(src))]), at)

        saved = {v: f"__symgrad_s{k}_{v}__" for v in names}
        then = {v: f"__symgrad_t{k}_{v}__" for v in names}
        other = {v: f"__symgrad_f{k}_{v}__" for v in names}
        merged = f"__symgrad_m{k}__"
        # one copy of each branch, in a loop over ``paths``: a plain condition runs the branch
        # Python takes, a traced one runs both from the same state, the `if` branch first (the
        # generator marks the frame as running both, until the loop ends or is left by an
        # exception). One loop per `if`: Python allows 20 nested blocks.
        second = [grab(v, then[v]) for v in names] + [put(v, saved[v]) for v in names]
        branch = ast.If(name(path), self.block(s.body, True), self.block(s.orelse, True) if s.orelse else [])
        loop = ast.For(name(path, ast.Store), _call("paths", [name(cond)], at),
                       ([ast.If(ast.BoolOp(ast.And(), [name(tr), ast.UnaryOp(ast.Not(), name(path))]), second, [])]
                        if names else []) + [branch], [])
        out = [ast.Assign([name(cond, ast.Store)], _call("test", [s.test], s.test)),
               ast.Assign([name(tr, ast.Store)], _call("traced", [name(cond)], at))]
        if names:
            out.append(ast.If(name(tr), [grab(v, saved[v]) for v in names], []))
        out.append(loop)
        merge = [grab(v, other[v]) for v in names]
        for v in names:
            merge.append(ast.Assign([name(merged, ast.Store)],
                                    _call("merge", [name(cond), name(then[v]), name(other[v]), ast.Constant(v),
                                                    ast.Constant(_site(s))], at)))
            merge.append(put(v, merged))
        if returns:
            merge.append(ast.If(ast.UnaryOp(ast.Not(), _call("both", [], at)), [ast.Return(name(RESULT))], []))
        if merge:
            out.append(ast.If(name(tr), merge, []))
        return [ast.fix_missing_locations(ast.copy_location(x, at)) for x in out]


def _size(stmts):
    return sum(1 for s in stmts for _ in ast.walk(s))


def _statements(node):
    """Convert the ``if`` statements of one function's body in place (generators and
    coroutines keep theirs)."""
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk(node)) or \
            isinstance(node, ast.AsyncFunctionDef):
        return
    declared = {x for n in _walk(node) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
    body, refused = node.body, None
    if _may_return([s for s in body if isinstance(s, ast.If)]):
        if not body or not isinstance(body[-1], ast.Return):
            body = body + [ast.copy_location(ast.Return(ast.Constant(None)), body[-1] if body else node)]
        try:
            body = _normalise(body, budget=[max(20_000, 8 * _size(body))])
        except _TooLarge:
            body = node.body
            refused = ("it returns early, and the function has too many paths after its early returns to "
                       "convert them all (write the returned value with symgrad.where)")
    node.body = _Statements(declared, refused).block(body, False)


def convert(node, filename, statements=True):
    """Convert the ``if`` statements (unless ``statements`` is false) and boolean expressions
    of a function (or lambda) node in place."""
    _FILE[0] = filename
    _Expressions().visit(node)
    if statements and not isinstance(node, ast.Lambda):
        _statements(node)
    return ast.fix_missing_locations(node)


# -- functions called inside a converted branch ------------------------------------------------------
def effects(node, is_module=lambda name: False):
    """Why a function (its AST) changes something outside itself, or None: a global or nonlocal
    declaration, or a store into (or a mutating method call on) a parameter, a global, or a local
    that may alias one. Such a function cannot be called inside a branch that runs both ways."""
    params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
    fresh = set()  # locals bound to new objects (literals, calls, arithmetic)
    for n in _walk(node):
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return f"it declares {'global' if isinstance(n, ast.Global) else 'nonlocal'} {', '.join(n.names)}"
        if isinstance(n, ast.Assign):
            if isinstance(n.value, (ast.Call, ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp,
                                    ast.SetComp, ast.BinOp, ast.Constant, ast.UnaryOp)):
                fresh |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    tainted = lambda root: (root not in fresh or root in params) and not is_module(root)  # noqa: E731
    for n in _walk(node):
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
