"""How traced code reaches the stand-ins, without changing anything anyone else can see.

A user function is recompiled from its source with every call ``f(a, ...)`` turned into
``__symgrad_call__(f)(a, ...)``: at the moment of the call, ``intercept`` maps the callee
(whatever it is then: a replaced ``math.sin`` included) to its traced stand-in, to a
rewritten copy of a user function, or leaves it alone. The copy shares the original's
globals, closure cells and defaults, and the call still happens in the user's frame, so
writes, ``sys._getframe`` and zero-argument ``super()`` behave as in Python. Nothing is
patched: other threads keep running the original code, and a traced value the copy stores
where they could read it (a global, a cell, an attribute of an object the trace did not
create) stays in the trace's overlay (overlay.py, overlay_ast.py). The source is used only if
it compiles to exactly the code that is running; otherwise the function runs as it is."""
from __future__ import annotations

import __future__
import ast
import builtins
import inspect
import functools
import hashlib
import linecache
import sys
import types

from .. import forksafe
from ..errors import TraceError
from . import overlay, overlay_ast, overlay_items, overlay_watch, registry, scopes, selects, values
from .nosource import PROXY as _PROXY, Globals as _Globals, reads_globals_only as _reads_globals_only, takes_callbacks as _takes_callbacks, with_callbacks as _with_callbacks
from .transform import CALL, Calls, Mangle, convert, effects
from .standins import standin, volatile
from .usercode import _STDLIB, LIBRARIES, is_user_code, module_file as _module_file  # noqa: F401

_MAKE = "__symgrad_make__"
_FUTURE = 0
for _name in __future__.all_feature_names:
    _FUTURE |= getattr(__future__, _name).compiler_flag
# Flags that change what a code object is (a generator is not a function).
_KIND = 0x20 | 0x80 | 0x100 | 0x200 | 0x04 | 0x08  # generator, coroutine, async gen, iterable coro, *args, **kw

# -- the call interceptor ----------------------------------------------------------------------
_codes = {}  # original code -> (rewritten code, closure indices), or None: run the original
_effects = {}  # original code -> what it changes outside itself (see selects.effects)
_lock = forksafe.RLock()


def intercept(f):
    """What a call of ``f`` in rewritten code calls (the hot path of tracing)."""
    if getattr(values.state, "builder", None) is None:
        return f  # a rewritten copy run outside a trace behaves as the original
    if selects.in_branch():
        caller = sys._getframe(1)
        _in_branch(f, caller)
        return selects.no_out(_guard(f, _callee(f)), caller)
    g = _callee(f)
    return _guard(f, g) if g is f and overlay._dirty else g


def _guard(f, g):
    """``g`` is ``f`` itself (code that does not read the overlay): refused where it is given an
    object the overlay keeps something of (overlay.guard)."""
    if g is f and overlay._dirty and values.state.overlay.owners:
        return overlay_watch.guard(f)
    return g


registry.HOOKS.intercept = intercept


def _callee(f):
    s = standin(f)
    if s is not None:
        return s
    why = volatile(f)
    if why is not None:
        raise TraceError(f"{why}() is called at {values.user_site()}: its result changes from call to "
                         "call, but a traced function is traced once and its result would be frozen "
                         "into the compiled code. Pass the value as an argument instead.")
    t = type(f)
    if t is types.FunctionType:
        return function(f)
    if t is types.MethodType:
        fn = f.__func__
        if type(fn) is types.FunctionType:
            new = function(fn)
            return f if new is fn else types.MethodType(new, f.__self__)
    if t is functools.partial:
        return functools.partial(intercept(f.func), *f.args, **f.keywords)
    if t is _CACHED or t is types.MethodType and type(f.__func__) is _CACHED:
        return _uncached(f)
    if _takes_callbacks(f):
        return _with_callbacks(f)
    if isinstance(f, type):
        return _constructor(f)
    if t is types.BuiltinFunctionType and _foreign(getattr(f, "__self__", None)):
        return _compiled(f)
    if t.__module__ != "builtins":
        call = inspect.getattr_static(t, "__call__", None)  # as Python finds it: static, class or plain
        if isinstance(call, staticmethod):
            return intercept(call.__func__)
        if isinstance(call, classmethod):
            return types.MethodType(intercept(call.__func__), t)
        if type(call) is types.FunctionType:
            new = function(call)
            if new is not call:
                return types.MethodType(new, f)
    return overlay_items.object_method(f) or f


_CACHED = type(functools.lru_cache(None)(len))


def _uncached(f):
    """A functools.lru_cache/cache function: called past its cache with a traced argument, or while
    this trace keeps values private (a result would stay in the cache after the trace)."""
    fn = f.__func__ if type(f) is types.MethodType else f

    def call(*a, **k):
        ov = getattr(values.state, "overlay", None)
        if overlay.traced(a) or overlay.traced(k) or ov is not None and ov.dirty:
            g = intercept(fn.__wrapped__)
            return g(f.__self__, *a, **k) if fn is not f else g(*a, **k)
        return f(*a, **k)
    return call


