"""The functions this package differentiates at build time (plain Python, as written)."""
import math


def seed(x):
    # the founding question's function, with math.pow as its author wrote it
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def rosen(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))
