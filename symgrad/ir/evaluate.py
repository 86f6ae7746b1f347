"""A Program evaluated by numpy, op by op (no C compiler): the reference the IR-level tests
check derivatives and optimisation against. Arguments may carry leading batch axes.

A node that varies with loop variables (a read, a sum's body, a map's entries) is held as an
array with one more axis per variable (in increasing order of the variables): a sum adds its
own axes up, a map's result is its body over its loops, a scatter adds its weights in place."""
from __future__ import annotations

import math

import numpy as np

from .program import index_vars
from .graph import double
from .ops import OPS
from .ops.selects import second_wins


class _Loops:
    """Values over loop variables: (array of batch + extents of ``vars``, vars ascending)."""

    def __init__(self, prog, batch):
        self.batch, self.ext = batch, {}
        for n in prog.nodes:
            if n[0] in ("sum", "extremum"):
                self.ext.update(n[2])
        for o in prog.outputs:
            self.ext.update(o.loops)
            for _, _, loops, _ in o.adds or ():
                self.ext.update(loops)

    def align(self, value, vs):
        """``value`` over the variables ``vs`` (a superset of its own, ascending), broadcast."""
        arr, own = value
        nb = len(self.batch)
        arr = np.broadcast_to(arr, self.batch + arr.shape[nb:]) if arr.shape[:nb] != self.batch else arr
        shape = list(self.batch)
        k = 0
        for v in vs:
            if k < len(own) and own[k] == v:
                shape.append(self.ext[v])
                k += 1
            else:
                shape.append(1)
        return np.broadcast_to(arr.reshape(shape), self.batch + tuple(self.ext[v] for v in vs))

    def index(self, index, data):
        """An affine index as an integer array over its variables (ascending)."""
        vs = tuple(sorted(index_vars(index)))
        out = np.full(tuple(self.ext[v] for v in vs), index[0], dtype=np.int64)
        for t, k in index[1]:
            if isinstance(t, int):
                shape = [1] * len(vs)
                shape[vs.index(t)] = self.ext[t]
                term = np.arange(self.ext[t]).reshape(shape)
            else:
                inner, ivs = self.index(t[2], data)
                term = _spread(data[t[1]].reshape(-1)[inner], ivs, vs)
            out = out + k * term
        return out, vs


def _spread(arr, own, vs):
    shape = [arr.shape[own.index(v)] if v in own else 1 for v in vs]
    return arr.reshape(shape)


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
    L = _Loops(prog, batch)
    val = []
    with np.errstate(all="ignore"):
        for n in prog.nodes:
            if n[0] == "const":
                val.append((np.full(batch, double(n)), ()))
            elif n[0] == "arg":
                val.append((np.broadcast_to(flat[n[1]][..., n[2]], batch), ()))
            elif n[0] == "read":
                idx, vs = L.index(n[3], prog.data)
                if n[1] == "i":
                    val.append((np.broadcast_to(idx.astype(np.float64), batch + idx.shape), vs))
                elif n[1] == "d":
                    v = np.asarray(prog.data[n[2]], dtype=np.float64).reshape(-1)[idx]
                    val.append((np.broadcast_to(v, batch + v.shape), vs))
                else:
                    val.append((np.broadcast_to(flat[n[2]], batch + (prog.args[n[2]].size,))[..., idx], vs))
            elif n[0] == "sum":
                arr, own = val[n[1]]
                bound = {v for v, _ in n[2]}
                keep = tuple(v for v in own if v not in bound)
                axes = tuple(len(batch) + own.index(v) for v in own if v in bound)
                missing = math.prod(e for v, e in n[2] if v not in own)
                val.append((np.sum(np.broadcast_to(arr, batch + arr.shape[len(batch):]), axis=axes) * missing, keep))
            elif n[0] == "extremum":
                val.append(_extremum(n, val[n[1]], L))
            else:
                ops = [val[j] for j in n[1:]]
                vs = tuple(sorted(set().union(*[o[1] for o in ops])))
                v = OPS[n[0]].value(*[L.align(o, vs) for o in ops])
                val.append((np.asarray(v, dtype=np.float64), vs))
    return [_output(o, val, L, prog) for o in prog.outputs]


def _extremum(n, body, L):
    """The chain of pick n[3] over the loops n[2] (C order of their variables): its value or
    the flat index of the entry it picked (n[4]), entry by entry."""
    arr, own = body
    loops = [v for v, _ in n[2]]
    keep = tuple(v for v in own if v not in loops)
    full = L.align(body, tuple(sorted(set(own) | set(loops))))
    order = tuple(sorted(set(own) | set(loops)))
    nb = len(L.batch)
    moved = np.moveaxis(full, [nb + order.index(v) for v in loops], list(range(full.ndim - len(loops), full.ndim)))
    flat = moved.reshape(moved.shape[:full.ndim - len(loops)] + (-1,))
    acc, at = flat[..., 0], np.zeros(flat.shape[:-1])
    for j in range(1, flat.shape[-1]):
        e = flat[..., j]
        w = second_wins(n[3], acc, e)
        acc, at = np.where(w, e, acc), np.where(w, float(j), at)
    return (acc if n[4] == 0 else at), keep


def _output(o, val, L, prog):
    batch = L.batch
    if o.adds is not None:
        out = np.zeros(batch + (o.size,))
        for c, w, loops, index in o.adds:
            vs = tuple(sorted(v for v, _ in loops))
            idx, ivs = L.index(index, prog.data)
            idx = np.broadcast_to(_spread(idx, ivs, vs), tuple(L.ext[v] for v in vs)).reshape(-1)
            if o.stores:  # each entry one term's weight
                out[..., idx] = np.broadcast_to(L.align(val[w], vs), batch + tuple(L.ext[v] for v in vs)
                                                ).reshape(batch + (-1,))
                continue
            terms = (L.align(val[c], vs) * L.align(val[w], vs)).reshape(batch + (-1,))
            for b in np.ndindex(*batch):
                np.add.at(out[b], idx, terms[b])
        return out.reshape(batch + o.shape)
    if o.loops:
        vs = tuple(v for v, _ in o.loops)
        order = tuple(sorted(vs))
        parts = [np.moveaxis(L.align(val[r], order), [len(batch) + order.index(v) for v in vs],
                             list(range(len(batch), len(batch) + len(vs)))) for r in o.refs]
        return np.stack(parts, axis=-1).reshape(batch + o.shape)
    return np.stack([L.align(val[r], ()) for r in o.refs], axis=-1).reshape(batch + o.shape) if o.refs \
        else np.zeros(batch + o.shape)
