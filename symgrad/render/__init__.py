"""Optimised program -> source text: one schedule (schedule.py, plain data), one printer
(c.py, through the op table), one emitter per target: the in-process CPU kernel (cpu.py;
loops.py where arrays stayed loops), standalone C99 (c99.py), CUDA (cuda.py). Targets are
data (target.py: the build and the calls read it on a warm start). Nothing here imports sympy."""
from .target import TARGETS, Kernel, Target, pick

__all__ = ["EMITTERS", "TARGETS", "Kernel", "Target", "emit", "pick", "render"]

# standalone target kind -> the module of its emitter, whose emit(prog, name, target, options,
# title) gives a c99.Unit (a new target: its Target entries in target.py and one line here)
EMITTERS = {"c99": "c99", "cuda": "cuda"}


def emit(prog, name, target, options, title):
    """Standalone source of ``prog`` for ``target`` (a Target whose kind EMITTERS names)."""
    from importlib import import_module
    return import_module(f".{EMITTERS[target.kind]}", __name__).emit(prog, name, target, options, title)


def __getattr__(name):  # the emitters: loaded when asked for (a warm start needs none)
    if name == "render":
        from . import cpu
        return getattr(cpu, name)
    raise AttributeError(name)
