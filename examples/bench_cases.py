"""(Copied from the design notes' shared bench/cases.py, so the project benchmarks itself.)
The benchmark cases, written once as plain Python with the math module, the way
a user writes them. make_inputs gives the input ranges. CASES: name -> (function,
per-point argument shapes, what to compute, number of points)."""
import math
import numpy as np


def seed(x):
    # the founding question's function, with math.pow exactly as its author wrote it
    return 64 * x * (1 - x) * (math.pow((1 - 2 * x), 2)) * math.pow((1 - 8 * x + 8 * x * x), 2)


def rosen8(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(7))


def trig2(x, y):
    return math.sin(3 * x) * math.exp(-0.5 * y * y) + math.log(1 + x * x * y * y) + math.atan2(y, x + 3.0)


def lj(p, atoms):
    # Lennard-Jones energy of a cluster, p holds 3*atoms coordinates
    e = 0.0
    for i in range(atoms):
        for j in range(i + 1, atoms):
            dx = p[3 * i] - p[3 * j]
            dy = p[3 * i + 1] - p[3 * j + 1]
            dz = p[3 * i + 2] - p[3 * j + 2]
            r2 = dx * dx + dy * dy + dz * dz
            s6 = 1.0 / (r2 * r2 * r2)
            e = e + 4.0 * (s6 * s6 - s6)
    return e


def lj6(p):
    return lj(p, 6)


def lj30(p):
    return lj(p, 30)


def make_inputs(name, n, rng):
    if name == "seed":
        return (rng.uniform(-1.0, 2.0, n),)
    if name == "rosen8":
        return (rng.uniform(-2.0, 2.0, (n, 8)),)
    if name == "trig2":
        return (rng.uniform(-2.0, 2.0, n), rng.uniform(-2.0, 2.0, n))
    if name == "lj6":
        base = np.array([[0, 0, 0], [1.1, 0, 0], [0, 1.1, 0], [0, 0, 1.1], [1.1, 1.1, 0], [1.1, 0, 1.1]], float).ravel()
        return (base + rng.uniform(-0.05, 0.05, (n, 18)),)
    if name == "lj30":
        g = np.stack(np.meshgrid(np.arange(4), np.arange(4), np.arange(2)), -1).reshape(-1, 3)[:30] * 1.1
        return (g.ravel() + rng.uniform(-0.05, 0.05, (n, 90)),)
    raise KeyError(name)


# name -> (python function, per-point arg shapes, what to compute, batch size)
CASES = {
    "seed_grad": ("seed", [()], "grad", 10_000_000),
    "rosen8_grad": ("rosen8", [(8,)], "grad", 1_000_000),
    "rosen8_hess": ("rosen8", [(8,)], "hessian", 200_000),
    "trig2_grad": ("trig2", [(), ()], "grad", 2_000_000),
    "lj6_grad": ("lj6", [(18,)], "grad", 200_000),
    "lj30_grad": ("lj30", [(90,)], "grad", 20_000),
}
FUNCS = {"seed": seed, "rosen8": rosen8, "trig2": trig2, "lj6": lj6, "lj30": lj30}
