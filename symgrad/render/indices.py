"""Affine indices of loop kernels (tracing/affine.py's forms) in C, and how they move with
the innermost loop variable (render/loops.py decides from it how lanes may write)."""
from __future__ import annotations


def index_c(index):
    """An affine index (tracing/lazy.py) in C."""
    c, terms = index
    parts = []
    for t, k in terms:
        s = f"sg_i{t}" if isinstance(t, int) else f"sg_d{t[1]}[{index_c(t[2])}]"
        parts.append(s if k == 1 else f"{k}*{s}" if k > 0 else f"({k})*{s}")
    if c or not parts:
        parts.append(str(c))
    return " + ".join(parts)


def _mentions(index, v):
    return any(t == v if isinstance(t, int) else _mentions(t[2], v) for t, _ in index[1])


def innermost(index, v):
    """How an index moves with loop variable v: 'none', 'direct' (one-to-one, no gathers
    of v: lanes write distinct entries), or 'gather'."""
    direct = any(t == v for t, _ in index[1])
    gathered = any(not isinstance(t, int) and _mentions(t[2], v) for t, _ in index[1])
    return "gather" if gathered else "direct" if direct else "none"


def lanes_apart(indices, buffers, v):
    """Whether the SIMD lanes of loop variable v can add into these entries (of ``buffers``)
    at once: no entry one lane writes is written by another lane (x[j] and x[j+1] collide
    across lanes; x[3j], x[3j+1], x[3j+2] never do)."""
    for k, (a, x) in enumerate(zip(buffers, indices)):
        for b, y in zip(buffers[k:], indices[k:]):
            if a != b:
                continue
            cx, cy = dict(x[1]), dict(y[1])
            step = cx.get(v)
            if step != cy.get(v) or {t: c for t, c in cx.items() if t != v} != {t: c for t, c in cy.items() if t != v}:
                return False
            if (x[0] - y[0]) % abs(step) == 0 and x[0] != y[0]:
                return False
    return True
