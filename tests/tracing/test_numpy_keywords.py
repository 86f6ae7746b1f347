"""Every numpy (and scipy.special) function symgrad traces takes numpy's own parameter names:
each is called once with its arguments by position and once with every argument numpy lets
a caller name given by name, and both calls must trace to the same program (or fail alike).
IR-level: no C compiler."""
import inspect

import numpy as np
import pytest
import scipy.special as ss

import symgrad
from symgrad.tracing import _trace, trace
from symgrad.tracing import lazy, registry, special, standins

C3 = np.array([0.5, -1.0, 2.0])

# numpy function (path) -> (argument shapes, sample call: traced arguments -> (args, kwargs));
# shapes of at least 128 entries stay loops (lazy.FUNCTIONS)
SAMPLES = {
    "zeros": ((), lambda x: (((2, 3), float, "C"), {})),
    "ones": ((), lambda x: (((3,), None, "C"), {})),
    "empty": ((), lambda x: (((3,), None), {})),
    "zeros_like": ((3,), lambda x: ((x, None, "K", True, (2,)), {})),
    "ones_like": ((3,), lambda x: ((x, None, "K", True, None), {})),
    "empty_like": ((3,), lambda x: ((x, None, "K"), {})),
    "full": ((), lambda x: (((2,), x, None, "C"), {})),
    "full_like": ((3,), lambda x: ((x, x[0], None, "K", True, None), {})),
    "array": ((3,), lambda x: ((x, None), {"copy": True, "ndmin": 2})),
    "asarray": ((3,), lambda x: ((list(x), None, None), {})),
    "asanyarray": ((3,), lambda x: ((x, None, None), {})),
    "ascontiguousarray": ((3,), lambda x: ((x, None), {})),
    "eye": ((), lambda x: ((3, 4, 1, float, "C"), {})),
    "identity": ((), lambda x: ((3, None), {})),
    "sum": ((2, 3), lambda x: ((x, 1, None, None, True), {})),
    "prod": ((2, 3), lambda x: ((x, 0, None, None, False, 2.0), {})),
    "mean": ((2, 3), lambda x: ((x, 1, None, None, True), {})),
    "average": ((2, 3), lambda x: ((x, 1, C3, False), {"keepdims": True})),
    "var": ((2, 3), lambda x: ((x, 1, None, None, 1, True), {})),
    "std": ((2, 3), lambda x: ((x, 0, None, None, 0, False), {})),
    "max": ((2, 3), lambda x: ((x, 1, None, True, -5.0), {})),
    "min": ((2, 3), lambda x: ((x, 0, None, False), {})),
    "amax": ((2, 3), lambda x: ((x, 1, None, False), {})),
    "amin": ((2, 3), lambda x: ((x, 1, None, True), {})),
    "ptp": ((2, 3), lambda x: ((x, 1, None, True), {})),
    "cumsum": ((2, 3), lambda x: ((x, 1, None, None), {})),
    "cumprod": ((2, 3), lambda x: ((x, 0, None, None), {})),
    "diff": ((2, 3), lambda x: ((x, 2, -1, 0.5, 1.5), {})),
    "dot": ((3,), lambda x: ((x, C3, None), {})),
    "vdot": ((3,), lambda x: ((x, C3), {})),
    "inner": ((3,), lambda x: ((x, C3), {})),
    "outer": ((3,), lambda x: ((x, C3, None), {})),
    "matmul": ((2, 3), lambda x: ((x, C3), {})),
    "einsum": ((2, 3), lambda x: (("ij,j->i", x, C3), {"optimize": False})),
    "tensordot": ((2, 3), lambda x: ((x, C3, 1), {})),
    "kron": ((3,), lambda x: ((x, C3[:2]), {})),
    "cross": ((3,), lambda x: ((x, C3, -1, -1, -1, None), {})),
    "trace": ((3, 3), lambda x: ((x, 1, 0, 1, None, None), {})),
    "diag": ((3,), lambda x: ((x, 1), {})),
    "diagonal": ((3, 3), lambda x: ((x, 1, 0, 1), {})),
    "tril": ((3, 3), lambda x: ((x, -1), {})),
    "triu": ((3, 3), lambda x: ((x, 1), {})),
    "stack": ((3,), lambda x: (([x, C3], 1, None), {})),
    "concatenate": ((2, 3), lambda x: (((x, np.ones((2, 1))), 1, None), {})),
    "hstack": ((3,), lambda x: (((x, C3),), {})),
    "vstack": ((3,), lambda x: (((x, C3),), {})),
    "column_stack": ((3,), lambda x: (((x, C3),), {})),
    "block": ((3,), lambda x: (([x, C3],), {})),
    "reshape": ((2, 3), lambda x: ((x, (3, 2), "F"), {})),
    "ravel": ((2, 3), lambda x: ((x, "F"), {})),
    "transpose": ((2, 3), lambda x: ((x, (1, 0)), {})),
    "swapaxes": ((2, 3), lambda x: ((x, 0, 1), {})),
    "moveaxis": ((2, 3), lambda x: ((x, 0, -1), {})),
    "flip": ((2, 3), lambda x: ((x, 1), {})),
    "fliplr": ((2, 3), lambda x: ((x,), {})),
    "flipud": ((2, 3), lambda x: ((x,), {})),
    "roll": ((2, 3), lambda x: ((x, 1, 1), {})),
    "pad": ((3,), lambda x: ((x, 1, "constant"), {"constant_values": 2.0})),
    "polyval": ((3,), lambda x: ((x, 0.5), {})),
    "atleast_1d": ((), lambda x: ((x,), {})),
    "atleast_2d": ((3,), lambda x: ((x,), {})),
    "squeeze": ((1, 3), lambda x: ((x, 0), {})),
    "expand_dims": ((3,), lambda x: ((x, (0, 2)), {})),
    "broadcast_to": ((3,), lambda x: ((x, (2, 3), False), {})),
    "repeat": ((3,), lambda x: ((x, 2, 0), {})),
    "tile": ((3,), lambda x: ((x, 2), {})),
    "take": ((3,), lambda x: ((x, [2, 0], 0, None, "raise"), {})),
    "nansum": ((2, 3), lambda x: ((x, 1, None, None, True), {})),
    "nanprod": ((2, 3), lambda x: ((x, 0, None, None, True, 2.0), {})),
    "nanmax": ((2, 3), lambda x: ((x, 1, None, True, -5.0), {})),
    "nanmin": ((2, 3), lambda x: ((x, 0, None, False), {})),
    "nanmean": ((2, 3), lambda x: ((x, 1, None, None, True), {})),
    "nanvar": ((2, 3), lambda x: ((x, 1, None, None, 1, True), {})),
    "nanstd": ((2, 3), lambda x: ((x, 0, None, None, 0, False), {})),
    "nancumsum": ((2, 3), lambda x: ((x, 1, None, None), {})),
    "nancumprod": ((2, 3), lambda x: ((x, None, None, None), {})),
    "real": ((3,), lambda x: ((x,), {})),
    "imag": ((), lambda x: ((x,), {})),
    "real_if_close": ((3,), lambda x: ((x, 100), {})),
    "trapezoid": ((3,), lambda x: ((x, None, 0.5, -1), {})),
    "where": ((3,), lambda x: ((x > 0, x, C3), {})),
    "clip": ((3,), lambda x: ((x, -0.5, None, None), {})),
    "select": ((3,), lambda x: (([x > 0, x < -1], [x, C3], 2.0), {})),
    "piecewise": ((3,), lambda x: ((x, [x > 0], [np.sin, np.cos]), {})),
    "sinc": ((3,), lambda x: ((x,), {})),
    "nan_to_num": ((3,), lambda x: ((x, True, 1.0, 2.0, -2.0), {})),
    "angle": ((), lambda x: ((x, True), {})),
    "linspace": ((), lambda x: ((x, 2.0, 5, False, True, None, 0), {})),
    "interp": ((3,), lambda x: ((x, [0.0, 1.0, 2.0], C3, -1.0, 5.0, None), {})),
    "gradient": ((4, 3), lambda x: ((x, 0.5, np.array([0.0, 0.1, 0.3])), {"axis": (0, 1), "edge_order": 2})),
    "linalg.det": ((2, 2), lambda x: ((x,), {})),
    "linalg.inv": ((2, 2), lambda x: ((x,), {})),
    "linalg.solve": ((2, 2), lambda x: ((x, C3[:2]), {})),
    "linalg.slogdet": ((2, 2), lambda x: ((x,), {})),
    "linalg.norm": ((2, 3), lambda x: ((x, 1, 1, True), {})),
    "linalg.cholesky": ((2, 2), lambda x: ((x @ x.T + np.eye(2),), {"upper": True})),
    "linalg.eigvalsh": ((2, 2), lambda x: ((x + x.T, "U"), {})),
}
# refused with a TraceError (their result is an order or index found in the data, or they need
# an algorithm whose steps depend on it): the same error by position and by name
REFUSED = {"sort", "argsort", "argmax", "argmin", "median", "unique", "nonzero", "flatnonzero", "argwhere",
           "nanmedian", "percentile", "quantile", "partition", "argpartition", "searchsorted", "histogram",
           "linalg.svd", "linalg.eig", "linalg.eigh", "linalg.eigvals", "linalg.qr", "linalg.pinv",
           "linalg.matrix_rank", "linalg.cond", "linalg.tensorinv", "linalg.svdvals", "linalg.lstsq",
           "linalg.tensorsolve"}
