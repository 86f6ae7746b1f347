"""Calling a loaded kernel on numpy arrays: argument checks, gufunc broadcasting, results,
and the store policy of large batches. No sympy."""
from __future__ import annotations

import os
import sys
import threading
import time
import math
from math import prod

import numpy as np

from ..render.target import TARGETS
from ..structure import describe, flatten, nest

# Inputs that must be copied (broadcast, strided, misaligned) are copied this many bytes of
# points at a time, so a broadcast input never costs the memory of the whole batch.
CHUNK_BYTES = 1 << 20
SERIAL = 4  # batch mode bit: run on the calling thread alone
# How a kernel's time per point is measured when it is loaded (Plan._seconds_per_point).
PROBE_POINTS, PROBE_BYTES, PROBE_SECONDS, SLOW_SECONDS = 4096, 4 << 20, 20e-6, 1e-3


class _Fork:
    """After os.fork() the child's OpenMP runtime has no threads but thinks it has (it would
    wait for them forever): a forked child runs every kernel on its calling thread."""
    forked = False


def _after_fork_in_child():
    _Fork.forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Stores:
    """How a large batch writes its results: in tiles that leave as whole cache lines, with
    non-temporal stores (mode 1) or plain ones (mode 2), or block by block straight into the
    results (mode 0). Which is fastest depends on the CPU, on the kernel and on how busy the
    memory is (non-temporal stores skip reading each destination line but have a throughput
    of their own, on some CPUs lower than that of plain stores). So the first large calls try
    each mode TRIALS times, in turn (the first calls may pay one-off costs such as page
    faults); later calls take the mode with the lowest time per byte (the best of its last
    WINDOW calls) and every EXPLORE-th call re-times another. Calls writing memory never
    written before (``fresh``: results made by the call, which fault their pages in) keep
    timings apart from those writing the caller's ``out=``: a page fault costs more than any
    mode saves, and mixed in, fresh calls' timings set out= calls of rosen8's Hessian at 10^5
    points to the mode half as fast. The results are the same bytes in every mode. (Not
    locked: calls from several threads at once may blur the timings, which only ever changes
    the mode.)"""

    MODES, TRIALS, EXPLORE, WINDOW = (1, 2, 0), 2, 16, 4

    def __init__(self, force=None):
        # seconds per result byte of the last calls, and the number of calls, by freshness
        self.recent = {fresh: {m: [] for m in self.MODES} for fresh in (False, True)}
        self.calls = {False: 0, True: 0}
        self.used = {m: 0 for m in self.MODES}
        self.force = force

    def pick(self, fresh=False):
        if self.force is not None:
            return self.force
        self.calls[fresh] += 1
        calls, recent, k = self.calls[fresh], self.recent[fresh], len(self.MODES)
        if calls <= k * self.TRIALS:
            return self.MODES[(calls - 1) % k]
        ranked = sorted(self.MODES, key=lambda m: min(recent[m], default=0.0))  # untimed: try it
        if calls % self.EXPLORE == 0:
            return ranked[1 + (calls // self.EXPLORE) % (k - 1)]
        return ranked[0]

    def record(self, mode, seconds_per_byte, fresh=False):
        self.used[mode] += 1
        times = self.recent[fresh][mode]
        times.append(seconds_per_byte)
        del times[:-self.WINDOW]


class Plan:
    """A loaded kernel and the fixed facts needed to call it. ``skip``: sizes of the kernel's
    leading results that are not wanted (passed as NULL: computed, not stored). ``kernel``
    (library.Library.kernel) runs it; the calls it takes as they are, symgrad.Function makes
    in C (csrc/symgrad_call.c), and this class takes the others: conversions, broadcasting,
    strided and overlapping arrays, chunks, store modes, and every error message."""

    def __init__(self, name, args, shapes, dtype, structure, lib, options, skip=()):
        target = TARGETS["cpu", str(dtype)]
        self.name, self.args = name, args  # ((argument name, core shape), ...)
        self.stores = Stores() if lib.integer(target.entry(name, "streams")) else None
        self.stream_bytes = stream_bytes = options.stream_bytes
        self.dtype, self.itemsize = dtype, dtype.itemsize
        self.nargs, self.structure = len(args), structure
        self.shapes = [tuple(s) for s in shapes]
        self.sizes = [prod(s) for s in self.shapes]
        self.total = sum(self.sizes)
        one = lib.one_lane(target.entry(name, "one")) if options.one_point else 0
        self.one_point = bool(one)  # single points run the one-lane copy (Options.one_point)
        self.kernel = lib.kernel(target.entry(name, "call"), dtype, [core for _, core in args], self.shapes, skip,
                                 structure, stream_bytes if self.stores is not None else None, one)
        seconds = self._seconds_per_point()
        self.kernel.par_points = self.par_points = max(1, math.ceil(options.parallel_seconds / seconds))
        self.kernel.gil_points = math.ceil(options.hold_gil_seconds / seconds)
        self.kernel.chunk_bytes = CHUNK_BYTES  # shared arguments: repeated as the Python path copies them

    def _seconds_per_point(self):
        """The kernel's time per point on the calling thread, at zeros: after one untimed call
        of one point (the first call of a library binds its symbols and faults pages in: tens
        of microseconds, which made a 100 ns kernel look slow enough for threads), the best of
        two calls of 1, 8, 64, ... points, up to PROBE_POINTS (and PROBE_BYTES of arrays) or
        until a size takes PROBE_SECONDS (Python's share of a call fades as it grows). A
        kernel whose one point needs more than PROBE_BYTES, or whose first point takes
        SLOW_SECONDS, is not measured further: it is slow enough for threads and for
        releasing the GIL at any size."""
        per_point = self.itemsize * (sum(prod(core) for _, core in self.args) + self.total)
        cap = min(PROBE_POINTS, PROBE_BYTES // max(per_point, 1))
        if cap < 1:
            return math.inf
        ins = [np.zeros((cap,) + core, self.dtype) for _, core in self.args]
        outs = [np.empty((cap,) + s, self.dtype) for s in self.shapes]

        def seconds(n):
            t = time.perf_counter()
            self.kernel.run(n, SERIAL, [x[:n] for x in ins], [o[:n] for o in outs])
            return time.perf_counter() - t

        first = seconds(1)
        if first >= SLOW_SECONDS:
            return first
        n = 1
        while True:
            t = min(seconds(n), seconds(n))
            if t >= PROBE_SECONDS or n >= cap:
                return max(t / n, 1e-10)
            n = min(cap, n * 8)

    def __call__(self, args, out, what):
        if len(args) != self.nargs:
            names = ", ".join(name for name, _ in self.args)
            raise TypeError(f"{what} takes {self.nargs} argument(s) ({names}), got {len(args)}")
        arrays, batches = [], []
        for (name, core), x in zip(self.args, args):
            arr = real_array(x, name, self.dtype)
            if arr.ndim < len(core) or arr.shape[arr.ndim - len(core):] != core:
                raise ValueError(f"argument {name!r} must have trailing (core) shape {core}, "
                                 f"got an array of shape {arr.shape}")
            arrays.append(arr)
            batches.append(arr.shape[:arr.ndim - len(core)])
        try:
            batch = batches[0] if batches and batches.count(batches[0]) == len(batches) \
                else np.broadcast_shapes(*batches)
        except ValueError:
            raise ValueError("the batch dimensions of the arguments do not broadcast: "
                             + ", ".join(f"{name}: {b}" for (name, _), b in zip(self.args, batches))) from None
        n = prod(batch)
        ready = [b == batch and x.flags.c_contiguous and x.flags.aligned for x, b in zip(arrays, batches)]
        ins = [x if ok or b == batch else np.broadcast_to(x, batch + core)
               for x, ok, b, (_, core) in zip(arrays, ready, batches, self.args)]
        results = self._outputs(out, batch)
        # Write straight into a result only if it is C-contiguous, aligned and shares no memory
        # with an input (the kernel's pointers are restrict); otherwise through a scratch array.
        # Results made here are all three.
        work = results if out is None else [
            r if r.flags.c_contiguous and r.flags.aligned and r.flags.writeable
            and not any(np.may_share_memory(r, x) for x in ins) else np.empty(r.shape, r.dtype) for r in results]
        if n:
            # inputs to copy (broadcast, strided, misaligned) are copied a chunk of points at a
            # time, so that a broadcast input stays small; a batch of one chunk is copied whole
            per_point = sum(x.itemsize * prod(core) for x, ok, (_, core) in zip(ins, ready, self.args) if not ok)
            fresh = out is None or any(w is not r for w, r in zip(work, results))  # (scratch: np.empty)
            if n * per_point <= CHUNK_BYTES:
                self._run(n, [x if ok else x.copy() for x, ok in zip(ins, ready)], work, fresh)
            else:
                for idx in _chunks(batch, max(1, CHUNK_BYTES // per_point)):
                    outs = [w[idx] for w in work]
                    part = [x[idx] if ok else x[idx].copy() for x, ok in zip(ins, ready)]
                    self._run(outs[0].size // self.sizes[0], part, outs, fresh)
                    del part  # before the next chunk's copies are made
        for r, w in zip(results, work):
            if r is not w:
                r[...] = w
        if out is not None:
            return out
        return nest(self.structure, [r[()] if r.ndim == 0 else r for r in results])

    def _run(self, n, ins, outs, fresh):
        """One kernel call on n points of C-contiguous inputs and results (``fresh``: made by
        this call, see Stores)."""
        nbytes = n * self.total * self.itemsize
        serial = SERIAL if _Fork.forked or n < self.par_points else 0
        stores = self.stores if nbytes >= self.stream_bytes else None
        if stores is None:
            self.kernel.run(n, serial, ins, outs)
        else:
            mode = stores.pick(fresh)
            t = time.perf_counter()
            self.kernel.run(n, mode | serial, ins, outs)
            stores.record(mode, (time.perf_counter() - t) / nbytes, fresh)

    def _outputs(self, out, batch):
        shapes = [batch + s for s in self.shapes]
        if out is None:
            return [np.empty(s, self.dtype) for s in shapes]
        flat = flatten(self.structure, out)
        if flat is None or len(flat) != len(shapes):
            raise TypeError(f"out= must have the structure of the results ({describe(self.structure)})")
        for k, (o, s) in enumerate(zip(flat, shapes)):
            if not isinstance(o, np.ndarray):
                raise TypeError(f"out= must hold numpy arrays, got {type(o).__name__}")
            if masked(o):  # its mask would hide results written under it
                raise TypeError("out= must hold plain numpy arrays, got a masked array")
            if o.shape != s:
                raise ValueError(f"out= array has shape {o.shape}, expected {s}")
            if o.dtype != self.dtype:
                raise TypeError(f"out= array has dtype {o.dtype}, expected {self.dtype}")
            if not o.flags.writeable:
                raise ValueError("out= array is read-only")
            for j, other in enumerate(flat[:k]):
                if np.may_share_memory(o, other):
                    raise ValueError(f"out= arrays {j} and {k} overlap in memory: each result needs "
                                     "its own array")
        return flat


_DATA = {}  # library key -> the data arrays its loops read, and the pointer table given to it
_DATA_LOCK = threading.Lock()


def bind_data(lib, key, name, data):
    """Give a loaded kernel with loops the addresses of its data arrays (read-only copies made
    at trace time, equal in content for every Function of this key), once per process."""
    with _DATA_LOCK:
        if key in _DATA:
            return
        lib.set_data(TARGETS["cpu", "float64"].entry(name, "data"), data)
        _DATA[key] = data


def masked(x):
    """Whether ``x`` is a numpy masked array, whose hidden entries a kernel would compute as if
    valid (numpy.ma not imported, none is: np.ma would import it, 15 ms of a first call)."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(x, ma.MaskedArray)


def real_array(x, name, dtype):
    if masked(x):
        raise TypeError(f"argument {name!r} is a masked array; pass plain values (e.g. x.filled(np.nan))")
    arr = np.asarray(float(x) if type(x) is int else x)  # a Python int as C converts it (10**50 too)
    if arr.dtype.kind == "c":
        raise TypeError(f"argument {name!r} is complex; symgrad functions take real numbers")
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"argument {name!r} must be real numbers (a float/int array or scalar), "
                        f"got {type(x).__name__} of dtype {arr.dtype}")
    return arr.astype(dtype, copy=False)


def _chunks(batch, points):
    """Index tuples that cover a C-ordered batch in order, each a block of at most about
    ``points`` points that is contiguous in every C-contiguous array of that batch shape."""
    if not batch:
        yield (Ellipsis,)  # the one point: a view (x[()] of a 0-d array would be a copy)
        return
    k = 0
    while k < len(batch) - 1 and prod(batch[k + 1:]) > points:
        k += 1
    step = max(1, points // max(prod(batch[k + 1:]), 1))
    for outer in np.ndindex(*batch[:k]):
        for lo in range(0, batch[k], step):
            yield outer + (slice(lo, min(lo + step, batch[k])),)


class BatchLast:
    """A Function called with batch dimensions last: each array argument's core dimensions
    come first and its batch dimensions after them, and so do the results' (scipy's
    ``vectorized=True`` convention: ``y`` of shape (n, k) for k points). Arrays are moved to
    the Function's batch-first layout and back (a copy of each result)."""

    def __init__(self, function):
        self.function = function
        self._results = None  # core ranks of the results, known once the kernel is loaded

    def __call__(self, *args):
        f = self.function
        if len(args) != len(f.args):
            raise TypeError(f"{f.py_name} ({f.kind}, batch last) takes {len(f.args)} argument(s), got {len(args)}")
        moved = list(args)
        for k, ((_, core), x) in enumerate(zip(f.args, args)):
            c = len(core)
            if c and not masked(x):  # (a masked array: refused by name by the call below)
                x = np.asarray(x)
                if x.ndim > c:
                    moved[k] = np.moveaxis(x, range(c), range(x.ndim - c, x.ndim))
        res = f(*moved)
        if self._results is None:
            self._results = [len(s) for s in f.plan.shapes]
        flat = flatten(f.structure, res)
        for k, (r, c) in enumerate(zip(flat, self._results)):
            if c and r.ndim > c:
                flat[k] = np.ascontiguousarray(np.moveaxis(r, range(r.ndim - c, r.ndim), range(c)))
        return nest(f.structure, flat)

    def __repr__(self):
        return f"<batch-last view of {self.function!r}>"
