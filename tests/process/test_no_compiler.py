"""Kernels run where no C compiler is: the cache key names what decides a kernel's bits, not
the compiler's spelling (CC=gcc, CC=cc and a missing compiler share entries), and a pickled
Function carries its compiled library to a worker without a compiler. A shipped library
whose bytes do not match its SHA-256 is never loaded."""
import io
import json
import pickle
import shutil
import subprocess

import numpy as np
import pytest

from helpers import run_python

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")]

SEED_GRAD_AT_3 = -75279680.0  # d/dx 64x(1-x)(1-2x)^2(1-8x+8x^2)^2 at 3, by hand
X = np.array([[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, 1.0, 1.0], [-1.5, 0.75, 0.1, 3.0]])

KERNELS = """
    import math, sys
    import numpy as np
    import symgrad

    def seed(x):
        return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)

    def rosen(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))

    X = np.array([[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, 1.0, 1.0], [-1.5, 0.75, 0.1, 3.0]])
    print(float(symgrad.compile(seed).grad(3.0)))
    print(symgrad.compile(rosen, shapes=[(4,)]).grad(X).tolist())
"""


def rosen_grad(x):
    """The Rosenbrock gradient in closed form."""
    g = np.zeros_like(x)
    g[:, :-1] += -400 * x[:, :-1] * (x[:, 1:] - x[:, :-1] ** 2) - 2 * (1 - x[:, :-1])
    g[:, 1:] += 200 * (x[:, 1:] - x[:, :-1] ** 2)
    return g


def no_compiler(tmp_path):
    """Environment of a process with no C compiler: CC names none, PATH holds none."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return {"CC": "/nonexistent/cc", "PATH": empty}


def entries(cache):
    return sorted(cache.glob("_sg_*.json"))


def counting_cc(tmp_path):
    """gcc, logging each call to tmp_path/cc.log."""
    log, cc = tmp_path / "cc.log", tmp_path / "cc.sh"
    cc.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec gcc "$@"\n')
    cc.chmod(0o755)
    return cc, log


def first_line_of_version(cc):
    return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0].strip()


def check_kernel_output(lines):
    assert float(lines[0]) == SEED_GRAD_AT_3
    np.testing.assert_allclose(np.array(eval(lines[1])), rosen_grad(X), rtol=1e-14)


# -- (a) the key does not name the compiler -------------------------------------------------------
def test_a_process_without_compiler_loads_kernels_another_built(tmp_path):
    cache = tmp_path / "cache"
    built = run_python(KERNELS, tmp_path, SYMGRAD_CACHE_DIR=cache, CC="gcc")
    check_kernel_output(built.lines)
    r = run_python(KERNELS, tmp_path, check=False, SYMGRAD_CACHE_DIR=cache, **no_compiler(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.lines == built.lines
    assert len(entries(cache)) == 2


def test_cc_and_gcc_share_one_entry(tmp_path):
    cache = tmp_path / "cache"
    first = run_python(KERNELS, tmp_path, SYMGRAD_CACHE_DIR=cache, CC="cc")
    assert len(entries(cache)) == 2
    second = run_python(KERNELS, tmp_path, SYMGRAD_CACHE_DIR=cache, CC="gcc")
    assert second.lines == first.lines and len(entries(cache)) == 2
    cc, log = counting_cc(tmp_path)
    third = run_python(KERNELS, tmp_path, SYMGRAD_CACHE_DIR=cache, CC=cc)
    assert third.lines == first.lines and len(entries(cache)) == 2
    assert not log.exists()  # a cache hit asks nothing of the compiler, not even its --version
    check_kernel_output(first.lines)


FAST = """
    import numpy as np
    import symgrad
    print(symgrad.compile(lambda x: np.nan_to_num(x) + np.isnan(x) * 0.0)(np.array([np.nan, np.inf, 1.0])).tolist())