for _name in ("sort", "argsort", "argmax", "argmin", "median", "unique", "nonzero", "flatnonzero", "argwhere",
              "nanmedian"):
    SAMPLES[_name] = ((3,), lambda x: ((x,), {}))
SAMPLES.update({"percentile": ((3,), lambda x: ((x, 50.0, None), {})),
                "quantile": ((3,), lambda x: ((x, 0.5, None), {})),
                "partition": ((3,), lambda x: ((x, 1, -1), {})),
                "argpartition": ((3,), lambda x: ((x, 1, -1), {})),
                "searchsorted": ((3,), lambda x: ((x, 0.5, "left"), {})),
                "histogram": ((3,), lambda x: ((x, 2), {}))})
for _name in ("svd", "eig", "eigh", "eigvals", "qr", "pinv", "matrix_rank", "cond", "tensorinv", "svdvals"):
    SAMPLES[f"linalg.{_name}"] = ((2, 2), lambda x: ((x,), {}))
SAMPLES.update({"linalg.lstsq": ((2, 2), lambda x: ((x, C3[:2], None), {})),
                "linalg.tensorsolve": ((2, 2), lambda x: ((x, C3[:2], None), {}))})
# large arrays: the forms of lazy.FUNCTIONS
LARGE = {
    "sum": ((20, 30), lambda x: ((x, 1, None, None, True), {})),
    "mean": ((20, 30), lambda x: ((x, 0, None, None, False), {})),
    "var": ((600,), lambda x: ((x, None, None, None, 1, False), {})),
    "std": ((600,), lambda x: ((x, 0, None, None, 0, True), {})),
    "dot": ((600,), lambda x: ((x, x, None), {})),
    "where": ((600,), lambda x: ((x > 0, x, 0.0), {})),
    "linalg.norm": ((20, 30), lambda x: ((x, None, 1, False), {})),
    "reshape": ((600,), lambda x: ((x, (30, 20), "C"), {})),
    "ravel": ((20, 30), lambda x: ((x, "C"), {})),
    "transpose": ((20, 30), lambda x: ((x, (1, 0)), {})),
    "swapaxes": ((20, 30), lambda x: ((x, 0, 1), {})),
    "shape": ((600,), lambda x: ((x,), {})),
    "ndim": ((600,), lambda x: ((x,), {})),
    "size": ((20, 30), lambda x: ((x, 1), {})),
    "expand_dims": ((600,), lambda x: ((x, 1), {})),
    "real": ((600,), lambda x: ((x,), {})),
    "imag": ((600,), lambda x: ((x,), {})),
    "concatenate": ((20, 30), lambda x: (([x, x * 2.0], 1, None), {})),
    "hstack": ((600,), lambda x: (([x, np.sin(x)],), {})),
    "vstack": ((600,), lambda x: (([x, np.sin(x)],), {})),
    "append": ((600,), lambda x: ((x, x * 2.0, None), {})),
    **{name: ((20, 30), lambda x: ((x, 1, None, True), {}))  # (a, axis, out, keepdims)
       for name in ("max", "amax", "min", "amin", "nanmax", "nanmin")},
}
SPECIAL = {
    "logsumexp": ((2, 3), lambda x: ((x, 1, C3, True, True), {})),
    "softmax": ((2, 3), lambda x: ((x, 1), {})),
    "log_softmax": ((2, 3), lambda x: ((x, 0), {})),
}


