"""Rolled schedules (render/roll.py), without a C compiler: repeated
work of a large program becomes loops over members, every statement is scheduled exactly
once, and every statement reads only what an earlier statement (or an earlier member of its
own loop's member) has computed."""
import math

import pytest
from helpers import carried

from symgrad import options
from symgrad.render.c import Printer
from symgrad.render import TARGETS
from symgrad.render.roll import _cyclic
from symgrad.render.schedule import schedule
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian, optimize

OPTS = options.Options(large_kernel_ops=0, roll_alone_min=16)


def lj(p, atoms):
    e = 0.0
    for i in range(atoms):
        for j in range(i + 1, atoms):
            dx, dy, dz = p[3 * i] - p[3 * j], p[3 * i + 1] - p[3 * j + 1], p[3 * i + 2] - p[3 * j + 2]
            s6 = 1.0 / (dx * dx + dy * dy + dz * dz) ** 3
            e = e + 4.0 * (s6 * s6 - s6)
    return e


def chained(x):
    """Repeated work that reads the running total (a loop carried through every member)."""
    acc = 0.0
    for k in range(60):
        acc = acc + math.sin(x[k % 7] * acc + x[(k + 3) % 7])
    return acc


def linked(x):
    """Each step's own work and a running value that reads it and the last step's value: the
    running value joins each step's work, and leaves it again (it reads the step before)."""
    acc = x[0] * x[1] + math.sin(x[1] * x[4] + 2.0)
    for k in range(2, 40):
        acc = acc * x[k] + math.sin(x[k] * x[(k + 3) % 40] + 1.0)
    return acc


def shared(x):
    """Members that all read one value computed from all of them, and feed one another."""
    terms = [math.exp(x[k % 5] - x[(k + 1) % 5]) * (k + 1) for k in range(40)]
    total = sum(terms)
    return sum(t / total * x[k % 5] for k, t in enumerate(terms)) + total


def repeats(x):
    """Results alike but for which operand they read twice: u*(a - c) + u*a and
    u*(a - c) + u*c print differently, so they never share a loop."""
    out = []
    for k in range(80):
        a, b, c = x[k], x[k + 1], x[k + 2]
        u = math.sin(a * b + c)
        out.append(u * (a - c) + u * (a if k < 40 else c))
    return out


def _check(sched):
    """Every statement once; each reads only what is computed before it."""
    done, seen = set(sched.inputs), set()
    for i, seg in enumerate(sched.segments):
        roll = sched.rolled.get(i)
        if roll is None:
            for t, e in seg:
                assert set(e.free_symbols) <= done, (i, t)
                assert t not in seen
                seen.add(t)
                if not isinstance(t, tuple):
                    done.add(t)
            continue
        assert len(seg) == roll.size * len(roll.ext)
        made = set()
        for m, ext in enumerate(roll.ext):
            member = seg[m * roll.size:(m + 1) * roll.size]
            assert set(ext) <= done | made, (i, m)  # members run in order: earlier ones are there
            assert all(s in sched.slots for s in set(ext) & made)  # through the scratch
            inside = set()
            for t, e in member:
                assert set(e.free_symbols) <= done | made | inside, (i, m, t)
                assert t not in seen
                seen.add(t)
                if not isinstance(t, tuple):
                    inside.add(t)
            made |= inside
            # one form: the statements print alike, operands abstracted
            first = seg[:roll.size]
            for (_, a), (_, b) in zip(first, member):
                assert _abstracted(a) == _abstracted(b)
        done |= made
    return seen


class _FirstRead(dict):
    """C names of the operands by first reading: v0, v1, ..."""

    def __missing__(self, s):
        self[s] = f"v{len(self)}"
        return self[s]


def _abstracted(e):
    """The C text of statement ``e`` with its operands abstracted."""
    return Printer(_FirstRead(), TARGETS["cpu", "float64"], OPTS).doprint(e)


def _statements(sched):
    return sum(len(s) for s in sched.segments)


@pytest.mark.parametrize("make,rolls", [
    (lambda: derive.grad(trace(lambda p: lj(p, 12), [(36,)]), [0], with_value=True), True),
    (lambda: hessian.hessian(trace(lambda p: lj(p, 6), [(18,)]), [0]), True),
    (lambda: derive.grad(trace(chained, [(7,)]), [0], with_value=True), True),  # each member reads the last
    (lambda: derive.grad(trace(shared, [(5,)]), [0], with_value=True), True),
    (lambda: derive.grad(trace(linked, [(40,)]), [0], with_value=True), True),
    (lambda: trace(carried, [(21,)]), True),
    (lambda: trace(repeats, [(82,)]), True),
], ids=["lj12-grad", "lj6-hessian", "running-sum", "shared-total", "linked-steps", "carried", "repeated-reads"])
def test_rolled_schedule_is_complete_and_ordered(make, rolls):
    prog = optimize.optimize(make(), OPTS)
    plain = schedule(prog, "k", OPTS)
    rolled = schedule(prog, "k", OPTS, roll=True)
    assert not plain.rolled
    assert _check(rolled) == _check(plain)  # the same statements, each once
    assert _statements(rolled) == _statements(plain)
    assert bool(rolled.rolled) == rolls


