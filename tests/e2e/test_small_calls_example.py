"""examples/small_calls.py (the small-call table of examples/benchmark.py) and the worker of
examples/scaling.py run."""
import os
import sys

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def test_the_small_call_table_prints_a_row_per_case_and_size(capsys, monkeypatch):
    monkeypatch.syspath_prepend(EXAMPLES)
    import small_calls
    small_calls.main(["--cases", "seed_grad", "--sizes", "1", "3", "--states"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("seed_grad")]
    assert [r[1] for r in rows] == ["1", "3"]
    assert all(float(r[2]) > 0 and float(r[3]) > 0 for r in rows)  # microseconds a call, out= and new
    assert "small_calls" in sys.modules


def test_the_scaling_worker_builds_kernels_of_every_layout(capsys, monkeypatch):
    """examples/scaling.py's worker (each stage timed, in a process of its own there) builds its
    kernel from every unit: a tail apart (max|x| of 16), segments (max|x| of 64), one unit (lj 5)."""
    import json
    monkeypatch.syspath_prepend(EXAMPLES)
    import scaling
    for case, size, units in (("maxabs", 16, 2), ("maxabs", 64, 2), ("lj", 5, 1)):
        scaling.worker(case, size, "grad")
        report = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert report["units"] == units and report["stages"]["C compile"] > 0
