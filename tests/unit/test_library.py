"""library.py: which vector maths variants a built library calls (the guard of the one-lane
copy of Options.one_point), read from ELF tables without a C compiler."""
import pytest

from symgrad.build.library import one_variant_each, undefined_symbols


@pytest.mark.parametrize("names, agree", [
    ({"_ZGVdN4v_sin", "_ZGVdN4v_cos", "memcpy", "GOMP_parallel"}, True),   # vectorised, one width
    ({"sin", "cos", "exp"}, True),                                          # scalar everywhere
    ({"_ZGVdN4v_sin", "sin"}, False),            # a lane loop left scalar beside a vectorised one
    ({"_ZGVdN4v_sin", "_ZGVbN2v_sin"}, False),   # two widths
    ({"_ZGVbN4vv_powf", "_ZGVdN4vv_pow"}, True),  # float's and double's: two functions
    ({"_ZGVdN8v_sinf", "sinf", "_ZGVdN4v_sin"}, False),
    ({"_ZGVbN2vv_atan2", "atan2"}, False),
    ({"symgrad_polygamma", "lgamma", "lgamma_r"}, True),  # no vector variants: not compared
])
def test_one_variant_each_maths_function(names, agree):
    assert one_variant_each(names) is agree


def test_undefined_symbols_of_a_shared_object_and_not_of_other_files(tmp_path):
    import glob
    import os

    import numpy as np
    so = glob.glob(os.path.join(os.path.dirname(np.__file__), "*core", "_multiarray_umath*.so"))[0]
    names = undefined_symbols(so)
    assert {"PyLong_FromLong", "memcpy"} <= names  # taken from Python and the C library
    assert not any(n.startswith("PyInit_") for n in names)  # its own: defined, not taken
    other = tmp_path / "x.so"
    other.write_bytes(b"not an ELF file")
    assert undefined_symbols(other) is None