def _function(module, path):
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _by_name(fn, args, kwargs):
    """The same call with every argument numpy lets a caller name passed by its name."""
    b = inspect.signature(fn).bind(*args, **kwargs)
    pos, named = [], {}
    params = list(inspect.signature(fn).parameters.values())
    star = next((k for k, p in enumerate(params) if p.kind is p.VAR_POSITIONAL and b.arguments.get(p.name)), -1)
    for k, p in enumerate(params):
        if p.name not in b.arguments:
            continue
        v = b.arguments[p.name]
        if p.kind is p.POSITIONAL_ONLY or k < star:  # before a filled *args: by position only
            pos.append(v)
        elif p.kind is p.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            named.update(v)
        else:
            named[p.name] = v
    return tuple(pos), named


def _outcome(fn, shape, call, loop_min):
    """The traced program's key, or the error's type and message (its site cut off)."""
    try:
        return trace(lambda x: _as_output(fn(*call(x)[0], **call(x)[1])), [shape], loop_min=loop_min).key
    except (symgrad.TraceError, TypeError, ValueError, np.linalg.LinAlgError) as e:
        return type(e).__name__, str(e).split(" at ")[0]


def _as_output(r):
    if isinstance(r, lazy.LazyArray):  # (isinstance(r, np.ndarray) holds for it in traced code)
        return r
    if isinstance(r, np.ndarray) and r.dtype == object and any(v is None for v in r.flat):
        return np.array(r.shape) + 0.0  # np.empty: its shape
    if isinstance(r, tuple):  # slogdet, eigh, gradient of several axes, ...: all of it
        return np.concatenate([np.ravel(np.asarray(v, dtype=object)) for v in r])
    if isinstance(r, (tuple, int)) or (isinstance(r, np.ndarray) and r.dtype != object):
        return np.sum(np.asarray(r, dtype=object)) + 0.0
    return r


