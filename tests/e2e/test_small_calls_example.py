"""examples/small_calls.py runs (the small-call table of examples/benchmark.py)."""
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
