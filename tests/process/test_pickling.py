"""Functions travel by value: pickled in one process (defined in its __main__), called in
another that cannot import where they were defined, through pickle, cloudpickle and every
multiprocessing start method; mismatched versions and missing compilers are clear errors."""
import pickle
import tempfile

import numpy as np
import pytest

import symgrad
from helpers import run_python

pytestmark = pytest.mark.slow

MAKER = """
    import math, pickle, sys
    import numpy as np
    import sympy as sp
    import symgrad

    def f(x, y):
        return math.exp(-x[0]) * (x[1] ** 3 + y) + math.sin(x[0] * x[1])

    def v(x):
        return np.array([x[0] * x[1], math.log(1 + x[1] ** 2), x[0] ** 3])

    a, b = sp.symbols("a b", real=True)
    S = symgrad.from_sympy(sp.exp(a) * sp.cos(b) + a ** 2, [a, b])
    X = np.array([[0.3, 0.7], [1.1, -0.4], [-2.0, 0.25]])
    Y = np.array([0.5, 2.0, -1.0])
    out = {}
    for dtype in ("float64", "float32"):
        F = symgrad.compile(f, shapes=[(2,), ()], dtype=dtype)
        V = symgrad.compile(v, shapes=[(2,)], dtype=dtype)
        Sd = symgrad.from_sympy(sp.exp(a) * sp.cos(b) + a ** 2, [a, b], dtype=dtype)
        for name, fn, args in (("value", F, (X, Y)), ("grad", F.grad, (X, Y)), ("hessian", F.hessian, (X, Y)),
                               ("jacobian", V.jacobian, (X,)), ("sympy", Sd.grad, (X[:, 0], X[:, 1])),
                               ("sympy_value", Sd, (X[:, 0], X[:, 1])), ("hvp", F.hvp, (X, Y, X[::-1], Y))):
            if sys.argv[1] == "called":
                fn(*args)  # compiled here: the worker finds it in the shared cache
            out[name, dtype] = (pickle.dumps(fn), args, fn(*args))
    with open(sys.argv[2], "wb") as fh:
        pickle.dump(out, fh)
"""

LOADER = """
    import pickle, sys
    import numpy as np
    with open(sys.argv[1], "rb") as fh:
        out = pickle.load(fh)
    for (name, dtype), (data, args, expected) in sorted(out.items()):
        fn = pickle.loads(data)
        got = fn(*args)
        flat = lambda r: [a for t in r for a in flat(t)] if isinstance(r, tuple) else [np.asarray(r)]
        g, e = flat(got), flat(expected)
        assert len(g) == len(e) and all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(g, e)), name
        print(name, dtype, fn.py_name, fn.kind, str(fn.dtype))
    print("sympy" in sys.modules)
    print("__main__" in repr([getattr(v, "__module__", "") for v in vars(sys.modules["__main__"]).values()]))
"""


def _make(tmp_path, how, cache):
    made = tmp_path / "maker"
    made.mkdir()
    run_python(MAKER, made, how, tmp_path / "functions.pkl", SYMGRAD_CACHE_DIR=cache)
    loader = tmp_path / "loader"  # another directory: the maker's script cannot be imported from there
    loader.mkdir()
    return loader


def test_round_trip_in_a_process_that_cannot_import_the_defining_module(tmp_path):
    cache = tmp_path / "cache"
    loader = _make(tmp_path, "called", cache)
    r = run_python(LOADER, loader, tmp_path / "functions.pkl", SYMGRAD_CACHE_DIR=cache)
    kinds = {tuple(line.split()[:2]) for line in r.lines[:-2]}
    assert kinds == {(k, d) for k in ("value", "grad", "hessian", "jacobian", "sympy", "sympy_value", "hvp")
                     for d in ("float64", "float32")}
    assert r.lines[-2] == "False"  # kernels loaded from the shared cache: no sympy, no tracing


