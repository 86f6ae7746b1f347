"""Max and min of arrays kept as loops (lazy.py): ``np.max``/``amax``/``min``/``amin``,
``.max()``/``.min()``, ``np.maximum.reduce``/``minimum.reduce`` and ``nanmax``/``nanmin``
(fmax/fmin).

Traced element by element, numpy reduces an object array one axis at a time from the last,
each axis a chain pick(pick(e0, e1), e2)... of the pick op (ir/ops/selects.py: the first
operand at a tie). A reduction over fewer than loop_min entries builds that same chain per
entry of the result (the same nodes: values and derivatives as traced unrolled); a larger
one is one ``("extremum", body, loops, pick, 0)`` node over the reduced axes in C order,
which picks the same entry (each pick returns an operand, and the axis by axis chain picks
the first extremum in C order, the last NaN for maximum/minimum, the first extremum of the
non-NaN entries for fmax/fmin, as one chain over all of them does)."""
from __future__ import annotations

import math

import numpy as np

from . import registry, sumorder
from .lazy import LazyArray, Unrollable, const, var, wrap
from .lazy_index import normal_axes
from .values import Condition, Value, builder, user_site

INDEX_MAX = 1 << 24  # entries an extremum's index (a float in a float32 kernel) tells apart


def reduce_extremum(ufunc, a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """``ufunc.reduce`` (np.maximum, minimum, fmax, fmin) of ``a`` over ``axis`` (None: all)."""
    name = ufunc.__name__
    keepdims = keepdims is not np._NoValue and bool(keepdims)
    if out is not None or where not in (True, np._NoValue) or initial is not np._NoValue:
        raise Unrollable(f"numpy.{name}.reduce(..., out=/where=/initial=) of a large array at {user_site()}")
    b = builder() or getattr(a, "b", None)
    x = wrap(b, a)
    if not isinstance(x, LazyArray):
        return x
    if x.parts:
        raise Unrollable(f"a max or min of arrays joined along an axis at {user_site()}")
    axes = normal_axes(axis, x.ndim)
    if any(x.shape[k] == 0 for k in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    keep = [k for k in range(x.ndim) if k not in axes]
    count = math.prod(x.shape[k] for k in axes)
    looped = count >= b.loop_min
    if looped and count >= INDEX_MAX:
        raise Unrollable(f"a max or min over {count} entries (more than a float index tells apart) at {user_site()}")
    element = registry.element_of(ufunc)
    chain = np.frompyfunc(element, 2, 1)  # numpy's reduce of an object array: in sequence

    def total(outer):
        src = [const(0)] * x.ndim
        for k, i in zip(keep, outer):
            src[k] = i
        if not looped:
            entries = np.empty([x.shape[k] for k in axes], dtype=object)
            for flat in np.ndindex(*entries.shape):
                for k, c in zip(axes, flat):
                    src[k] = const(c)
                entries[flat] = x.at(tuple(src))
            for k in reversed(range(entries.ndim)):  # the last axis first, as numpy's
                entries = chain.reduce(entries, axis=k)
            return entries[()] if isinstance(entries, np.ndarray) else entries
        if any(i[1] for i in outer):
            raise Unrollable(f"a max or min over a large axis inside another loop at {user_site()}")
        vs = [(b.new_var(), x.shape[k]) for k in axes]
        for k, (v, _) in zip(axes, vs):
            src[k] = var(v)
        body = x.at(tuple(src))
        if isinstance(body, Condition):
            raise Unrollable(f"a max or min of a large array of bools at {user_site()}")
        if not isinstance(body, Value):  # a number at every entry
            return body
        return Value(b, b.node("extremum", body.i, tuple(vs), name, 0))
    if not keep and not keepdims:
        return total(())
    shape = [x.shape[k] for k in keep]
    strides = sumorder.allocate(x.shape, [x.strides], set(axes))  # numpy's result: in the input's order
    lazy = LazyArray(b, shape, total, strides=[strides[k] for k in keep])
    if not keepdims:
        return lazy if shape else total(())
    full = [1 if k in axes else n for k, n in enumerate(x.shape)]
    kept = [0] * x.ndim
    for k, s in zip(keep, lazy.strides):
        kept[k] = s
    return LazyArray(b, full, lambda idx: lazy.at(tuple(idx[k] for k in keep)), strides=kept)


def _function(ufunc):
    def f(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
        return reduce_extremum(ufunc, a, axis, out, keepdims, initial, where)
    return f


registry.LAZY.update({f: registry.like(f, _function(u)) for f, u in (
    (np.max, np.maximum), (np.amax, np.maximum), (np.min, np.minimum), (np.amin, np.minimum),
    (np.nanmax, np.fmax), (np.nanmin, np.fmin))})
registry.HOOKS.lazy_extremum = reduce_extremum
