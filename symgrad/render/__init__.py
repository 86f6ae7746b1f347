"""Optimised program -> source text: one schedule (schedule.py, plain data), one printer
(printer.py, on sympy's C99 printer), one emitter per target: the in-process CPU kernel
(cpu.py), standalone C99 (c99.py), CUDA (cuda.py). Targets are data (target.py, which
imports no sympy: the build and the calls read it on a warm start)."""
from .target import TARGETS, Kernel, Target, pick

__all__ = ["TARGETS", "Kernel", "Target", "pick", "render"]


def __getattr__(name):  # the emitters need sympy: loaded when asked for
    if name == "render":
        from . import cpu
        return getattr(cpu, name)
    raise AttributeError(name)
