"""The progress lines: a line every ticker.PERIOD seconds while a stage runs (none for a short
stage, none after it ended, none with SYMGRAD_QUIET, and in a forked child too), and the
estimates of estimate.py held to measurements (a regression test of the model, not a timing
test: nothing here is timed but the ticker's own period)."""
import logging
import os
import threading
import time

import numpy as np
import pytest

import symgrad
from helpers import run_python  # (puts examples/ on the path)
from symgrad.pipeline import estimate, source, ticker

import bench_cases  # noqa: E402


@pytest.fixture
def lines(monkeypatch, caplog):
    """The progress lines logged meanwhile (the period 0.2 s, the lines on)."""
    monkeypatch.setattr(logging.getLogger("symgrad.progress"), "propagate", True)
    monkeypatch.setattr(source, "PROGRESS_SECONDS", 2.0)
    monkeypatch.setattr(ticker, "PERIOD", 0.2)
    caplog.set_level(logging.WARNING, logger="symgrad.progress")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "symgrad.progress"]


def test_a_long_stage_says_every_period_what_it_does(lines):
    with source.stage("f_hessian", "C compile", expect=lambda: (1234, 0.5)):
        time.sleep(1.0)
        during = lines()
    ticks = [m for m in during if "still running" in m]
    assert 2 <= len(ticks) <= 5, during
    assert ticks[0].startswith("symgrad: f_hessian: C compile still running after ") and \
        ticks[0].endswith(" s, expected about 0.5 s"), ticks
    time.sleep(0.6)  # three periods more: nothing after the stage ended
    assert [m for m in lines() if "still running" in m] == ticks
    logger = logging.getLogger("symgrad.progress")  # a library adds no handler but a NullHandler
    assert all(isinstance(h, logging.NullHandler) for h in logger.handlers)
    worker = [t for t in threading.enumerate() if t.name == "symgrad-progress"]
    assert len(worker) == 1 and worker[0].daemon  # one shared thread, which never keeps the process alive


def test_a_stage_without_an_estimate_says_how_long_so_far(lines):
    with source.stage("f", "trace"):
        time.sleep(0.3)
    assert any(m.startswith("symgrad: f: trace still running after ") and m.endswith(" s") for m in lines())


def test_a_short_stage_says_nothing(lines):
    with source.stage("f", "C compile", expect=lambda: (10, 0.01)):
        time.sleep(0.05)
    time.sleep(0.3)
    assert lines() == []
    with source.stage("f", "C compile", expect=lambda: (10, 0.01)):  # the same stage, longer than the period
        time.sleep(0.3)
    assert [m for m in lines() if "still running" in m]


