"""The Function facade: a traced program, a derivative of it, and a kernel compiled once.

Every Function records its Python function's program once (at the first call of it or of
any derivative taken from it; derivatives share that trace). The compiled kernel is found
by a hash of that program and of everything else that decides the code (kind, argnums,
dtype, options, symgrad, compiler), so a cached kernel can only ever be the compiled form
of what was traced in this process. sympy is imported only to build a missing kernel."""
from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from contextlib import contextmanager

import numpy as np

from . import calling, forksafe, options as _options

# Slow compile stages are reported at WARNING level on this logger: without logging set
# up, Python prints them on stderr. Silence: SYMGRAD_QUIET=1, or
# logging.getLogger("symgrad.progress").setLevel(logging.ERROR).
progress = logging.getLogger("symgrad.progress")
PROGRESS_SECONDS = None if os.environ.get("SYMGRAD_QUIET") else 2.0


@contextmanager
def stage(function, what, detail=lambda: ""):
    """Time one pipeline stage; report it if it was slow."""
    t = time.perf_counter()
    yield
    dt = time.perf_counter() - t
    if PROGRESS_SECONDS is not None and dt >= PROGRESS_SECONDS:
        progress.warning("symgrad: %s: %s took %.1f s%s", function, what, dt, detail())


def c_identifier(name):
    """A valid ASCII C identifier for any name: the name itself where it is one, else the name
    with other characters replaced and a short hash of the original (fünf and f_nf differ)."""
    name = name or "f"
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if s[0].isdigit():
        s = "f_" + s
    if s != name:
        s += "_" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return s


class Source:
    """What a Function and its derivatives are made from: a Python function, traced once
    when first needed, or a program given as it is (from_sympy)."""

    def __init__(self, fn=None, shapes=None, program=None):
        self.fn, self.shapes, self._program, self._symbolic = fn, shapes, program, None
        self._lock = forksafe.RLock()

    def program(self, name):
        with self._lock:
            if self._program is None:
                from .tracing import trace
                with stage(name, "trace"):
                    self._program = trace(self.fn, self.shapes)
            return self._program

    def symbolic(self, name):
        """The program as sympy expressions (on a cache miss only)."""
        with self._lock:
            if self._symbolic is None:
                from .symbolic import to_sympy
                prog = self.program(name)
                with stage(name, "convert to sympy", lambda: f" ({prog.count_ops()} operations)"):
                    self._symbolic = to_sympy(prog)
            return self._symbolic


