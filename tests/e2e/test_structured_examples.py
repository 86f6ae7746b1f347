"""The examples of large and structured problems run, and solve what they say they solve."""
import warnings

import numpy as np
import pytest

import helpers  # noqa: F401  (puts examples/ on the path)
from helpers import require_cyipopt
import brusselator


def test_brusselator_bdf_with_the_exact_sparse_jacobian_matches_finite_differences():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy.concatenate traced element by element
        r = brusselator.main(["--points", "100", "--t-end", "5"])
    assert r["nnz"] == 8 * 100 - 4
    assert r["diff"] < 1e-5
    n = 100
    u, v = r["y"][:n], r["y"][n:]
    assert np.all(np.isfinite(r["y"])) and 0.2 < u.min() < u.max() < 4 and 0.5 < v.min() < v.max() < 6


def test_pendulum_with_the_solve_in_the_kernel_matches_numpys_solve():
    import pendulum_solve
    r = pendulum_solve.main(["--links", "6", "--states", "2000"])
    assert r["err"] < 1e-11


def test_collocation_written_over_the_whole_vector():
    import collocation
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = collocation.main(["--nodes", "40", "--check-dense"])
    assert r["nnz_jacobian"] == 7 * 39 + 4 and r["nnz_hessian"] == 2 * 40 - 1
    assert r["same_jacobian"] and r["same_hessian"] and r["fd"] < 1e-5


def test_collocation_solved_by_ipopt():
    require_cyipopt()
    import collocation
    r = collocation.main([])
    assert r["status"] == 0 and r["objective"] == pytest.approx(12.2577983235, rel=1e-8)


def test_collocation_at_scale_is_loops_throughout(caplog):
    """600 nodes: constraints, their sparse Jacobian and the Lagrangian's sparse Hessian all
    stay loops (no warning of a trace element by element), with the band patterns."""
    import logging
    import collocation
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        r = collocation.main(["--nodes", "600"])
    assert not [m for m in caplog.messages if "element by element" in m]
    assert r["nnz_jacobian"] == 7 * 599 + 4 and r["nnz_hessian"] == 2 * 600 - 1
