"""The two call paths give the same results: calls the kernel takes as they are run in C
(csrc/symgrad_call.c), arguments without batch dimensions shared by every point included;
every other form (strided, other dtypes, byte order, subclasses, broadcasting of batch
dimensions, misaligned, out= that is strided, overlapping or read-only) goes through the
Python path. Each refusal is checked against a closed form: a form the C path took when it
should not would read or write the wrong memory and fail here."""
import math
import threading

import numpy as np
import pytest

import symgrad


def h(x, v):
    return x * v[0] ** 2 + math.sin(x) * v[1] - v[2] / (1 + x * x)


H = symgrad.compile(h, [(), (3,)])


def closed_value(x, v):
    x, v = np.asarray(x, np.float64), np.asarray(v, np.float64)
    return x * v[..., 0] ** 2 + np.sin(x) * v[..., 1] - v[..., 2] / (1 + x * x)


def closed_grad(x, v):
    x, v = np.asarray(x, np.float64), np.asarray(v, np.float64)
    gx = v[..., 0] ** 2 + np.cos(x) * v[..., 1] + v[..., 2] * 2 * x / (1 + x * x) ** 2
    gv = np.stack(np.broadcast_arrays(2 * x * v[..., 0], np.sin(x), -1 / (1 + x * x)), axis=-1)
    return gx, gv


RNG = np.random.default_rng(7)
X = RNG.uniform(-2, 2, 6)
V = RNG.uniform(-2, 2, (6, 3))


def _big_endian(a):
    return a.astype(a.dtype.newbyteorder(">"))


def _misaligned(a):
    buf = np.zeros(a.nbytes + 1, np.uint8)
    m = buf[1:].view(np.float64).reshape(a.shape)
    m[...] = a
    assert not m.flags.aligned
    return m


class Tagged(np.ndarray):
    pass


# (name, x as passed, v as passed): each a form the C path refuses, beside the plain one it takes
FORMS = [
    ("contiguous float64", X, V),
    ("strided x", np.repeat(X, 2)[::2], V),
    ("Fortran-order v", X, np.asfortranarray(V)),
    ("float32 arrays", X.astype(np.float32), V.astype(np.float32)),
    ("int arrays", np.arange(6) - 3, np.arange(18).reshape(6, 3) % 5 - 2),
    ("big-endian", _big_endian(X), _big_endian(V)),
    ("misaligned", _misaligned(X), _misaligned(V)),
    ("subclass", X.view(Tagged), V.view(Tagged)),
    ("lists", list(X), V.tolist()),
    ("broadcast v", X, V[0]),
    ("shared v beside a batch of two dimensions", X.reshape(2, 3), V[0]),
    ("Python int x with an array v", 2, V),
    ("v of a batch of one beside a batch of six (broadcast)", X, V[:1]),
    ("broadcast x", X[:, None], V[None, :2]),
    ("scalar x with an array v", 0.75, V),
    ("0-d arrays", np.float64(0.75), np.asarray(V[0])),
]


@pytest.mark.parametrize("name, x, v", FORMS, ids=[f[0] for f in FORMS])
def test_each_form_of_the_arguments_gives_the_closed_form(name, x, v):
    ref_v = closed_value(x, v)
    ref_gx, ref_gv = closed_grad(x, v)
    val = H(x, v)
    gx, gv = H.grad(x, v)
    np.testing.assert_allclose(val, ref_v, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(gv, ref_gv, rtol=1e-13, atol=1e-14)
    assert np.shape(val) == np.shape(ref_v) and np.shape(gv) == np.shape(ref_gv)
    # and bit for bit what the plain contiguous float64 call gives for the same numbers
    xs, vs = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(v, np.float64)[..., 0])
    plain = H.grad(np.array(xs), np.array(np.broadcast_to(np.asarray(v, np.float64), xs.shape + (3,))))
    np.testing.assert_array_equal(gx, plain[0])
    np.testing.assert_array_equal(gv, plain[1])


