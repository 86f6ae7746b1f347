"""SYMGRAD_QUIET: 1/true/yes/on silence the progress lines, 0/false/no/off (and empty) do
not; anything else warns, naming the variable and what it takes, and leaves them on."""
import pytest

from helpers import run_python
from symgrad.pipeline import source


@pytest.mark.parametrize("value, quiet", [
    (None, False), ("", False), ("0", False), ("false", False), ("No", False), ("OFF", False), (" off ", False),
    ("1", True), ("true", True), ("YES", True), ("On", True)])
def test_quiet_values(value, quiet, recwarn):
    assert source.quiet(value) is quiet
    assert not recwarn.list


@pytest.mark.parametrize("value", ["2", "quiet", "y", "-1"])
def test_other_values_warn_and_leave_the_progress_lines_on(value):
    with pytest.warns(RuntimeWarning, match=rf"SYMGRAD_QUIET={value!r} is not one of 0/1, false/true, no/yes, "
                                            r"off/on .*the progress lines stay on"):
        assert source.quiet(value) is False


SLOW_STAGE = """
from symgrad.pipeline.source import stage
with stage("f", "differentiate", expect=lambda: (10**6, 50.0)):  # said to take 50 s: reported at its start
    pass
print("done")
"""


@pytest.mark.slow
def test_the_environment_variable_is_read_at_import(tmp_path):
    shown = run_python(SLOW_STAGE, tmp_path, SYMGRAD_QUIET="0")
    assert "symgrad: f: differentiate of about 1000000 operations, expected about 50 s" in shown.stderr
    hidden = run_python(SLOW_STAGE, tmp_path, SYMGRAD_QUIET="1")
    assert hidden.stderr == "" and hidden.lines == ["done"]
    odd = run_python(SLOW_STAGE, tmp_path, SYMGRAD_QUIET="maybe")  # an import never fails for it
    assert "SYMGRAD_QUIET='maybe' is not one of" in odd.stderr and "differentiate of about" in odd.stderr
