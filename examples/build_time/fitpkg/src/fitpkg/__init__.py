"""Derivatives of kernels.seed and kernels.rosen, compiled at build time by symgrad.

    fitpkg.seed_grad(3.0)          # -75279680.0
    fitpkg.rosen_hessian(x)        # x: (..., 4) -> (..., 4, 4)
"""
import numpy as np

from ._kernels import ffi, lib


def _batch(kernel, arg_size, result_shape, x):
    x = np.array(x, dtype=np.float64, order="C")  # (a copy; 0-d stays 0-d)
    batch = x.shape[:x.ndim - (arg_size > 1)]
    out = np.empty(batch + result_shape)
    n = int(np.prod(batch, dtype=np.int64))
    kernel(n, ffi.from_buffer("double[]", x), ffi.from_buffer("double[]", out, require_writable=True))
    return out[()] if out.ndim == 0 else out


def seed(x):
    return _batch(lib.seed_value_batch, 1, (), x)


def seed_grad(x):
    return _batch(lib.seed_grad_batch, 1, (), x)


def seed_d2(x):
    return _batch(lib.seed_d2_batch, 1, (), x)


def rosen(x):
    return _batch(lib.rosen_value_batch, 4, (), x)


def rosen_grad(x):
    return _batch(lib.rosen_grad_batch, 4, (4,), x)


def rosen_hessian(x):
    return _batch(lib.rosen_hessian_batch, 4, (4, 4), x)
