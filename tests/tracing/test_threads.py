"""A trace is invisible to other threads (DESIGN: "tracing is invisible"): what traced code
writes into globals, module attributes, attributes of objects it did not create and closure
cells is seen by the tracing thread only, and only while the trace runs; plain numbers it
writes go through as Python writes them; a traced value put into a container that exists
outside the trace is refused."""
import copy
import dataclasses
import functools
import math
import sys
import threading
import types

import numpy as np
import pytest

import symgrad

SCALE = 2.0
TOTAL = 0  # Acc.bump's calls, both threads
COUNT = 0  # count()'s calls, both threads
TRACED = {"bump": 0, "count": 0}  # those made by traces
LAST = 0.0
MOD = types.ModuleType("symgrad_test_threads_mod")
MOD.value = 7.0


class Acc:
    shared = -1.0

    def __init__(self):
        self.last, self.note = 0.0, "n"

    def bump(self, x):
        global TOTAL
        TOTAL += 1
        if not isinstance(x, float):
            TRACED["bump"] += 1
        self.last = x
        return SCALE * math.sin(x)


def count(x):
    global COUNT, LAST
    COUNT += 1
    if not isinstance(x, float):
        TRACED["count"] += 1
    LAST = x
    return x * x


def _closure():
    seen = 0.0

    def keep(x):
        nonlocal seen
        seen = x
        return seen + 1.0

    def read():
        return seen
    return keep, read


keep, read_seen = _closure()
acc = Acc()
done = [0]


def setmod(x):
    MOD.value = x * 3.0
    return MOD.value


def handshake():
    """In a trace, after its stores: wait until the worker has run twice more."""
    want = done[0] + 2
    for _ in range(3000):
        if done[0] >= want:
            break
        threading.Event().wait(0.001)


def f1(x):
    return acc.bump(x) * 3.0 + count(x)


def f2(x):
    return math.sin(x) * keep(x)


def f3(x):
    setmod(x)
    handshake()
    return MOD.value * acc.bump(x)


def f4(x):
    acc.bump(x)
    count(x)
    keep(x)
    handshake()
    return acc.last * LAST * read_seen() + math.cos(x)


def f5(x):
    Acc.shared = x * x
    acc.note = x
    handshake()
    return Acc.shared + acc.note * count(x)


def f6(x):
    return sum(acc.bump(x * k) for k in range(1, 4)) + count(x) * math.exp(x)


GRADS = [(f1, lambda x: 6 * math.cos(x) + 2 * x),
         (f2, lambda x: math.cos(x) * (x + 1) + math.sin(x)),
         (f3, lambda x: 6 * math.sin(x) + 6 * x * math.cos(x)),
         (f4, lambda x: 3 * x * x - math.sin(x)),
         (f5, lambda x: 2 * x + 3 * x * x),
         (f6, lambda x: 2 * (math.cos(x) + 2 * math.cos(2 * x) + 3 * math.cos(3 * x)) + (2 * x + x * x) * math.exp(x))]
ORIGINAL = (0.1, 0.25, 0.5, 7.0, -1.0, "n")  # what the worker writes itself, or what was there


def _seen():
    return acc.last, LAST, read_seen(), MOD.value, Acc.shared, acc.note


def test_a_worker_thread_sees_only_its_own_values_while_the_main_thread_traces():
    global TOTAL, COUNT
    TOTAL = COUNT = 0
    TRACED.update(bump=0, count=0)
    stop, errors, calls = threading.Event(), [], [0]

    def worker():
        try:
            while not stop.is_set():
                r = acc.bump(0.1)
                calls[0] += 1
                c = count(0.25)
                k = keep(0.5)
                assert (r, c, k) == (2.0 * math.sin(0.1), 0.0625, 1.5)
                seen = _seen()
                assert all(type(v) in (float, str) for v in seen) and seen == ORIGINAL, seen
                math.sin(acc.last) + math.sin(LAST) + math.sin(read_seen()) + math.sin(MOD.value)
                done[0] += 1
        except BaseException as e:  # noqa: BLE001  (reported by the main thread)
            errors.append(e)
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    while done[0] < 3 and not errors:
        threading.Event().wait(0.001)
    try:
        for f, grad in GRADS:
            F = symgrad.compile(f)
            for x in (0.3, 1.1):
                assert F.grad(x) == pytest.approx(grad(x), rel=1e-12, abs=1e-12), f.__name__
    finally:
        stop.set()
        t.join()
    assert not errors, errors[0]
    assert TRACED["bump"] >= 6 and TRACED["count"] >= 4
    assert TOTAL == calls[0] + TRACED["bump"]  # every call counted, the worker's and the traces'
    assert COUNT == calls[0] + TRACED["count"]
    assert _seen() == ORIGINAL and type(acc.last) is float and type(LAST) is float  # nothing left behind


def test_a_trace_leaves_no_traced_value_behind_even_when_it_fails():
    a = Acc()
    before = (a.last, LAST, read_seen(), MOD.value, Acc.shared, vars(a).copy())

    def reads_back(x):
        a.bump(x)
        count(x)
        keep(x)
        setmod(x)
        Acc.shared = x
        return a.last * LAST * read_seen() * MOD.value * Acc.shared  # the tracing thread sees its writes

    assert symgrad.compile(reads_back).grad(0.5) == pytest.approx(15 * 0.5 ** 4, rel=1e-14)

    def fails(x):
        a.bump(x)
        setmod(x)
        return float(x)
    with pytest.raises(symgrad.TraceError):
        symgrad.compile(fails)(0.5)
    assert (a.last, LAST, read_seen(), MOD.value, Acc.shared, vars(a)) == before


HISTORY = []


