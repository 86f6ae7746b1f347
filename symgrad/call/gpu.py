"""Function.to_cuda(): a Function's CUDA kernel on GPU arrays, through CuPy (optional).

Arrays are anything with ``__cuda_array_interface__`` (CuPy, PyTorch, Numba); batches follow
the same gufunc rules as on the CPU: trailing dimensions are each argument's core shape,
leading ones broadcast, every result has the batch shape followed by its core shape."""
from __future__ import annotations

from math import prod

from ..structure import nest
from ..render.target import TARGETS

THREADS = 256


def _cupy():
    try:
        import cupy
    except ImportError:
        raise ImportError("Function.to_cuda() needs CuPy: pip install 'symgrad[cuda]' (or the cupy wheel for your "
                          "CUDA version, e.g. cupy-cuda12x)") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError and driver errors: no usable GPU
        raise RuntimeError(f"no CUDA GPU is visible to CuPy ({type(e).__name__}: {e})") from None
    if count == 0:
        raise RuntimeError("no CUDA GPU is visible to CuPy")
    return cupy


class CudaFunction:
    """A compiled CUDA kernel of one Function, called on device arrays."""

    def __init__(self, F):
        cp = self.cp = _cupy()
        self.F, self.dtype = F, F.dtype
        target = TARGETS["cuda", str(F.dtype)]
        self.module = cp.RawModule(code=F.cuda_source, options=target.flags)
        self.kernel = self.module.get_function(target.entry(F.c_name, "kernel"))
        self.shapes = [tuple(s) for s in F.result_shapes()]

    def __call__(self, *args):
        cp, F = self.cp, self.F
        if len(args) != len(F.args):
            raise TypeError(f"{F.py_name} ({F.kind}) takes {len(F.args)} argument(s), got {len(args)}")
        arrays, batches = [], []
        for (name, core), x in zip(F.args, args):
            a = cp.asarray(x, dtype=self.dtype)  # no copy for a device array of this dtype
            if a.ndim < len(core) or a.shape[a.ndim - len(core):] != core:
                raise ValueError(f"argument {name!r} must have trailing (core) shape {core}, got {a.shape}")
            arrays.append(a)
            batches.append(a.shape[:a.ndim - len(core)])
        batch = cp.broadcast_shapes(*batches) if batches else ()
        ins = [cp.ascontiguousarray(cp.broadcast_to(a, batch + core)) for a, (_, core) in zip(arrays, F.args)]
        outs = [cp.empty(batch + s, dtype=self.dtype) for s in self.shapes]
        n = prod(batch)
        if n:
            blocks = min((n + THREADS - 1) // THREADS, 65535 * 32)  # a grid-stride loop covers the rest
            self.kernel((blocks,), (THREADS,), (cp.int64(n), *ins, *outs))
        return nest(F.structure, [o[()] if o.ndim == 0 else o for o in outs])
