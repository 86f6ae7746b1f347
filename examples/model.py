"""The functions the command lines of README and docs/build-time.md name (`symgrad generate
examples/model.py:seed ...`, run from the repository root): plain Python, nothing of symgrad's."""
import math


def seed(x):
    """The founding question's function, with math.pow as its author wrote it: seed'(3) = -75279680."""
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def rosen(x):
    """The Rosenbrock function of an array (docs/build-time.md: 8 entries, --shapes "[(8,)]")."""
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))
