"""The Function facade: a frozen spec (pipeline/spec.py) that asks its pipeline
(pipeline/memo.py) for what it needs, and the derivative Functions taken of it.

Every Function records its Python function's program once (at the first call of it or of
any derivative taken from it; derivatives share that trace). The compiled kernel is found
by a hash of that program and of everything else that decides the code (kind, argnums,
dtype, options, symgrad, flags, CPU; not the compiler's name), so a cached kernel can only
be the compiled form of what was traced in this process. Pickling: call/pickling.py; sympy
is imported only for what needs it (.expr, from_sympy)."""
from __future__ import annotations

import weakref

import numpy as np

from . import forksafe, options as _options, structure as _structure
from .build.library import Callable
from .call import calling, verbs
from .errors import ScalarUsedAsArray
from .pipeline import memo
from .pipeline.source import PerObject, Source
from .pipeline.spec import Spec, c_identifier
from .signature import TRACED, checked_keywords
from .tracing.compose import tracing_call
from .transforms.kinds import VALUE, kind as kind_of, nth_name


class Function(Callable):
    """A compiled numeric function of fixed-shape arguments (see ``symgrad.compile``).

    ``steps`` are the derivatives taken, in order: (kind, argument indices), kind one of
    grad, value_and_grad, jacobian, hessian, d<n>. ``sparse_source``: the Source of its sparse
    form where that is not its own (a pickle's program of loops)."""

    def __init__(self, name, source, dtype="float64", *, args, options=None, steps=(), structure=0,
                 sparse_source=None):
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = None
        if str(dt) not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        self.spec = Spec(name, c_identifier(name), source, dt, args, options or _options.DEFAULT, tuple(steps),
                         structure)
        s = self.spec
        self.py_name, self.name, self.dtype, self.args, self.options = s.py_name, s.name, dt, args, s.options
        self.steps, self.structure, self.source = s.steps, structure, source
        self._what = s.what  # for messages
        self._lock = forksafe.RLock()
        self._pipeline = self._plan = None
        self._sparse_source = sparse_source
        self._made = {}  # Functions made of this one, each once: derivatives, its sparse form, variants
        self._bound = PerObject()  # a method's Function per instance

    # -- what the pipeline made of its spec ---------------------------------------------
    @property
    def pipeline(self):
        """The memo.Pipeline of this Function's spec (shared with every Function of its program)."""
        p = self._pipeline
        if p is None:
            p = self._pipeline = memo.of(self.spec)
        return p

    kind = property(lambda self: self.spec.kind)
    c_name = property(lambda self: self.spec.c_name)
    title = property(lambda self: self.spec.title, doc="What this Function computes, in words.")
    is_sparse = property(lambda self: self.spec.sparse,
                         doc="Whether it computes the entries of a sparsity pattern (F.jacobian(x, sparse=True)'s).")

    @property
    def program(self):
        """The program this Function computes, in the IR (print it: one operation a line, like
        a jaxpr): the traced program, or a derivative's own program (F.grad.program)."""
        return self.optimized() if self.steps else self.traced

    @property
    def traced(self):
        """The traced program (the IR) this Function is made from: where arrays stayed loops
        that its derivatives cannot be taken of (transforms/kinds.supports), the function traced unrolled."""
        return self.pipeline.traced()

    @property
    def loops(self):
        """Whether this Function's kernel runs loops (arrays kept as arrays, tracing/lazy.py)."""
        return self.pipeline.loops()

    @property
    def key(self):
        """Hash of everything that decides this Function's kernel (a gradient's: the
        value_and_grad kernel it runs, memo.Pipeline.runs)."""
        return self.pipeline.key()

    def result_shapes(self):
        """Core shapes of the results, from the traced program (no sympy)."""
        return self.pipeline.result_shapes()

    def sparsity(self):
        """The sparsity.Pattern of a sparse Jacobian's or Hessian's results (which entry each
        result is), read off the program once."""
        return self.pipeline.pattern()

    def derived(self):
        """This Function's results as a Program (the IR; derivatives taken, not optimised)."""
        return self.pipeline.derived()

    def optimized(self):
        """This Function's results as an optimised Program (what every target prints)."""
        return self.pipeline.optimized()

    @property
    def kernel(self):
        """The in-process CPU kernel's source and what building it needs (render.Kernel)."""
        return self.pipeline.kernel()[0]

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
        from .render import EMITTERS, emit, pick
        if target not in EMITTERS:
            raise ValueError(f"target must be {' or '.join(map(repr, EMITTERS))}, got {target!r}")
        if self.loops:
            def elementwise():
                held = sum(d.size for d in self.traced.data)
                why = (f"standalone source has no loops, so the {held} entries of its closed-over data are "
                       "printed into it as constants" if held else
                       "standalone source has no loops, so its array operations are printed entry by entry")
                return self._remake(self.source.unrolled(self.name, self._what, why))
            return self._once("elementwise", elementwise).standalone(target, name)
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

    @property
    def plan(self):
        """The loaded kernel and how it is called (calling.Plan: shapes, store policy): from the
        cache, shipped with a pickle, or built now."""
        plan = self._plan
        if plan is None:
            with self._lock:
                plan = self._plan = self.pipeline.plan(self.structure)
                if not self.source.method and not self.source.takes_out:
                    self._fast = plan.kernel  # later calls of the kernel's own form run in C
        return plan

    @property
    def built(self):
        """Whether this Function's kernel is loaded in this process."""
        return self._plan is not None

    # -- derived functions ---------------------------------------------------------------
    @property
    def expr(self):
        """The sympy expression(s) this Function evaluates, in closed form (written with
        sympy's own functions; what is compiled is their real form: NaN outside the domain)."""
        import sympy as sp

        from .edges.realfns import standard
        from .edges.to_sympy import to_sympy
        if self.loops:
            from .errors import CompileError
            raise CompileError(f"{self.c_name}: a closed form (.expr) of a function whose arrays stayed loops "
                               "(data read by pointer) is not available; compile it with "
                               "options=symgrad.Options(loop_min_size=0) to trace every array element by element")
        prog = to_sympy(self.derived())
        flat = [standard(e) for e in prog.inlined()]
        outs, k = [], 0
        for o in prog.outputs:
            part = flat[k:k + o.size]
            k += o.size
            outs.append(part[0] if o.shape == () else sp.ImmutableDenseNDimArray(part, o.shape))
        return _structure.nest(self.structure, outs)

    def _derive(self, kind, argnums, stack=False):
        """The derived Function, made once per (kind, argnums): ``F.grad(x)`` in a loop reuses
        one loaded kernel (and its store policy). How its results nest, whether it takes
        tangents, whether it may be differentiated again: its kind's (transforms/kinds.py).
        (The name is the protocol of csrc/symgrad_call.c's Verb and call/verbs.py.)"""
        if self.steps and kind_of(self.steps[-1][0]).last:
            raise ValueError(f"{self.c_name}: a {kind_of(self.steps[-1][0]).words.removesuffix(' of ')} is the last "
                             "derivative taken; "
                             "differentiate first (F.grad.hvp is not defined, F.jacobian.hvp neither)")
        structure_args, nums = _structure.argnums(argnums, len(self.args))
        k = kind_of(kind_of(kind).stacked if stack else kind)
        args = None
        if k.tangents:
            from .ir.program import tangent_names
            names = tangent_names([n for n, _ in self.args], nums)
            args = self.args + tuple((t, self.args[i][1]) for t, i in zip(names, nums))
        structure = k.structure(self.structure, structure_args, len(nums))
        return self._derived_function((k.name, tuple(nums)), structure, repr(structure_args), args)

    def _derived_function(self, step, structure, tag="", args=None):
        return self._once((step, tag), lambda: self._remake(steps=self.steps + (step,), structure=structure,
                                                            args=args or self.args))

    def _once(self, key, make):
        with self._lock:
            f = self._made.get(key)
            if f is None:
                f = self._made[key] = make()
            return f

    def _remake(self, source=None, **changes):
        """A Function of this one's spec with ``changes`` (steps, structure, args) and ``source``."""
        s = self.spec.replace(**changes)
        return Function(s.py_name, source or self.source, s.dtype, args=s.args, options=s.options, steps=s.steps,
                        structure=s.structure, sparse_source=self._sparse_source)

    @property
    def batch_last(self):
        """This Function with batch dimensions after the core ones, in arguments and results
        (scipy's solve_ivp ``vectorized=True``: ``fun=F.batch_last``)."""
        return calling.BatchLast(self)

    def build(self, kinds=(VALUE,)):
        """Compile now the kernels of ``kinds`` (names of this Function's derivatives:
        call/verbs.build_kinds) rather than at their first call, into one library (one C
        compile; kernels of large programs, compiled with other flags, in one more, in
        parallel). Later kinds add a library without rebuilding these. Returns self."""
        names = verbs.build_kinds()
        fns = []
        for kind in ([kinds] if isinstance(kinds, str) else kinds):
            if kind not in names:
                raise ValueError(f"build: unknown kind {kind!r}; expected some of {', '.join(names)}")
            fns.append(self if kind == VALUE else getattr(self, kind))
        build_together(fns)
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
        return self._derived_function((nth_name(n), (argnum,)), self.structure)

    def sparse_form(self):
        """The Function of this Jacobian's or Hessian's structural non-zeros (one result, in its
        pattern's order: transforms/sparsity.py), made once."""
        k = kind_of(self.steps[-1][0]).sparse if self.steps else None
        if k is None:
            raise ValueError(f"{self._what}: sparse= is for Jacobians and Hessians: write F.jacobian(x, sparse=True) "
                             "or F.hessian(x, sparse=True)")
        return self._once("sparse", lambda: self._remake(self._sparse_source, structure=0,
                                                         steps=self.steps[:-1] + ((k, self.steps[-1][1]),)))

    # -- calling ------------------------------------------------------------------------
    def _call(self, *args, out=None, **kwargs):
        """A call of this Function: the Python path (library.Callable runs in C the calls
        the kernel takes as they are, once it is loaded). Called on values of a running
        trace, its program is inlined there (tracing/compose.py)."""
        if tracing_call(args) or kwargs and tracing_call(kwargs.values()):
            if out is not None and not self.source.takes_out:
                from .errors import TraceError
                raise TraceError(f"{self._what} is called on traced values with out=: results of a traced "
                                 "call are traced values, return them instead")
            return self._inline(args, kwargs)
        if out is not None and self.source.takes_out:  # f's own parameter `out`, not result arrays
            kwargs["out"], out = out, None
        if "sparse" in kwargs and not self.source.takes_sparse:  # (unless it is a parameter of f's own)
            from .call.sparse import sparse_call
            return sparse_call(self, kwargs.pop("sparse"), args, kwargs, out)
        if kwargs or len(args) != len(self.args) or self.source.method:
            if self.source.method:
                return self._method_call(args)(*args[1:], out=out, **kwargs)  # Class.f(obj, x)
            function, args = self.bind_call(args, kwargs)
            if function is not self:
                return function(*args, out=out)
        plan = self._plan
        if plan is None:
            try:
                plan = self.plan
            except ScalarUsedAsArray as e:
                raise e.for_call([n for n, _ in self.args], args) from None
        return plan(args, out, self._what)

    def _method_call(self, args):
        """This method's Function of the instance ``args[0]`` (Class.f(obj, x))."""
        if self.steps or not args:
            raise TypeError(f"{self._what} is a method: call it on an instance, obj.{self.py_name}"
                            f"{'.' + self.kind if self.steps else ''}(...)")
        return self.__get__(args[0])

    def _inline(self, args, kwargs):
        """This call, made on traced values, as the traced results of this Function's program."""
        from .tracing.compose import inline
        if self.source.method:
            return self._method_call(args)(*args[1:], **kwargs)
        function, args = self.bind_call(args, kwargs) if kwargs or len(args) != len(self.args) else (self, args)
        if function.is_sparse:
            from .errors import TraceError
            raise TraceError(f"{self._what}: a sparse Jacobian's or Hessian's entries cannot be inlined into a "
                             "trace; call the dense derivative (F.jacobian, F.hessian) in traced code")
        return inline(function.program, function.structure, function._what, args)

    def bind_call(self, args, kwargs):
        """(the Function that evaluates this call, its positional arguments) for a call by
        keyword, an unbound method called with its instance first, or one that passes defaulted
        parameters: those make a variant traced with them (signature.bind says how)."""
        from .signature import bind
        src = self.source
        # a program without its Python function (from_sympy, a pickle), an hvp (its tangents
        # follow the arguments) or a variant: its own arguments only, by position or name
        plain = src.fn is None or src.spec or any(kind_of(k).tangents for k, _ in self.steps)
        values, spec, traced, consts = bind(None if plain else src.fn, 0 if src.instance is None else 1,
                                            [name for name, _ in self.args], args, kwargs, self._what)
        if not spec:
            return self, tuple(values)
        extra = tuple((name, ()) for name, how in spec if how == TRACED)
        f = self._once(("variant", spec), lambda: self._remake(src.variant(spec, consts), args=self.args + extra))
        return f, tuple(values) + tuple(traced)

    def __get__(self, obj, cls=None):
        """A method's Function read from an instance: its own Function, traced with that
        instance as ``self`` at its first call (one per instance, like a bound method)."""
        if obj is None or not self.source.method:
            return self
        try:
            ref = weakref.ref(obj)
        except TypeError:
            raise TypeError(f"{type(obj).__name__} objects cannot be weakly referenced (__slots__ without "
                            f"'__weakref__'): symgrad keeps {self.py_name}'s Function of each instance by weak "
                            "reference. Add '__weakref__' to __slots__, or compile a function of the values") from None

        def make():
            f = self._remake(self.source.bind(obj, lambda: self._bound.keep(ref, f)))
            return f
        return self._bound.get(obj, make)

    def __reduce__(self):
        """Pickled by value (call/pickling.py): the traced program, never the Python function."""
        from .call import pickling
        return _unpickle, pickling.reduce(self)

    def __repr__(self):
        args = ", ".join(f"{name}{list(shape)}" for name, shape in self.args)
        return f"<symgrad.Function {self.py_name} {self.kind}({args}) {self.dtype}>"


verbs.install(Function)  # F.grad, F.grad_wrt(1), F.jacobian_sparsity(...), J.pattern(): call/verbs.py


def build_together(functions):
    """Load the kernels of ``functions``, compiling those not built yet together (one C compile
    per set of compiler flags: memo.build_together)."""
    memo.build_together([f.pipeline for f in functions if not f.built])
    for f in functions:
        f.plan


def _unpickle(fmt, version, digest, state):
    """A pickled Function, in this process (pickling.restore checks that this symgrad may)."""
    from .call import pickling
    return pickling.restore(fmt, version, digest, state, Function, Source)
