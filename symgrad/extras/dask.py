"""Dask arrays in, dask arrays out: a Function (or any derivative of it) as a generalized
ufunc over dask chunks, on one machine or a cluster (the Function travels by pickle).

    import symgrad.dask
    G = symgrad.dask.apply(F.grad, X)          # X: a dask array of points, chunked by batch
    G.compute()                                # or client.compute(G) on a distributed cluster
"""
from __future__ import annotations

try:
    import dask.array as _da
except ImportError as e:  # pragma: no cover - exercised without dask installed
    raise ImportError("symgrad.dask needs dask's arrays: pip install 'symgrad[dask]' "
                      "(or pip install 'dask[array]')") from e

from .. import structure
from ..function import Function

__all__ = ["apply", "signature"]


def signature(F):
    """The numpy gufunc signature of ``F`` ("(i0),()->(o0_0,o0_1)"), its output core sizes by
    dimension name, and the number of results."""
    if not isinstance(F, Function):
        raise TypeError(f"symgrad.dask.apply expects a symgrad Function, got {type(F).__name__}")
    ins, sizes = [], {}
    for k, (_, shape) in enumerate(F.args):
        names = [f"i{k}_{d}" for d in range(len(shape))]
        sizes.update(zip(names, shape))
        ins.append("(" + ",".join(names) + ")")
    outs, out_sizes = [], {}
    for k, shape in enumerate(F.result_shapes()):
        names = [f"o{k}_{d}" for d in range(len(shape))]
        out_sizes.update(zip(names, shape))
        outs.append("(" + ",".join(names) + ")")
    return ",".join(ins) + "->" + ",".join(outs), out_sizes, len(outs)


class _Flat:
    """Calls a Function and returns its results flat (what apply_gufunc wants: an array for
    one result, a flat tuple for several)."""

    def __init__(self, F):
        self.F = F

    def __call__(self, *arrays):
        res = self.F(*arrays)
        if isinstance(self.F.structure, int):
            return res  # one result: the array itself
        return tuple(structure.flatten(self.F.structure, res))


def apply(F, *arrays, **kwargs):
    """``F(*arrays)`` on dask arrays: ``dask.array.apply_gufunc`` with F's core shapes and
    dtype. Each array's trailing dimensions are its argument's core shape (in one chunk);
    leading (batch) dimensions broadcast and may be chunked. The results have F's structure
    (a tuple for several). ``kwargs`` go to apply_gufunc (e.g. ``allow_rechunk=True``, to let
    dask rechunk core dimensions into one chunk)."""
    sig, out_sizes, n = signature(F)
    for (name, shape), a in zip(F.args, arrays):
        if kwargs.get("allow_rechunk"):
            break
        if hasattr(a, "chunks") and shape and any(len(c) > 1 for c in a.chunks[a.ndim - len(shape):]):
            raise ValueError(f"argument {name!r} of {F.py_name} is chunked along its core dimensions "
                             f"{shape}: rechunk it so that they are one chunk, e.g. x.rechunk({{-1: -1}})")
    if len(arrays) != len(F.args):
        raise TypeError(f"{F.py_name} ({F.kind}) takes {len(F.args)} argument(s), got {len(arrays)}")
    res = _da.apply_gufunc(_Flat(F), sig, *arrays, output_dtypes=[F.dtype] * n, output_sizes=out_sizes,
                           vectorize=False, **kwargs)
    flat = [res] if n == 1 else list(res)
    return structure.nest(F.structure, flat)