"""


def test_flags_that_cc_carries_are_in_the_key(tmp_path):
    """CC="gcc -ffast-math" (isnan folded to false) builds its own kernel, never one that a
    plain CC=gcc process then loads."""
    cache = tmp_path / "cache"
    fast = run_python(FAST, tmp_path, SYMGRAD_CACHE_DIR=cache, CC="gcc -ffast-math").lines
    plain = run_python(FAST, tmp_path, SYMGRAD_CACHE_DIR=cache, CC="gcc").lines
    assert eval(plain[0]) == [0.0, np.finfo(float).max, 1.0], (fast, plain)
    assert len(entries(cache)) == 2


# -- (d) the compiler is recorded beside the entry ------------------------------------------------
def test_the_compilers_version_is_in_the_entrys_metadata(tmp_path):
    cache = tmp_path / "cache"
    run_python(KERNELS, tmp_path, SYMGRAD_CACHE_DIR=cache, CC="gcc")
    version = first_line_of_version("gcc")
    for meta in entries(cache):
        info = json.loads(meta.read_text())
        assert info["compiler"] == version and info["cc"] == "gcc", info


# -- (b) a pickle carries the library -------------------------------------------------------------
MAKER = """
    import glob, math, os, pickle, sys
    import numpy as np
    import symgrad

    def seed(x):
        return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)

    def rosen(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))

    T = np.linspace(0.0, 5.0, 3000)
    Y = 2.0 * np.exp(-1.3 * T) + 0.5

    def loss(p):  # a loop over closed-over data (program.data)
        return np.sum((p[0] * np.exp(-p[1] * T) + p[2] - Y) ** 2)

    X = np.array([[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, 1.0, 1.0], [-1.5, 0.75, 0.1, 3.0]])
    P = np.array([[1.5, 1.0, 0.2], [2.2, 1.4, 0.4]])
    R = symgrad.compile(rosen, shapes=[(4,)])
    shared = symgrad.compile(rosen, shapes=[(4,)], options=symgrad.Options(large_kernel_ops=1))
    L = symgrad.compile(loss, shapes=[(3,)])
    assert L.loops and L.program.data
    cases = {"seed_grad": (symgrad.compile(seed).grad, (3.0,)),
             "rosen_value": (R, (X,)), "rosen_grad": (R.grad, (X,)),
             "rosen_f32_grad": (symgrad.compile(rosen, shapes=[(4,)], dtype="float32").grad, (X,)),
             "shared_grad": (shared.grad, (X,)),  # runs the value_and_grad kernel
             "loss_value_and_grad": (L.value_and_grad, (P,))}
    never = symgrad.compile(lambda x: x * 0.8125)
    results = {name: fn(*args) for name, (fn, args) in cases.items()}  # built here, then pickled
    out = {name: (pickle.dumps(fn), args, results[name]) for name, (fn, args) in cases.items()}
    for lib in glob.glob(os.path.join(os.environ["SYMGRAD_CACHE_DIR"], "_sg_*.so")):
        os.remove(lib)  # pickling again reads no file: the bytes were kept
    assert all(pickle.dumps(fn) == out[name][0] for name, (fn, _) in cases.items())
    assert b"\\x7fELF" not in pickle.dumps(never)  # never built here: nothing shipped
    assert all(b"\\x7fELF" in data for data, _, _ in out.values())
    with open(sys.argv[1], "wb") as fh:
        pickle.dump(out, fh)
"""

LOADER = """
    import pickle, sys
    import numpy as np
    with open(sys.argv[1], "rb") as fh:
        out = pickle.load(fh)
    for name, (data, args, expected) in sorted(out.items(), key=lambda item: item[0].startswith("loss")):
        if name.startswith("loss"):  # no kernel, loops or not, needs sympy to be keyed or called
            print("sympy" in sys.modules)
        fn = pickle.loads(data)
        got = fn(*args)
        flat = lambda r: [a for t in r for a in flat(t)] if isinstance(r, tuple) else [np.asarray(r)]
        g, e = flat(got), flat(expected)
        assert len(g) == len(e) and all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(g, e)), name
        print(name, " ".join(str(a.dtype) for a in g))
