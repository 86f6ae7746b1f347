"""Strongly connected components of a directed graph (Tarjan's, without recursion): the
cycles a schedule of rolled loops stalls on (render/roll.py), the import circles the layout
test looks for."""
from __future__ import annotations


def cycles(nodes, successors):
    """The strongly connected components of more than one node (each a list) of the graph on
    ``nodes`` whose edges run from each node v to ``successors(v)``, every one a node too."""
    index, low, on, stack, out = {}, {}, set(), [], []
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        work = [(root, iter(successors(root)))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:  # deeper first: v resumes after w is done
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(successors(w))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:  # v is the root of a component: it is on the stack above v
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(comp)
    return out
