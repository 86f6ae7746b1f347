"""Where symgrad's C runtime (csrc/: the CPU kernels' header, the portable maths) lives."""
from __future__ import annotations

from pathlib import Path

from ..errors import CompileError


def csrc_dir() -> Path:
    here = Path(__file__).resolve().parents[1]  # the symgrad package
    for d in (here.parent / "csrc", here / "csrc"):
        if (d / "symgrad_rt.h").exists():
            return d
    raise CompileError(f"symgrad's C runtime (csrc/symgrad_rt.h) is missing next to {here}")