def test_worker_with_an_empty_cache_uses_what_the_pickle_carries(tmp_path):
    loader = _make(tmp_path, "called", tmp_path / "cache")
    r = run_python(LOADER, loader, tmp_path / "functions.pkl", SYMGRAD_CACHE_DIR=tmp_path / "other-cache")
    assert len(r.lines) == 16
    assert r.lines[-2] == "False"  # the pickled libraries were installed: no sympy, no compiler needed


def test_pickled_before_any_call_is_traced_at_pickling_and_compiled_by_the_worker(tmp_path):
    loader = _make(tmp_path, "fresh", tmp_path / "cache")
    r = run_python(LOADER, loader, tmp_path / "functions.pkl", SYMGRAD_CACHE_DIR=tmp_path / "other-cache")
    assert len(r.lines) == 16


def test_worker_without_compiler_or_cached_kernel_names_both(tmp_path):
    loader = _make(tmp_path, "fresh", tmp_path / "cache")  # pickled before any call: no library travels
    empty = tmp_path / "empty-cache"
    r = run_python(LOADER, loader, tmp_path / "functions.pkl", check=False, SYMGRAD_CACHE_DIR=empty,
                   CC="no-such-cc-symgrad")
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("symgrad.errors.CompileError")
    assert str(empty) in err and "'no-such-cc-symgrad' is not on PATH" in err


POOL = """
    import math, multiprocessing as mp, sys
    import numpy as np
    import symgrad

    def rosen(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))

    if __name__ == "__main__":
        F = symgrad.compile(rosen, shapes=[(4,)])
        X = np.random.default_rng(0).uniform(-2, 2, (4000, 4))
        chunks = np.array_split(X, 8)
        with mp.get_context(sys.argv[1]).Pool(2) as pool:
            grads = pool.map(F.grad, chunks)
            hess = pool.map(F.hessian, chunks[:2])
        assert np.array_equal(np.concatenate(grads), F.grad(X))
        assert np.array_equal(np.concatenate(hess), F.hessian(X[:len(chunks[0]) + len(chunks[1])]))
        print("ok", sys.argv[1])
"""


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_multiprocessing_pool_with_each_start_method(tmp_path, method):
    # a short TMPDIR: the forkserver's socket lives there, and a socket path has at most 107 bytes
    with tempfile.TemporaryDirectory(prefix="sgmp") as short:
        r = run_python(POOL, tmp_path, method, SYMGRAD_CACHE_DIR=tmp_path / "cache", TMPDIR=short)
    assert r.lines == ["ok " + method]


def _g(x):
    return x[0] ** 2 * math_sin(x[1])


def math_sin(t):
    import math
    return math.sin(t)


def test_pickle_and_cloudpickle_in_process_round_trip():
    F = symgrad.compile(_g, shapes=[(2,)])
    x = np.array([[0.5, 1.0], [2.0, -3.0]])
    modules = [pickle]
    try:
        import cloudpickle
        modules.append(cloudpickle)
    except ImportError:
        pass
    for mod in modules:
        for fn in (F, F.grad, F.hessian, F.value_and_grad):
            back = pickle.loads(mod.dumps(fn))
            got, want = back(x), fn(x)
            if isinstance(want, tuple):
                assert all(np.array_equal(a, b) for a, b in zip(got, want))
            else:
                assert np.array_equal(got, want)
            assert back.args == fn.args and back.kind == fn.kind and back.dtype == fn.dtype
    back = pickle.loads(pickle.dumps(F))
    np.testing.assert_allclose(back.grad(x), np.stack([2 * x[:, 0] * np.sin(x[:, 1]),
                                                       x[:, 0] ** 2 * np.cos(x[:, 1])], -1), rtol=1e-15)


class _Altered:
    """A pickle of F whose header says what ``change`` makes it say."""

    def __init__(self, F, change):
        self.F, self.change = F, change

    def __reduce__(self):
        fn, (fmt, version, digest, state) = self.F.__reduce__()
        return fn, self.change(fmt, version, digest, state)