def _cases(table, module):
    return [pytest.param(module, path, *spec, id=path) for path, spec in table.items()]


@pytest.mark.parametrize("module, path, shape, call", _cases(SAMPLES, np) + _cases(SPECIAL, ss))
def test_keyword_call_traces_as_the_positional_call(module, path, shape, call):
    fn = _function(module, path)
    positional = _outcome(fn, shape, call, 0)
    named = _outcome(fn, shape, lambda x: _by_name(fn, *call(x)), 0)
    assert named == positional
    if path in REFUSED:
        assert positional[0] == "TraceError"
    else:
        assert isinstance(positional, str), positional  # traced


@pytest.mark.parametrize("module, path, shape, call", _cases(LARGE, np))
def test_keyword_call_of_a_large_array_traces_as_the_positional_call(module, path, shape, call):
    fn = _function(module, path)
    as_loops = lambda f: _trace(f, [shape], (), (), None, 128, "float64")  # noqa: E731  (no unrolled fallback)
    p = as_loops(lambda x: _as_output(fn(*call(x)[0], **call(x)[1])))
    k = as_loops(lambda x: _as_output(fn(*_by_name(fn, *call(x))[0], **_by_name(fn, *call(x))[1])))
    assert k.key == p.key


def test_every_traced_numpy_function_has_a_sample():
    """The walk above covers the whole table (a new stand-in needs a sample)."""
    names = {f"{'linalg.' if f.__module__ == 'numpy.linalg' else ''}{f.__name__}" for f in registry.TABLE}
    assert names == set(SAMPLES)
    assert {f"{'linalg.' if f.__module__ == 'numpy.linalg' else ''}{f.__name__}" for f in lazy.FUNCTIONS} \
        == set(LARGE)
    assert {f.__name__ for f in special.standins()} == set(SPECIAL)