def _foreign(module):
    """Whether a C function of ``module`` is one that cannot take traced values (cmath's, or a
    third-party extension's): the standard library's (sys._getframe, warnings.warn: they look
    at the caller's frame, so they are never wrapped) and numpy's are not."""
    if not isinstance(module, types.ModuleType):
        return False
    name = module.__name__
    if name == "cmath":
        return True
    path = getattr(module, "__file__", None) or ""
    return bool(path) and not path.startswith(_STDLIB) and name.split(".")[0] not in ("numpy", "symgrad", "_cffi_backend")


def _compiled(f):
    """A module's C function (cmath.sin, a replacement of math.sin, an extension's), called as it
    is: it cannot be traced into, so where it asks a traced value for its float() the error names it."""
    def call(*a, **k):
        try:
            return f(*a, **k)
        except values.Leaving as e:
            if e.__traceback__.tb_next is None or e.__traceback__.tb_next.tb_next is not None:
                raise  # not asked by f itself (by Python code f called back)
            name = f"{f.__self__.__name__}.{f.__name__}"
            raise TraceError(f"{name}() takes {e.what} of a traced value at {values.user_site()}: it is compiled "
                             "code, which symgrad cannot trace into, and it would make the value a constant (its "
                             f"derivative lost). Call a function symgrad traces instead (math, numpy, "
                             f"scipy.special, or Python code); if {name} replaced one of those, restore it") from None
    return call


def _in_branch(f, caller):
    """A call made while both branches of an ``if`` on a traced value run: refused if it
    would change an object both branches see (a user function's own check is in function())."""
    selects.check_call(f, caller)


def _effects_in_branch(f):
    why = _effects.get(f.__code__)
    if why and selects.in_branch():
        raise TraceError(f"{f.__qualname__}() is called inside a branch of an `if` whose condition is traced, "
                         f"at {values.user_site()}, and it changes something outside itself ({why}): both "
                         "branches run, so the change would happen twice. Return the values instead")


def function(f):
    """``f`` recompiled with its calls intercepted, or ``f`` itself (library code, code the
    rewriter made, or no source that matches the running code)."""
    code = f.__code__
    if code in _made:
        return f  # a function defined inside rewritten code: already rewritten
    hit = _codes.get(code, False)
    if hit is False:
        with _lock:
            hit = _codes[code] = _rewrite(f)
    if hit is None:
        return f
    _effects_in_branch(f)
    if f.__defaults__ is not None or f.__closure__ is not None or f.__kwdefaults__ is not None:
        overlay_items.held(f)  # the containers they hold are not this trace's
    if hit is _PROXY:
        g = types.FunctionType(code, _Globals(f.__globals__), f.__name__, f.__defaults__, f.__closure__)
    else:
        g = types.FunctionType(hit, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


# The rewritten code calls the interceptor by this name, found among the builtins: no local,
# no cell, no global of the user's module changes (locals() and co_freevars stay as written).
setattr(builtins, CALL, intercept)
_made = overlay_watch.MADE  # code objects the rewriter made (nested ones included)


def _remember(code):
    _made.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _remember(c)


def _constructor(cls):
    """A user class called in traced code: ``__new__`` and ``__init__`` rewritten, as
    ``type.__call__`` would call them."""
    if type(cls).__call__ is not type.__call__ or not is_user_code(cls.__module__, _module_file(cls)):
        return cls

    def construct(*a, **k):
        new = cls.__new__
        if new is object.__new__:
            if (a or k) and cls.__init__ is object.__init__:
                raise TypeError(f"{cls.__name__}() takes no arguments")
            obj = object.__new__(cls)
            overlay_items.born(obj)
        else:
            obj = intercept(new)(cls, *a, **k)
        if isinstance(obj, cls) and type(obj).__init__ is not object.__init__:
            intercept(type(obj).__init__)(obj, *a, **k)
        return obj
    return construct


# -- recompiling a function from its source ------------------------------------------------------
class _NoSource(Exception):
    pass


def _rewrite(f):
    code = f.__code__
    module = getattr(f, "__module__", None)
    if not is_user_code(module, code.co_filename):
        return None
    try:
        if CALL not in getattr(f, "__builtins__", vars(builtins)):
            raise _NoSource("it runs with builtins of its own")
        text, node, imports = _find(code, f.__globals__)
        new = _compile(text, node, code, transform=True, imports=imports)
        if not isinstance(node, ast.Lambda):
            g = f.__globals__
            why = effects(node, lambda name: isinstance(g.get(name), types.ModuleType))
            if why:
                _effects[code] = why
    except _NoSource as e:
        if _reads_globals_only(code):
            return _PROXY
        values.UNREWRITTEN[code] = str(e)
        return None
    _remember(new)
    return new


_trees = {}


def _tree(filename, module_globals):
    """(source lines, AST) of a file, parsed once per content."""
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise _NoSource(f"no source for {filename}")
    text = "".join(lines)
    key = (filename, hashlib.sha1(text.encode()).hexdigest())
    if key not in _trees:
        try:
            tree = ast.parse(text, filename)
        except (SyntaxError, ValueError) as e:
            raise _NoSource(f"its file does not parse ({e})") from None
        _trees[key] = (lines, tree)
    return _trees[key]


def _find(code, module_globals):
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
            if _same(_compile(text, node, code, transform=False, imports=imports), code):
                return text, node, imports
        except (SyntaxError, ValueError, StopIteration):
            continue
    raise _NoSource("its source on disk is not the code that runs (edited since it was imported?)")


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


def _compile(text, node, code, transform, imports):
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
