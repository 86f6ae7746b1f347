"""Program -> program clean-up before printing, linear in the program.

Most of the work is done as the program is built: value numbering shares every repeated
node (CSE), and what a transform builds folds exactly (ir/graph.py). What is left here:
dead code goes, and the nodes are renumbered in order. Integer powers become
multiplications and single-use nodes are printed inside their user when printing
(render/c.py)."""
from __future__ import annotations

from ..ir.graph import Graph


def optimize(prog, options):
    return only(prog, prog.outputs)


def only(prog, outputs):
    """``prog`` computing only ``outputs`` (some of its own): the nodes they need, as they are
    (the same operations, the same bits)."""
    return Graph(prog).program([(o.name, o.shape, list(o.refs), o.loops, o.adds, o.stores) for o in outputs])
