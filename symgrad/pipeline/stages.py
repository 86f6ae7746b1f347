"""The stages from a traced program to a call plan, in order, each a function of plain values
(programs, names, shapes, options; never a Function): trace -> differentiate -> optimize ->
render -> build -> bind (a kernel found in the cache skips the stages between trace and bind). pipeline/memo.py calls each once per spec and keeps what it
returns. Each reports itself when it is slow (source.stage; ``expect`` estimates it)."""
from __future__ import annotations

import math
from types import SimpleNamespace

from ..call import calling
from .source import stage


def trace(source, name):
    """The Program of ``source`` (a pipeline.source.Source: traced once, or given as it is)."""
    return source.program(name)


def differentiate(prog, steps, c_name, shared, pattern=None, expect=None):
    """``prog`` with derivative ``steps`` taken, each built by its kind (transforms/kinds.py).
    ``shared(before, nums, compute)`` keeps the value-and-gradient program of the steps
    ``before`` by ``nums`` (computed once: F.grad, F.value_and_grad and F.hvp build on it);
    ``pattern()``: a sparse kind's pattern (the last step's); ``expect(kind)``: the estimate."""
    from ..transforms import derive
    from ..transforms.kinds import SHARED, kind as kind_of
    for i, (kind, nums) in enumerate(steps):
        before, base = steps[:i], prog

        def value_and_grad(before=before, nums=nums, base=base):
            return shared(before + ((SHARED, nums),), lambda: derive.grad(base, nums, with_value=True))
        context = SimpleNamespace(pattern=pattern, value_and_grad=value_and_grad)
        with stage(c_name, "differentiate", expect=expect and expect(base, kind)):
            prog = kind_of(kind).build(base, nums, context)
    return prog


def sparsity(prog, kind, nums, c_name):
    """The sparsity.Pattern of sparse kind ``kind`` by ``nums`` of ``prog``."""
    from ..transforms.kinds import kind as kind_of
    with stage(c_name, "sparsity pattern"):
        return kind_of(kind).pattern(prog, nums)


def optimize(prog, shapes, options, c_name, expect=None):
    """``prog`` optimised (transforms/optimize.py), its results checked to be of ``shapes``."""
    from ..errors import CompileError
    from ..transforms.optimize import optimize as run
    if [o.shape for o in prog.outputs] != shapes:
        raise CompileError(f"{c_name}: results of shapes {[o.shape for o in prog.outputs]}"
                           f", expected {shapes} (a bug in symgrad)")
    with stage(c_name, "optimize", lambda: f" ({prog.count_ops()} operations)", expect):
        return run(prog, options)


def render(prog, c_name, dtype, options, title, optional, sparse, expect, loops):
    """(the in-process CPU kernel of ``prog``: render.Kernel, the vector width it is for).
    ``optional``: how many leading results may go unstored; ``sparse``: a sparse kind's;
    ``loops``: whether the traced program's arrays stayed loops (not ``prog``'s: its kernel
    takes their data even where this derivative reads none, a constant Hessian)."""
    from ..build.host import vector_bits
    from ..render import pick, render as emit
    with stage(c_name, "generate C", expect=expect):
        target = pick("cpu", dtype, options)
        if loops:
            from ..render.loops import render_loops
            return render_loops(prog, c_name, target, options, title=title), vector_bits()
        return emit(prog, c_name, target, vector_bits(), options, title=title, optional=optional,
                    fixed_group=1 if sparse else 4), vector_bits()


def cached(key, meta, shipped=None):
    """The loaded library of ``key`` where one exists (not a stage: a lookup): from the cache,
    else the one a pickle shipped for this very key (made a cache entry); else None. The
    library itself says what it computes; one that says otherwise than ``meta`` is discarded."""
    from ..build import compile as builder, cache
    lib = builder.load(key)
    if lib is None and shipped is not None and shipped.get("key") == key:
        lib = builder.adopt(key, shipped["bytes"], shipped["sha256"], shipped.get("info"))
    if lib is not None and cache.library_meta(lib, key) != meta:
        cache.warn_once(("meta", key), f"the cached kernel {key[:12]} describes another kernel; it is rebuilt")
        cache.discard(key)
        lib = None
    return lib


def build(key, kernel, meta, expect=None):
    """The library of ``kernel`` (render.Kernel), compiled now, made the cache entry ``key``."""
    from ..build import compile as builder
    with stage(meta["kernel"], "C compile", lambda: f" ({kernel.ops} operations)", expect):
        return builder.build_kernel(key, kernel, meta)


def bind(lib, key, c_name, args, count, dtype, structure, options, data=()):
    """The calling.Plan of loaded library ``lib`` for a Function of ``args`` and ``count``
    results nested as ``structure`` (the library's last ``count``: F.grad of a large program
    runs F.value_and_grad's kernel, its value unstored). ``data``: what its loops read."""
    from ..build import cache
    if data:
        calling.bind_data(lib, key, c_name, data)
    shapes = [tuple(s) for s in cache.library_meta(lib, key)["results"]]
    skip = len(shapes) - count
    return calling.Plan(c_name, args, shapes[skip:], dtype, structure, lib, options,
                        skip=[math.prod(x) for x in shapes[:skip]])


def build_many(items, expect=None):
    """Compile ``items`` ((key, kernel, meta, loops, name), not built yet) into one library per set of
    compiler flags (build.build_many: one C compile each, in parallel)."""
    from ..build import compile as builder
    groups = {}
    for key, k, meta, loops, name in items:
        # kernels of loops bind their data by file-level names: a library each; kernels of one C
        # name (two lambdas: an objective and its constraints) go to different libraries
        group, apart = (k.cflags, key if loops else None), 0
        while any(other.name == k.name for _, other, _, _ in groups.get((group, apart), ())):
            apart += 1
        groups.setdefault((group, apart), []).append((key, k, meta, name))

    def compile_group(group):
        ops = sum(k.ops for _, k, _, _ in group)
        with stage(group[0][3], "C compile", lambda: f" ({len(group)} kernels, {ops} operations)",
                   expect and expect([k for _, k, _, _ in group], [key for key, _, _, _ in group])):
            builder.build_many([(key, k, meta) for key, k, meta, _ in group])
    if len(groups) > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(min(len(groups), builder.usable_cpus())) as pool:
            list(pool.map(compile_group, groups.values()))
    else:
        for group in groups.values():
            compile_group(group)