"""


def test_a_pickle_runs_where_there_is_no_compiler_and_no_cache(tmp_path):
    run_python(MAKER, tmp_path, tmp_path / "fns.pkl", SYMGRAD_CACHE_DIR=tmp_path / "cache")
    worker = tmp_path / "worker"
    worker.mkdir()
    cache = tmp_path / "worker-cache"
    r = run_python(LOADER, worker, tmp_path / "fns.pkl", check=False, SYMGRAD_CACHE_DIR=cache,
                   **no_compiler(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.lines == ["seed_grad float64", "rosen_value float64", "rosen_grad float64", "rosen_f32_grad float32",
                       "shared_grad float64", "False", "loss_value_and_grad float64 float64"]
    assert "Warning" not in r.stderr, r.stderr
    assert len(entries(cache)) == 6  # installed as ordinary entries: a second worker process loads them
    built_by = first_line_of_version("cc")  # the maker's compiler (run_python leaves CC unset)
    for meta in entries(cache):
        info = json.loads(meta.read_text())
        assert info["shipped"] is True and info["cc"] == "cc" and info["compiler"] == built_by, info
    again = run_python(LOADER, worker, tmp_path / "fns.pkl", SYMGRAD_CACHE_DIR=cache, **no_compiler(tmp_path))
    assert again.lines == r.lines and len(entries(cache)) == 6


# -- (c) a shipped library that does not match its hash is never loaded ------------------------------
SHIP_ONE = """
    import math, pickle, sys
    import symgrad
    def seed(x):
        return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)
    F = symgrad.compile(seed).grad
    F(3.0)
    with open(sys.argv[1], "wb") as fh:
        fh.write(pickle.dumps(F))
"""

CALL_ONE = """
    import pickle, sys
    import symgrad
    with open(sys.argv[1], "rb") as fh:
        F = pickle.loads(fh.read())
    try:
        print(float(F(3.0)))
    except symgrad.CompileError as e:
        print("CompileError", str(e).replace(chr(10), " | "))
    print("sympy" in sys.modules)
"""


def test_a_tampered_shipped_library_is_never_loaded(tmp_path):
    pkl = tmp_path / "f.pkl"
    run_python(SHIP_ONE, tmp_path, pkl, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    data = bytearray(pkl.read_bytes())
    at = data.find(b"\x7fELF")
    assert at > 0, "the pickle carries no library"
    data[at + 2000] ^= 0x40  # inside the library, past its header: the pickle still reads
    pkl.write_bytes(bytes(data))
    # with a compiler: a warning, then the kernel is compiled from the pickled source (no sympy)
    cc, log = counting_cc(tmp_path)
    r = run_python(CALL_ONE, tmp_path, pkl, SYMGRAD_CACHE_DIR=tmp_path / "with-cc", CC=cc)
    assert r.lines == [repr(SEED_GRAD_AT_3), "False"]
    assert "does not match its SHA-256" in r.stderr and "not loaded" in r.stderr, r.stderr
    assert sum(" -o " in line and ".so" in line for line in log.read_text().splitlines()) == 1  # one build
    # without one: the usual CompileError (no kernel in the cache, no compiler), nothing stored
    empty = tmp_path / "no-cc"
    r = run_python(CALL_ONE, tmp_path, pkl, SYMGRAD_CACHE_DIR=empty, **no_compiler(tmp_path))
    assert r.lines[0].startswith("CompileError") and "no C compiler: '/nonexistent/cc'" in r.lines[0]
    assert "does not match its SHA-256" in r.stderr
    assert entries(empty) == []


def test_a_pickle_whose_library_was_built_for_another_key_compiles_from_source(tmp_path):
    """Another machine (CPU, Python ABI...) computes another key: the shipped bytes are not used."""
    pkl = tmp_path / "f.pkl"
    run_python(SHIP_ONE, tmp_path, pkl, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    fmt, version, digest, state = _Header(pkl).load()
    state = pickle.loads(state)
    state["library"] = dict(state["library"], key="0" * 40)  # as if built elsewhere
    pkl.write_bytes(pickle.dumps(_Reduced((fmt, version, digest, pickle.dumps(state)))))
    cc, log = counting_cc(tmp_path)
    cache = tmp_path / "other"
    r = run_python(CALL_ONE, tmp_path, pkl, SYMGRAD_CACHE_DIR=cache, CC=cc)
    assert r.lines == [repr(SEED_GRAD_AT_3), "False"] and "Warning" not in r.stderr
    assert sum(" -o " in line and ".so" in line for line in log.read_text().splitlines()) == 1  # one build
    assert not list(cache.glob("_sg_0000*"))


class _Header(pickle.Unpickler):
    """Reads a pickled Function's arguments to symgrad's _unpickle, without unpickling it."""

    def __init__(self, path):
        super().__init__(io.BytesIO(path.read_bytes()))

    def find_class(self, module, name):
        assert (module, name) == ("symgrad.function", "_unpickle")
        return lambda *args: args


class _Reduced:
    """Pickles as a Function whose _unpickle arguments are ``args``."""

    def __init__(self, args):
        self.args = args

    def __reduce__(self):
        from symgrad.function import _unpickle
        return _unpickle, self.args
