"""How long a compile stage will take: the estimates of the progress lines (source.stage),
each made from what is known just before its stage starts.

Fitted on cold compiles measured here (2 cores, gcc 12; examples/progress_estimates.py prints
predicted against measured, stage by stage, for every case of examples/benchmark.py and
examples/scaling.py and a few long ones):

- symgrad's own stages cost seconds per operation of the program they are given, by stage and
  by the order of the derivative (the Hessian kinds' edge pushing and forward-over-reverse
  sweeps cost three to four times a gradient's, and much more where every operation depends on
  every parameter: a logistic regression traced element by element, 5-9x the estimate; an
  unrolled LU solve's gradient, 2-3x), a little more per operation in larger programs;
- the C compile costs, per translation unit, a start (the compiler, the runtime header; by the
  flags: -O3, or the -O1 of large kernels) plus a cost per statement, plus a cost per byte
  (rolled kernels' operand tables), plus, at -O3 (and in a large loop kernel at -O1), a cost
  per statement per loop: GCC's loop
  passes walk the whole function once per loop, so a kernel whose arrays stayed loops, with one
  accumulator loop per Hessian entry (the Jacobian of the gradient, still taken through a max
  over a loop), grows faster than the fourth power of its parameters (logistic regression's
  Hessian that way over 1,000 points: 5 s at p = 15, 15-20 s at p = 20, 67 s at p = 25, 138 s
  at p = 30; now one scatter over (row, j, k), 0.2-0.3 s). The units are shared among
  the usable cores as build.py runs them (the largest first), then linked;
- everything is scaled by how busy the machine is for this process: how long its thread waited
  to run against how long it ran, lately (busy)."""
from __future__ import annotations

import os
import threading

# symgrad's own stages: seconds per operation at 10^4 operations of the program a stage is
# given, (first-order kinds, Hessian kinds), and how the cost grows past that (ops ** GROWTH).
DIFFERENTIATE = (1.2e-5, 4e-5)
OPTIMIZE = (7e-7, 7e-7)
GENERATE = (1e-5, 1.65e-5)
GROWTH = {"differentiate": 1.0, "optimize": 1.0, "generate C": 1.16}
STAGE_START = 0.003  # s: any stage
# The C compile of one unit: seconds at -O1 (large kernels) / -O3, and seconds per statement.
UNIT_START = {True: 0.08, False: 0.123}
PER_STATEMENT = 4e-4
# -O3: s per 10^6 (statements x loops) of the unit, and how that grows (** LOOP_GROWTH)
PER_STATEMENT_LOOP, LOOP_GROWTH = 2.24, 1.22
PER_BYTE = 3.3e-7
LINK = 0.07  # s: linking several units (one unit compiles and links in one run)
MAX_BUSY = 8.0


_mine = threading.local()  # .last: this thread's (run, wait) ns when it last asked, .factor: its answer


