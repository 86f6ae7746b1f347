"""The pipeline of one spec (spec.py), each stage of stages.py computed once and kept here: the
one memo of what a Function is made of (its traced program, pattern, optimised program,
kernel, key, library, call plans). Shared by every Function of one program (``of``: one per
Source, name, steps, dtype and options), so F.grad_wrt(0) and F.grad_wrt((0,)) render once,
and a gradient of a large program finds F.value_and_grad's kernel to run (``runs``)."""
from __future__ import annotations

import hashlib

from .. import forksafe
from . import estimate, stages


def of(spec):
    """The Pipeline of ``spec``: made once per Source and program-deciding fields."""
    key = (spec.name, spec.steps, str(spec.dtype), spec.options.key())
    return spec.source.pipeline(key, lambda: Pipeline(spec))


class Pipeline:
    """What the stages made of ``spec``, each asked for when first needed (under one lock: two
    threads asking at once get one result). A pickle's rendered kernel and library enter by
    ``offer``; nothing else writes the memo."""

    def __init__(self, spec):
        self.spec = spec
        self.lock = forksafe.RLock()
        self.memo = {}
        self.shipped = None  # a pickle's library (pickling.py), used only for its own key

    def once(self, what, compute):
        """The value of stage ``what``, computed by ``compute()`` the first time."""
        with self.lock:
            if what not in self.memo:
                self.memo[what] = compute()
            return self.memo[what]

    def offer(self, kernel=None, library=None):
        """What a pickle carried: the kernel rendered elsewhere ((bits, render.Kernel), taken
        where this CPU's vector width is the same) and a library built for a key."""
        from ..build.host import vector_bits
        with self.lock:
            if kernel is not None and kernel[0] == vector_bits():
                self.memo.setdefault("kernel", (kernel[1], kernel[0]))
            if library is not None:
                self.shipped = library

    # -- program stages ---------------------------------------------------------------
    def source(self):
        """The Source this spec compiles from: its own, or, where arrays stayed loops that its
        derivatives are not taken of (transforms/kinds.supports), the function traced unrolled."""
        return self._traced()[0]

    def traced(self):
        """The traced program (of source())."""
        return self._traced()[1]

    def _traced(self):
        def make():
            s = self.spec
            src, prog = s.source, stages.trace(s.source, s.name)
            if prog.has_loops:
                from ..transforms.kinds import supports
                if not supports(prog, s.steps):
                    src = s.source.unrolled(s.name, s.what)
                    prog = stages.trace(src, s.name)
            return src, prog
        return self.once("traced", make)

    def derived(self, steps=None):
        """The program of the spec's first ``steps`` derivative steps (all: None), not kept
        (its value-and-gradient program is: Source.derived)."""
        s, src = self.spec, self.source()
        return stages.differentiate(self.traced(), s.steps[:steps], s.c_name, src.derived, self.pattern,
                                    lambda prog, kind: self._expect("differentiate", prog, kind))

    def pattern(self):
        """The sparsity.Pattern of a sparse kind's results (its last step's), read off once."""
        def read():
            kind, nums = self.spec.steps[-1]
            return stages.sparsity(self.derived(len(self.spec.steps) - 1), kind, nums, self.spec.c_name)
        return self.once("pattern", read)

    def result_shapes(self):
        """Core shapes of the results, from the traced program (no sympy)."""
        from ..transforms.kinds import result_shapes
        prog, s = self.traced(), self.spec
        return result_shapes([o.shape for o in prog.outputs], [a.shape for a in prog.args], s.steps,
                             self.pattern().nnz if s.sparse else None)

    def runs(self):
        """The Pipeline whose kernel this spec's calls run: a gradient of a large program
        (``shared``) runs its value_and_grad kernel with the value unstored, so F.grad and
        F.value_and_grad share one library; any other its own."""
        def find():
            from ..transforms.kinds import kind as kind_of
            s = self.spec
            runs = s.steps and kind_of(s.steps[-1][0]).runs
            if not runs or not self.shared():
                return self
            self.result_shapes()  # its own refusals first: "grad needs", not "value_and_grad needs"
            other = of(s.replace(steps=s.steps[:-1] + ((runs, s.steps[-1][1]),), structure=0))
            return self if other.loops() else other
        return self.once("runs", find)

    def loops(self):
        """Whether the kernel runs loops (arrays kept as arrays, tracing/lazy.py)."""
        return self.traced().has_loops

    def shared(self):
        """Whether a gradient (or value and gradient) shares its kernel with its pair: for a
        program of Options.large_kernel_ops operations or more, whose compile takes seconds.
        A small kernel's value costs memory traffic beside its gradient (examples/benchmark.py's
        memory-bound seed_grad was slower with it) and its compile is short: each keeps its own."""
        return not self.loops() and self.traced().count_ops() >= self.spec.options.large_kernel_ops

    def optional(self):
        """How many leading results of the kernel may go unstored (the value)."""
        from ..transforms.kinds import KINDS
        s = self.spec
        runs_it = s.steps and any(k.runs == s.steps[-1][0] for k in KINDS.values())
        return 1 if runs_it and self.shared() else 0

    def optimized(self):
        """The optimised program every target prints. A gradient's is its value_and_grad
        kernel's without the value (runs): standalone C prints the in-process kernel's
        statements (the same bits, libm permitting)."""
        def make():
            from ..transforms.optimize import only
            shapes = self.result_shapes()
            runs = self.runs()
            if runs is not self:
                full = runs.optimized()
                return only(full, full.outputs[len(full.outputs) - len(shapes):])
            prog = self.derived()
            return stages.optimize(prog, shapes, self.spec.options, self.spec.c_name,
                                   self._expect("optimize", prog))
        return self.once("optimized", make)

    # -- kernel, library, plan --------------------------------------------------------
    def kernel(self):
        """(the in-process CPU kernel: render.Kernel, the vector width it was rendered for)."""
        runs = self.runs()
        if runs is not self:
            return runs.kernel()

        def make():
            s, prog = self.spec, self.optimized()
            return stages.render(prog, s.c_name, s.dtype, s.options, s.title, self.optional(), s.sparse,
                                 self._expect("generate C", prog), self.traced().has_loops)
        return self.once("kernel", make)

    def key(self):
        """Hash of everything that decides the kernel (a gradient's: the kernel it runs)."""
        def make():
            from ..build import compile as build
            r = self.runs()
            s = r.spec
            parts = (r.traced().key, s.c_name, s.steps, str(s.dtype), s.options.key(), build.toolchain())
            return hashlib.sha256(repr(parts).encode()).hexdigest()[:40]
        return self.once("key", make)

    def meta(self):
        """What the library says of its kernel (checked before it is called)."""
        s = self.spec
        return {"kernel": s.c_name, "dtype": str(s.dtype), "results": [list(x) for x in self.result_shapes()]}

    def library(self, shipped=None):
        """The loaded library of this spec's own kernel (``shipped``: a pickle's, for its key)."""
        def load():
            key, meta = self.key(), self.meta()
            lib = stages.cached(key, meta, shipped or self.shipped)
            if lib is None:
                kernel = self.kernel()[0]
                lib = stages.build(key, kernel, meta, estimate.expect_compile([(self.spec, self.key)], [kernel]))
            return lib
        return self.once("library", load)

    def built(self):
        """Whether the library is loaded here, or can be without rendering (cached, shipped)."""
        from ..build import compile as build
        runs = self.runs()
        shipped = self.shipped or runs.shipped or {}
        return "library" in runs.memo or build.load(self.key()) is not None or shipped.get("key") == self.key()

    def plan(self, structure):
        """The calling.Plan of the loaded kernel for results nested as ``structure``."""
        def make():
            s = self.spec
            lib = self.runs().library(self.shipped)
            data = self.traced().data
            if s.sparse and self.traced().has_loops:  # with the pattern's index arrays (sparsity_loops.py)
                data = self.optimized().data
            return stages.bind(lib, self.key(), self.runs().spec.c_name, s.args, len(self.result_shapes()),
                               s.dtype, structure, s.options, data)
        return self.once(("plan", structure), make)

    def _expect(self, what, prog, kind=None):
        return estimate.expect(self.spec, self.key, what, prog, kind)


def build_together(pipelines):
    """Compile the kernels of ``pipelines`` not built yet into one library per set of compiler
    flags (stages.build_many): the Python stages one after another, then the compilers."""
    items = {}
    for p in pipelines:
        r = p.runs()
        if p.key() not in items and not p.built():
            k = r.kernel()[0]
            items[p.key()] = (p.key(), k, r.meta(), r.loops(), r.spec.name, r.spec)
    stages.build_many([i[:5] for i in items.values()],
                      lambda kernels, keys: estimate.expect_compile(
                          [(items[k][5], lambda k=k: k) for k in keys], kernels))