def _keyword_names(fn):
    return {p.name for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@pytest.mark.parametrize("table", ["numpy", "large", "scipy.special"])
def test_every_stand_in_takes_the_parameter_names_of_its_original(table):
    """A stand-in that takes the arguments one by one (not as numpy's BoundArguments) names
    each parameter as numpy does, or passes what it does not name on (**kwargs)."""
    entries = {"numpy": registry.TABLE, "large": lazy.FUNCTIONS, "scipy.special": special.standins()}[table]
    assert entries
    for original, f in entries.items():
        assert f.__wrapped__ is original and inspect.signature(f) == inspect.signature(original)
        if f.bound:
            continue
        impl = inspect.signature(f.impl).parameters
        if any(p.kind is p.VAR_KEYWORD for p in impl.values()):
            continue
        missing = _keyword_names(original) - set(impl)
        assert not missing, f"{original.__name__}: {missing}"


def test_stand_ins_are_the_libraries_own_functions():
    """What the tables hold are numpy's, math's and builtins' own functions, under their names."""
    for original in list(registry.TABLE) + list(lazy.FUNCTIONS):
        assert original.__module__.split(".")[0] == "numpy"
    for original, _ in standins.STANDINS.values():
        module = getattr(original, "__module__", None) or ""
        assert module in ("math", "builtins") or module.split(".")[0] in ("numpy", "scipy") or \
            original in (float, int, bool), original


def test_a_wrong_call_is_numpy_s_type_error():
    with pytest.raises(TypeError, match=r"numpy\.swapaxes\(\) missing a required argument: 'axis2'"):
        trace(lambda x: np.swapaxes(x, axis1=0), [(2, 3)])
    with pytest.raises(TypeError, match=r"numpy\.sum\(\) got an unexpected keyword argument 'axes'"):
        trace(lambda x: np.sum(x, axes=0), [(2, 3)])


@pytest.mark.parametrize("make", [np.asarray, np.array, np.asanyarray, np.ascontiguousarray])
def test_a_large_array_made_an_array_again_stays_a_loop(make):
    p = _trace(lambda x: np.sum(make(x, dtype=np.float64) * 2.0), [(600,)], (), (), None, 128, "float64")
    assert p.has_loops and p.count_ops() == 3


def test_a_float64_dtype_keeps_the_values_and_float32_is_refused():
    plain = trace(lambda x: np.sum(x) + np.mean(x), [(3,)]).key
    assert trace(lambda x: np.sum(x, dtype=float) + np.mean(x, dtype=np.float64), [(3,)]).key == plain
    for f in (lambda x: np.sum(x, dtype=np.float32), lambda x: np.cumsum(x, dtype=np.float32),
              lambda x: np.array(x, dtype=np.float32), lambda x: x.astype(np.float16),
              lambda x: np.full(2, x[0], dtype=np.float32)):
        with pytest.raises(symgrad.TraceError, match="cast of traced values to float"):
            trace(f, [(3,)])
    p = trace(lambda x: np.full(2, 0.1, dtype=np.float32) * x[0], [(3,)])  # a constant: numpy's rounding
    assert "0.10000000149011612" in str(p)


def test_np_any_and_all_of_traced_comparisons():
    p = trace(lambda v: np.where(np.all(v > 0) | np.any(v < -1), v[0], v[1]), [(3,)])
    assert p.count_ops() > 5
