"""The ``if`` conversion the rewriter (rewrite.py) applies to a traced function's syntax tree.

``convert``: an ``if`` whose branches only assign local variables and return values becomes
code that asks at run time whether its condition is traced; if not, the original ``if`` runs;
if so, both branches run from the same state and every variable they assign (and the value
returned) becomes a select of its two values (selects.py). Early returns are first made the
last statement of their path (what follows such an ``if`` moves into its branches).
Conditional expressions, ``and``, ``or``, ``not`` and chained comparisons become calls that
keep Python's short-circuit where the operands are plain. Anything else under a traced
condition (``while``, ``break``, ``raise``, a store into an item or attribute, a call made for
its effect) raises a TraceError naming the line and the reason (branch_checks.py)."""
from __future__ import annotations

import ast
import copy
import itertools

from .branch_checks import assigned, may_return, walk, why_not
from .selects import HOOK, RESULT



def _h(attr, at):
    return ast.copy_location(ast.Attribute(ast.Name(HOOK, ast.Load()), attr, ast.Load()), at)


def _call(attr, args, at):
    return ast.copy_location(ast.Call(_h(attr, at), args, []), at)


def _thunk(e):
    return ast.copy_location(ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                      kw_defaults=[], kwarg=None, defaults=[]), e), e)


def _lazy_ok(e):
    """An operand that may run inside a lambda: no yield, await, walrus or zero-argument super()."""
    for n in walk(e):
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


def _normalise(stmts, budget):
    """Make every ``return`` under an ``if`` the last statement of its path: the statements
    after an ``if`` that may return move into both of its branches (not inside loops).
    ``budget``: how many nodes may still be copied (_TooLarge past it)."""
    out = []
    for k, s in enumerate(stmts):
        if isinstance(s, ast.If) and may_return([s]):
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
        why = why_not(s.body + s.orelse, self.declared)
        returns = may_return(s.body + s.orelse)
        if why is None and returns and self.returns_refused:
            why = self.returns_refused
        if why is not None:  # kept as it is: refused when its condition is traced
            s.test = _call("plain", [s.test, ast.Constant("the `if`"),
                                     ast.Constant(f", and its branches cannot both run: {why}")], s.test)
            s.body = self.block(s.body, capture)
            s.orelse = self.block(s.orelse, capture) if s.orelse else []
            return [s]
        k = next(self.count)
        names = sorted(assigned(s.body + s.orelse) | ({RESULT} if returns else set()))
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
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in walk(node)) or \
            isinstance(node, ast.AsyncFunctionDef):
        return
    declared = {x for n in walk(node) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
    body, refused = node.body, None
    if may_return([s for s in body if isinstance(s, ast.If)]):
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
