"""A fingerprint of everything a trace of a Python function can read.

Code objects (with their constants), closure cells, defaults, the globals and module
attributes the code names, helper functions reached through them, and the values of
constants and arrays. Two functions with the same fingerprint trace to the same
program, so a cached kernel can be loaded without tracing (or importing sympy). When
something cannot be fingerprinted faithfully the result is None: always trace then."""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import types

import numpy as np

from .usercode import is_library, is_user_module



class _Opaque(Exception):
    """An object whose influence on a trace cannot be summarised."""


@functools.lru_cache(maxsize=None)
def _package_digest():
    """symgrad's own source and the versions of what it builds on: a changed symgrad or
    sympy never reuses another's fingerprints."""
    from importlib.metadata import PackageNotFoundError, version
    h = hashlib.sha256()
    for dist in ("sympy", "numpy", "cffi"):
        try:
            h.update(f"{dist}={version(dist)}".encode())
        except PackageNotFoundError:
            h.update(dist.encode())
    root = os.path.dirname(os.path.abspath(__file__))
    from .build import csrc_dir
    for dirpath, _, files in sorted(os.walk(root)) + [(str(csrc_dir()), None, ["symgrad_rt.h"])]:
        for name in sorted(files):
            if name.endswith((".py", ".h")):
                with open(os.path.join(dirpath, name), "rb") as f:
                    h.update(name.encode() + f.read())
    return h.hexdigest()


def fingerprint(fn, *extra):
    """Hex digest of ``fn`` and ``extra`` (shapes, dtype, derivative, flags), or None."""
    h = hashlib.sha256(_package_digest().encode())
    try:
        feeder = _Feeder(h)
        feeder.feed(fn)
        feeder.finish()
        for e in extra:
            _Feeder(h).feed(e)
    except (_Opaque, RecursionError):
        return None
    return h.hexdigest()[:32]


# Code that names these can read state no fingerprint sees (globals()["K"], os.environ, ...).
_DYNAMIC = {"globals", "vars", "locals", "getattr", "eval", "exec", "environ", "getenv", "__import__",
            "import_module", "__dict__"}
_PLAIN = (type(None), bool, int, float, complex, str, bytes, tuple, list, dict, set, frozenset)


def _code_names(code, acc):
    acc.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, acc)
    return acc


