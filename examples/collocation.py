"""Direct collocation written over the whole decision vector, as for CasADi or JAX: a
torque-driven pendulum swung up in 10 s (backward Euler, torque within +-2), its constraints,
sparse constraint Jacobian and sparse Lagrangian Hessian compiled by symgrad, solved by IPOPT.

    python examples/collocation.py [--nodes N] [--check-dense]   # default 1000 nodes

Prints the cold build time of the three kernels and their patterns; with --check-dense, the
sparse entries against the dense kernels (bit for bit) and finite differences; with cyipopt
installed (pip install 'symgrad[ipopt]'), IPOPT's optimum (opty's figure at 1000 nodes from
a random start: 12.2577983235)."""
from __future__ import annotations

import argparse
import time

import numpy as np

import symgrad
import symgrad.ipopt

DURATION, G, TORQUE = 10.0, 9.81, 2.0


def problem(n):
    """(objective, constraints) of free = (theta[n], omega[n], T[n])."""
    h = DURATION / (n - 1)

    def objective(free):
        return h * np.sum(free[2 * n:] ** 2)

    def constraints(free):
        th, om, T = free[:n], free[n:2 * n], free[2 * n:]
        c1 = (th[1:] - th[:-1]) / h - om[1:]
        c2 = (om[1:] - om[:-1]) / h + G * np.sin(th[1:]) - T[1:]
        return np.concatenate([c1, c2, np.array([th[0], th[-1] - np.pi, om[0], om[-1]])])
    return objective, constraints


def check_dense(cb, constraints, n, rng):
    """The sparse callbacks against the dense kernels (bit for bit) and central differences."""
    C = symgrad.compile(constraints, [(3 * n,)])
    x, lam = rng.normal(size=3 * n), rng.normal(size=2 * n + 2)
    J = np.zeros((2 * n + 2, 3 * n))
    J[cb.jacobianstructure()] = cb.jacobian(x)
    same_j = np.array_equal(J, C.jacobian(x))
    H = np.zeros((3 * n, 3 * n))
    H[cb.hessianstructure()] = cb.hessian(x, lam, 1.0)
    dense_h = cb.L.hessian_wrt(0)(x, 1.0, lam)
    same_h = np.array_equal(H, np.tril(dense_h))
    eps = 1e-6
    fd = np.stack([(C(x + eps * e) - C(x - eps * e)) / (2 * eps) for e in np.eye(3 * n)], axis=1)
    return same_j, same_h, float(np.max(np.abs(J - fd)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--check-dense", action="store_true")
    a = ap.parse_args(argv)
    n, rng = a.nodes, np.random.default_rng(0)
    objective, constraints = problem(n)
    x0 = rng.normal(size=3 * n)
    t = time.perf_counter()
    cb = symgrad.ipopt.Callbacks(objective, constraints, 3 * n)
    cb.constraints(x0), cb.jacobian(x0), cb.hessian(x0, np.ones(cb.m), 1.0), cb.gradient(x0)
    build = time.perf_counter() - t
    nnz_j, nnz_h = len(cb.jacobianstructure()[0]), len(cb.hessianstructure()[0])
    print(f"{n} nodes: {3 * n} variables, {cb.m} constraints; built cold in {build:.2f} s "
          f"(Jacobian {nnz_j} non-zeros, {nnz_j / (cb.m * 3 * n):.3%}; Lagrangian Hessian's lower triangle {nnz_h})")
    out = {"build": build, "nnz_jacobian": nnz_j, "nnz_hessian": nnz_h}
    if a.check_dense:
        same_j, same_h, fd = check_dense(cb, constraints, n, rng)
        print(f"sparse = dense bit for bit: Jacobian {same_j}, Lagrangian Hessian {same_h}; "
              f"max |J - central differences| {fd:.1e}")
        out.update(same_jacobian=same_j, same_hessian=same_h, fd=fd)
    try:
        import cyipopt  # noqa: F401
    except ImportError:
        print("cyipopt is not installed (pip install 'symgrad[ipopt]'): not solved")
        return out
    lb = np.full(3 * n, -np.inf)
    ub = np.full(3 * n, np.inf)
    lb[2 * n:], ub[2 * n:] = -TORQUE, TORQUE
    nlp = symgrad.ipopt.problem(objective, constraints, lb=lb, ub=ub, cl=np.zeros(cb.m), cu=np.zeros(cb.m))
    nlp.add_option("print_level", 0)
    t = time.perf_counter()
    x, info = nlp.solve(x0)
    print(f"IPOPT: {info['status_msg'].decode() if isinstance(info['status_msg'], bytes) else info['status_msg']} "
          f"objective {info['obj_val']:.10f} in {time.perf_counter() - t:.2f} s")
    out.update(objective=info["obj_val"], status=info["status"])
    return out


if __name__ == "__main__":
    main()
