"""The Function facade: a traced program, a derivative of it, and a kernel compiled once.

Every Function records its Python function's program once (at the first call of it or of
any derivative taken from it; derivatives share that trace). The compiled kernel is found
by a hash of that program and of everything else that decides the code (kind, argnums,
dtype, options, symgrad, flags, CPU; not the compiler's name), so a cached kernel can only
be the compiled form of what was traced in this process. The stages from program to loaded
kernel live in pipeline.py, pickling in pickling.py; sympy is imported only for what needs
it (.expr, from_sympy)."""
from __future__ import annotations

import hashlib
import weakref
import re

import numpy as np

from .call import calling
from . import forksafe, options as _options
from .build.library import Callable
from .pipeline.source import PerObject, Source
from .errors import ScalarUsedAsArray
from .signature import TRACED, checked_keywords
from .transforms.kinds import KINDS, VALUE, build_kinds, kind as kind_of, nth_name
from .call.verbs import install as install_verbs
from .tracing.compose import tracing_call


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


class Function(Callable):
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
        self._what = f"{name} ({'_'.join(k for k, _ in steps) or VALUE})"  # for messages
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
        return "_".join(k for k, _ in self._steps) or VALUE

    @property
    def c_name(self):
        return f"{self.name}_{self.kind}"

    @property
    def program(self):
        """The program this Function computes, in the IR (print it: one operation a line, like
        a jaxpr): the traced program, or a derivative's own program (F.grad.program)."""
        if not self._steps:
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
        from .build import compile as build
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
            runs = self._steps and kind_of(self._steps[-1][0]).runs
            if runs and self._shared():
                self.result_shapes()  # its own refusals first: "grad needs", not "value_and_grad needs"
                sibling = self.__dict__.get("_sibling")  # F.value_and_grad itself, where F made this
                f = sibling() if sibling else Function(
                    self.py_name, self._source, self.dtype, args=self.args, options=self.options,
                    steps=self._steps[:-1] + ((runs, self._steps[-1][1]),), structure=0)
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
        shared = self._steps and any(k.runs == self._steps[-1][0] for k in KINDS.values())
        return 1 if shared and self._shared() else 0

    def result_shapes(self):
        """Core shapes of the results, from the traced program (no sympy)."""
        from .transforms.kinds import result_shapes
        prog = self.traced
        return result_shapes([o.shape for o in prog.outputs], [a.shape for a in prog.args], self._steps,
                             self.sparsity().nnz if self._sparse_kind else None)

    @property
    def _sparse_kind(self):
        """Whether this Function computes the entries of a sparsity pattern (its last kind's)."""
        return bool(self._steps) and kind_of(self._steps[-1][0]).pattern is not None

    def sparsity(self):
        """The sparsity.Pattern of a sparse Jacobian's or Hessian's results (which entry each
        result is), read off the program once (pipeline.pattern)."""
        with self._lock:
            p = self.__dict__.get("_pattern")
            if p is None:
                from .pipeline import stages as pipeline
                p = self._pattern = pipeline.pattern(self)
            return p

    def derived(self):
        """This Function's results as a Program (the IR; derivatives taken, not optimised:
        pipeline.derived)."""
        from .pipeline import stages as pipeline
        return pipeline.derived(self)

    def optimized(self):
        """This Function's results as an optimised Program (what every target prints)."""
        with self._lock:
            if self._optimized is None:
                from .pipeline import stages as pipeline
                self._optimized = pipeline.optimized(self)
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
                from .pipeline import stages as pipeline
                self._kernel, self._kernel_bits = pipeline.kernel(self)
            return self._kernel

    @property
    def c_source(self):
        """The C source of the in-process kernel this Function is compiled from (every
        translation unit of it)."""
        return self.kernel.text

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
        from .call.gpu import CudaFunction
        return CudaFunction(self)

    def _library(self):
        """The loaded kernel (pipeline.library: cached, shipped with a pickle, or built now)."""
        with self._lock:
            if self._plan is None:
                from .pipeline import stages as pipeline
                self._plan = pipeline.library(self)
                if not self._source.method and not self._source.takes_out:
                    self._fast = self._plan.kernel  # later calls of the kernel's own form run in C
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

        from .edges.realfns import standard
        from .edges.to_sympy import to_sympy
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
        one loaded kernel (and its store policy). How its results nest, whether it takes
        tangents, whether it may be differentiated again: its kind's (transforms/kinds.py)."""
        if self._steps and kind_of(self._steps[-1][0]).last:
            raise ValueError(f"{self.c_name}: a {kind_of(self._steps[-1][0]).words.removesuffix(' of ')} is the last "
                             "derivative taken; "
                             "differentiate first (F.grad.hvp is not defined, F.jacobian.hvp neither)")
        structure_args, nums = calling.argnums(argnums, len(self.args))
        k = kind_of(kind_of(kind).stacked if stack else kind)
        args = None
        if k.tangents:
            from .ir.program import tangent_names
            names = tangent_names([n for n, _ in self.args], nums)
            args = self.args + tuple((t, self.args[i][1]) for t, i in zip(names, nums))
        structure = k.structure(self._structure, structure_args, len(nums))
        fn = self._derived_function((k.name, tuple(nums)), structure, repr(structure_args), args)
        if k.runs and "_sibling" not in fn.__dict__:  # runs F.value_and_grad's kernel (_runs)
            fn._sibling = lambda: self._derive(k.runs, argnums)
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
    def batch_last(self):
        """This Function with batch dimensions after the core ones, in arguments and results
        (scipy's solve_ivp ``vectorized=True``: ``fun=F.batch_last``)."""
        return calling.BatchLast(self)

    def build(self, kinds=(VALUE,)):
        """Compile now the kernels of ``kinds`` (names of this Function's derivatives:
        transforms/kinds.build_kinds) rather than at their first call, into one library (one C
        compile; kernels of large programs, compiled with other flags, in one more, in
        parallel). Later kinds add a library without rebuilding these. Returns self."""
        names = build_kinds()
        fns = []
        for kind in ([kinds] if isinstance(kinds, str) else kinds):
            if kind not in names:
                raise ValueError(f"build: unknown kind {kind!r}; expected some of {', '.join(names)}")
            fns.append(self if kind == VALUE else getattr(self, kind))
        from .pipeline import stages as pipeline
        pipeline.build_together([f._runs() for f in fns if f._plan is None])
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
        return self._derived_function((nth_name(n), (argnum,)), self._structure)

    # -- sparse derivatives ---------------------------------------------------------------
    def _sparse(self):
        """The Function of this Jacobian's or Hessian's structural non-zeros (one result, in its
        pattern's order: transforms/sparsity.py), made once."""
        k = kind_of(self._steps[-1][0]).sparse if self._steps else None
        if k is None:
            raise ValueError(f"{self._what}: sparse= is for Jacobians and Hessians: write F.jacobian(x, sparse=True) "
                             "or F.hessian(x, sparse=True)")
        with self._lock:
            f = self._derived.get("sparse")
            if f is None:
                f = self._derived["sparse"] = Function(self.py_name, self._source, self.dtype, args=self.args,
                                                       options=self.options,
                                                       steps=self._steps[:-1] + ((k, self._steps[-1][1]),))
            return f

    # -- calling ------------------------------------------------------------------------
    def _call(self, *args, out=None, **kwargs):
        """A call of this Function: the Python path (library.Callable runs in C the calls
        the kernel takes as they are, once it is loaded). Called on values of a running
        trace, its program is inlined there (tracing/compose.py)."""
        if tracing_call(args) or kwargs and tracing_call(kwargs.values()):
            if out is not None and not self._source.takes_out:
                from .errors import TraceError
                raise TraceError(f"{self._what} is called on traced values with out=: results of a traced "
                                 "call are traced values, return them instead")
            return self._inline(args, kwargs)
        if out is not None and self._source.takes_out:  # f's own parameter `out`, not result arrays
            kwargs["out"], out = out, None
        if "sparse" in kwargs:  # (unless it is a parameter of the function's own)
            from .call.sparse import sparse_call, takes_sparse
            if not takes_sparse(self):
                return sparse_call(self, kwargs.pop("sparse"), args, kwargs, out)
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

    def _inline(self, args, kwargs):
        """This call, made on traced values, as the traced results of this Function's program."""
        from .tracing.compose import inline
        if self._source.method:
            if self._steps or not args:
                raise TypeError(f"{self._what} is a method: call it on an instance, obj.{self.py_name}"
                                f"{'.' + self.kind if self._steps else ''}(...)")
            return self.__get__(args[0])(*args[1:], **kwargs)
        function, args = self._bind_call(args, kwargs) if kwargs or len(args) != len(self.args) else (self, args)
        if function._sparse_kind:
            from .errors import TraceError
            raise TraceError(f"{self._what}: a sparse Jacobian's or Hessian's entries cannot be inlined into a "
                             "trace; call the dense derivative (F.jacobian, F.hessian) in traced code")
        return inline(function.program, function._structure, function._what, args)

    def _bind_call(self, args, kwargs):
        """(the Function that evaluates this call, its positional arguments) for a call by
        keyword, an unbound method called with its instance first, or one that passes defaulted
        parameters: those make a variant traced with them (signature.bind says how)."""
        from .signature import bind
        src, what = self._source, self._what
        # a program without its Python function (from_sympy, a pickle), an hvp (its tangents
        # follow the arguments) or a variant: its own arguments only, by position or name
        plain = src.fn is None or src.spec or any(kind_of(k).tangents for k, _ in self._steps)
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
        """Pickled by value (pickling.py): the traced program, never the Python function."""
        from .call import pickling
        return _unpickle, pickling.reduce(self)

    def __repr__(self):
        args = ", ".join(f"{name}{list(shape)}" for name, shape in self.args)
        return f"<symgrad.Function {self.py_name} {self.kind}({args}) {self.dtype}>"


install_verbs(Function)  # F.grad, F.grad_wrt(1), F.jacobian_sparsity(...), J.pattern(): verbs.py


def _weakly_referable(obj):
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


def _unpickle(fmt, version, digest, state):
    """A pickled Function, in this process (pickling.restore checks that this symgrad may)."""
    from .call import pickling
    return pickling.restore(fmt, version, digest, state, Function, Source)