def test_stages_of_several_threads_each_get_their_lines(lines):
    def run(name):
        with source.stage(name, "generate C"):
            time.sleep(0.5)
    threads = [threading.Thread(target=run, args=(f"f{k}",)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(3):
        assert any(m.startswith(f"symgrad: f{k}: generate C still running") for m in lines())


def test_silenced_stages_say_nothing(lines, monkeypatch):
    with source.stage("f", "C compile", expect=lambda: (10, 50.0)):
        time.sleep(0.3)
    assert [m for m in lines() if "still running" in m]
    before = lines()
    monkeypatch.setattr(source, "PROGRESS_SECONDS", None)  # what SYMGRAD_QUIET=1 sets
    with source.stage("f", "C compile", expect=lambda: (10, 50.0)):
        time.sleep(0.3)
    assert lines() == before


TICKING_STAGE = """
from symgrad.pipeline import source, ticker
import time
ticker.PERIOD = 0.1
with source.stage("f", "C compile"):
    time.sleep(0.35)
print("done")
"""


def test_the_environment_variable_silences_the_periodic_lines(tmp_path):
    shown = run_python(TICKING_STAGE, tmp_path, SYMGRAD_QUIET="0")
    assert "symgrad: f: C compile still running after" in shown.stderr
    hidden = run_python(TICKING_STAGE, tmp_path, SYMGRAD_QUIET="1")
    assert hidden.stderr == "" and hidden.lines == ["done"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_a_stage_gets_its_own_lines(lines):
    with source.stage("parent", "C compile"):
        time.sleep(0.25)  # the thread is running and has ticked
        pid = os.fork()
        if pid == 0:  # the child: its own stages tick; the parent's stage, of this very thread, too
            code = 1
            try:
                with source.stage("child", "differentiate"):
                    time.sleep(0.5)
                mine = [m for m in lines() if m.startswith("symgrad: child: differentiate still running")]
                code = 0 if mine else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# -- the model, held to cold compiles measured here (2 cores, gcc 12; examples/progress_estimates.py),
# as they would take on an idle core (each measured time over estimate.busy() when it started):
# each estimate within 2x, the machine taken as idle
@pytest.fixture
def idle(monkeypatch):
    monkeypatch.setattr(estimate, "busy", lambda: 1.0)
    monkeypatch.setattr(estimate, "_cpus", lambda: 2)


def logreg(p, n):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(n, p)), (rng.uniform(size=n) < 0.5).astype(float)

    def loss(w):
        z = X @ w
        return np.sum(np.log1p(np.exp(-z)) + (1 - y) * z)
    return symgrad.compile(loss, [(p,)])


def lsemax(p, n):
    X = np.random.default_rng(0).normal(size=(n, p))

    def f(w):
        z = X @ w
        m = np.max(z)
        return m + np.log(np.sum(np.exp(z - m)))
    return symgrad.compile(f, [(p,)])


def lse(p, n):
    X = np.random.default_rng(0).normal(size=(n, p))
    return symgrad.compile(lambda w: np.log(np.sum(np.exp(X @ w))), [(p,)])


def lj(atoms):
    return symgrad.compile(lambda p: bench_cases.lj(p, atoms), [(3 * atoms,)])


@pytest.mark.parametrize("make, verb, measured", [
    (lambda: logreg(15, 1000), "hessian", 0.25),  # one scatter over (row, j, k): 0.20-0.31 s
    (lambda: lsemax(10, 1000), "hessian", 2.65),  # a max over the loop: one accumulator loop per entry, 313 loops
    (lambda: lsemax(15, 1000), "hessian", 7.0),  # the same past large_kernel_ops, at -O1, 603 loops: 6.9-8.1 s
    (lambda: lse(40, 10000), "hessian", 1.6),  # 1,600 terms outside the loops at -O1: 1.55-1.72 s
    (lambda: logreg(10, 100), "hessian", 2.6),  # unrolled: 10 straight-line units at -O1
    (lambda: lj(30), "hessian", 0.5),  # rolled, 6 units at -O1
    (lambda: lj(40), "grad", 0.17),  # F.grad runs value_and_grad's kernel: 2 units at -O1
    (lambda: lj(10), "grad", 0.65),  # 2 units at -O3, one of 1,556 statements
])
def test_compile_estimates_are_within_2x_of_measured(idle, make, verb, measured):
    kernel = getattr(make(), verb).kernel  # rendered: nothing is compiled
    expected = estimate.compile_seconds([kernel])
    assert measured / 2 <= expected <= measured * 2, (expected, measured)


@pytest.mark.parametrize("what, ops, kind, measured", [
    ("differentiate", 6525, "hessian", 0.26),  # lj30
    ("differentiate", 11700, "value_and_grad", 0.17),  # lj40
    ("differentiate", 47400, "value_and_grad", 0.56),  # lj80
    ("generate C", 33750, "hessian", 0.77),  # lj30
    ("generate C", 120077, "value_and_grad", 1.1),  # lj80
    ("optimize", 120077, "value_and_grad", 0.083),  # lj80
])
def test_stage_estimates_are_within_2x_of_measured(idle, what, ops, kind, measured):
    expected = estimate.stage_seconds(what, ops, kind)
    assert measured / 2 <= expected <= measured * 2, (expected, measured)


def test_a_busy_machine_is_expected_slower(monkeypatch):
    """busy(): this thread's time waiting to run against its time running, since it last asked."""
    readings = iter([(10**9, 0), (2 * 10**9, 0), (2 * 10**9 + 10**6, 10**9), (3 * 10**9, 3 * 10**9)])

    class Schedstat:
        def __init__(self, *args):
            self.now = next(readings)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return f"{self.now[0]} {self.now[1]} 7\n".encode()
    monkeypatch.setattr(estimate, "open", Schedstat, raising=False)
    monkeypatch.setattr(estimate, "_mine", threading.local())
    assert estimate.busy() == 1.0  # its whole life: never waited
    assert estimate.busy() == 1.0  # a second more running, no waiting
    assert estimate.busy() == 1.0  # 1 ms more running (under 50 ms): the factor it had
    assert estimate.busy() == pytest.approx(4.0)  # 1 s running, 3 s waiting since it last asked
    monkeypatch.setattr(estimate, "open", lambda *a: (_ for _ in ()).throw(OSError("no such file")), raising=False)
    monkeypatch.setattr(estimate, "_mine", threading.local())
    assert estimate.busy() == 1.0  # where the system does not say


def test_a_long_hessian_compile_suggests_the_hvp_route_at_its_start(lines, monkeypatch):
    monkeypatch.setattr(estimate, "compile_seconds", lambda kernels, cpus=None: 400.0)
    monkeypatch.setattr(estimate, "_told", set())
    H = logreg(50, 1000).hessian
    note = estimate.hvp_route(H.spec, 400.0)
    assert "H = F.hvp(np.broadcast_to(w, (50, 50)), np.eye(50)) (F: the compiled loss, w: the point)" in note
    for _ in range(2):  # the stage's first line carries it, once
        with source.stage(H.c_name, "C compile", expect=estimate.expect_compile([(H.spec, lambda: H.key)], [H.kernel])):
            pass
    starts = [m for m in lines() if "C compile of about" in m]
    assert len(starts) == 2 and all("expected about 400 s" in m for m in starts), starts
    assert starts[0].endswith("expected about 400 s; " + note) and starts[1].endswith("expected about 400 s")


def test_no_hvp_route_for_short_compiles_gradients_or_several_arguments():
    F = logreg(6, 50)
    assert estimate.hvp_route(F.hessian.spec, 1.0) == ""
    assert estimate.hvp_route(F.grad.spec, 400.0) == ""
    G = symgrad.compile(lambda x, y: np.sum(x * y) ** 2, [(5,), (5,)])
    assert estimate.hvp_route(G.hessian.spec, 400.0) == ""
