"""The IR of every stage: the Program (program.py), each op defined once (ops/) beside the
structural nodes and what is asked of a node (nodes.py), the builder transforms grow a program
with (graph.py, its constant folding fold.py), and an interpreter (evaluate.py)."""
