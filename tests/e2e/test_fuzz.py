"""Differential fuzzing in the normal test run: 300 random functions (fixed seed), value,
gradient, second and third derivatives against mpmath within a forward error bound, in
float64 and float32, scalar calls bit for bit the batch (see examples/fuzz.py). The six
batches of the sequence run as three tests of two (every third batch), so that the test
workers share them."""
import pytest

import helpers  # noqa: F401  (puts examples/ on the path)
import fuzz

SHARES = 3


@pytest.mark.parametrize("share", range(SHARES))
def test_300_random_functions_agree_with_mpmath(tmp_path, share):
    report = fuzz.fuzz(300, seed=0, where=str(tmp_path), stride=SHARES, offset=share)
    assert not report.crashes, report.crashes[0]
    assert not report.mismatches, {k: v for k, v in report.mismatches[0].items()}
    assert report.functions >= 90  # of 100: a few fail in plain Python (math.asin(3.0)) and are not generated
    assert report.compared["value"] > 4 * report.functions  # most functions have several points
    assert report.compared["hessian"] > 9 * report.compared["value"] - 1


def test_random_functions_single_points_of_every_kind_in_one_lane(tmp_path, monkeypatch):
    """Options.one_point: 50 random functions, each kind's single points (the one-lane copy)
    bit for bit its batch, and held to the same bounds."""
    monkeypatch.setattr(fuzz, "ONE_POINT", True)
    report = fuzz.fuzz(50, seed=3, where=str(tmp_path))
    assert not report.crashes, report.crashes[0]
    assert not report.mismatches, {k: v for k, v in report.mismatches[0].items()}
    assert report.functions >= 40 and report.compared["d3"] > 0
