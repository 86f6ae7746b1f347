"""The Function facade: a traced program, a derivative of it, and a kernel compiled once.

Every Function records its Python function's program once (at the first call of it or of
any derivative taken from it; derivatives share that trace). The compiled kernel is found
by a hash of that program and of everything else that decides the code (kind, argnums,
dtype, options, symgrad, flags, CPU; not the compiler's name), so a cached kernel can only
be the compiled form of what was traced in this process. sympy is imported only to build a
missing kernel."""
from __future__ import annotations

import hashlib
import math
import os
import pickle
import weakref
import re

import numpy as np

from . import calling, forksafe, options as _options
from .source import C_COMPILE_BASE, RATES, PerObject, Source, stage
from .errors import ScalarUsedAsArray
from .signature import TRACED, checked_keywords

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
        self._what = f"{name} ({'_'.join(k for k, _ in steps) or 'value'})"  # for messages
        self.args = args  # ((name, core shape), ...), known before tracing
        self.options = options or _options.DEFAULT
        self._source, self._steps, self._structure = source, tuple(steps), structure
        self._lock = forksafe.RLock()
        self._plan = self._kernel = self._optimized = None
        self._kernel_bits = None  # the vector width the kernel was rendered for
        self._derived = {}  # derivatives taken of this Function, each made once
        self._bound = PerObject()  # a method's Function per instance
        self._variants = {}  # calls that pass defaulted parameters: spec -> Function

    # -- the pipeline, each stage computed once -------------------------------------------
    @property
    def kind(self):
        return "_".join(k for k, _ in self._steps) or "value"

    @property
    def c_name(self):
        return f"{self.name}_{self.kind}"

    @property
    def program(self):
        """The program this Function computes, in the IR (print it: one operation a line, like
        a jaxpr): the traced program, or a derivative's own program (F.grad.program). Where
        arrays stayed loops, a derivative's program is its traced one (loops are differentiated
        as they are printed)."""
        if not self._steps or self.loops:
            return self.traced
        return self.optimized()

    @property
    def traced(self):
        """The traced program (the IR) this Function is made from: where arrays stayed loops
        that its derivatives cannot be taken of (transforms/kinds.supports), the function traced unrolled."""
        return self._effective().program(self.name)

    def _effective(self):
        """The Source this Function compiles from, decided once (program and key read it often)."""
        src = self.__dict__.get("_effective_source")
        if src is None:
            src, prog = self._source, self._source.program(self.name)
            if prog.has_loops:
                from .transforms.kinds import supports
                if not supports(prog, self._steps):
                    src = self._source.unrolled(self.name, self._what)
            self._effective_source = src
        return src

    @property
    def loops(self):
        """Whether this Function's kernel runs loops (arrays kept as arrays, tracing/lazy.py)."""
        return self.traced.has_loops

    @property
    def key(self):
        """Hash of everything that decides this Function's kernel (a gradient's: the
        value_and_grad kernel it runs, _runs)."""
        from . import build
        f = self._runs()
        parts = (f.traced.key, f.c_name, f._steps, str(f.dtype), f.options.key(), build.toolchain())
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]

    def _runs(self):
        """The Function whose in-process kernel this one calls: a gradient of a large program
        (_shared) calls its value_and_grad kernel with the value not stored, so F.grad and
        F.value_and_grad share one compiled library; any other Function its own."""
        f = self.__dict__.get("_runs_function")
        if f is None:
            f = self
            if self._steps[-1:] and self._steps[-1][0] == "grad" and self._shared():
                sibling = self.__dict__.get("_sibling")  # F.value_and_grad itself, where F made this
                f = sibling() if sibling else Function(
                    self.py_name, self._source, self.dtype, args=self.args, options=self.options,
                    steps=self._steps[:-1] + (("value_and_grad", self._steps[-1][1]),), structure=0)
                f = self if f.loops else f
            self._runs_function = f
        return f

    def _shared(self):
        """Whether this gradient (or value and gradient) shares its kernel with its pair: for a
        program of Options.large_kernel_ops operations or more, whose compile takes seconds.
        A small kernel's value costs memory traffic beside its gradient (examples/benchmark.py's
        memory-bound seed_grad was slower with it) and its compile is short: each pair keeps its own."""
        return not self.loops and self.traced.count_ops() >= self.options.large_kernel_ops

    @property
    def _optional(self):
        """How many leading results of this Function's kernel may go unstored (the value)."""
        return 1 if self._steps[-1:] and self._steps[-1][0] == "value_and_grad" and self._shared() else 0

    def result_shapes(self):
        """Core shapes of the results, from the traced program (no sympy)."""
        from .transforms.kinds import result_shapes
        prog = self.traced
        return result_shapes([o.shape for o in prog.outputs], [a.shape for a in prog.args], self._steps)

    def derived(self):
        """This Function's results as a Program (the IR; derivatives taken, not optimised), or
        for a function whose arrays stayed loops its loops.LoopProgram. A gradient program is
        made once per Source (Source.derived): the one taken for F.grad is the one
        F.value_and_grad and F.hvp build on."""
        src = self._effective()
        prog = src.program(self.name)
        if prog.has_loops:
            return self._loop_symbolic(src)
        for i, (kind, nums) in enumerate(self._steps):
            prog = self._step(prog, kind, nums, self._steps[:i])
        return prog

    def _loop_symbolic(self, src):
        """The loops.LoopProgram of this Function's results."""
        from . import loops
        from .program import tangent_names
        lp = src.loop_program(self.name)
        with stage(self.c_name, "differentiate", expect=self._expect("differentiate")):
            for kind, nums in self._steps:
                tangents = tangent_names([a.name for a in lp.args], nums) if kind == "hvp" else ()
                lp = loops.derive(lp, kind, nums, tangents)
        return lp

    def _step(self, prog, kind, nums, before):
        """One derivative of ``prog``, the program of the steps ``before``: built by its kind
        (transforms/kinds.py); the value-and-gradient program of a Source is made once
        (Source.derived), and F.grad, F.value_and_grad and F.hvp build on it."""
        from .transforms import derive
        from .transforms.kinds import kind as kind_of
        fn = self

        class Context:
            @staticmethod
            def value_and_grad():
                return fn._source.derived(before + (("value_and_grad", nums),),
                                          lambda: derive.grad(prog, nums, with_value=True))
        with stage(self.c_name, "differentiate", expect=self._expect("differentiate")):
            return kind_of(kind).build(prog, nums, Context)

    def _expect(self, what):
        """(operations, seconds) expected of a stage: the traced program's size, about doubled
        by each derivative taken, at that stage's rate (for the progress lines only)."""
        def expect():
            ops = self.traced.count_ops() * 2.2 ** len(self._steps)
            return int(ops), RATES[what] * ops
        return expect

    def optimized(self):
        """This Function's results as an optimised Program (what every target prints).
        A gradient's is its value_and_grad kernel's without the value (_runs): the standalone
        C prints the statements of the in-process kernel (the same bits, libm permitting)."""
        with self._lock:
            if self._optimized is None:
                from .errors import CompileError
                from .transforms.optimize import optimize, only
                shapes = self.result_shapes()
                if self._runs() is not self:
                    full = self._runs().optimized()
                    self._optimized = only(full, full.outputs[len(full.outputs) - len(shapes):])
                    return self._optimized
                prog = self.derived()
                if [o.shape for o in prog.outputs] != shapes:
                    raise CompileError(f"{self.c_name}: results of shapes {[o.shape for o in prog.outputs]}"
                                       f", expected {shapes} (a bug in symgrad)")
                if self.loops:  # common subexpressions are shared as it is printed
                    self._optimized = prog
                    return prog
                with stage(self.c_name, "optimize", lambda: f" ({prog.count_ops()} operations)",
                           self._expect("optimize")):
                    self._optimized = optimize(prog, self.options)
            return self._optimized

    @property
    def title(self):
        """What this Function computes, in words (for comments and documentation)."""
        from .transforms.kinds import title
        return title(self._steps, f"{self.py_name}({', '.join(n for n, _ in self.args)})")

    @property
    def kernel(self):
        """The in-process CPU kernel's source and what building it needs (render.Kernel)."""
        if self._runs() is not self:
            return self._runs().kernel
        with self._lock:
            if self._kernel is None:
                from .build import vector_bits
                from .render import pick, render
                prog = self.optimized()
                with stage(self.c_name, "generate C", expect=self._expect("generate C")):
                    target = pick("cpu", self.dtype, self.options)
                    if self.loops:
                        from .render.loops import render_loops
                        self._kernel = render_loops(prog, self.c_name, target, self.options, title=self.title)
                    else:
                        self._kernel = render(prog, self.c_name, target, vector_bits(), self.options,
                                              title=self.title, optional=self._optional)
                    self._kernel_bits = vector_bits()
            return self._kernel

    @property
    def c_source(self):
        """The C source of the in-process kernel this Function is compiled from."""
        return self.kernel.source

    def standalone(self, target="c99", name=None):
        """This Function as standalone source for ``target`` ("c99" or "cuda"): a render.c99.Unit
        (documented declarations, definitions) of the kernel named ``name`` (default c_name).
        Standalone source has no loops: where arrays stayed loops, it is printed from the
        function traced again element by element, with a warning naming the data it then holds."""
        from .render import pick
        if target not in ("c99", "cuda"):
            raise ValueError(f"target must be 'c99' or 'cuda', got {target!r}")
        if self.loops:
            f = self.__dict__.get("_elementwise")
            if f is None:
                held = sum(d.size for d in self.traced.data)
                why = (f"standalone source has no loops, so the {held} entries of its closed-over data are "
                       "printed into it as constants" if held else
                       "standalone source has no loops, so its array operations are printed entry by entry")
                f = self._elementwise = Function(self.py_name, self._source.unrolled(self.name, self._what, why),
                                                 self.dtype, args=self.args, options=self.options,
                                                 steps=self._steps, structure=self._structure)
            return f.standalone(target, name)
        if target == "cuda":
            from .render.cuda import render_cuda as emit
        else:
            from .render.c99 import render_c99 as emit
        return emit(self.optimized(), name or self.c_name, pick(target, self.dtype, self.options), self.options,
                    self.title)

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
        """The loaded kernel: from the cache when one was built for this key, else the library
        a pickle shipped for this very key (made a cache entry), else built now. The library
        itself says what it computes (its kernel, dtype and result shapes); a library that
        says otherwise than this Function expects is discarded and rebuilt."""
        with self._lock:
            if self._plan is None:
                from . import build, cache
                key, f = self.key, self._runs()
                meta = f._meta()
                lib = build.load(key)
                shipped = self.__dict__.pop("_shipped", None)  # a pickle's library, if built for this key
                if lib is None and shipped is not None and shipped.get("key") == key:
                    lib = build.adopt(key, shipped["bytes"], shipped["sha256"], shipped.get("info"))
                if lib is not None and cache.library_meta(lib, key) != meta:
                    cache.warn_once(("meta", key), f"the cached kernel {key[:12]} describes another "
                                    "kernel; it is rebuilt")
                    cache.discard(key)
                    lib = None
                if lib is None:
                    k = f.kernel
                    with stage(f.c_name, "C compile", lambda: f" ({k.ops} operations)",
                               lambda: (k.ops, C_COMPILE_BASE + RATES["C compile"] * k.ops)):
                        lib = build.build(key, k.source, k.cdecl, parts=k.parts, extra_flags=k.cflags, meta=meta)
                if self.traced.data:
                    calling.bind_data(lib, key, self.c_name, self.traced.data)
                shapes = [tuple(s) for s in cache.library_meta(lib, key)["results"]]
                skip = len(shapes) - len(self.result_shapes())  # the value, where F.grad runs F.value_and_grad's kernel
                self._plan = calling.Plan(f.c_name, self.args, shapes[skip:], self.dtype, self._structure, lib,
                                          self.options.stream_bytes, skip=[math.prod(x) for x in shapes[:skip]])
            return self._plan

    def _meta(self):
        """What this Function's library says of its kernel (checked before it is called)."""
        return {"kernel": self.c_name, "dtype": str(self.dtype), "results": [list(s) for s in self.result_shapes()]}

    @property
    def plan(self):
        """The loaded kernel and how it is called (calling.Plan: shapes, store policy)."""
        return self._plan or self._library()

    def _no_loops(self, what):
        if self.loops:
            from .errors import CompileError
            raise CompileError(f"{self.c_name}: {what} of a function whose arrays stayed loops (data read by "
                               "pointer) is not available; compile it with "
                               "options=symgrad.Options(loop_min_size=0) to trace every array element by element")

    # -- derived functions ---------------------------------------------------------------
    @property
    def expr(self):
        """The sympy expression(s) this Function evaluates, in closed form (written with
        sympy's own functions; what is compiled is their real form: NaN outside the domain)."""
        import sympy as sp

        from .realfns import standard
        from .symbolic import to_sympy
        self._no_loops("a closed form (.expr)")
        prog = to_sympy(self.derived())
        flat = [standard(e) for e in prog.inlined()]
        outs, k = [], 0
        for o in prog.outputs:
            part = flat[k:k + o.size]
            k += o.size
            outs.append(part[0] if o.shape == () else sp.ImmutableDenseNDimArray(part, o.shape))
        return calling.nest(self._structure, outs)

    def _derive(self, kind, argnums, stack=False):
        """The derived Function, made once per (kind, argnums): ``F.grad(x)`` in a loop reuses
        one loaded kernel (and its store policy)."""
        if self._steps and self._steps[-1][0] == "hvp":
            raise ValueError(f"{self.c_name}: a Hessian-vector product is the last derivative taken; "
                             "differentiate first (F.grad.hvp is not defined, F.jacobian.hvp neither)")
        structure_args, nums = calling.argnums(argnums, len(self.args))
        m = len(nums)
        if kind == "jacobian" and stack:
            return self._derived_function(("jacobian_stacked", tuple(nums)), self._structure)
        if kind == "hvp":
            from .program import tangent_names
            names = tangent_names([n for n, _ in self.args], nums)
            args = self.args + tuple((t, self.args[i][1]) for t, i in zip(names, nums))
            return self._derived_function(("hvp", tuple(nums)), structure_args, repr(structure_args), args)
        if kind == "value_and_grad":
            structure = (0, calling.shift(structure_args, 1))
        elif kind == "hessian":
            structure = 0 if isinstance(structure_args, int) else \
                tuple(tuple(i * m + j for j in range(m)) for i in range(m))
        elif kind == "jacobian":  # each result becomes its Jacobian by each argument
            structure = _each_leaf(self._structure, lambda i: calling.shift(structure_args, i * m))
        else:
            structure = structure_args
        fn = self._derived_function((kind, tuple(nums)), structure, repr(structure_args))
        if kind == "grad" and "_sibling" not in fn.__dict__:  # runs F.value_and_grad's kernel (_runs)
            fn._sibling = lambda: self._derive("value_and_grad", argnums)
        return fn

    def _derived_function(self, step, structure, tag="", args=None):
        key = (step, tag)
        with self._lock:
            if key not in self._derived:
                self._derived[key] = Function(self.py_name, self._source, self.dtype, args=args or self.args,
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

    @property
    def hvp(self):
        """Hessian-vector product of a scalar function: ``F.hvp(x, v)`` is H(x) @ v (for several
        arguments, one tangent each after them: ``F.hvp(x, y, vx, vy)``), by forward-over-reverse
        differentiation: its cost is linear in the program's, no Hessian is formed."""
        return self._derive("hvp", None)

    @checked_keywords("Function.jacobian_wrt")
    def jacobian_wrt(self, argnums=None, *, stack=False):
        """Jacobian by the arguments ``argnums`` (default: all). ``stack=True``: one array of
        core shape output shape + (total size of those arguments,), arguments flattened and
        concatenated in order: what scipy's curve_fit and least_squares expect."""
        return self._derive("jacobian", argnums, stack=stack)

    @checked_keywords("Function.grad_wrt")
    def grad_wrt(self, argnums):
        """Gradient by the arguments ``argnums`` only (an int: one array; a tuple: a tuple)."""
        return self._derive("grad", argnums)

    @checked_keywords("Function.hessian_wrt")
    def hessian_wrt(self, argnums):
        """Hessian by the arguments ``argnums`` only."""
        return self._derive("hessian", argnums)

    @property
    def batch_last(self):
        """This Function with batch dimensions after the core ones, in arguments and results
        (scipy's solve_ivp ``vectorized=True``: ``fun=F.batch_last``)."""
        return calling.BatchLast(self)

    def build(self, kinds=("value",)):
        """Compile now the kernels of ``kinds`` (names of this Function's derivatives: "value",
        "grad", "value_and_grad", "jacobian", "hessian", "hvp") rather than at their first call,
        into one library (one C compile; kernels of large programs, compiled with other flags,
        in one more, in parallel). Later kinds add a library without rebuilding these. Returns self."""
        from .transforms.kinds import KINDS
        names = ("value",) + tuple(KINDS)
        fns = []
        for kind in ([kinds] if isinstance(kinds, str) else kinds):
            if kind not in names or kind == "jacobian_stacked":
                raise ValueError(f"build: unknown kind {kind!r}; expected some of "
                                 f"{', '.join(n for n in names if n != 'jacobian_stacked')}")
            fns.append(self if kind == "value" else getattr(self, kind))
        fresh = list({f.key: f._runs() for f in fns if f._plan is None}.values())  # F.grad runs F.value_and_grad's
        from . import build
        groups = {}
        for f in fresh:  # the Python stages, one after another
            shipped = f.__dict__.get("_shipped") or {}
            if build.load(f.key) is None and shipped.get("key") != f.key:  # (a pickle's library: _library)
                k = f.kernel
                groups.setdefault(k.cflags, []).append((f.key, k, f._meta()))
        def compile_group(group):
            ops = sum(k.ops for _, k, _ in group)
            with stage(self.name, "C compile", lambda: f" ({len(group)} kernels, {ops} operations)",
                       lambda: (ops, C_COMPILE_BASE + RATES["C compile"] * ops)):
                build.build_many(group)
        if len(groups) > 1:  # the C compilers run in parallel
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(min(len(groups), os.cpu_count() or 1)) as pool:
                list(pool.map(compile_group, groups.values()))
        else:
            for group in groups.values():
                compile_group(group)
        for f in fns:
            f._library()
        return self

    @checked_keywords("Function.derivative")
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
    def __call__(self, *args, out=None, **kwargs):
        if out is not None and self._source.takes_out:  # f's own parameter `out`, not result arrays
            kwargs["out"], out = out, None
        if kwargs or len(args) != len(self.args) or self._source.method:
            if self._source.method:
                if self._steps or not args:
                    raise TypeError(f"{self._what} is a method: call it on an instance, obj.{self.py_name}"
                                    f"{'.' + self.kind if self._steps else ''}(...)")
                return self.__get__(args[0])(*args[1:], out=out, **kwargs)  # Class.f(obj, x)
            function, args = self._bind_call(args, kwargs)
            if function is not self:
                return function(*args, out=out)
        plan = self._plan
        if plan is None:
            try:
                plan = self._library()
            except ScalarUsedAsArray as e:
                raise e.for_call([n for n, _ in self.args], args) from None
        return plan(args, out, self._what)

    def _bind_call(self, args, kwargs):
        """(the Function that evaluates this call, its positional arguments) for a call by
        keyword, an unbound method called with its instance first, or one that passes defaulted
        parameters: those make a variant traced with them (signature.bind says how)."""
        from .signature import bind
        src, what = self._source, self._what
        # a program without its Python function (from_sympy, a pickle), an hvp (its tangents
        # follow the arguments) or a variant: its own arguments only, by position or name
        plain = src.fn is None or src.spec or any(k == "hvp" for k, _ in self._steps)
        values, spec, traced, consts = bind(None if plain else src.fn, 0 if src.instance is None else 1,
                                            [name for name, _ in self.args], args, kwargs, what)
        if not spec:
            return self, tuple(values)
        with self._lock:
            f = self._variants.get(spec)
            if f is None:
                extra = tuple((name, ()) for name, how in spec if how == TRACED)
                f = self._variants[spec] = Function(self.py_name, src.variant(spec, consts), self.dtype,
                                                    args=self.args + extra, options=self.options,
                                                    steps=self._steps, structure=self._structure)
        return f, tuple(values) + tuple(traced)

    def __get__(self, obj, cls=None):
        """A method's Function read from an instance: its own Function, traced with that
        instance as ``self`` at its first call (one per instance, like a bound method)."""
        if obj is None or not self._source.method:
            return self
        if not _weakly_referable(obj):
            raise TypeError(f"{type(obj).__name__} objects cannot be weakly referenced (__slots__ without "
                            f"'__weakref__'): symgrad keeps {self.py_name}'s Function of each instance by weak "
                            "reference. Add '__weakref__' to __slots__, or compile a function of the values")
        ref = weakref.ref(obj)

        def make():
            f = Function(self.py_name, None, self.dtype, args=self.args, options=self.options,
                         steps=self._steps, structure=self._structure)
            f._source = self._source.bind(obj, lambda: self._bound.keep(ref, f))
            return f
        return self._bound.get(obj, make)

    def __reduce__(self):
        """Pickled by value: the traced program (never the Python function), shapes, structure,
        dtype, options, the generated kernel source when it exists and, when its library is
        loaded in this process, that library (bytes, SHA-256, key) for a worker without a compiler."""
        if self._source.method:
            raise TypeError(f"cannot pickle {self.py_name}: a method's Function is pickled bound to an "
                            f"instance (pickle obj.{self.py_name}, not the class attribute)")
        state = {"name": self.py_name, "dtype": str(self.dtype), "args": self.args, "options": self.options,
                 "steps": self._steps, "structure": self._structure, "program": self.traced}
        runs = self._runs()
        if runs._kernel is not None:
            state["kernel"] = (runs._kernel_bits, runs._kernel)
        from . import build, cache
        key = self.key
        shipped = cache.library_bytes(key)  # read once per process, None if never loaded here
        if shipped is not None:
            state["library"] = {"key": key, "bytes": shipped[0], "sha256": shipped[1], "info": shipped[2]}
        return _unpickle, (PICKLE_FORMAT, build.VERSION, build.source_digest(),
                           pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))

    def __repr__(self):
        args = ", ".join(f"{name}{list(shape)}" for name, shape in self.args)
        return f"<symgrad.Function {self.py_name} {self.kind}({args}) {self.dtype}>"


