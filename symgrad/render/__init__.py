"""Program -> source text. One printer (``c.py``) for every target; targets are data."""
from .c import TARGETS, Kernel, Target, render

__all__ = ["TARGETS", "Kernel", "Target", "render"]
