"""Program -> program clean-up before printing, linear in the program.

Most of the work is done as the program is built: value numbering shares every repeated
node (CSE), and what a transform builds folds exactly (ir/graph.py). What is left here:
dead code goes, and the nodes are renumbered in order. Integer powers become
multiplications and single-use nodes are printed inside their user when printing
(render/c.py)."""
from __future__ import annotations

from ..ir.graph import Graph, cone


def optimize(prog, options):
    return only(prog, prog.outputs)


def only(prog, outputs):
    """``prog`` computing only ``outputs`` (some of its own): the nodes they need, as they are
    (the same operations, the same bits). ``prog`` itself where it is that already (a
    derivative as Graph.program made it: every node needed, in order)."""
    if tuple(outputs) == prog.outputs and all(o.adds is None for o in outputs) and \
            len(cone(prog.nodes, [r for o in outputs for r in o.refs])) == len(prog.nodes):
        return prog  # (Graph.program would keep every node, in its order: operands come first)
    return Graph(prog).program([(o.name, o.shape, list(o.refs), o.loops, o.adds, o.stores) for o in outputs])
