"""Where a Function's program comes from: a Python function traced once (bound to an
instance for a method, with defaulted parameters for a call that passes them), or a program
given as it is; and ``stage``, the timing of slow pipeline stages."""
from __future__ import annotations

import gc
import os
import threading
import time
import weakref
from contextlib import contextmanager, nullcontext

from .. import forksafe
from . import ticker


def progress():
    """The logger of slow compile stages, at WARNING level: without logging set up, Python
    prints them on stderr. Silence: SYMGRAD_QUIET=1, or
    logging.getLogger("symgrad.progress").setLevel(logging.ERROR). Got at first use: logging's
    import is a fiftieth of a small kernel's first call, which never reports."""
    import logging
    return logging.getLogger("symgrad.progress")


_QUIET = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False,
          "": False}


def quiet(value):
    """Whether SYMGRAD_QUIET=``value`` (None: unset) silences the progress lines; a value it
    does not take warns and leaves them on."""
    word = (value or "").strip().lower()
    if word not in _QUIET:
        import warnings
        warnings.warn(f"SYMGRAD_QUIET={value!r} is not one of 0/1, false/true, no/yes, off/on (any case; unset or "
                      "empty: 0): the progress lines stay on", RuntimeWarning, stacklevel=2)
    return _QUIET.get(word, False)


PROGRESS_SECONDS = None if quiet(os.environ.get("SYMGRAD_QUIET")) else 2.0


# Set to a list, it gets (function, stage, expected seconds or None, seconds taken) of every
# stage, the estimate made even where the lines are silenced (examples/progress_estimates.py).
RECORDS = None


@contextmanager
def stage(function, what, detail=lambda: "", expect=None):
    """Time one pipeline stage; report it if it was slow, and at its start too if ``expect``
    (a callable: (operations, estimated seconds[, a note])) says it will be. While it runs, a
    line every ticker.PERIOD seconds says it still does. The stages of symgrad's own Python
    work (PAUSES_GC) run with the cyclic garbage collector paused (paused_gc)."""
    talk, records, seconds = PROGRESS_SECONDS is not None, RECORDS, None
    if expect is not None and (talk or records is not None):
        ops, seconds, *note = expect()
        if talk and seconds >= PROGRESS_SECONDS:
            progress().warning("symgrad: %s: %s of about %d operations, expected about %s%s", function, what,
                               ops, _seconds(seconds), "".join(f"; {n}" for n in note if n))
    expected = "" if seconds is None else f", expected about {_seconds(seconds)}"

    def say(elapsed):
        progress().warning("symgrad: %s: %s still running after %.0f s%s", function, what, elapsed, expected)
    t = time.perf_counter()
    with paused_gc() if what in PAUSES_GC else nullcontext(), ticker.every(say) if talk else nullcontext():
        yield
    dt = time.perf_counter() - t
    if talk and dt >= PROGRESS_SECONDS:
        progress().warning("symgrad: %s: %s took %.1f s%s", function, what, dt, detail())
    if records is not None:
        records.append((function, what, seconds, dt))


def _seconds(s):
    return f"{s:.1f} s" if s < 9.95 else f"{s:.0f} s"


# The stages that run only symgrad's code, allocating much and briefly: not the trace (the
# user's function runs there) nor the C compile (it waits for gcc).
PAUSES_GC = frozenset({"differentiate", "optimize", "generate C", "sparsity pattern"})


_gc_lock, _gc_depth, _gc_was = threading.Lock(), [0], [False]


