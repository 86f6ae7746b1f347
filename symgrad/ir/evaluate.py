"""A Program evaluated by numpy, op by op (no C compiler): the reference the IR-level tests
check derivatives and optimisation against. Arguments may carry leading batch axes."""
from __future__ import annotations

import numpy as np

from .graph import number
from .ops import OPS


def evaluate(prog, *args):
    """The outputs of ``prog`` at ``args`` (arrays of batch shape + each argument's shape),
    as float64 arrays of batch shape + each output's shape."""
    flat, batch = [], None
    for a, x in zip(prog.args, args):
        x = np.asarray(x, dtype=np.float64)
        b = x.shape[:x.ndim - len(a.shape)]
        batch = b if batch is None else np.broadcast_shapes(batch, b)
        flat.append(x.reshape(b + (a.size,)))
    batch = batch or ()
    val = []
    with np.errstate(all="ignore"):
        for n in prog.nodes:
            if n[0] == "const":
                val.append(np.full(batch, float(number(n))))
            elif n[0] == "arg":
                val.append(np.broadcast_to(flat[n[1]][..., n[2]], batch))
            else:
                v = OPS[n[0]].value(*[val[j] for j in n[1:]])
                val.append(np.asarray(v, dtype=np.float64))
    return [np.stack([val[r] for r in o.refs], axis=-1).reshape(batch + o.shape) if o.refs
            else np.zeros(batch + o.shape) for o in prog.outputs]
