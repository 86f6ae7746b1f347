"""The numpy-facing Function: lazily traced, differentiated, compiled; called like a gufunc.

Each argument's trailing dimensions must equal its core shape; the leading (batch)
dimensions of all arguments broadcast together, and every result has the batch
shape followed by its own core shape."""
from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from math import prod

import numpy as np

from . import config

# Long compiles report each stage that took more than config.PROGRESS_SECONDS, on stderr.
# Silence: logging.getLogger("symgrad.progress").setLevel(logging.WARNING), or
# symgrad.config.PROGRESS_SECONDS = None, or SYMGRAD_QUIET=1 in the environment.
progress = logging.getLogger("symgrad.progress")
if not progress.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(message)s"))
    progress.addHandler(_handler)
    progress.setLevel(logging.INFO)
    progress.propagate = False


@contextmanager
def stage(function, what, detail=lambda: ""):
    """Time one pipeline stage; report it if it was slow."""
    t = time.perf_counter()
    yield
    dt = time.perf_counter() - t
    if config.PROGRESS_SECONDS is not None and dt >= config.PROGRESS_SECONDS:
        progress.info("symgrad: %s: %s took %.1f s%s", function, what, dt, detail())

_CTYPES = {"float64": "double", "float32": "float"}


class Function:
    """A compiled numeric function of fixed-shape arguments (see ``symgrad.compile``)."""

    def __init__(self, name, make_program, dtype="float64", kind="value", structure=0, args=(),
                 origin=None, recipe=()):
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = None
        if str(dt) not in _CTYPES:
            raise ValueError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        self.name, self.kind, self.dtype = name, kind, dt
        self.args = args  # ((name, core shape), ...), known before tracing
        self._make_program, self._structure = make_program, structure
        # (python function, shapes) and the derivatives taken since: what the fingerprint covers
        self._origin, self._recipe = origin, recipe
        self._lock = threading.RLock()
        self._program = self._kernel = self._lib = None
        self._derived = {}  # derivatives taken of this Function, each made once

    # -- the pipeline, each stage computed once -------------------------------------------
    @property
    def program(self):
        """The IR this Function evaluates (before optimisation)."""
        with self._lock:
            if self._program is None:
                self._program = self._make_program()
            return self._program

    @property
    def kernel(self):
        with self._lock:
            if self._kernel is None:
                from .build import vector_bits
                from .optimize import optimize
                from .render import TARGETS, render
                prog = self.program
                with stage(self.c_name, "optimize", lambda: f" ({len(prog.body)} assignments)"):
                    prog = optimize(prog)
                with stage(self.c_name, "generate C"):
                    self._kernel = render(prog, self.c_name, TARGETS["c", str(self.dtype)], vector_bits())
            return self._kernel

    @property
    def c_name(self):
        return f"{self.name}_{self.kind}"

    @property
    def c_source(self):
        """The C source this Function is compiled from."""
        return self.kernel.source

    def _library(self):
        """The compiled kernel and what calling it needs, built once.

        A kernel cached by an earlier process under this function's fingerprint is loaded
        without tracing, differentiating or importing sympy."""
        with self._lock:
            if self._lib is None:
                from . import build
                fp = self._fingerprint()
                entry = build.index_get(fp) if fp else None
                mod = build.load_cached(entry["key"]) if entry else None
                if mod is not None:
                    shapes = [tuple(s) for s in entry["outputs"]]
                else:
                    k = self.kernel
                    with stage(self.c_name, "C compile", lambda: f" ({k.ops} operations)"):
                        mod = build.build(k.source, k.cdecl, parts=k.parts, extra_flags=k.cflags)
                    shapes = [o.shape for o in self.program.outputs]
                    if fp:
                        build.index_put(fp, {"key": mod._sg_key, "outputs": shapes})
                self._lib = _Plan(shapes, len(self.args), self.dtype, self._structure, mod.ffi,
                                  getattr(mod.lib, self.c_name + "_batch"),
                                  getattr(mod.lib, self.c_name + "_scalar", None),
                                  getattr(mod.lib, self.c_name + "_streams")())
            return self._lib

    def _fingerprint(self):
        source = self._origin.fingerprint() if self._origin is not None else None
        if source is None:
            return None
        from . import build, config
        from .fingerprint import fingerprint
        return fingerprint(source, self.c_name, str(self.dtype), self._recipe, config.snapshot(),
                           build.flags(), build.machine())

    # -- derived functions ---------------------------------------------------------------
    @property
    def expr(self):
        """The sympy expression(s) this Function evaluates, in closed form."""
        import sympy as sp
        flat = self.program.inlined()
        outs, k = [], 0
        for o in self.program.outputs:
            part = flat[k:k + o.size]
            k += o.size
            outs.append(part[0] if o.shape == () else sp.ImmutableDenseNDimArray(part, o.shape))
        return _nest(self._structure, outs)

    def _derive(self, kind, argnums):
        """The derived Function, made once per (kind, argnums): ``F.grad(x)`` in a loop reuses
        one loaded kernel (and its store policy) instead of fingerprinting it again."""
        structure_args, argnums = _argnums(argnums, len(self.args))
        return self._once((kind, repr(structure_args), tuple(argnums)),
                          lambda: self._make_derived(kind, structure_args, argnums))

    def _once(self, key, make):
        """The derived Function filed under ``key``, made on first request."""
        with self._lock:
            if key not in self._derived:
                self._derived[key] = make()
            return self._derived[key]

    def _make_derived(self, kind, structure_args, argnums):

        def make():
            from . import differentiate as D
            if kind in ("grad", "value_and_grad", "hessian"):
                D._check_scalar(self.program, kind)
            if kind == "jacobian" and len(self.program.outputs) != 1:
                raise ValueError("jacobian of a function with several results: take it of one result")
            prog = self.program
            with stage(f"{self.name}_{kind}", "differentiate"):
                if kind == "jacobian":
                    return D.jacobian(prog, argnums)
                if kind == "hessian":
                    return D.hessian(prog, argnums)
                return D.grad(prog, argnums, with_value=kind == "value_and_grad")
        if kind == "grad":
            structure = structure_args
        elif kind == "value_and_grad":
            structure = (0, _shift(structure_args, 1))
        elif kind == "jacobian":
            structure = structure_args
        else:
            m = len(argnums)
            structure = (0 if isinstance(structure_args, int)
                         else tuple(tuple(i * m + j for j in range(m)) for i in range(m)))
        return Function(self.name, make, self.dtype, kind, structure, self.args, self._origin,
                        self._recipe + ((kind, tuple(argnums)),))

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

        def make():
            from .differentiate import nth
            prog = self.program
            with stage(f"{self.name}_d{n}", "differentiate"):
                return nth(prog, n, argnum)
        return self._once(("derivative", n, argnum),
                          lambda: Function(self.name, make, self.dtype, f"d{n}", self._structure, self.args,
                                           self._origin, self._recipe + (("derivative", n, argnum),)))

    # -- calling ------------------------------------------------------------------------
    def __call__(self, *args, out=None):
        plan = self._lib
        if plan is not None and plan.scalar is not None and out is None and len(args) == plan.nargs:
            for a in args:
                if type(a) not in _PYNUM:
                    break
            else:
                return plan.call_scalar(args)
        if len(args) != len(self.args):
            names = ", ".join(name for name, _ in self.args)
            raise TypeError(f"{self.name} ({self.kind}) takes {len(self.args)} argument(s) ({names}), "
                            f"got {len(args)}")
        arrays, batches = [], []
        for (name, core), x in zip(self.args, args):
            arr = _real_array(x, name, self.dtype)
            if arr.ndim < len(core) or arr.shape[arr.ndim - len(core):] != core:
                raise ValueError(f"argument {name!r} must have trailing (core) shape {core}, "
                                 f"got an array of shape {arr.shape}")
            arrays.append(arr)
            batches.append(arr.shape[:arr.ndim - len(core)])
        try:
            batch = batches[0] if batches and batches.count(batches[0]) == len(batches) \
                else np.broadcast_shapes(*batches)
        except ValueError:
            raise ValueError("the batch dimensions of the arguments do not broadcast: "
                             + ", ".join(f"{name}: {b}" for (name, _), b in zip(self.args, batches))) from None
        plan = plan or self._library()
        n = prod(batch)
        ins = [x if b == batch and x.flags.c_contiguous and x.flags.aligned else
               np.require(x if b == batch else np.broadcast_to(x, batch + core), requirements="CA")
               for x, b, (_, core) in zip(arrays, batches, self.args)]
        results = self._outputs(out, batch, plan)
        # Write straight into a result only if it is C-contiguous, aligned and shares no memory
        # with an input (the kernel's pointers are restrict); otherwise through a scratch array.
        work = [r if r.flags.c_contiguous and r.flags.aligned and r.flags.writeable
                and not any(np.may_share_memory(r, x) for x in ins) else np.empty(r.shape, r.dtype)
                for r in results]
        if n:
            ffi, ct = plan.ffi, plan.ctype
            ptrs = [ffi.from_buffer(ct, x) for x in ins] + [ffi.from_buffer(ct, w, require_writable=True)
                                                           for w in work]
            nbytes = n * plan.total * plan.itemsize
            stores = plan.stores if nbytes >= config.STREAM_BYTES else None
            if stores is None:
                plan.batch(n, 0, *ptrs)
            else:
                mode = stores.pick()
                t = time.perf_counter()
                plan.batch(n, mode, *ptrs)
                stores.record(mode, (time.perf_counter() - t) / nbytes)
        for r, w in zip(results, work):
            if r is not w:
                r[...] = w
        if out is not None:
            return out
        outs = [r[()] if r.ndim == 0 else r for r in results]
        return _nest(self._structure, outs)

    def _outputs(self, out, batch, plan):
        shapes = [batch + s for s in plan.shapes]
        if out is None:
            return [np.empty(s, self.dtype) for s in shapes]
        flat = _flatten(self._structure, out)
        if flat is None or len(flat) != len(shapes):
            raise TypeError(f"out= must have the structure of the results ({_describe(self._structure)})")
        for o, s in zip(flat, shapes):
            if not isinstance(o, np.ndarray):
                raise TypeError(f"out= must hold numpy arrays, got {type(o).__name__}")
            if o.shape != s:
                raise ValueError(f"out= array has shape {o.shape}, expected {s}")
            if o.dtype != self.dtype:
                raise TypeError(f"out= array has dtype {o.dtype}, expected {self.dtype}")
            if not o.flags.writeable:
                raise ValueError("out= array is read-only")
        return flat

    def __repr__(self):
        args = ", ".join(f"{name}{list(shape)}" for name, shape in self.args)
        return f"<symgrad.Function {self.c_name}({args}) {self.dtype}>"


