"""An n-link planar pendulum from sympy.physics.mechanics (Kane's method), compiled with
symgrad.from_sympy: the Jacobian of its right-hand side w.r.t. the 2n states.

    python examples/pendulum.py [n]       # default 16 links, 32 states"""
from __future__ import annotations

import sys
import time

import numpy as np
import sympy as sp
from sympy.physics import mechanics as me


def build(n):
    """(KanesMethod, states q+u, parameters [m..., l..., g]) of an n-link planar pendulum."""
    q = me.dynamicsymbols(f"q:{n}")
    u = me.dynamicsymbols(f"u:{n}")
    m = sp.symbols(f"m:{n}")
    lengths = sp.symbols(f"l:{n}")
    g, t = sp.symbols("g t")
    N = me.ReferenceFrame("N")
    P = me.Point("O")
    P.set_vel(N, 0)
    particles, forces, kd = [], [], []
    for i in range(n):
        B = N.orientnew(f"B{i}", "Axis", [q[i], N.z])
        B.set_ang_vel(N, u[i] * N.z)
        Pi = P.locatenew(f"P{i}", lengths[i] * B.x)
        Pi.v2pt_theory(P, N, B)
        particles.append(me.Particle(f"Pa{i}", Pi, m[i]))
        forces.append((Pi, m[i] * g * N.x))
        kd.append(q[i].diff(t) - u[i])
        P = Pi
    km = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kd)
    km.kanes_equations(particles, forces)
    return km, list(q) + list(u), list(m) + list(lengths) + [g]


def main():
    import symgrad
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    t0 = time.perf_counter()
    km, states, params = build(n)
    t1 = time.perf_counter()
    print(f"{n}-link pendulum model built in {t1 - t0:.1f} s (sympy.physics.mechanics)")
    F = symgrad.from_sympy(km.forcing_full, [states, params])
    J = symgrad.jacobian(F, argnums=0)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (1000, 2 * n))
    p = np.concatenate([rng.uniform(0.5, 1.5, 2 * n), [9.81]])
    jac = J(x, p)
    t2 = time.perf_counter()
    print(f"Jacobian of forcing_full ({2 * n}x{2 * n}) compiled and evaluated on 1000 states: "
          f"{t2 - t1:.1f} s after the model was built")
    t = time.perf_counter()
    J(x, p)
    print(f"steady state: {(time.perf_counter() - t) * 1e3:.2f} ms for 1000 states; "
          f"shape {jac.shape}")


if __name__ == "__main__":
    main()