@contextmanager
def paused_gc():
    """No cyclic garbage collection while the stages run: they build hundreds of thousands of
    tuples and dicts, which made the collector's passes a quarter of their time (lj40's
    generate C: 0.38 s, 0.29 s paused); what they drop is freed by reference counting, and
    the collector takes up where it was once the last paused stage of any thread ends (a user
    who turned it off before keeps it off; a process forked meanwhile gets it back at once).
    The switch is the interpreter's: another thread's code runs without the collector while a
    stage runs, and finds it on again after, even where that thread turned it off meanwhile."""
    with _gc_lock:
        if _gc_depth[0] == 0:
            _gc_was[0] = gc.isenabled()
            gc.disable()
        _gc_depth[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            if _gc_depth[0]:  # 0: a forked child, which resumed already
                _gc_depth[0] -= 1
                if _gc_depth[0] == 0 and _gc_was[0]:
                    gc.enable()


def _gc_after_fork_in_child():
    """The child has none of the threads whose stages paused the collector: it resumes."""
    global _gc_lock
    _gc_lock = threading.Lock()
    if _gc_depth[0]:
        _gc_depth[0] = 0
        if _gc_was[0]:
            gc.enable()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_gc_after_fork_in_child)


class Source:
    """What a Function and its derivatives are made from: a Python function, traced once
    when first needed, or a program given as it is (from_sympy, a pickle). A method's
    Source (``method=True``) is traced only once bound to an instance (``bind``); a call
    that passes defaulted parameters uses a variant traced with them (``variant``)."""

    def __init__(self, fn=None, shapes=None, program=None, *, method=False, instance=None, spec=(),
                 consts=None, loop_min=0, dtype="float64"):
        self.fn, self.shapes, self._program = fn, shapes, program
        self.loop_min, self._unrolled = loop_min, None
        self.dtype = dtype  # the kernel's (np.nan_to_num's largest number depends on it)
        self.method, self.spec, self.consts = method, spec, consts or {}
        params = _parameters(fn)
        self.takes_out = "out" in params  # then `out=` is f's, not results
        self.takes_sparse = "sparse" in params  # then `sparse=` is f's, not the sparse form's
        self.instance = None if instance is None else _Instance(instance)
        self._lock = forksafe.RLock()
        self._variants = {}
        self._derived = {}  # (derivative steps, inline limit) -> SymProgram, see derived()
        self._pipelines = {}  # (name, steps, dtype, options) -> memo.Pipeline, see pipeline()

    @property
    def prefix(self):
        return () if self.instance is None else (self.instance.get(),)

    def program(self, name):
        with self._lock:
            if self._program is None:
                if self.method:
                    raise TypeError(f"{name} is a method: call it on an instance, obj.{name}(...) (it is "
                                    "traced with that instance as self)")
                from ..tracing import trace
                with stage(name, "trace"):
                    self._program = trace(self.fn, self.shapes, self.prefix, self.spec, self.consts,
                                          self.loop_min, self.dtype)
                if self.instance is not None:
                    self.instance.traced()
            return self._program

    def unrolled(self, name, what, why="its arrays stayed loops, which this derivative is not taken of"):
        """This Source traced with every array element by element, for what loops do not give
        (``why``: a derivative, loops.supports, or standalone source); the first time, a
        warning names ``what`` (the Function) and ``why``."""
        with self._lock:
            if self._unrolled is None:
                if self.fn is None:
                    from ..errors import CompileError
                    raise CompileError(f"{name}: {why}; that needs the Python function traced again element by "
                                       "element, which a Function made from a program (a pickle, from_sympy) does "
                                       "not have: use the function itself, or pickle a Function compiled with "
                                       "options=symgrad.Options(loop_min_size=0)")
                self._check_data(name)
                progress().warning("symgrad: %s: %s: the function is traced again element by element (compile time "
                                 "grows with the arrays' sizes)", what, why)
                inst = None if self.instance is None else self.prefix[0]
                self._unrolled = Source(self.fn, self.shapes, spec=self.spec, consts=self.consts, instance=inst,
                                        dtype=self.dtype)
            return self._unrolled

    def _check_data(self, name):
        """Refuse a second trace of a function whose closed-over arrays changed since the first:
        its derivatives would mix the old data and the new."""
        prog = self.program(name)
        import numpy as np
        for copy, original in zip(prog.data, getattr(prog, "originals", ())):
            if np.shape(original) != copy.shape or not np.array_equal(np.asarray(original, dtype=copy.dtype), copy,
                                                                        equal_nan=copy.dtype.kind == "f"):
                from ..errors import CompileError
                raise CompileError(f"{name}: an array it reads (shape {copy.shape}) changed after it was traced; "
                                   "this derivative needs it traced again, which would mix the old values and the "
                                   "new: compile the function again (symgrad.compile) after changing its data")

    def derived(self, key, compute):
        """The value-and-gradient program ``key`` (the steps) of this Source, kept for this
        Source's life: F.grad, F.value_and_grad and F.hvp build on one (two threads
        asking at once may both compute it; the first one kept is the one every caller gets)."""
        with self._lock:
            prog = self._derived.get(key)
        if prog is None:
            prog = compute()  # outside the lock: other derivatives of this Source go on meanwhile
            with self._lock:
                prog = self._derived.setdefault(key, prog)
        return prog

    def pipeline(self, key, make):
        """The memo.Pipeline ``key`` of this Source (made by ``make()`` once): every Function of
        one program asks the same."""
        with self._lock:
            p = self._pipelines.get(key)
            if p is None:
                p = self._pipelines[key] = make()
            return p

    def bind(self, obj, on_traced=None):
        """This method's Source bound to ``obj``; ``on_traced()`` runs once its trace is made."""
        src = Source(self.fn, self.shapes, instance=obj, loop_min=self.loop_min, dtype=self.dtype)
        src.instance.on_traced = on_traced
        return src

    def variant(self, spec, consts):
        """This Source traced with the defaulted parameters of ``spec`` (signature.bind)."""
        with self._lock:
            v = self._variants.get(spec)
            if v is None:
                v = self._variants[spec] = Source(self.fn, self.shapes, spec=spec, consts=consts,
                                                  loop_min=self.loop_min, dtype=self.dtype,
                                                  instance=None if self.instance is None else self.prefix[0])
            return v


