"""The IR of every stage: the Program (program.py), each op defined once (ops/), the
builder transforms grow a program with (graph.py), and an interpreter (evaluate.py)."""