def test_a_pickle_of_another_version_or_build_is_refused_clearly():
    F = symgrad.compile(lambda x: x * x)
    old = pickle.dumps(_Altered(F, lambda f, v, d, s: (f, "0.0.9", d, s)))
    with pytest.raises(pickle.UnpicklingError, match=r"symgrad 0\.0\.9 .*this is symgrad 0\.1\.0"):
        pickle.loads(old)
    unreadable = pickle.dumps(_Altered(F, lambda f, v, d, s: (f, "0.0.9", d, b"state of another layout")))
    with pytest.raises(pickle.UnpicklingError, match=r"symgrad 0\.0\.9"):  # the header is read first
        pickle.loads(unreadable)
    fmt = pickle.dumps(_Altered(F, lambda f, v, d, s: (f + 1, v, d, s)))
    with pytest.raises(pickle.UnpicklingError, match="pickle format"):
        pickle.loads(fmt)
    other = pickle.dumps(_Altered(F, lambda f, v, d, s: (f, v, "0" * 64, s)))
    with pytest.raises(pickle.UnpicklingError, match="another build of symgrad"):
        pickle.loads(other)
    assert pickle.loads(pickle.dumps(F))(3.0) == 9.0


def test_unbound_method_function_refuses_pickling_bound_one_travels():
    class Model:
        def __init__(self, k):
            self.k = k

        @symgrad.compile
        def energy(self, x):
            return self.k * x ** 2

    with pytest.raises(TypeError, match=r"pickle obj\.energy"):
        pickle.dumps(Model.energy)
    m = Model(3.0)
    back = pickle.loads(pickle.dumps(m.energy.grad))
    assert back(2.0) == 12.0


SPARSE_MAKER = """
    import pickle, sys
    import numpy as np
    import symgrad

    def v(x):
        return np.array([x[0] * x[1], np.sin(x[2]), x[0] ** 3])

    V = symgrad.compile(v, shapes=[(3,)])
    x = np.array([0.3, 0.7, -1.2])
    with open(sys.argv[1], "wb") as fh:
        pickle.dump((V.jacobian, x, V.jacobian(x, sparse=True).toarray()), fh)
"""

SPARSE_LOADER = """
    import pickle, sys
    import numpy as np
    with open(sys.argv[1], "rb") as fh:
        J, x, expected = pickle.load(fh)
    got = J(x, sparse=True)
    print(got.nnz, np.array_equal(got.toarray(), expected))
"""


SPARSE_MAKER_LOOPS = SPARSE_MAKER.replace(
    "return np.array([x[0] * x[1], np.sin(x[2]), x[0] ** 3])",  # arrays kept as loops, the sparse form too
    "return np.concatenate([x[1:] - x[:-1] ** 2, np.sin(x[::2] * x[1::2]), [x[0] * x[-1]]])").replace(
    "shapes=[(3,)]", "shapes=[(300,)]").replace("x = np.array([0.3, 0.7, -1.2])", "x = np.linspace(-1, 1, 300)")


@pytest.mark.parametrize("maker, nnz", [(SPARSE_MAKER, 4), (SPARSE_MAKER_LOOPS, 2 * 299 + 300 + 2)])
def test_a_sparse_jacobian_travels_with_its_kernel_to_a_worker_without_compiler(tmp_path, maker, nnz):
    made, loader = tmp_path / "maker", tmp_path / "loader"
    made.mkdir()
    loader.mkdir()
    run_python(maker, made, tmp_path / "j.pkl", SYMGRAD_CACHE_DIR=tmp_path / "cache")
    r = run_python(SPARSE_LOADER, loader, tmp_path / "j.pkl", SYMGRAD_CACHE_DIR=tmp_path / "other-cache",
                   CC="no-such-cc-symgrad")
    assert r.lines == [f"{nnz} True"]
