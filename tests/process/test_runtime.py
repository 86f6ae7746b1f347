"""Threads, the disk cache and processes: what must hold outside a single call."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import symgrad
from helpers import ROOT, run_python



def lj4(p):
    e = 0.0
    for i in range(4):
        for j in range(i + 1, 4):
            r2 = sum((p[3 * i + k] - p[3 * j + k]) ** 2 for k in range(3))
            s6 = 1.0 / (r2 * r2 * r2)
            e = e + 4.0 * (s6 * s6 - s6)
    return e


def test_eight_threads_bit_identical_to_serial():
    G = symgrad.compile(lj4, shapes=[(12,)]).grad
    rng = np.random.default_rng(5)
    base = np.array([0, 0, 0, 1.1, 0, 0, 0, 1.1, 0, 0, 0, 1.1])
    inputs = [base + rng.uniform(-0.05, 0.05, (20_000 + 1000 * k, 12)) for k in range(8)]
    serial = [G(x) for x in inputs]
    results = [None] * 8
    barrier = threading.Barrier(8)

    def work(k):
        barrier.wait()
        for _ in range(3):
            results[k] = G(inputs[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s, r in zip(serial, results):
        assert np.array_equal(s, r)
    # and per point: the batch loop's parallel split does not change any value
    one_by_one = np.array([G(row) for row in inputs[0][:200]])
    assert np.array_equal(one_by_one, serial[0][:200])


SCRIPT = textwrap.dedent("""
    import math, sys
    import numpy as np
    import symgrad
    def f(x, y):
        return math.atan2(y, x) * math.exp(-x * x) + math.pow(x, 3) * y
    g = symgrad.compile(f).grad(np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -3.0]))
    np.set_printoptions(precision=17)
    print(repr(np.stack(g)))
""")


@pytest.mark.slow
def test_cached_library_loads_without_a_compiler(tmp_path):
    cache = tmp_path / "cache"
    first = run_python(SCRIPT, tmp_path, SYMGRAD_CACHE_DIR=cache)
    assert first.returncode == 0, first.stderr
    assert list(cache.glob("_sg_*.so")) or list(cache.glob("_sg_*.pyd"))
    # a second process with no compiler anywhere on PATH
    second = run_python(SCRIPT, tmp_path, SYMGRAD_CACHE_DIR=cache, PATH=tmp_path / "empty")
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.25, -3.0])
    gx = -y / (x * x + y * y) * np.exp(-x * x) - 2 * x * np.arctan2(y, x) * np.exp(-x * x) + 3 * x * x * y
    assert np.allclose(eval(first.stdout.replace("array", "np.array"))[0], gx, rtol=1e-14)
    # with an empty cache the same process must fail loudly, not guess
    third = run_python(SCRIPT, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "other", PATH=tmp_path / "empty", check=False)
    assert third.returncode != 0 and "CompileError" in third.stderr


@pytest.mark.slow
def test_concurrent_processes_share_one_cache_entry(tmp_path):
    cache = tmp_path / "cache"
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(cache), PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert len({o[0] for o in outs}) == 1
    assert not list(cache.glob(".build-*"))  # temporary build folders are gone


@pytest.mark.slow
def test_a_kernel_compiled_in_an_atexit_handler(tmp_path):
    """A compile made while the interpreter shuts down (an atexit handler) works: its parallel
    units run on plain threads (concurrent.futures' import registers an atexit hook, refused then)."""
    r = run_python("""
        import atexit, math, symgrad
        atexit.register(lambda: print(symgrad.compile(lambda x: 64 * x * (1 - x) * math.pow(1 - 2 * x, 2)).grad(3.0)))
    """, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    assert r.lines == [repr(64 * (1 - 2 * 3.0) * (1 - 2 * 3.0) * (1 - 2 * 3.0) - 4 * 64 * 3.0 * (1 - 3.0) * (1 - 2 * 3.0))]