def _weakly_referable(obj):
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


PICKLE_FORMAT = 1


def _unpickle(fmt, version, digest, state):
    """A pickled Function, in this process: its header checked against this symgrad (an older
    or newer one may trace, differentiate or lay out results otherwise) before its state (bytes)
    is rebuilt, then called as it was. A shipped library is kept for _library, which uses it
    only for the key it was built for."""
    from . import build
    if fmt != PICKLE_FORMAT or version != build.VERSION:
        raise pickle.UnpicklingError(
            f"this pickle holds a Function of symgrad {version} (pickle format {fmt}), but this is symgrad "
            f"{build.VERSION} (format {PICKLE_FORMAT}): pickle it again with this version, or install "
            f"symgrad=={version} where it is loaded")
    if digest != build.source_digest():
        raise pickle.UnpicklingError(
            f"this pickle holds a Function of another build of symgrad {version} (its source differs from "
            "this installation's): install the same symgrad everywhere the Function travels")
    state = pickle.loads(state)
    f = Function(state["name"], Source(program=state["program"]), state["dtype"], args=state["args"],
                 options=state["options"], steps=state["steps"], structure=state["structure"])
    bits, kernel = state.get("kernel", (None, None))
    if kernel is not None:
        from .build import vector_bits
        if bits == vector_bits():  # rendered for this CPU's vector width: no sympy needed here
            runs = f._runs()
            runs._kernel, runs._kernel_bits = kernel, bits
    if isinstance(state.get("library"), dict):
        f._shipped = state["library"]
    return f


def _each_leaf(structure, f):
    if isinstance(structure, int):
        return f(structure)
    return tuple(_each_leaf(s, f) for s in structure)
