"""The order in which numpy adds the entries of a float64 ``add.reduce`` (``np.sum``,
``np.mean``, ``.sum()``, ``np.add.reduce``), so that traced sums round as numpy's do.

numpy's reduction iterates the input in memory order: its nditer sorts the axes by stride
(npyiter_find_best_axis_ordering: a stable insertion sort on absolute strides, an axis of
length 1 says nothing; strides are not negated for reductions) and joins neighbouring axes
that are contiguous in the input and in the result (npyiter_coalesce_axes: reduced axes
with reduced ones, kept with kept). The inner loop runs along the innermost joined axis:
where that axis is reduced, each call adds the pairwise sum of its entries to the result
(``DOUBLE_pairwise_sum``, numpy/_core/src/umath/loops_utils.h.src), else it adds entry by
entry. The result starts at add's identity 0.0, so a sum is never -0.0. Checked bit for
bit against numpy on random layouts (tests/tracing/test_sum_order.py).

A reduction is described by ``(order, inner)``: the reduced axes in the order numpy visits
them (outermost first), the entries of the last ``inner`` of them forming each pairwise run
(``inner`` 0: runs of one entry), the runs added in sequence. Python's builtin ``sum``,
``np.cumsum`` and object arrays add in sequence (not here); ``np.dot``, ``@``, ``einsum`` and
``linalg.norm`` are BLAS's or numpy's own SIMD order, which is not modelled."""
from __future__ import annotations

import math

import numpy as np

BLOCK = 128  # PW_BLOCKSIZE: runs up to this length are summed by 8 accumulators


def axis_order(shape, operands):
    """The axes (extent 1 left out) in the order numpy's nditer visits them, innermost first,
    for operands of these strides (npyiter_find_best_axis_ordering: a stable insertion sort
    by absolute stride, a stride 0 saying nothing, C order winning a conflict)."""
    perm = [k for k in reversed(range(len(shape))) if shape[k] != 1]
    for i0 in range(1, len(perm)):
        a, pos = perm[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            ambiguous, swap = True, False
            for st in operands:
                s0, s1 = st[a], st[perm[i1]]
                if s0 != 0 and s1 != 0:
                    swap = abs(s1) > abs(s0) and (swap or ambiguous)
                    ambiguous = False
            if not ambiguous:
                if not swap:
                    break
                pos = i1
        perm.insert(pos, perm.pop(i0))
    return perm


def allocate(shape, operands, skip=()):
    """The strides (bytes of float64s) of the array numpy allocates for a ufunc's result of
    ``shape`` from operands of these strides (each broadcast to ``shape``): in the operands'
    memory order (K); the axes ``skip`` (a reduction's) left out."""
    strides, s = [0] * len(shape), 8
    for k in axis_order(shape, operands):
        if k not in skip:
            strides[k] = s
            s *= shape[k]
    return tuple(strides)


def reduction(shape, strides, axes, bufsize=8192):
    """``(order, block, run)`` of numpy's float64 add.reduce over ``axes`` of an array of
    this ``shape`` and ``strides`` (bytes): the reduced axes (extent 1 left out) in the order
    numpy visits them, outermost first; their entries, in that order, cut into blocks of
    ``block`` and each block into runs of ``run`` (the last one shorter), each run summed
    pairwise and the runs added in sequence. ``bufsize``: np.getbufsize()."""
    axes = set(axes)
    perm = axis_order(shape, [strides])  # (the result has no strides yet)
    out = allocate(shape, [strides], axes)  # the result: kept axes contiguous in this order
    dims = []  # npyiter_coalesce_axes: [extent, result stride, input stride], innermost first
    for k in perm:
        if dims and dims[-1][1] * dims[-1][0] == out[k] and dims[-1][2] * dims[-1][0] == strides[k]:
            d = dims[-1]
            dims[-1] = [d[0] * shape[k], d[1] or out[k], d[2] or strides[k]]
        else:
            dims.append([shape[k], out[k], strides[k]])
    order = [k for k in reversed(perm) if k in axes]
    if not dims or dims[0][1] != 0:  # the inner loop runs along a kept axis: entry by entry
        return order, 1, 1
    # npyiter_find_buffering_setup (GROWINNER, no cast): where the inner loop ends
    cost, single, outer = 1, [1, 1], 0  # single: dims each operand (result, input) runs in one stride
    size = dims[0][0]
    best_dim, best_cost, best_size, best_core = 0, 1, size, 1
    for idim in range(1, len(dims)):
        if outer or (size >= bufsize and cost > 1):
            break
        prev, cur = dims[idim - 1], dims[idim]
        for op in (0, 1):
            if single[op] == idim:
                if prev[op + 1] * prev[0] == cur[op + 1]:
                    single[op] += 1
                    continue
                cost += 1
            if op == 0 and (cur[1] == 0 or prev[1] == 0):
                outer = idim  # the result's stride turns from 0 to not: the outer reduce dimension
        core, size = size, size * cur[0]
        if size == 0:
            break
        buf = min(size, bufsize) if cost > 1 else size
        if cost * best_size <= best_cost * buf:
            best_cost, best_core, best_size, best_dim = cost, core, size, idim
    if outer and best_dim == outer:  # reduce mode: each inner loop sums one core
        return order, best_core, best_core
    block = math.prod(d[0] for d in dims[:best_dim + 1])
    if single[1] <= best_dim and bufsize < best_size:  # the input is copied, in chunks of whole cores
        best_size = best_core * (bufsize // best_core)
    return order, block, min(best_size, block)


def pairwise(terms, add):
    """numpy's pairwise sum of ``terms`` (at least one), without its start 0.0: fewer than 8
    in sequence; up to BLOCK in 8 accumulators over strides of 8, joined
    ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the rest in sequence; more: halves (the first
    a multiple of 8 long), each summed so, added."""
    n = len(terms)
    if n < 8:
        s = terms[0]
        for t in terms[1:]:
            s = add(s, t)
        return s
    if n <= BLOCK:
        r = list(terms[:8])
        full = n - n % 8
        for i in range(8, full, 8):
            for k in range(8):
                r[k] = add(r[k], terms[i + k])
        s = add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])))
        for t in terms[full:]:
            s = add(s, t)
        return s
    n2 = n // 2
    n2 -= n2 % 8
    return add(pairwise(terms[:n2], add), pairwise(terms[n2:], add))