class Function:
    """A compiled numeric function of fixed-shape arguments (see ``symgrad.compile``).

    ``steps`` are the derivatives taken, in order: (kind, argument indices), kind one of
    grad, value_and_grad, jacobian, hessian, d<n>."""

    def __init__(self, name, source, dtype="float64", *, args, options=None, steps=(), structure=0):
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = None
        if str(dt) not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        self.py_name, self.name, self.dtype = name, c_identifier(name), dt
        self.args = args  # ((name, core shape), ...), known before tracing
        self.options = options or _options.DEFAULT
        self._source, self._steps, self._structure = source, tuple(steps), structure
        self._lock = forksafe.RLock()
        self._plan = self._kernel = self._optimized = None
        self._derived = {}  # derivatives taken of this Function, each made once

    # -- the pipeline, each stage computed once -------------------------------------------
    @property
    def kind(self):
        return "_".join(k for k, _ in self._steps) or "value"

    @property
    def c_name(self):
        return f"{self.name}_{self.kind}"

    @property
    def program(self):
        """The traced program (the IR) this Function and its derivatives are made from."""
        return self._source.program(self.name)

    @property
    def key(self):
        """Hash of everything that decides this Function's kernel."""
        from . import build
        parts = (self.program.key, self.c_name, self._steps, str(self.dtype), self.options.key(),
                 build.toolchain())
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]

    def result_shapes(self):
        """Core shapes of the results, from the traced program (no sympy)."""
        prog = self.program
        outs = [o.shape for o in prog.outputs]
        for kind, nums in self._steps:
            arg = [prog.args[i].shape for i in nums]
            if kind in ("grad", "value_and_grad", "hessian") and (len(outs) != 1 or outs[0] != ()):
                raise ValueError(f"{kind} needs a scalar-valued function, but it returns shape "
                                 f"{outs[0] if len(outs) == 1 else outs}; use .jacobian for vector-valued "
                                 "functions")
            outs = {"grad": arg, "value_and_grad": [()] + arg, "jacobian": [o + a for o in outs for a in arg],
                    "hessian": [a + b for a in arg for b in arg]}.get(kind, outs)
        return outs

    def symbolic(self):
        """This Function's results as a sympy program (derivatives taken, not optimised)."""
        from . import differentiate as D
        prog = self._source.symbolic(self.name)
        limit = self.options.inline_limit
        for kind, nums in self._steps:
            with stage(self.c_name, "differentiate"):
                if kind == "jacobian":
                    prog = D.jacobian(prog, nums, limit)
                elif kind == "hessian":
                    prog = D.hessian(prog, nums, limit)
                elif kind in ("grad", "value_and_grad"):
                    prog = D.grad(prog, nums, limit, with_value=kind == "value_and_grad")
                else:
                    prog = D.nth(prog, int(kind[1:]), nums[0], limit)
        return prog

    def optimized(self):
        """This Function's results as an optimised sympy program (what every target prints)."""
        with self._lock:
            if self._optimized is None:
                from .errors import CompileError
                from .optimize import optimize
                shapes = self.result_shapes()
                prog = self.symbolic()
                if [o.shape for o in prog.outputs] != shapes:
                    raise CompileError(f"{self.c_name}: results of shapes {[o.shape for o in prog.outputs]}"
                                       f", expected {shapes} (a bug in symgrad)")
                with stage(self.c_name, "optimize", lambda: f" ({len(prog.body)} assignments)"):
                    self._optimized = optimize(prog, self.options)
            return self._optimized

    @property
    def title(self):
        """What this Function computes, in words (for comments and documentation)."""
        what = {"value": "", "grad": "gradient of ", "value_and_grad": "value and gradient of ",
                "jacobian": "Jacobian of ", "hessian": "Hessian of "}
        kinds = [k for k, _ in self._steps]
        words = "".join(what.get(k, f"derivative {k[1:]} of ") for k in reversed(kinds))
        return f"{words}{self.py_name}({', '.join(n for n, _ in self.args)})"

    @property
    def kernel(self):
        """The in-process CPU kernel's source and what building it needs (render.Kernel)."""
        with self._lock:
            if self._kernel is None:
                from .build import vector_bits
                from .render import TARGETS, render
                prog = self.optimized()
                with stage(self.c_name, "generate C"):
                    self._kernel = render(prog, self.c_name, TARGETS["cpu", str(self.dtype)], vector_bits(),
                                          self.options, title=self.title)
            return self._kernel

    @property
    def c_source(self):
        """The C source of the in-process kernel this Function is compiled from."""
        return self.kernel.source

    def standalone(self, target="c99", name=None):
        """This Function as standalone source for ``target`` ("c99" or "cuda"): a render.c99.Unit
        (documented declarations, definitions) of the kernel named ``name`` (default c_name)."""
        from .render import TARGETS
        if target not in ("c99", "cuda"):
            raise ValueError(f"target must be 'c99' or 'cuda', got {target!r}")
        if target == "cuda":
            from .render.cuda import render_cuda as emit
        else:
            from .render.c99 import render_c99 as emit
        return emit(self.optimized(), name or self.c_name, TARGETS[target, str(self.dtype)], self.options, self.title)

    @property
    def cuda_source(self):
        """CUDA source of this Function: a __device__ function per point, K_kernel per batch."""
        from .render.cuda import cuda_file
        return cuda_file([self.standalone("cuda")], self.c_name)

    def to_cuda(self):
        """A callable that evaluates this Function on GPU arrays (CuPy, PyTorch, Numba: anything
        with __cuda_array_interface__), through CuPy."""
        from .gpu import CudaFunction
        return CudaFunction(self)

    def _library(self):
        """The loaded kernel: from the cache when one was built for this key, else built now.
        The library itself says what it computes (its kernel, dtype and result shapes); a
        library that says otherwise than this Function expects is discarded and rebuilt."""
        with self._lock:
            if self._plan is None:
                from . import build, cache
                key = self.key
                meta = {"kernel": self.c_name, "dtype": str(self.dtype),
                        "results": [list(s) for s in self.result_shapes()]}
                lib = build.load(key)
                if lib is not None and cache.library_meta(lib) != meta:
                    cache.warn_once(("meta", key), f"the cached kernel {key[:12]} describes another "
                                    "kernel; it is rebuilt")
                    cache.discard(key)
                    lib = None
                if lib is None:
                    k = self.kernel
                    with stage(self.c_name, "C compile", lambda: f" ({k.ops} operations)"):
                        lib = build.build(key, k.source, k.cdecl, parts=k.parts, extra_flags=k.cflags, meta=meta)
                shapes = [tuple(s) for s in cache.library_meta(lib)["results"]]
                self._plan = calling.Plan(self.c_name, self.args, shapes, self.dtype, self._structure, lib,
                                          self.options.stream_bytes)
            return self._plan

    @property
    def plan(self):
        """The loaded kernel and how it is called (calling.Plan: shapes, store policy)."""
        return self._plan or self._library()

    # -- derived functions ---------------------------------------------------------------
    @property
    def expr(self):
        """The sympy expression(s) this Function evaluates, in closed form (written with
        sympy's own functions; what is compiled is their real form: NaN outside the domain)."""
        import sympy as sp

        from .realfns import standard
        prog = self.symbolic()
        flat = [standard(e) for e in prog.inlined()]
        outs, k = [], 0
        for o in prog.outputs:
            part = flat[k:k + o.size]
            k += o.size
            outs.append(part[0] if o.shape == () else sp.ImmutableDenseNDimArray(part, o.shape))
        return calling.nest(self._structure, outs)

    def _derive(self, kind, argnums):
        """The derived Function, made once per (kind, argnums): ``F.grad(x)`` in a loop reuses
        one loaded kernel (and its store policy)."""
        structure_args, nums = calling.argnums(argnums, len(self.args))
        m = len(nums)
        if kind == "value_and_grad":
            structure = (0, calling.shift(structure_args, 1))
        elif kind == "hessian":
            structure = 0 if isinstance(structure_args, int) else \
                tuple(tuple(i * m + j for j in range(m)) for i in range(m))
        elif kind == "jacobian":  # each result becomes its Jacobian by each argument
            structure = _each_leaf(self._structure, lambda i: calling.shift(structure_args, i * m))
        else:
            structure = structure_args
        return self._derived_function((kind, tuple(nums)), structure, repr(structure_args))

    def _derived_function(self, step, structure, tag=""):
        key = (step, tag)
        with self._lock:
            if key not in self._derived:
                self._derived[key] = Function(self.py_name, self._source, self.dtype, args=self.args,
                                              options=self.options, steps=self._steps + (step,),
                                              structure=structure)
            return self._derived[key]

    @property
    def grad(self):
        """Gradient w.r.t. every argument: one array for one argument, else a tuple."""
        return self._derive("grad", None)

    @property
    def value_and_grad(self):
        """(value, gradient), computed by one kernel that shares subexpressions."""
        return self._derive("value_and_grad", None)

    @property
    def jacobian(self):
        """Jacobian: result core shape = output shape + argument shape (a tuple over arguments)."""
        return self._derive("jacobian", None)

    @property
    def hessian(self):
        """Hessian of a scalar function: core shape s+s; tuple of tuples for several arguments."""
        return self._derive("hessian", None)

    def derivative(self, n, argnum=0):
        """n-th derivative of every result w.r.t. the scalar argument ``argnum``."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"derivative order must be a non-negative int, got {n!r}")
        nargs = len(self.args)
        if not isinstance(argnum, int) or isinstance(argnum, bool) or not -nargs <= argnum < nargs:
            raise ValueError(f"argnum must be an int in range for a function of {nargs} arguments, "
                             f"got {argnum!r}")
        argnum %= nargs
        name, shape = self.args[argnum]
        if shape != ():
            raise ValueError(f"derivative(n) needs a scalar argument, but {name!r} has shape "
                             f"{shape}; use .jacobian or .hessian for array arguments")
        return self._derived_function((f"d{n}", (argnum,)), self._structure)

    # -- calling ------------------------------------------------------------------------
    def __call__(self, *args, out=None):
        plan = self._plan or self._library()
        return plan(args, out, f"{self.py_name} ({self.kind})")

    def __repr__(self):
        args = ", ".join(f"{name}{list(shape)}" for name, shape in self.args)
        return f"<symgrad.Function {self.py_name} {self.kind}({args}) {self.dtype}>"


def _each_leaf(structure, f):
    if isinstance(structure, int):
        return f(structure)
    return tuple(_each_leaf(s, f) for s in structure)