class Origin:
    """The Python function a Function is traced from. Its fingerprint is taken once, before
    the trace reads the function, so a cached kernel is filed under what was traced."""

    def __init__(self, fn, shapes):
        self.fn, self.shapes = fn, shapes
        self._fingerprint, self._taken = None, False
        self._lock = threading.Lock()

    def fingerprint(self):
        with self._lock:
            if not self._taken:
                from .fingerprint import fingerprint
                self._fingerprint, self._taken = fingerprint(self.fn, self.shapes), True
            return self._fingerprint


_PYNUM = (float, int, np.float64)


class _Stores:
    """How a large batch writes its results: in tiles that leave as whole cache lines, with
    non-temporal stores (mode 1) or plain ones (mode 2), or block by block straight into the
    results (mode 0). Which is fastest depends on the CPU, on the kernel and on how busy the
    memory is (non-temporal stores skip reading each destination line but have a throughput
    of their own, on some CPUs lower than that of plain stores). So the first large calls try
    each mode TRIALS times, in turn (the first calls may pay one-off costs such as page
    faults); later calls take the mode with the lowest time per byte (the best of its last
    WINDOW calls) and every EXPLORE-th call re-times another. The results are the same bytes
    in every mode. (Not locked: calls from several threads at once may blur the timings,
    which only ever changes the mode.)"""

    MODES, TRIALS, EXPLORE, WINDOW = (1, 2, 0), 2, 16, 4

    def __init__(self, force=None):
        self.recent = {m: [] for m in self.MODES}  # seconds per result byte of the last calls
        self.used = {m: 0 for m in self.MODES}
        self.calls, self.force = 0, force

    def pick(self):
        if self.force is not None:
            return self.force
        self.calls += 1
        k = len(self.MODES)
        if self.calls <= k * self.TRIALS:
            return self.MODES[(self.calls - 1) % k]
        ranked = sorted(self.MODES, key=lambda m: min(self.recent[m], default=0.0))  # untimed: try it
        if self.calls % self.EXPLORE == 0:
            return ranked[1 + (self.calls // self.EXPLORE) % (k - 1)]
        return ranked[0]

    def record(self, mode, seconds_per_byte):
        self.used[mode] += 1
        times = self.recent[mode]
        times.append(seconds_per_byte)
        del times[:-self.WINDOW]


class _Plan:
    """A loaded kernel and the fixed facts needed to call it."""

    def __init__(self, shapes, nargs, dtype, structure, ffi, batch, scalar, streams):
        self.ffi, self.batch, self.scalar = ffi, batch, scalar
        self.stores = _Stores() if streams else None
        self.itemsize = dtype.itemsize
        self.nargs, self.structure = nargs, structure
        self.ctype = _CTYPES[str(dtype)] + "[]"
        self.scalar_type = dtype.type
        self.shapes = [tuple(s) for s in shapes]
        self.sizes = [prod(s) for s in self.shapes]
        self.total = sum(self.sizes)
        self.all_scalar = all(sz == 1 and sh == () for sz, sh in zip(self.sizes, self.shapes))
        self._tls = threading.local()

    def call_scalar(self, args):
        buf = getattr(self._tls, "buf", None)
        if buf is None:
            buf = self._tls.buf = self.ffi.new(self.ctype, self.total)
        self.scalar(*args, buf)
        t = self.scalar_type
        if self.all_scalar:
            if self.total == 1:
                return t(buf[0])
            flat = [t(buf[i]) for i in range(self.total)]
        else:
            arr = np.frombuffer(self.ffi.buffer(buf), dtype=t).copy()
            flat, k = [], 0
            for sz, sh in zip(self.sizes, self.shapes):
                part = arr[k:k + sz].reshape(sh)
                flat.append(part[()] if sh == () else part)
                k += sz
        return _nest(self.structure, flat)


def _real_array(x, name, dtype):
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"argument {name!r} is a masked array; pass plain values (e.g. x.filled(np.nan))")
    arr = np.asarray(x)
    if arr.dtype.kind == "c":
        raise TypeError(f"argument {name!r} is complex; symgrad functions take real numbers")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"argument {name!r} must be real numbers (a float/int array or scalar), "
                        f"got {type(x).__name__} of dtype {arr.dtype}")
    return arr.astype(dtype, copy=False)


