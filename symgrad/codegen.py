"""Build-time code generation: standalone C99 (and CUDA) files for other people's builds.

    symgrad.codegen.generate(f, "build/gen", kinds=("value", "grad", "hessian"))

writes build/gen/NAME.h and NAME.c (and NAME.cu with cuda=True): kernels NAME_value,
NAME_grad, NAME_hessian, NAME_jacobian, NAME_d<N>, each a one-point function and a batch
function (see render/c99.py for the calling convention; the header documents every
argument). Files appear whole or not at all."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .transforms.kinds import DEFAULT_KERNELS


def functions(F, kinds):
    """(kernel kind, Function) for each kind: value, grad, hessian, jacobian, d<N>
    (transforms/kinds.kernel_kinds)."""
    from .transforms.kinds import VALUE, kernel_kinds, nth_order
    offered = kernel_kinds()
    out = []
    for kind in kinds:
        if kind == VALUE:
            out.append((kind, F))
        elif kind in offered:
            out.append((kind, getattr(F, kind)))
        elif nth_order(kind) is not None:
            out.append((kind, F.derivative(nth_order(kind))))
        else:
            raise ValueError(f"unknown kernel kind {kind!r}: use {', '.join(offered)} or d<N> (d2, d3, ...)")
    return out


def sources(F, kinds=DEFAULT_KERNELS, name=None, cuda=False):
    """{file name: text} of the standalone files for the kernels ``kinds`` of Function ``F``
    (where its arrays stayed loops: of ``F`` traced element by element, see Function.standalone)."""
    from .render.c99 import c99_files
    from .render.cuda import cuda_file
    from .function import c_identifier
    name = c_identifier(name or F.py_name)
    picked = functions(F, kinds)
    note = "T = double." if str(F.dtype) == "float64" else \
        f"T = float, arithmetic in {F.options.float32_math}."
    h, c = c99_files([G.standalone("c99", f"{name}_{kind}") for kind, G in picked], name, note)
    files = {f"{name}.h": h, f"{name}.c": c}
    if cuda:
        files[f"{name}.cu"] = cuda_file([G.standalone("cuda", f"{name}_{kind}") for kind, G in picked], name)
    return files


def generate(f, out, *, name=None, shapes=None, kinds=DEFAULT_KERNELS, dtype=None, cuda=False,
             options=None):
    """Write the standalone files of ``f`` (a Python function, or a symgrad Function: then
    shapes, dtype and options are its own) into directory ``out``; returns their paths."""
    from . import compile as compile_
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