def _parameters(fn):
    """The parameter names of ``fn`` (none where it has no signature, or no function)."""
    if fn is None:
        return ()
    import inspect
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ()


class _Instance:
    """A bound method's instance: held strongly until the trace has read it (a temporary,
    ``Model().f(x)``, must live until then), weakly afterwards (a Function cached per
    instance must not keep it alive)."""

    def __init__(self, obj):
        self.strong, self.weak, self.on_traced = obj, weakref.ref(obj), None

    def get(self):
        obj = self.strong if self.strong is not None else self.weak()
        if obj is None:
            raise ReferenceError("the instance this method Function was bound to no longer exists")
        return obj

    def traced(self):
        self.strong = None
        done, self.on_traced = self.on_traced, None
        if done is not None:
            done()


class PerObject:
    """Values made once per live object, keyed by identity (objects need not be hashable) and
    dropped when the object dies. A value is held weakly until ``keep`` (a bound method's
    Function holds its instance until traced: held strongly here before that, an instance
    whose Function is only read, or fails to trace, could never be freed)."""

    def __init__(self):
        self._items, self._lock = {}, forksafe.RLock()

    def get(self, obj, make):
        k = id(obj)
        with self._lock:
            hit = self._items.get(k)
            if hit is not None and hit[0]() is obj:
                value = hit[1]() if hit[2] else hit[1]
                if value is not None:
                    return value
            value = make()
            ref = weakref.ref(obj, lambda _, k=k, items=self._items: items.pop(k, None))
            self._items[k] = (ref, weakref.ref(value), True)
            return value

    def keep(self, ref, value):
        """Hold ``value`` strongly from now on, as long as the object of weakref ``ref`` lives."""
        with self._lock:
            obj = ref()
            hit = self._items.get(id(obj))
            if obj is not None and hit is not None and hit[0]() is obj:
                self._items[id(obj)] = (hit[0], value, False)
