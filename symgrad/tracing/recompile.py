"""A function's code compiled again from its source, for the rewriter (rewrite.py): the
function's node found in its file's AST, parsed afresh at its own line numbers, compiled
nested in a wrapper whose parameters are its free variables (so that it refers to the same
cells and globals), with the rewrites (rewrite_calls.py, rewrite_branches.py, overlay_ast.py)
or without them; ``find`` accepts a source only if it compiles to exactly the running code."""
from __future__ import annotations

import __future__
import ast
import hashlib
import linecache
import types

from . import overlay_ast, scopes
from .rewrite_branches import convert
from .rewrite_calls import Calls, Mangle

_MAKE = "__symgrad_make__"
_FUTURE = 0
for _name in __future__.all_feature_names:
    _FUTURE |= getattr(__future__, _name).compiler_flag
# Flags that change what a code object is (a generator is not a function).
_KIND = 0x20 | 0x80 | 0x100 | 0x200 | 0x04 | 0x08  # generator, coroutine, async gen, iterable coro, *args, **kw


class NoSource(Exception):
    """Why a function's source cannot be compiled in its place (it then runs as it is)."""


_trees = {}


def _tree(filename, module_globals):
    """(source lines, AST) of a file, parsed once per content."""
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise NoSource(f"no source for {filename}")
    text = "".join(lines)
    key = (filename, hashlib.sha1(text.encode()).hexdigest())
    if key not in _trees:
        try:
            tree = ast.parse(text, filename)
        except (SyntaxError, ValueError) as e:
            raise NoSource(f"its file does not parse ({e})") from None
        _trees[key] = (lines, tree)
    return _trees[key]


def find(code, module_globals):
    """(file lines, AST node, module imports) of the function whose compiled code is ``code``."""
    text, tree = _tree(code.co_filename, module_globals)
    lam = code.co_name == "<lambda>"
    imports = _imports(tree)
    for node in ast.walk(tree):
        if lam:
            if not (isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno):
                continue
        elif not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name
                  and code.co_firstlineno in (node.lineno, *[d.lineno for d in node.decorator_list[:1]])):
            continue
        try:
            if _same(compile_node(text, node, code, transform=False, imports=imports), code):
                return text, node, imports
        except (SyntaxError, ValueError, StopIteration):
            continue
    raise NoSource("its source on disk is not the code that runs (edited since it was imported?)")


def _imports(tree):
    """The module's own import statements: they decide how the compiler loads imported
    names (a module attribute is loaded with LOAD_ATTR, not LOAD_METHOD, in 3.11)."""
    found, stack = [], list(tree.body)
    while stack:
        n = stack.pop(0)
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            found.append(n)
        elif not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt))
    return found


def _fresh(lines, node):
    """A new AST of ``node``'s own source, at its original line numbers (parsing it again
    is much cheaper than copying the tree; blank lines in front put it at its place)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    cut = lambda line, a, b=None: line.encode()[a:b].decode()  # noqa: E731  (offsets count UTF-8 bytes)
    if first == last:
        segment = " " * node.col_offset + cut(lines[first], node.col_offset, node.end_col_offset)
    else:
        segment = " " * node.col_offset + cut(lines[first], node.col_offset) + "".join(lines[first + 1:last]) \
            + cut(lines[last], 0, node.end_col_offset)
    if isinstance(node, ast.Lambda):  # an expression: parenthesised, so it may span lines
        return ast.parse("\n" * first + "(" + segment.lstrip() + ")", mode="eval").body
    if node.col_offset:  # an indented def (a method, a nested function)
        return ast.parse("\n" * (first - 1) + "if 1:\n" + segment).body[0].body[0]
    return ast.parse("\n" * first + segment).body[0]


def compile_node(text, node, code, transform, imports):
    """Compile ``node`` as a function nested in one whose parameters are ``code``'s free
    variables, so that it refers to the same cells (and globals) as ``code``; the module's
    imports come along (they are compiled, never run)."""
    try:
        return _compile_once(text, node, code, transform, imports, True)
    except SyntaxError as e:
        if "nested blocks" not in str(e):
            raise
        # nested too deep to convert every `if`: they stay as written (refused where traced)
        return _compile_once(text, node, code, transform, imports, False)


def _compile_once(text, node, code, transform, imports, statements):
    node = _fresh(text, node)
    _strip(node)
    cls = _class_of(code)
    if cls:
        Mangle(cls).visit(node)
    if transform:
        Calls().visit(node)
        convert(node, code.co_filename, statements)
        overlay_ast.apply(node, code.co_freevars, scopes.nonlocal_names(text))
    at = dict(lineno=node.lineno, col_offset=0, end_lineno=node.lineno, end_col_offset=0)
    args = ast.arguments(posonlyargs=[], args=[ast.arg(p, **at) for p in code.co_freevars], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    if isinstance(node, ast.Lambda):
        body = [ast.Return(node, **at)]
    else:  # the def must not bind its name in the wrapper: recursion refers to the global
        body = [] if node.name in code.co_freevars else [ast.Global([node.name], **at)]
        body += [node, ast.Return(ast.Name(node.name, ast.Load(), **at), **at)]
    make = ast.FunctionDef(name=_MAKE, args=args, body=body, decorator_list=[], returns=None, **at)
    if "type_params" in ast.FunctionDef._fields:
        make.type_params = []
    top = compile(ast.Module([*imports, make], []), code.co_filename, "exec", flags=code.co_flags & _FUTURE,
                  dont_inherit=True)
    outer = next(c for c in top.co_consts if isinstance(c, types.CodeType) and c.co_name == _MAKE)
    return next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == code.co_name)


def _strip(node):
    """Drop what runs outside the function's own code: decorators, defaults, annotations."""
    a = node.args
    a.defaults, a.kw_defaults = [], [None] * len(a.kwonlyargs)
    if isinstance(node, ast.Lambda):
        return
    node.decorator_list, node.returns = [], None
    if hasattr(node, "type_params"):
        node.type_params = []
    for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
        if arg is not None:
            arg.annotation = None


def _same(a, b):
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_argcount,
            a.co_posonlyargcount, a.co_kwonlyargcount, a.co_flags & _KIND) != \
            (b.co_code, b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars, b.co_argcount,
             b.co_posonlyargcount, b.co_kwonlyargcount, b.co_flags & _KIND):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same(x, y):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True


def _class_of(code):
    """The class whose body holds ``code`` (private names are mangled with it), or None."""
    qual = getattr(code, "co_qualname", None)
    if qual is None:
        return None  # Python 3.10: mangled names then fail the exact comparison, and run as they are
    parts = qual.split(".")
    cls = None
    for a, b in zip(parts, parts[1:]):
        if a != "<locals>" and b != "<locals>":
            cls = a
    return cls