def _argnums(argnums, nargs):
    """(structure, list of argument indices) in JAX's convention."""
    if argnums is None:
        argnums = 0 if nargs == 1 else tuple(range(nargs))
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    if not single and not isinstance(argnums, (tuple, list)):
        raise ValueError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    nums = [argnums] if single else list(argnums)
    if not nums:
        raise ValueError("argnums is empty: name at least one argument to differentiate by")
    for i in nums:
        if not isinstance(i, int) or isinstance(i, bool) or not -nargs <= i < nargs:
            raise ValueError(f"argnums must be ints in range for {nargs} argument(s), got {argnums!r}")
    nums = [i % nargs for i in nums]
    if len(set(nums)) != len(nums):
        raise ValueError(f"argnums repeats an argument: {argnums!r}")
    return (0 if single else tuple(range(len(nums)))), nums


def _shift(structure, by):
    if isinstance(structure, int):
        return structure + by
    return tuple(_shift(s, by) for s in structure)


def _nest(structure, flat):
    if isinstance(structure, int):
        return flat[structure]
    return tuple(_nest(s, flat) for s in structure)


def _flatten(structure, value):
    if isinstance(structure, int):
        return [value]
    if not isinstance(value, (tuple, list)) or len(value) != len(structure):
        return None
    res = []
    for s, v in zip(structure, value):
        f = _flatten(s, v)
        if f is None:
            return None
        res += f
    return res


def _describe(structure):
    return "an array" if isinstance(structure, int) else f"a tuple of {len(structure)}"