def _into_global(x):
    HISTORY.append(x)
    return x


class Log:
    def __init__(self):
        self.items = []
        self.table = {}


LOG = Log()


def _into_attribute(x):
    LOG.items.append(x)
    return x


def _into_item(x):
    LOG.table["x"] = x
    return x


def _into_default(x, seen=[]):  # noqa: B006  (a default that outlives the call, on purpose)
    seen.append(x)
    return x


_kept = []


def _into_closure(x):
    _kept.extend([x])
    return x


@pytest.mark.parametrize("f, what", [(_into_global, r"\.append\(\) puts a traced value into a list"),
                                     (_into_attribute, r"\.append\(\) puts a traced value into a list"),
                                     (_into_item, r"an item assignment puts a traced value into a dict"),
                                     (_into_default, r"\.append\(\) puts a traced value into a list"),
                                     (_into_closure, r"\.extend\(\) puts a traced value into a list")])
def test_a_traced_value_put_into_a_container_other_code_holds_is_refused(f, what):
    with pytest.raises(symgrad.TraceError, match=rf"(?s){what}.*{f.__name__}\(\) in .*test_threads.py.*"
                                                 r"Build a new"):
        symgrad.compile(f)(0.5)
    assert HISTORY == [] and LOG.items == [] and LOG.table == {} and _kept == []
    assert _into_default.__defaults__ == ([],)


class Point:
    def __init__(self, x):
        self.x, self.parts = x, []
        self.parts.append(x)


def test_containers_and_objects_the_trace_creates_take_traced_values():
    def f(x):
        out, d, p = [], {}, Point(x)
        out.append(x)
        d["y"] = x * 2
        p.y = p.x * 3
        p.parts += [x]
        return sum(out) + d["y"] + p.y + sum(p.parts)
    assert symgrad.compile(f).grad(0.5) == 8.0


@functools.lru_cache(maxsize=None)
def _cached(x):
    return x * 3.0


def test_a_cached_function_keeps_no_traced_value():
    _cached.cache_clear()
    assert symgrad.compile(lambda x: _cached(x) + _cached(2.0)).grad(0.5) == 3.0
    assert _cached.cache_info().currsize == 1  # _cached(2.0) only


# -- code that does not consult the overlay sees no stale slot: refused at the user's line ------------
class Scaled:
    def __init__(self):
        self.a = 1.0

    def __mul__(self, k):  # the interpreter calls it: it runs as written, not rewritten
        return self.a * k


class Gain:
    def __mul__(self, k):
        return GAIN * k


GAIN = 1.0
scaled, gain = Scaled(), Gain()


@dataclasses.dataclass
class Pair:
    a: float = 1.0


pair = Pair()


def _operator_reads_attribute(x):
    scaled.a = x
    return scaled * 2.0


def _operator_reads_global(x):
    global GAIN
    GAIN = x
    return gain * 3.0


def _astuple(x):
    pair.a = x
    return dataclasses.astuple(pair)[0] * 5.0


def _vars(x):
    pair.a = x
    return vars(pair)["a"] * 5.0


def _dunder_dict(x):
    pair.a = x
    return pair.__dict__["a"] * 5.0


def _copy(x):
    pair.a = x
    return copy.copy(pair).a * 5.0


def _swallowed(x):
    scaled.a = x
    try:
        return scaled * 2.0
    except Exception:
        return x * 7.0


@pytest.mark.parametrize("f", [_operator_reads_attribute, _operator_reads_global, _astuple, _vars, _dunder_dict,
                               _copy, _swallowed])
def test_code_that_reads_state_the_trace_keeps_private_is_refused(f):
    with pytest.raises(symgrad.TraceError, match=rf"(?s){f.__name__}\(\) in \S*test_threads\.py, line \d+: `.*"
                                                 r"Create the object inside the traced function"):
        symgrad.compile(f).grad(0.5)
    assert (scaled.a, GAIN, pair.a, sys.getprofile()) == (1.0, 1.0, 1.0, None)


def test_objects_the_trace_creates_go_to_any_code():
    def f(x):
        s, p = Scaled(), Pair()
        s.a, p.a = x, x * x
        return s * 2.0 + dataclasses.astuple(p)[0] + copy.copy(p).a
    assert symgrad.compile(f).grad(0.5) == 4.0


def test_a_trace_with_nothing_kept_private_installs_no_profiler():
    seen = []

    def f(x):
        seen.append(sys.getprofile())
        return scaled * x
    assert symgrad.compile(f).grad(0.5) == 1.0
    assert seen == [None]


class Sized:
    def __len__(self):  # reads nothing of the object: nothing stale to read
        return 2

    def __eq__(self, other):
        return isinstance(other, Sized)


class Shown:
    def __repr__(self):  # reads the object's attributes by itself
        return repr(vars(self))


sized, shown = Sized(), Shown()


def test_special_methods_that_read_nothing_kept_private_still_run():
    """Python's calls of a method that loads no name the trace keeps and reads no object by
    itself are free (they were refused: __len__ given an object holding a kept attribute)."""
    def f(x):
        sized.v = x
        return np.sqrt(x) + len(sized) * x * (sized == sized)
    F = symgrad.compile(f)
    assert F(2.0) == pytest.approx(math.sqrt(2.0) + 4.0, rel=1e-15)
    assert F.grad(2.0) == pytest.approx(0.5 / math.sqrt(2.0) + 2.0, rel=1e-15)
    assert not hasattr(sized, "v")

    def g(x):
        shown.v = x
        return len(repr(shown)) * x
    with pytest.raises(symgrad.TraceError, match="Create the object inside the traced function"):
        symgrad.compile(g).grad(0.5)
