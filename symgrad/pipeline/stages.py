"""The pipeline of one Function, stage by stage (each memoised on the Function by its facade,
function.py): derivatives taken (transforms/), optimised, rendered (render/), built into a
loaded library (build.py) and bound for calls (calling.py). Each stage reports itself when it
is slow (source.stage)."""
from __future__ import annotations

import math

from ..call import calling
from . import estimate
from .source import stage


def derived(fn, steps=None):
    """Function ``fn``'s results as a Program, derivatives taken (its first ``steps`` only,
    where given). The value-and-gradient program of a Source is made once (Source.derived):
    F.grad, F.value_and_grad and F.hvp build on it."""
    prog = fn._effective().program(fn.name)
    for i, (kind, nums) in enumerate(fn._steps[:steps]):
        prog = _step(fn, prog, kind, nums, fn._steps[:i])
    return prog


def pattern(fn):
    """The sparsity.Pattern of sparse Function ``fn``: of the program its earlier steps make."""
    from ..transforms.kinds import kind as kind_of
    prog = derived(fn, len(fn._steps) - 1)
    kind, nums = fn._steps[-1]
    with stage(fn.c_name, "sparsity pattern"):
        return kind_of(kind).pattern(prog, nums)


def _step(fn, prog, kind, nums, before):
    """One derivative of ``prog`` (the program of the steps ``before``), built by its kind."""
    from ..transforms import derive
    from ..transforms.kinds import SHARED, kind as kind_of

    class Context:
        @staticmethod
        def pattern():  # a sparse kind's (the last step): the Function's, computed once
            return fn.sparsity()

        @staticmethod
        def value_and_grad():
            # memoised on the Source the program came from: a Function whose derivative is taken
            # of the trace unrolled (F.hvp by an array the loops read) must not get the loops'
            return fn._effective().derived(before + ((SHARED, nums),),
                                      lambda: derive.grad(prog, nums, with_value=True))
    with stage(fn.c_name, "differentiate", expect=expect(fn, "differentiate", prog, kind)):
        return kind_of(kind).build(prog, nums, Context)


def expect(fn, what, prog, kind_name=None):
    """(operations, seconds[, a note]) expected of symgrad's stage ``what`` given program ``prog``
    (estimate.py), for the progress lines only."""
    def guess():
        ops = prog.count_ops()
        seconds = estimate.stage_seconds(what, ops, kind_name or (fn._steps[-1][0] if fn._steps else None))
        return ops, seconds, _once(fn, hvp_route(fn, seconds))
    return guess


def expect_compile(fns, kernels):
    """(operations, seconds[, a note]) expected of the C compile of ``kernels`` into one library."""
    def guess():
        seconds = estimate.compile_seconds(kernels)
        notes = (_once(f, n) for f in fns if (n := hvp_route(f, seconds)))
        return sum(k.ops for k in kernels), seconds, next(notes, "")
    return guess


HVP_ROUTE_SECONDS = 10.0  # a dense Hessian's stage expected to take this long suggests the hvp route
_told = set()  # the keys of the Hessians whose progress line suggested it


def _once(fn, note):
    """``note`` the first time it is said of ``fn``'s kernel, then "" (its later stages' lines)."""
    if not note or fn.key in _told:
        return ""
    _told.add(fn.key)
    return note


def hvp_route(fn, seconds):
    """Where Function ``fn`` is the dense Hessian of a function of one array argument of p >= 4
    entries and one of its stages is expected to take ``seconds`` >= HVP_ROUTE_SECONDS: the one
    batched Hessian-vector product call that builds the same matrix (p tangents, the rows of
    the identity, each with the argument broadcast; kinds.py's hvp: by every argument), else ""."""
    from ..transforms.kinds import KINDS, kind as kind_of
    if seconds < HVP_ROUTE_SECONDS or len(fn._steps) != 1 or len(fn.args) != 1:
        return ""
    name, nums = fn._steps[0]
    (arg, shape), = fn.args
    p = math.prod(shape)
    if not kind_of(name).symmetric or tuple(nums) != (0,) or p < 4:
        return ""
    hvp = next(n for n, k in KINDS.items() if k.tangents)
    dims = ", ".join(map(str, shape))
    if len(shape) == 1:
        call = f"F.{hvp}(np.broadcast_to({arg}, ({p}, {p})), np.eye({p}))"
    else:
        call = (f"F.{hvp}(np.broadcast_to({arg}, ({p}, {dims})), np.eye({p}).reshape({p}, {dims}))"
                f".reshape({dims}, {dims})")
    return (f"this dense Hessian of {p} parameters is also one batched Hessian-vector product, whose compile grows "
            f"as the function's, not as the Hessian's {p * p} entries: H = {call} (F: the compiled "
            f"{fn.py_name}, {arg}: the point)")


