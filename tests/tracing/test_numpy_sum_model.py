"""tracing/sumorder.py's model of numpy's float64 add.reduce, against numpy itself on random
layouts (transposes, slices, negative and zero strides, the buffer numpy copies a strided
array through), and the layout numpy gives the arrays a ufunc or a reduction makes."""
from __future__ import annotations

import operator

import numpy as np
import pytest

from symgrad.tracing import sumorder


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _view(rng, shape, objects=False):
    """An array of ``shape`` laid out at random: axes permuted in memory, every other entry,
    reversed, or broadcast along its first axis (with ``objects``: and the same view of an
    object array of the same numbers, as traced code holds them)."""
    p = rng.permutation(len(shape)) if rng.random() < 0.5 else np.arange(len(shape))
    step = 2 if rng.random() < 0.3 else 1
    big = [shape[k] * step for k in p]
    views = [rng.standard_normal(big) * np.exp(rng.uniform(-25, 25, big))]
    views.append(views[0].astype(object))
    flip = tuple(slice(None, None, int(rng.choice([1, -1]))) for _ in shape) if rng.random() < 0.3 else None
    wide = rng.random() < 0.1 and len(shape) > 1
    for k, a in enumerate(views):
        a = a.transpose(np.argsort(p))[tuple(slice(None, None, step) for _ in shape)]
        a = a[flip] if flip else a
        views[k] = np.broadcast_to(a[:1], a.shape) if wide else a
    return views if objects else views[0]


def _modelled(a, axes):
    return sumorder.reduce_entries(a, set(axes), operator.add)


@pytest.mark.parametrize("bufsize", [8192, 1024])
def test_the_model_adds_as_numpy_on_random_layouts(bufsize):
    rng = np.random.default_rng(bufsize)
    old = np.getbufsize()
    np.setbufsize(bufsize)
    try:
        for _ in range(300):
            shape = tuple(int(rng.choice([1, 2, 3, 5, 8, 9, 17, 40, 130, 700])) for _ in range(rng.integers(1, 4)))
            if np.prod(shape) > 20000:
                continue
            a, o = _view(rng, shape, objects=True)
            axes = tuple(sorted(set(rng.integers(0, a.ndim, rng.integers(1, a.ndim + 1)).tolist())))
            for ax in (axes, tuple(range(a.ndim))):
                assert np.array_equal(_bits(np.asarray(_modelled(o, ax), dtype=float)),
                                      _bits(np.add.reduce(a, axis=ax))), (a.shape, a.strides, ax)
    finally:
        np.setbufsize(old)


def test_long_runs_are_one_pairwise_sum_and_a_sum_starts_at_zero():
    rng = np.random.default_rng(7)
    for n in (2, 7, 8, 9, 127, 128, 129, 1000, 8191, 8193, 100_000):
        a = rng.standard_normal(n) * np.exp(rng.uniform(-25, 25, n))
        assert _bits(_modelled(a.astype(object), (0,))) == _bits(np.sum(a))
    assert _bits(_modelled(np.full(9, -0.0).astype(object), (0,))) == _bits(0.0)  # numpy's sum of -0.0s is 0.0
    assert _bits(_modelled(np.array([-0.0], dtype=object), (0,))) == _bits(np.sum([-0.0]))  # one entry: 0.0 + it


def test_a_constant_summed_as_numpy_sums_it():
    for c, shape, axes in ((0.1, (1000,), (0,)), (1 / 3, (3, 70000), (0, 1)), (0.7, (5000, 3), (0,)),
                           (0.1, (700, 9), (1,))):
        a = np.full(shape, c)
        order, block, run = sumorder.reduction(a.shape, a.strides, axes, np.getbufsize())
        want = np.add.reduce(a, axis=axes).flat[0]
        assert _bits(sumorder.constant_sum(c, int(np.prod([shape[k] for k in axes])), block, run)) == _bits(want)


def test_new_arrays_are_laid_out_as_numpy_lays_them_out():
    rng = np.random.default_rng(3)
    for _ in range(500):
        shape = tuple(int(rng.choice([1, 2, 3, 4, 7])) for _ in range(rng.integers(1, 4)))
        a, b = _view(rng, shape), _view(rng, shape[int(rng.integers(0, len(shape))):])
        r = np.add(a, b)
        lead = r.ndim - b.ndim
        ops = [a.strides, [0 if k < lead or b.shape[k - lead] == 1 else b.strides[k - lead] for k in range(r.ndim)]]
        mine = sumorder.allocate(r.shape, [[0 if n == 1 else s for n, s in zip(a.shape, a.strides)], ops[1]])
        assert all(n == 1 or s == m for n, s, m in zip(r.shape, r.strides, mine)), (a.strides, b.strides)
        axes = tuple(sorted(set(rng.integers(0, a.ndim, rng.integers(1, a.ndim + 1)).tolist())))
        s = np.add.reduce(a, axis=axes)
        mine = sumorder.allocate(a.shape, [a.strides], set(axes))
        assert all(n == 1 or st == mine[k] for n, st, k in zip(s.shape, s.strides, [k for k in range(a.ndim)
                                                                                  if k not in axes]))