def test_loops_caught_in_cycles_are_named_by_cycle():
    """A stalled order names the loops of each cycle at once (runs breaks one of each, which
    may free the others): finding one cycle a pass made a large gradient's generate C ten
    times slower. Items: ("s", statement) or ("m", loop, member); needs: what each waits for."""
    needs = {("m", 0, 0): [("m", 1, 0)], ("m", 1, 0): [("s", 5)], ("s", 5): [("m", 0, 0)],  # a cycle of loops 0, 1
             ("m", 2, 0): [("m", 3, 1)], ("m", 3, 1): [("m", 2, 0)],  # another, of loops 2 and 3
             ("m", 4, 0): [("m", 0, 0), ("m", 2, 0)],  # waits for both cycles, on none
             ("s", 6): [("m", 4, 0)], ("m", 5, 0): []}
    cycles = _cyclic(set(needs) - {("m", 5, 0)}, needs)
    assert sorted(map(sorted, cycles)) == [[0, 1], [2, 3]]


def test_a_cycle_breaks_one_loop_at_a_time():
    """Where loops need each other round a cycle, breaking one may free the rest: all of
    lj16's Hessian rolls (breaking every loop of the cycle left 240 of its 6,528 statements
    straight, and lj40's C twice as long, its compile 2.5x slower)."""
    prog = optimize.optimize(hessian.hessian(trace(lambda p: lj(p, 16), [(48,)]), [0]), OPTS)
    sched = schedule(prog, "k", OPTS, roll=True)
    assert sum(len(s) for i, s in enumerate(sched.segments) if i not in sched.rolled) == 0


def test_pairs_roll_as_whole_members():
    """lj: each pair's forward and reverse work, with its additions to the running sums (the
    energy and the six gradient entries of its atoms: reverse's chains), is one member of one
    loop, in registers, and the C compiler sees a fraction of the statements. The pairs of the
    first two atoms start the gradient's sums (11 and 10 pairs: under roll_min, straight)."""
    prog = optimize.optimize(derive.grad(trace(lambda p: lj(p, 12), [(36,)]), [0], with_value=True), OPTS)
    sched = schedule(prog, "k", OPTS, roll=True)
    whole = [r for r in sched.rolled.values() if r.size > 1]
    assert [len(r.ext) for r in whole] == [66 - 21]
    assert whole[0].where == (0,) * 6 + (None,) * 7  # its atoms' coordinates, the sums it adds to
    straight = sum(len(s) for i, s in enumerate(sched.segments) if i not in sched.rolled)
    assert straight < _statements(sched) / 3


def test_small_kernels_and_roll_min_zero_do_not_roll():
    """The program that rolls above (lj12's gradient) stays straight in a kernel under
    large_kernel_ops operations, with roll_min 0, and where the emitter asks for no loops."""
    prog = optimize.optimize(derive.grad(trace(lambda p: lj(p, 12), [(36,)]), [0], with_value=True), OPTS)
    assert schedule(prog, "k", OPTS, roll=True).rolled
    small = options.Options(large_kernel_ops=prog.count_ops(), roll_alone_min=16)
    assert schedule(prog, "k", small, roll=True).rolled == {}
    assert schedule(prog, "k", options.Options(roll_min=0, large_kernel_ops=0), roll=True).rolled == {}
    assert schedule(prog, "k", OPTS).rolled == {}


def test_copies_of_running_sums_roll():
    """Each gradient entry of a pair energy is a copy of a running sum's last link: the copies
    are one loop, though fewer than roll_alone_min (a copy costs a load and a store either way,
    and gcc about a millisecond straight)."""
    opts = options.Options(large_kernel_ops=0)
    assert opts.roll_alone_min > 36
    prog = optimize.optimize(derive.grad(trace(lambda p: lj(p, 12), [(36,)]), [0], with_value=True), opts)
    sched = schedule(prog, "k", opts, roll=True)
    entries = [(i, t[1]) for i, seg in enumerate(sched.segments) for t, _ in seg if isinstance(t, tuple) and t[0] == 1]
    assert sorted(k for _, k in entries) == list(range(36))
    assert {i for i, _ in entries} <= set(sched.rolled)
    _check(sched)


def prefix_sums(x):
    acc, out = 0.0, []
    for k in range(40):
        acc = acc + math.sin(x[k])
        out.append(acc)
    return out


def test_copies_roll_whatever_their_depth():
    """The results of a running sum's every link are copies at 40 depths: no statement reads a
    result, so they are one loop, after the links they copy."""
    opts = options.Options(large_kernel_ops=0)
    sched = schedule(optimize.optimize(trace(prefix_sums, [(40,)]), opts), "k", opts, roll=True)
    entries = [(i, t[1]) for i, seg in enumerate(sched.segments) for t, _ in seg if isinstance(t, tuple)]
    assert sorted(k for _, k in entries) == list(range(40))
    assert {i for i, _ in entries} <= set(sched.rolled)
    _check(sched)


def test_runs_refuses_statements_without_forms():
    """Statements lowered without links carry no form: keyed alike, every one would join one loop."""
    from symgrad.render.c import lower
    from symgrad.render.roll import runs
    low = lower(optimize.optimize(trace(prefix_sums, [(40,)]), OPTS), OPTS)
    with pytest.raises(ValueError, match="links"):
        runs(list(low.body), {}, OPTS)
