"""Nonlinear programs for IPOPT (through cyipopt) without glue: an objective and constraints,
plain Python functions of the vector x, become the callbacks IPOPT asks for, each a symgrad
kernel: the gradient, the constraint Jacobian's structural non-zeros and the lower triangle
of the Lagrangian's Hessian (sigma f + lambda . g, one kernel), with their structures.

    nlp = symgrad.ipopt.problem(f, g, lb=..., ub=..., cl=..., cu=...)   # a cyipopt.Problem
    x, info = nlp.solve(x0)

``Callbacks`` is the same object without cyipopt (any solver that takes these callbacks)."""
from __future__ import annotations

import numpy as np


class Callbacks:
    """IPOPT's callbacks of ``objective(x)`` (a number) and ``constraints(x)`` (an array of m
    numbers, or None), x of n entries: the interface cyipopt.Problem calls."""

    def __init__(self, objective, constraints, n, dtype="float64"):
        from .. import compile as _compile
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n (the number of variables) must be a positive int, got {n!r}")
        n = int(n)
        self.n = n
        self.f = _compile(objective, [(n,)], dtype=dtype)
        if self.f.result_shapes() != [()]:
            raise ValueError(f"the objective must return one number, but it returns shape "
                             f"{self.f.result_shapes()[0]}; put vector-valued parts in the constraints")
        if constraints is None:
            self.m, self.g = 0, None

            def lagrangian(x, sigma, lam):
                return sigma * _user(objective)(x)
        else:
            self.g = _compile(constraints, [(n,)], dtype=dtype)
            shapes = self.g.result_shapes()
            if len(shapes) != 1 or len(shapes[0]) != 1:
                raise ValueError(f"the constraints must return one 1-d array (m numbers), but they return shapes "
                                 f"{shapes}; write np.array([...]) or np.concatenate([...])")
            self.m = shapes[0][0]
            if self.m == 0:
                raise ValueError("the constraints return no numbers: pass constraints=None for a problem without them")

            def lagrangian(x, sigma, lam):
                return sigma * _user(objective)(x) + np.dot(lam, _user(constraints)(x))
        lagrangian.__name__ = lagrangian.__qualname__ = f"{self.f.py_name}_lagrangian"
        self.L = _compile(lagrangian, [(n,), (), (max(self.m, 1),)], dtype=dtype)
        self._jac = self.g.jacobian.sparse_form() if self.g is not None else None
        self._hess = self.L.hessian_wrt(0).sparse_form()  # the lower triangle's values, in its pattern's order
        # IPOPT asks for all of them: built now, the C compiles side by side (function.build_together)
        from ..function import build_together
        kernels = [self.f, self.f.grad] + ([self.g] if self.g is not None else [])
        kernels += [s for s in (self._jac, self._hess) if s is not None and s.sparsity().nnz]  # (empty: no kernel)
        build_together(kernels)

    def _point(self, x):
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n,):
            raise ValueError(f"x must have shape ({self.n},) (one point: IPOPT's callbacks), got {x.shape}")
        return x

    def objective(self, x):
        return float(self.f(self._point(x)))

    def gradient(self, x):
        return self.f.grad(self._point(x))

    def constraints(self, x):
        x = self._point(x)
        return self.g(x) if self.g is not None else np.zeros(0)

    def jacobianstructure(self):
        return _structure(self._jac)

    def jacobian(self, x):
        return _values(self._jac, self._point(x))

    def hessianstructure(self):
        return _structure(self._hess)

    def hessian(self, x, lagrange, obj_factor):
        lam = np.asarray(lagrange, dtype=float)
        if lam.shape != (self.m,):
            raise ValueError(f"lagrange must have shape ({self.m},) (one multiplier per constraint), got {lam.shape}")
        return _values(self._hess, self._point(x), float(obj_factor), lam if self.m else np.zeros(1))


def _user(f):
    """``f`` as the tracer calls user code (rewritten: math.exp of a traced value traced, not
    asked for its float()): the Lagrangian, written here, is library code, which runs as it is."""
    from ..tracing.registry import HOOKS
    return HOOKS.intercept(f)


def _structure(sparse):
    """(rows, cols) of a sparse Function's pattern (none: empty)."""
    if sparse is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    p = sparse.sparsity()
    return p.rows.copy(), p.cols.copy()


def _values(sparse, *args):
    """The values of a sparse Function's pattern at one point (an empty pattern: no kernel)."""
    if sparse is None or sparse.sparsity().nnz == 0:
        return np.zeros(0)
    return sparse(*args)


def problem(objective, constraints=None, *, n=None, lb=None, ub=None, cl=None, cu=None, dtype="float64"):
    """A cyipopt.Problem of min objective(x) s.t. cl <= constraints(x) <= cu, lb <= x <= ub
    (``n``: the number of variables, else the size of lb or ub; bounds default to none:
    +-inf, IPOPT's 1e19). Needs cyipopt: pip install 'symgrad[ipopt]'."""
    try:
        import cyipopt
    except ImportError:
        raise ImportError("symgrad.ipopt.problem needs cyipopt (and IPOPT): pip install 'symgrad[ipopt]' "
                          "(IPOPT bundled), or cyipopt built against a system IPOPT (pip install cyipopt; conda "
                          "install -c conda-forge cyipopt)") from None
    if n is None:
        sizes = {np.size(b) for b in (lb, ub) if b is not None and np.ndim(b) > 0}
        if len(sizes) != 1:
            raise ValueError("give n (the number of variables), or lb or ub as one bound per variable "
                             f"(got sizes {sorted(sizes) or 'none'})")
        n = sizes.pop()
    cb = Callbacks(objective, constraints, n, dtype)
    if cb.m == 0 and any(b is not None and np.size(b) for b in (cl, cu)):
        raise ValueError("cl and cu bound the constraints, and there are none")
    bound = lambda b, k, v: np.full(k, v) if b is None else np.broadcast_to(np.asarray(b, float), (k,))  # noqa: E731
    return cyipopt.Problem(n=cb.n, m=cb.m, problem_obj=cb, lb=bound(lb, cb.n, -np.inf), ub=bound(ub, cb.n, np.inf),
                           cl=bound(cl, cb.m, -np.inf), cu=bound(cu, cb.m, np.inf))


__all__ = ["problem", "Callbacks"]