def test_a_shared_argument_is_repeated_a_chunk_at_a_time():
    """A parameter vector shared by every point of a batch: the C path repeats it into scratch
    one chunk of points at a time (1 MiB, here 131 points of 8,000 bytes), each chunk's points
    and results at their own offsets: every point's result is its closed form."""
    F = symgrad.compile(lambda x, w: x * w[0] + w[999] * x * x + w[500], [(), (1000,)])
    w = RNG.uniform(-2, 2, 1000)
    x = RNG.uniform(-2, 2, 1001)
    want = x * w[0] + w[999] * x * x + w[500]
    np.testing.assert_allclose(F(x, w), want, rtol=1e-14, atol=1e-14)
    out = np.full(1001, np.nan)
    assert F(x, w, out=out) is out
    np.testing.assert_array_equal(out, F(x, np.tile(w, (1001, 1))))
    gx, gw = F.grad(x, w)
    np.testing.assert_allclose(gx, w[0] + 2 * w[999] * x, rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(gw[:, 0], x)
    np.testing.assert_array_equal(gw[:, 999], x * x)
    np.testing.assert_array_equal(gw[:, 500], np.ones(1001))


def test_several_shared_arguments_each_keep_their_own_numbers():
    """Two shared arrays and two Python numbers beside a batch of two dimensions whose chunks
    (1 MiB of shared numbers: 149 points) cross its rows; float64 and float32, with out= too."""
    def f(x, a, w, b, u):
        return x * w[0] + a * w[699] + b * u[1] + x * x * u[0]
    w, u = RNG.uniform(-2, 2, 700), RNG.uniform(-2, 2, 2)
    x = RNG.uniform(-2, 2, (5, 300))
    want = x * w[0] + 0.5 * w[699] + 3 * u[1] + x * x * u[0]
    for dtype in ("float64", "float32"):
        F = symgrad.compile(f, [(), (), (700,), (), (2,)], dtype=dtype)
        a, b = (0.5, 3) if dtype == "float64" else (np.float32(0.5), np.float32(3))
        args = (x.astype(dtype), a, w.astype(dtype), b, u.astype(dtype))
        got = F(*args)
        tiled = F(args[0], *[np.broadcast_to(np.asarray(v, dtype), x.shape + np.shape(v)).copy() for v in args[1:]])
        np.testing.assert_array_equal(got, tiled)
        np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == "float64" else 1e-5, atol=1e-12)
        out = np.empty(x.shape, dtype)
        assert F(*args, out=out) is out
        np.testing.assert_array_equal(out, tiled)
        gx, ga, gw, gb, gu = F.grad(*args)
        np.testing.assert_array_equal(gw[..., 699], np.broadcast_to(np.asarray(a, dtype), x.shape))
        np.testing.assert_array_equal(gu[..., 0], args[0] * args[0])


def test_a_shared_argument_past_a_chunk_goes_one_point_at_a_time():
    """A shared argument of 1.6 MB: one point a chunk, every point its closed form."""
    F = symgrad.compile(lambda x, w: x * w[0] - w[199_999], [(), (200_000,)])
    w = RNG.uniform(-2, 2, 200_000)
    x = RNG.uniform(-2, 2, 7)
    np.testing.assert_array_equal(F(x, w), x * w[0] - w[199_999])


def test_calls_with_shared_arguments_run_in_c(monkeypatch):
    """The forms with shared arguments are taken by the C path (a parameter vector beside a
    batch of states went the Python path: 60 us a call for two states, 1.8 us in C)."""
    taken = []
    python_path = type(H)._call
    monkeypatch.setattr(type(H), "_call", lambda self, *a, **k: taken.append(a) or python_path(self, *a, **k))
    G = H.grad
    G(X, V[0])
    G(0.75, V)
    G(2, V)
    H(X.reshape(2, 3), V[0], out=np.empty((2, 3)))
    assert taken == []
    G(X, V[:1])  # batch dimensions that broadcast: the Python path
    assert len(taken) == 1


def test_a_python_int_past_float_range_beside_a_batch_raises_overflow():
    """The C path leaves such a number to the Python path, whose float() raises; an int that
    rounds (2**60 + 1) is converted as float() converts it."""
    with pytest.raises(OverflowError):
        H(10 ** 400, V)
    with pytest.raises(OverflowError):
        H.grad(10 ** 400, V, out=(np.empty(6), np.empty((6, 3))))
    assert H(2 ** 60 + 1, V[0]) == closed_value(float(2 ** 60 + 1), V[0])


def test_out_overlapping_a_shared_argument_gets_the_results_of_the_inputs_as_they_were():
    F = symgrad.compile(lambda x, v: x * v[0] + v[1], [(), (2,)])
    buf = np.array([3.0, 1.0, 0.0, 0.0])
    x = np.array([1.0, 2.0, 5.0, 7.0])
    F(x, buf[:2], out=buf)  # the results overwrite v while the points still need it
    np.testing.assert_array_equal(buf, x * 3.0 + 1.0)


def test_scalar_calls_return_numpy_scalars_of_the_closed_form():
    G = symgrad.compile(lambda x: x ** 3 - 2 * x).grad
    for x in (3.0, 3, np.float64(3.0), True, 2 ** 60):
        r = G(x)
        assert type(r) is np.float64, (x, type(r))
        assert r == 3 * float(x) ** 2 - 2, x
    assert G(-0.0) == -2.0


@pytest.mark.parametrize("form", ["contiguous", "strided", "list"])
def test_out_arrays_of_each_form_are_filled(form):
    gx = np.empty(6)
    gv = np.full((6, 6), np.nan)[:, ::2] if form == "strided" else np.empty((6, 3))
    out = [gx, gv] if form == "list" else (gx, gv)
    res = H.grad(X, V, out=out)
    assert res is out
    ref_gx, ref_gv = closed_grad(X, V)
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-13)
    np.testing.assert_allclose(gv, ref_gv, rtol=1e-13)