def busy():
    """How many times slower than on an idle core this thread runs now: its time running plus
    its time waiting to run, against its time running (Linux's /proc/thread-self/schedstat),
    since it last asked (once it has run 50 ms more; else the factor it got then), or over its
    whole life the first time; 1 where the system does not say. It is what the machine gives
    this process (its cgroup's share, other processes' load), which the load average is not:
    that counts every container's processes on the host."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            now = tuple(map(int, f.read().split()[:2]))
    except (OSError, ValueError):
        return 1.0
    last = getattr(_mine, "last", None)
    if last is not None and last[0] <= now[0] < last[0] + 50_000_000:
        return _mine.factor
    run, wait = now if last is None or now[0] < last[0] else (now[0] - last[0], now[1] - last[1])
    _mine.last, _mine.factor = now, min(MAX_BUSY, max(1.0, (run + wait) / max(run, 1)))
    return _mine.factor


def _cpus():
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def second_order(kind_name):
    """Whether a derivative kind builds second derivatives (Hessian, its sparse form, hvp)."""
    from ..transforms.kinds import kind
    return "Hessian" in kind(kind_name).words


def stage_seconds(what, ops, kind_name=None):
    """Seconds of symgrad's stage ``what`` given a program of ``ops`` operations (of the
    derivative of kind ``kind_name``)."""
    rate = {"differentiate": DIFFERENTIATE, "optimize": OPTIMIZE, "generate C": GENERATE}[what]
    second = kind_name is not None and second_order(kind_name)
    return (STAGE_START + rate[second] * 1e4 * (ops / 1e4) ** GROWTH[what]) * busy()


def unit_seconds(text, large, loops_cost=None):
    """Seconds of one translation unit's compile (``large``: at the -O1 of large kernels) on an
    idle core. ``loops_cost``: whether its loops cost per statement (default: at -O3 only; a
    large loop kernel, one function holding its loops, at -O1 too: log-sum-exp's Hessian with a
    max, p = 15, 603 loops, 6.9-8.1 s)."""
    statements = text.count(";")
    loops = text.count("for (") if (not large if loops_cost is None else loops_cost) else 0
    return (UNIT_START[large] + PER_STATEMENT * statements
            + PER_STATEMENT_LOOP * (statements * loops / 1e6) ** LOOP_GROWTH + PER_BYTE * len(text))


def compile_seconds(kernels, cpus=None):
    """Seconds of the C compile of render.Kernels ``kernels`` into one library, as build.py runs
    it: their sources one unit, each tail and part a unit of its own (tails join the source on one
    core), compiled on every usable core, the largest first, then linked and loaded."""
    from ..render.target import TARGETS
    cpus = cpus or _cpus()
    large = any(set(TARGETS["cpu", "float64"].large_flags) <= set(k.cflags) for k in kernels)
    source = "\n".join(k.source for k in kernels)
    tails = [t for k in kernels for t in k.tails]
    parts = [p for k in kernels for p in k.parts]
    if cpus < 2:
        source, tails = "\n".join([source] + tails), []
    whole = not parts  # (a loop kernel: no segments, its loops in one function)
    times = sorted((unit_seconds(u, large, not large or whole) for u in [source] + tails + parts), reverse=True)
    cores = [0.0] * min(cpus, len(times))
    for t in times:  # build._run: each core takes the next unit, the largest first
        cores[cores.index(min(cores))] += t
    return (max(cores) + (LINK if len(times) > 1 else 0.0)) * busy()


def expect(spec, key, what, prog, kind_name=None):
    """(operations, seconds[, a note]) expected of symgrad's stage ``what`` given program ``prog``
    for the Function of pipeline.spec.Spec ``spec`` (its cache key: ``key()``), for the
    progress lines only."""
    def guess():
        ops = prog.count_ops()
        seconds = stage_seconds(what, ops, kind_name or (spec.steps[-1][0] if spec.steps else None))
        return ops, seconds, _once(key, hvp_route(spec, seconds))
    return guess


def expect_compile(specs, kernels):
    """(operations, seconds[, a note]) expected of the C compile of ``kernels`` into one library
    (``specs``: (spec, key()) of the Functions they are compiled for)."""
    def guess():
        seconds = compile_seconds(kernels)
        notes = (_once(key, n) for spec, key in specs if (n := hvp_route(spec, seconds)))
        return sum(k.ops for k in kernels), seconds, next(notes, "")
    return guess


HVP_ROUTE_SECONDS = 10.0  # a dense Hessian's stage expected to take this long suggests the hvp route
_told = set()  # the keys of the Hessians whose progress line suggested it


def _once(key, note):
    """``note`` the first time it is said of the kernel of ``key()``, then "" (its later stages' lines)."""
    if not note or key() in _told:
        return ""
    _told.add(key())
    return note


def hvp_route(spec, seconds):
    """Where ``spec`` is the dense Hessian of a function of one array argument of p >= 4 entries
    and one of its stages is expected to take ``seconds`` >= HVP_ROUTE_SECONDS: the one batched
    Hessian-vector product call that builds the same matrix (p tangents, the rows of the
    identity, each with the argument broadcast; kinds.py's hvp: by every argument), else ""."""
    import math

    from ..transforms.kinds import KINDS, kind as kind_of
    if seconds < HVP_ROUTE_SECONDS or len(spec.steps) != 1 or len(spec.args) != 1:
        return ""
    name, nums = spec.steps[0]
    (arg, shape), = spec.args
    p = math.prod(shape)
    if not kind_of(name).symmetric or tuple(nums) != (0,) or p < 4:
        return ""
    hvp = next(n for n, k in KINDS.items() if k.tangents)
    dims = ", ".join(map(str, shape))
    if len(shape) == 1:
        call = f"F.{hvp}(np.broadcast_to({arg}, ({p}, {p})), np.eye({p}))"
    else:
        call = (f"F.{hvp}(np.broadcast_to({arg}, ({p}, {dims})), np.eye({p}).reshape({p}, {dims}))"
                f".reshape({dims}, {dims})")
    return (f"this dense Hessian of {p} parameters is also one batched Hessian-vector product, whose compile grows "
            f"as the function's, not as the Hessian's {p * p} entries: H = {call} (F: the compiled "
            f"{spec.py_name}, {arg}: the point)")
