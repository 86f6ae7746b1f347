"""Optimised program -> source text: one schedule (schedule.py, plain data), one printer
(c.py, through the op table), one emitter per target: the in-process CPU kernel (cpu.py;
loops.py where arrays stayed loops), standalone C99 (c99.py), CUDA (cuda.py). Targets are
data (target.py: the build and the calls read it on a warm start). Nothing here imports sympy."""
from .target import TARGETS, Kernel, Target, pick

__all__ = ["TARGETS", "Kernel", "Target", "pick", "render"]


def __getattr__(name):  # the emitters: loaded when asked for (a warm start needs none)
    if name == "render":
        from . import cpu
        return getattr(cpu, name)
    raise AttributeError(name)