def numpy_sum(runs, add, start=0.0):
    """The sum of ``runs`` (lists of terms, in numpy's order) as add.reduce computes it from
    ``start``: each run pairwise, added to the total in sequence. A sum of one term from 0.0
    is 0.0 + term, as numpy's (+0.0 for -0.0); its derivative sees through the 0.0
    (transforms/derive.py: x - mean(x) over one entry has the structural partial 0)."""
    total = None
    for run in runs:
        if not run:
            continue
        if total is None:  # numpy: start + pairwise(run), whose own start is 0.0 below 8 terms
            total = start
            if len(run) < 8:
                for t in run:
                    total = add(total, t)
                continue
        total = add(total, pairwise(run, add))
    return start if total is None else total


def leaves(n):
    """The lengths of the blocks (at most BLOCK entries) that numpy's pairwise sum of n
    entries splits into, in order."""
    if n <= BLOCK:
        return [n]
    n2 = n // 2
    n2 -= n2 % 8
    return leaves(n2) + leaves(n - n2)


def runs(flat, block, run):
    """The runs of entries ``flat`` (in numpy's order) cut into blocks and runs."""
    return [flat[b + r:b + min(r + run, block)] for b in range(0, len(flat), block) for r in range(0, block, run)]


def reduce_entries(arr, axes, op, pairwise_runs=True, start=0.0):
    """numpy's float64 ``add.reduce`` (``pairwise_runs``; else a reduction in sequence such as
    ``multiply.reduce``, from ``start`` or else its first entry) over ``axes`` of the object array ``arr``, its
    layout that of the float64 array it stands for; ``op`` adds (multiplies) two entries.
    A full reduction gives the entry, else an object array."""
    order, block, run = reduction(arr.shape, arr.strides, axes, np.getbufsize())
    kept = [k for k in range(arr.ndim) if k not in axes]
    ones = [k for k in axes if k not in order]  # reduced axes of length 1
    flat = arr.transpose(kept + ones + order).reshape([arr.shape[k] for k in kept] +
                                                       [math.prod(arr.shape[k] for k in axes)])
    out = np.empty(flat.shape[:-1], dtype=object)
    for idx in np.ndindex(*out.shape):
        entries = list(flat[idx])
        if pairwise_runs:
            out[idx] = numpy_sum(runs(entries, block, run), op, start)
        else:
            total = entries[0] if start is None else op(start, entries[0])
            for e in entries[1:]:
                total = op(total, e)
            out[idx] = total
    return out[()] if out.ndim == 0 else out


def constant_sum(c, n, block, run):
    """numpy's sum of ``n`` entries all ``c`` (a float), cut into runs as reduction() says."""
    if not isinstance(c, float):
        return c * n  # (integers: exact)
    memo = {}

    def pw(m):  # the pairwise sum of m copies of c
        s = memo.get(m)
        if s is None:
            if m <= BLOCK:
                s = r = c
                for _ in range(m // 8 - 1 if m >= 8 else m - 1):
                    r = s = r + c
                if m >= 8:
                    s = ((r + r) + (r + r)) + ((r + r) + (r + r))
                    for _ in range(m % 8):
                        s += c
            else:
                m2 = m // 2
                m2 -= m2 % 8
                s = pw(m2) + pw(m - m2)
            memo[m] = s
        return s
    full, rest = divmod(block, run)
    total = 0.0
    for _ in range(n // block):
        for m in [run] * full + ([rest] if rest else []):
            total += pw(m)
    return total


def c_strides(shape):
    """The strides (bytes of float64s) of a new C-ordered array of ``shape``."""
    strides, s = [], 8
    for n in reversed(shape):
        strides.insert(0, s)
        s *= max(n, 1)
    return tuple(strides)
