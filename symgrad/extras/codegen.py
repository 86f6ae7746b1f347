"""Build-time code generation: standalone C99 (and CUDA) files for other people's builds.

    symgrad.codegen.generate(f, "build/gen", kinds=("value", "grad", "hessian"))

writes build/gen/NAME.h and NAME.c (and NAME.cu with cuda=True): kernels NAME_value,
NAME_grad, NAME_hessian, NAME_jacobian, NAME_hvp, NAME_d<N>, each a one-point function and a
batch function (see render/c99.py for the calling convention; the header documents every
argument). Files appear whole or not at all.

The sparse kinds (NAME_jacobian_sparse, NAME_hessian_sparse: kinds "jacobian_sparse",
"hessian_sparse") compute one value per structural non-zero of the Jacobian or Hessian by
every argument, in CSR order (a Hessian's lower triangle, row >= column); NAME.h declares and
NAME.c defines where each value goes (pattern_source):

    #define NAME_JACOBIAN_SPARSE_NNZ 8       (and _NROWS, _NCOLS: the matrix's shape)
    extern const int64_t NAME_jacobian_sparse_rows[];    NNZ entries: value k's row
    extern const int64_t NAME_jacobian_sparse_cols[];    NNZ entries: value k's column
    extern const int64_t NAME_jacobian_sparse_indptr[];  NROWS + 1 entries: CSR row starts"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..call.verbs import DEFAULT_KERNELS

__all__ = ["functions", "generate", "pattern_source", "sources", "write_files"]


def functions(F, kinds):
    """(kernel kind, Function) for each kind: value, grad, hessian, jacobian, d<N>
    (call/verbs.kernel_kinds)."""
    from ..call.verbs import dense_of, kernel_kinds
    from ..transforms.kinds import VALUE, nth_order
    offered = kernel_kinds()
    out = []
    for kind in kinds:
        if kind == VALUE:
            out.append((kind, F))
        elif kind in offered:
            dense = dense_of(kind)  # a sparse kind: the entries of F.<dense>'s pattern
            out.append((kind, getattr(F, dense).sparse_form() if dense else getattr(F, kind)))
        elif nth_order(kind) is not None:
            out.append((kind, F.derivative(nth_order(kind))))
        else:
            raise ValueError(f"unknown kernel kind {kind!r}: use {', '.join(offered)} or d<N> (d2, d3, ...)")
    return out


def sources(F, kinds=DEFAULT_KERNELS, name=None, cuda=False):
    """{file name: text} of the standalone files for the kernels ``kinds`` of Function ``F``
    (where its arrays stayed loops: of ``F`` traced element by element, see Function.standalone)."""
    from ..render.c99 import c99_files
    from ..render.cuda import cuda_file
    from ..pipeline.spec import c_identifier
    name = c_identifier(name or F.py_name)
    picked = functions(F, kinds)
    note = "T = double." if str(F.dtype) == "float64" else \
        f"T = float, arithmetic in {F.options.float32_math}."
    for kind, G in picked:
        if G.is_sparse and not G.sparsity().nnz:
            raise ValueError(f"{name}_{kind}: {G.title} has no structural non-zeros (every entry is identically "
                             "0): there is no kernel to generate")
    units = [G.standalone("c99", f"{name}_{kind}") for kind, G in picked]
    units = [pattern_source(u, G) if G.is_sparse else u for u, (_, G) in zip(units, picked)]
    h, c = c99_files(units, name, note)
    files = {f"{name}.h": h, f"{name}.c": c}
    if cuda:
        files[f"{name}.cu"] = cuda_file([G.standalone("cuda", f"{name}_{kind}") for kind, G in picked], name)
    return files


def pattern_source(unit, G):
    """``unit`` (a render.c99.Unit of sparse Function ``G``) with its pattern's index arrays:
    declared and documented in the header, defined in the C file."""
    import dataclasses

    import numpy as np
    p = G.sparsity()
    k, macro = unit.name, unit.name.upper()
    indptr = np.zeros(p.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(p.rows, minlength=p.shape[0]), out=indptr[1:])
    which = (f"the lower triangle (row >= column) of the {p.shape[0]} x {p.shape[1]} Hessian" if p.lower else
             f"the {p.shape[0]} x {p.shape[1]} Jacobian")
    doc = [f"/* {k}'s result holds the {p.nnz} structural non-zeros of {which}",
           " * (rows: the results' entries, columns: the arguments' entries, each flattened and concatenated",
           f" * in order), in CSR order: its entry j is ({k}_rows[j], {k}_cols[j]) of the matrix, and",
           f" * row r's entries are j = {k}_indptr[r] .. {k}_indptr[r + 1] - 1. The pattern is structural:",
           " * an entry may be 0 at some points. */",
           f"#define {macro}_NNZ {p.nnz}", f"#define {macro}_NROWS {p.shape[0]}", f"#define {macro}_NCOLS {p.shape[1]}"]
    arrays = [("rows", p.rows), ("cols", p.cols), ("indptr", indptr)]
    decls = [f"extern const int64_t {k}_{what}[];" for what, _ in arrays]
    defs = []
    for what, a in arrays:
        values = [str(v) for v in a.tolist()]
        lines = [", ".join(values[i:i + 16]) for i in range(0, len(values), 16)]
        defs += [f"const int64_t {k}_{what}[{len(values)}] = {{", *[f"    {line}," for line in lines], "};"]
    return dataclasses.replace(unit, declarations="\n".join([unit.declarations] + doc + decls),
                               definitions="\n".join(defs + ["", unit.definitions]))


def generate(f, out, *, name=None, shapes=None, kinds=DEFAULT_KERNELS, dtype=None, cuda=False,
             options=None):
    """Write the standalone files of ``f`` (a Python function, or a symgrad Function: then
    shapes, dtype and options are its own) into directory ``out``; returns their paths."""
    from .. import compile as compile_
    F = compile_(f, shapes, dtype=dtype, options=options)
    return write_files(out, sources(F, kinds, name, cuda))


def write_files(out, files):
    """Write {name: text} into ``out``: each through a temporary file, all renamed into place
    only once every one is written; on any error none of them is left behind."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    temps = []
    try:
        for fname, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{fname}.", dir=out)
            temps.append((tmp, out / fname))
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.chmod(tmp, 0o644)
        for tmp, final in temps:
            os.replace(tmp, final)
    except BaseException:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    return [final for _, final in temps]
