"""The rewriter's last pass (rewrite.py): the reads and writes of a traced function that reach
state other threads share go through overlay.py's hook (``__symgrad_shared__``).

- Stores: ``obj.a = v``, ``g = v`` (declared global), ``c = v`` (a name some function of the
  file declares nonlocal: a closure cell), ``x[k] = v``, their augmented forms and ``del``,
  and the methods that put values into a container (``.append`` ...) become calls of the hook.
- Reads: a global name, an attribute chain rooted at a name, and a cell of such a name become
  ``(hook read if __symgrad_dirty__ else the read as written)``: while no trace has an overlay
  the read as written runs (a builtin lookup and a jump more). Any other attribute read
  (``f(x).a``) calls the hook, which reads the plain attribute while nothing is overlaid.
Class bodies and ``match`` patterns stay as written."""
from __future__ import annotations

import ast
import copy
import itertools

from .overlay import DIRTY, HOOK, INSERTERS, PLAIN
from .scopes import Scope, chain as _chain, params as _params, resolve
from .rewrite_calls import CALL

class _Pass(ast.NodeTransformer):
    def __init__(self, freevars, cellish):
        self.freevars, self.cellish, self.scope = set(freevars), cellish, None
        self.tmp = itertools.count()

    # -- scopes ------------------------------------------------------------------------------------
    def _push(self, kind, names, nodes):
        self.scope = Scope(kind, self.scope, names, nodes)

    def _pop(self):
        self.scope = self.scope.parent

    def _defaults(self, a):
        a.defaults = [self.visit(d) for d in a.defaults]
        a.kw_defaults = [d if d is None else self.visit(d) for d in a.kw_defaults]

    def visit_FunctionDef(self, n):
        n.decorator_list = [self.visit(d) for d in n.decorator_list]
        self._defaults(n.args)
        self._push("function", _params(n.args), n.body)
        n.body = self._stmts(n.body)
        self._pop()
        return n

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, n):
        self._defaults(n.args)
        self._push("function", _params(n.args), [n.body])
        n.body = self.visit(n.body)
        self._pop()
        return n

    def visit_ClassDef(self, n):  # its body runs as written (names read there are LOAD_NAME), its methods not
        n.decorator_list = [self.visit(d) for d in n.decorator_list]
        n.bases = [self.visit(b) for b in n.bases]
        for k in n.keywords:
            k.value = self.visit(k.value)
        self._push("class", set(), n.body)
        n.body = [self.visit(s) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else s
                  for s in n.body]
        self._pop()
        return n

    def _comprehension(self, n):
        first = n.generators[0]
        first.iter = self.visit(first.iter)
        parts = [g.target for g in n.generators] + [x for g in n.generators for x in g.ifs] + \
            [g.iter for g in n.generators[1:]] + [getattr(n, f) for f in ("elt", "key", "value") if hasattr(n, f)]
        self._push("comp", set(), parts)
        for g in n.generators:
            if g is not first:
                g.iter = self.visit(g.iter)
            g.ifs = [self.visit(x) for x in g.ifs]
        for f in ("elt", "key", "value"):
            if hasattr(n, f):
                setattr(n, f, self.visit(getattr(n, f)))
        self._pop()
        return n

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_match_case(self, c):  # patterns stay as written (a value pattern must be a dotted name)
        c.guard = self.visit(c.guard) if c.guard is not None else None
        c.body = self._stmts(c.body)
        return c

    def _stmts(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    def resolve(self, name):
        return resolve(self.scope, name, self.freevars)

    def _store_kind(self, name):
        """How a store of ``name`` goes: "g" (a global), "c" (a cell some function may overlay) or None."""
        s = self.scope
        if s.kind == "class" or name.startswith("__symgrad"):
            return None
        if name in s.globals:
            return "g"
        return "c" if name in s.nonlocals or name in self.cellish else None

    # -- building blocks --------------------------------------------------------------------------
    def _h(self, fn, args, at):
        call = ast.Call(ast.Attribute(ast.Name(HOOK, ast.Load()), fn, ast.Load()), args, [])
        return ast.copy_location(call, at)

    @staticmethod
    def _cell(name):
        """``name``'s cell: ``(lambda: name).__closure__[0]``."""
        lam = ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                       defaults=[]), ast.Name(name, ast.Load()))
        return ast.Subscript(ast.Attribute(lam, "__closure__", ast.Load()), ast.Constant(0), ast.Load())

    @staticmethod
    def _dirty(hooked, plain):
        return ast.copy_location(ast.IfExp(ast.Name(DIRTY, ast.Load()), hooked, plain), plain)

    def _read(self, n):
        """A Name read in its hooked form, or None where it needs none."""
        if n.id.startswith("__symgrad") or n.id in ("super", "__class__"):
            return None
        k = self.resolve(n.id)
        if k == "global":
            return self._h("g", [ast.Constant(n.id)], n)
        if k in ("free", "local") and n.id in self.cellish:
            return self._h("c", [self._cell(n.id), ast.Constant(n.id)], n)
        return None

    def _hooked_chain(self, n):
        if isinstance(n, ast.Name):
            return self._read(n) or n
        return self._h("a", [self._hooked_chain(n.value), ast.Constant(n.attr)], n)

    def _root(self, e):
        """(how the container ``e`` is reached, the object it is an attribute of or None)."""
        base = e
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Attribute) and _chain(base.value) is not None:
            return ast.Constant("attr"), self.visit(copy.deepcopy(base.value))
        if isinstance(base, ast.Name):
            k = self.resolve(base.id)
            return ast.Constant(k if k in ("global", "free") else "local"), ast.Constant(None)
        return ast.Constant("other"), ast.Constant(None)

    def _new_tmp(self):
        return f"__symgrad_w{next(self.tmp)}__"

    # -- reads --------------------------------------------------------------------------------------
    def visit_Name(self, n):
        if not isinstance(n.ctx, ast.Load):
            return n
        hooked = self._read(n)
        return n if hooked is None else self._dirty(hooked, n)

    def visit_Attribute(self, n):
        if not isinstance(n.ctx, ast.Load):
            n.value = self.visit(n.value)
            return n
        root = _chain(n)
        if root is not None:
            if root.startswith("__symgrad") or self.scope.kind == "class":
                return n
            return self._dirty(self._hooked_chain(copy.deepcopy(n)), n)
        return self._h("a", [self.visit(n.value), ast.Constant(n.attr)], n)

    def visit_Call(self, n):
        f = n.func
        if isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id == CALL and len(f.args) == 1 \
                and isinstance(f.args[0], ast.Attribute) and f.args[0].attr in INSERTERS:
            m = f.args[0]
            kind, owner = self._root(m.value)
            f.args[0] = self._h("m", [self.visit(m.value), ast.Constant(m.attr), kind, owner], m)
            n.args = [self.visit(a) for a in n.args]
            n.keywords = [self.visit(k) for k in n.keywords]
            return n
        return self.generic_visit(n)

    # -- writes -------------------------------------------------------------------------------------
    def _special(self, t):
        for x in ast.walk(t):
            if isinstance(x, (ast.Attribute, ast.Subscript)) and isinstance(x.ctx, ast.Store):
                return True
            if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store) and self._store_kind(x.id):
                return True
        return False

    @staticmethod
    def _either(value, hooked, plain):
        """``if __symgrad_dirty__ or value.__class__ not in PLAIN: hooked else: plain``: a plain
        number stored while nothing is overlaid is the bytecode Python runs (no call between
        a read and its write: another thread's increments are not lost)."""
        test = ast.BoolOp(ast.Or(), [ast.Name(DIRTY, ast.Load()), ast.Compare(
            ast.Attribute(copy.deepcopy(value), "__class__", ast.Load()), [ast.NotIn()], [ast.Name(PLAIN, ast.Load())])])
        return ast.If(test, [ast.Expr(hooked)], [plain])

    def _assign(self, t, value):
        """Statements that assign ``value`` (a name) to target ``t``."""
        if isinstance(t, ast.Name):
            k = self._store_kind(t.id)
            if k == "g":
                return [self._either(value, self._h("sg", [ast.Constant(t.id), value], t), ast.Assign([t], value))]
            if k == "c":
                return [self._either(value, self._h("sc", [self._cell(t.id), ast.Constant(t.id), value], t),
                                     ast.Assign([t], value))]
            return [ast.Assign([t], value)]
        if isinstance(t, ast.Attribute):
            plain = ast.Assign([ast.Attribute(self.visit(copy.deepcopy(t.value)), t.attr, ast.Store())], value)
            return [self._either(value, self._h("sa", [self.visit(t.value), ast.Constant(t.attr), value], t), plain)]
        if isinstance(t, ast.Subscript):
            kind, owner = self._root(t.value)
            plain = ast.Assign([ast.Subscript(self.visit(copy.deepcopy(t.value)), self.visit(copy.deepcopy(t.slice)),
                                              ast.Store())], value)
            hooked = self._h("si", [self.visit(t.value), self.visit(t.slice), value, kind, owner], t)
            return [self._either(value, hooked, plain)]
        if isinstance(t, (ast.Tuple, ast.List)) and self._special(t):
            names = [self._new_tmp() for _ in t.elts]
            unpack = [ast.Starred(ast.Name(v, ast.Store()), ast.Store()) if isinstance(e, ast.Starred)
                      else ast.Name(v, ast.Store()) for e, v in zip(t.elts, names)]
            out = [ast.Assign([ast.Tuple(unpack, ast.Store())], value)]
            for e, v in zip(t.elts, names):
                out += self._assign(e.value if isinstance(e, ast.Starred) else e, ast.Name(v, ast.Load()))
            return out
        return [ast.Assign([self.visit(t)], value)]

    def _through(self, at, value, targets):
        """``targets = value`` as statements (the value first, as Python evaluates it)."""
        tmp = self._new_tmp()
        out = [ast.Assign([ast.Name(tmp, ast.Store())], value)]
        for t in targets:
            out += self._assign(t, ast.Name(tmp, ast.Load()))
        return [ast.fix_missing_locations(ast.copy_location(s, at)) for s in out]

    def visit_Assign(self, s):
        if not any(self._special(t) for t in s.targets):
            return self.generic_visit(s)
        return self._through(s, self.visit(s.value), s.targets)

    def visit_AnnAssign(self, s):
        if s.value is None or not self._special(s.target):
            if s.value is not None:
                s.value = self.visit(s.value)
            return s
        return self._through(s, self.visit(s.value), [s.target])

    def visit_AugAssign(self, s):
        t, op = s.target, ast.Constant(type(s.op).__name__)
        k = self._store_kind(t.id) if isinstance(t, ast.Name) else None
        if isinstance(t, ast.Name) and k is None:
            return self.generic_visit(s)
        tmp = self._new_tmp()
        value = ast.Name(tmp, ast.Load())
        plain = ast.AugAssign(copy.deepcopy(t), s.op, value)
        if isinstance(t, ast.Name):
            call = self._h("ag", [ast.Constant(t.id), op, value], s) if k == "g" else \
                self._h("ac", [self._cell(t.id), ast.Constant(t.id), op, value], s)
        elif isinstance(t, ast.Attribute):
            plain.target.value = self.visit(plain.target.value)
            call = self._h("aa", [self.visit(t.value), ast.Constant(t.attr), op, value], s)
        else:
            plain.target.value, plain.target.slice = self.visit(plain.target.value), self.visit(plain.target.slice)
            kind, owner = self._root(t.value)
            call = self._h("ai", [self.visit(t.value), self.visit(t.slice), op, value, kind, owner], s)
        out = [ast.Assign([ast.Name(tmp, ast.Store())], self.visit(s.value)), self._either(value, call, plain)]
        return [ast.fix_missing_locations(ast.copy_location(x, s)) for x in out]

    def visit_Delete(self, s):
        out = []
        for t in s.targets:
            k = self._store_kind(t.id) if isinstance(t, ast.Name) else None
            if isinstance(t, ast.Attribute):
                out.append(ast.Expr(self._h("da", [self.visit(t.value), ast.Constant(t.attr)], t)))
            elif k == "g":
                out.append(ast.Expr(self._h("dg", [ast.Constant(t.id)], t)))
            elif k == "c":  # the overlay's value goes; then the cell's own, if it has none
                test = ast.UnaryOp(ast.Not(), self._h("dc", [self._cell(t.id)], t))
                out.append(ast.If(test, [ast.Delete([t])], []))
            else:
                out.append(ast.Delete([self.visit(t)]))
        return [ast.fix_missing_locations(ast.copy_location(x, s)) for x in out]

    def visit_For(self, s):
        s.iter = self.visit(s.iter)
        if self._special(s.target):
            tmp = self._new_tmp()
            first = self._assign(s.target, ast.Name(tmp, ast.Load()))
            s.target = ast.Name(tmp, ast.Store())
            s.body = [ast.fix_missing_locations(ast.copy_location(x, s)) for x in first] + self._stmts(s.body)
        else:
            s.target = self.visit(s.target)
            s.body = self._stmts(s.body)
        s.orelse = self._stmts(s.orelse)
        return s

    visit_AsyncFor = visit_For

    def visit_With(self, s):
        first = []
        for item in s.items:
            item.context_expr = self.visit(item.context_expr)
            if item.optional_vars is not None and self._special(item.optional_vars):
                tmp = self._new_tmp()
                first += self._assign(item.optional_vars, ast.Name(tmp, ast.Load()))
                item.optional_vars = ast.Name(tmp, ast.Store())
        s.body = [ast.fix_missing_locations(ast.copy_location(x, s)) for x in first] + self._stmts(s.body)
        return s

    visit_AsyncWith = visit_With

    def visit_NamedExpr(self, n):
        k = self._store_kind(n.target.id)
        n.value = self.visit(n.value)
        if k == "g":
            return self._h("sg", [ast.Constant(n.target.id), n.value], n)
        if k == "c":
            return self._h("sc", [self._cell(n.target.id), ast.Constant(n.target.id), n.value], n)
        return n


def apply(node, freevars, cellish):
    """Transform a function or lambda node (rewrite.py's, already converted) in place;
    ``freevars``: the names its code takes from cells around it; ``cellish``: scopes.nonlocal_names."""
    p = _Pass(freevars, cellish)
    if isinstance(node, ast.Lambda):
        p.visit_Lambda(node)
    else:
        p.visit_FunctionDef(node)
    return ast.fix_missing_locations(node)
