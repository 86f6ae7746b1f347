"""Standalone source has no loops: a Function whose arrays stayed loops is printed from its
function traced again element by element, with a warning naming the data it then holds; a
Function without its Python function (a pickle) says why it cannot."""
import logging
import pickle

import numpy as np
import pytest

import symgrad
from symgrad.extras.codegen import sources

W = np.linspace(0.5, 1.5, 500)


def fit(x):
    return np.sum(W * np.sin(W * x))


def test_standalone_source_of_loops_is_printed_element_by_element_with_a_warning(caplog):
    F = symgrad.compile(fit)
    assert F.loops
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        files = sources(F, ["value", "grad"], "fit", cuda=True)
        assert F.cuda_source and F.grad.standalone("c99")  # no second warning
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1, said
    assert "fit (value)" in said[0] and "500 entries of its closed-over data" in said[0] and \
        "traced again element by element" in said[0]
    assert f"({float(W[8])!r} * sin(" in files["fit.c"]  # W[8], printed as a constant
    assert "void fit_grad(const double *a_x, double *d_x);" in files["fit.h"]
    assert F.loops and F.grad.loops  # the in-process kernels keep their loops


def test_without_loops_there_is_no_warning(caplog):
    F = symgrad.compile(fit, options=symgrad.Options(loop_min_size=0))
    with caplog.at_level(logging.WARNING, logger="symgrad.progress"):
        F.standalone("c99")
    assert not F.loops and not caplog.records


def test_a_pickled_function_of_loops_cannot_and_says_why():
    G = pickle.loads(pickle.dumps(symgrad.compile(fit)))
    with pytest.raises(symgrad.CompileError, match=r"^fit: standalone source has no loops, so the 500 entries "
                                                   r".*a Function made from a program \(a pickle, from_sympy\) does "
                                                   r"not have: .*Options\(loop_min_size=0\)"):
        G.standalone("c99")