def test_out_overlapping_an_input_gets_the_results_of_the_inputs_as_they_were():
    F = symgrad.compile(lambda x: x * x + 1.0)
    x = np.linspace(-1, 1, 9)
    ref = x * x + 1.0
    F(x, out=x)
    np.testing.assert_array_equal(x, ref)
    buf = np.arange(10.0)
    F(buf[1:], out=buf[:-1])  # shifted overlap
    np.testing.assert_array_equal(buf[:-1], np.arange(1.0, 10.0) ** 2 + 1)


def test_out_arrays_that_cannot_take_the_results_raise_as_before():
    with pytest.raises(TypeError, match="out= array has dtype float32, expected float64"):
        H.grad(X, V, out=(np.empty(6, np.float32), np.empty((6, 3))))
    ro = np.empty(6)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        H.grad(X, V, out=(ro, np.empty((6, 3))))
    with pytest.raises(ValueError, match=r"out= array has shape \(5,\), expected \(6,\)"):
        H.grad(X, V, out=(np.empty(5), np.empty((6, 3))))
    both = np.empty(24)
    with pytest.raises(ValueError, match="overlap in memory"):
        H.grad(X, V, out=(both[:6], both[:18].reshape(6, 3)))
    with pytest.raises(TypeError, match="out= must have the structure"):
        H.grad(X, V, out=np.empty(6))


def test_argument_errors_are_the_python_paths():
    with pytest.raises(ValueError, match=r"argument 'v' must have trailing \(core\) shape \(3,\)"):
        H(X, V[:, :2])
    with pytest.raises(TypeError, match=r"takes 2 argument\(s\) \(x, v\), got 1"):
        H(X)
    with pytest.raises(TypeError, match="complex"):
        H(X + 0j, V)
    with pytest.raises(ValueError, match="do not broadcast"):
        H(X, V[:5])


def test_threads_calling_at_once_each_get_their_own_results():
    G = H.grad
    ref = closed_grad(X, V)
    errors = []

    def work(k):
        for i in range(300):
            j = (i + k) % 6
            gx, gv = G(X[j], V[j])
            if abs(gx - ref[0][j]) > 1e-12 * max(1, abs(ref[0][j])):
                errors.append((k, i))
            bx, bv = G(X, V)
            if not np.allclose(bx, ref[0], rtol=1e-13):
                errors.append((k, i, "batch"))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_empty_and_large_batches_take_the_python_path_with_the_same_results():
    F = symgrad.compile(lambda x: math.exp(-x) * x)
    assert F(np.empty(0)).shape == (0,)
    x = np.linspace(0, 5, 300_001)  # past stream_bytes: the store modes
    np.testing.assert_allclose(F(x), np.exp(-x) * x, rtol=1e-15)


def test_results_of_more_than_eight_dimensions():
    """Review find: the C path kept 8 core dimensions and refused to load such a kernel."""
    M = symgrad.compile(lambda a: a @ a, [(2, 2)])
    J4 = M.jacobian.jacobian.jacobian.jacobian(np.eye(2))
    assert J4.shape == (2,) * 10
    # d^4 (A A) / dA^4 = 0; the first Jacobian, d(AA)_ij/dA_kl = d_ik A_lj + A_ik d_jl, at A = I
    assert not J4.any()
    J1 = M.jacobian(np.eye(2))
    d = np.eye(2)
    np.testing.assert_array_equal(J1, np.einsum("ik,lj->ijkl", d, d) + np.einsum("ik,jl->ijkl", d, d))


def test_a_cycle_through_a_subclass_of_the_base_type_is_collected_without_harm():
    """Review find: the base type's traverse visited the type as well as the subclass's own
    traverse did, so the collector could clear a class still in use."""
    import gc

    from symgrad.build.library import Callable

    class Sub(Callable):
        def _call(self, *a):
            return 1
    a = Sub()
    a.me = a
    del a
    gc.collect()
    assert Sub.__mro__[0] is Sub and Sub()() == 1


def test_a_cheap_kernel_is_measured_cheap_from_its_first_call():
    """When a kernel loads, its time per point decides threads and GIL release; the first call
    of a new library (binding libm's and libmvec's symbols: tens of microseconds) is not taken
    as its cost. A one-point call of sin and exp then stays on the calling thread, GIL held."""
    F = symgrad.compile(lambda x, y: math.sin(x) * math.exp(y) + math.cos(x * y) / math.log1p(y * y))
    F(0.3, 0.7)
    plan = F.plan
    assert plan.par_points >= 16
    assert plan.kernel.gil_points >= 2