def optimized(fn):
    """The optimised program every target prints. A gradient's is its value_and_grad kernel's
    without the value (Function._runs): the standalone C prints the statements of the
    in-process kernel (the same bits, libm permitting)."""
    from ..errors import CompileError
    from ..transforms.optimize import optimize, only
    shapes = fn.result_shapes()
    if fn._runs() is not fn:
        full = fn._runs().optimized()
        return only(full, full.outputs[len(full.outputs) - len(shapes):])
    prog = fn.derived()
    if [o.shape for o in prog.outputs] != shapes:
        raise CompileError(f"{fn.c_name}: results of shapes {[o.shape for o in prog.outputs]}"
                           f", expected {shapes} (a bug in symgrad)")
    with stage(fn.c_name, "optimize", lambda: f" ({prog.count_ops()} operations)", expect(fn, "optimize", prog)):
        return optimize(prog, fn.options)


def kernel(fn):
    """(the in-process CPU kernel, the vector width it was rendered for)."""
    from ..build.host import vector_bits
    from ..render import pick, render
    prog = fn.optimized()
    with stage(fn.c_name, "generate C", expect=expect(fn, "generate C", prog)):
        target = pick("cpu", fn.dtype, fn.options)
        if fn.loops:
            from ..render.loops import render_loops
            return render_loops(prog, fn.c_name, target, fn.options, title=fn.title), vector_bits()
        return render(prog, fn.c_name, target, vector_bits(), fn.options, title=fn.title,
                      optional=fn._optional, fixed_group=1 if fn._sparse_kind else 4), vector_bits()


def library(fn):
    """The calling.Plan of ``fn``'s loaded kernel: from the cache when one was built for its key,
    else the library a pickle shipped for this very key (made a cache entry), else built now.
    The library itself says what it computes (its kernel, dtype and result shapes); one that
    says otherwise than ``fn`` expects is discarded and rebuilt."""
    from ..build import compile as build, cache
    key, f = fn.key, fn._runs()
    meta = f._meta()
    lib = build.load(key)
    shipped = fn.__dict__.pop("_shipped", None)  # a pickle's library, if built for this key
    if lib is None and shipped is not None and shipped.get("key") == key:
        lib = build.adopt(key, shipped["bytes"], shipped["sha256"], shipped.get("info"))
    if lib is not None and cache.library_meta(lib, key) != meta:
        cache.warn_once(("meta", key), f"the cached kernel {key[:12]} describes another kernel; it is rebuilt")
        cache.discard(key)
        lib = None
    if lib is None:
        k = f.kernel
        with stage(f.c_name, "C compile", lambda: f" ({k.ops} operations)", expect_compile([fn], [k])):
            lib = build.build_kernel(key, k, meta)
    data = fn.traced.data
    if fn._sparse_kind and fn.traced.has_loops:  # with the pattern's index arrays (transforms/sparsity_loops.py)
        data = fn.optimized().data
    if data:
        calling.bind_data(lib, key, fn.c_name, data)
    shapes = [tuple(s) for s in cache.library_meta(lib, key)["results"]]
    skip = len(shapes) - len(fn.result_shapes())  # the value, where F.grad runs F.value_and_grad's kernel
    return calling.Plan(f.c_name, fn.args, shapes[skip:], fn.dtype, fn._structure, lib, fn.options,
                        skip=[math.prod(x) for x in shapes[:skip]])


def build_together(fns):
    """Compile the kernels of Functions ``fns`` not built yet into one library per set of
    compiler flags (build.build_many: one C compile each, in parallel): the Python stages one
    after another, then the compilers."""
    from ..build import compile as build
    groups = {}
    for f in {f.key: f for f in fns}.values():
        shipped = f.__dict__.get("_shipped") or {}
        if build.load(f.key) is None and shipped.get("key") != f.key:  # (a pickle's library: library())
            k = f.kernel  # kernels of loops bind their data by file-level names: a library each
            # kernels of one C name (two lambdas: an objective and its constraints) go to different libraries
            group, apart = (k.cflags, f.key if f.loops else None), 0
            while any(other.name == k.name for _, other, _, _ in groups.get((group, apart), ())):
                apart += 1
            groups.setdefault((group, apart), []).append((f.key, k, f._meta(), f))

    def compile_group(group):
        ops = sum(k.ops for _, k, _, _ in group)
        with stage(group[0][3].name, "C compile", lambda: f" ({len(group)} kernels, {ops} operations)",
                   expect_compile([f for _, _, _, f in group], [k for _, k, _, _ in group])):
            build.build_many([(key, k, meta) for key, k, meta, _ in group])
    if len(groups) > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(min(len(groups), build.usable_cpus())) as pool:
            list(pool.map(compile_group, groups.values()))
    else:
        for group in groups.values():
            compile_group(group)