class _Feeder:
    def __init__(self, h):
        # seen: id -> (index, object); holding the object keeps its id from being reused
        self.h, self.seen, self.names = h, {}, set()
        self.user_modules, self.fed_attrs = [], set()

    def put(self, *parts):
        for p in parts:
            self.h.update(str(p).encode() + b"\x1f")

    def feed(self, v):
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
            return self.put(type(v).__name__, repr(v))
        if id(v) in self.seen:
            return self.put("ref", self.seen[id(v)][0])
        self.seen[id(v)] = (len(self.seen), v)
        if isinstance(v, (np.generic,)):
            return self.put(type(v).__name__, repr(v))
        if type(v) not in _PLAIN and not isinstance(v, type) and _is_user(type(v)):
            return self.instance(v)
        if isinstance(v, np.ndarray):
            self.put("ndarray", v.dtype.str, v.shape)
            if v.dtype == object:
                for x in v.flat:
                    self.feed(x)
            else:
                self.h.update(np.ascontiguousarray(v).tobytes())
            return
        if isinstance(v, (tuple, list)):
            self.put(type(v).__name__, len(v))
            for x in v:
                self.feed(x)
            return
        if isinstance(v, (set, frozenset)):
            return self.put(type(v).__name__, sorted(repr(x) for x in v))
        if isinstance(v, dict):
            self.put("dict", len(v))
            for k, x in v.items():
                self.feed(k)
                self.feed(x)
            return
        if isinstance(v, types.FunctionType):
            return self.function(v)
        if isinstance(v, types.MethodType):
            self.put("method")
            self.feed(v.__func__)
            return self.feed(v.__self__)
        if isinstance(v, functools.partial):
            self.put("partial")
            return self.feed((v.func, v.args, v.keywords))
        if isinstance(v, types.ModuleType):
            return self.module(v)
        if isinstance(v, (types.BuiltinFunctionType, np.ufunc)):
            self.put("builtin", getattr(v, "__module__", None), getattr(v, "__qualname__", v.__name__))
            owner = getattr(v, "__self__", None)  # COEF.get reads COEF
            if owner is not None and not isinstance(owner, types.ModuleType):
                self.feed(owner)
            return
        if isinstance(v, type):
            return self.cls(v)
        raise _Opaque(type(v))

    def instance(self, v):
        """A user object: its class (all user classes of its MRO), contents and attributes."""
        self.put("instance")
        self.cls(type(v))
        if isinstance(v, (tuple, list, set, frozenset, dict)):
            self.feed(dict(v) if isinstance(v, dict) else list(v))
        if hasattr(v, "__dict__"):
            self.feed(vars(v))
        elif getattr(type(v), "__slots__", None):
            raise _Opaque(type(v))  # slot values cannot all be read reliably

    def code(self, c):
        self.put("code", c.co_name, c.co_argcount, c.co_kwonlyargcount, c.co_flags, c.co_names,
                 c.co_varnames, c.co_freevars, c.co_cellvars)
        self.h.update(c.co_code)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                self.code(k)
            else:
                self.feed(k)

    def function(self, fn):
        if is_library(fn.__module__):
            return self.put("libfunction", fn.__module__, fn.__qualname__)
        self.put("function", fn.__qualname__)
        self.code(fn.__code__)
        self.feed(fn.__defaults__)
        self.feed(fn.__kwdefaults__)
        for cell in fn.__closure__ or ():
            try:
                self.feed(cell.cell_contents)
            except ValueError:
                self.put("emptycell")
        names = _code_names(fn.__code__, set())
        if names & _DYNAMIC:
            raise _Opaque(f"{fn.__qualname__} reads names dynamically ({', '.join(sorted(names & _DYNAMIC))})")
        self.names |= names
        g = fn.__globals__
        for name in sorted(names):
            if name in g:
                self.put("global", name)
                self.feed(g[name])
            else:
                self.put("unbound", name)  # a builtin, an attribute name, or an import
                self.imported(name)

    def module(self, m):
        if is_library(m.__name__) or not is_user_module(m):
            return self.put("module", m.__name__, getattr(m, "__version__", ""))
        self.put("usermodule", m.__name__)
        self.user_modules.append(m)  # its attributes are fed in finish(), once all names are known

    def imported(self, name):
        """A module the code may import while it runs (`import helpers` inside a function)."""
        m = sys.modules.get(name)
        if m is not None:
            return self.feed(m)
        if is_library(name):
            return
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return
        if spec is not None:  # a module the trace would import for the first time: unknown
            raise _Opaque(name)

    def finish(self):
        """Feed the attributes of user modules that any code reached names (to a fixpoint:
        feeding an attribute can reach more code and names)."""
        progress = True
        while progress:
            progress = False
            for m in list(self.user_modules):
                for name in sorted(self.names):
                    if (id(m), name) not in self.fed_attrs and hasattr(m, name):
                        self.fed_attrs.add((id(m), name))
                        self.put("attr", m.__name__, name)
                        self.feed(getattr(m, name))
                        progress = True

    def cls(self, c):
        if not _is_user(c):
            return self.put("class", c.__module__, c.__qualname__)
        self.put("userclass", c.__qualname__)
        for base in c.__mro__[1:]:
            self.cls(base)  # user bases in full, library bases by name
        self.cls(type(c))  # the metaclass
        for k, x in sorted(vars(c).items()):
            if k in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"):
                continue
            self.put("member", k)  # every member: methods may read any of them
            self.feed(x.__func__ if isinstance(x, (staticmethod, classmethod)) else
                      x.fget if isinstance(x, property) else x)


def _is_user(cls):
    mod = sys.modules.get(cls.__module__)
    return mod is not None and is_user_module(mod)
