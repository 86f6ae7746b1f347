"""Stand-ins for numpy's functions whose numpy implementation branches on values: ``where``,
``clip``, ``select``, ``piecewise``, ``sinc``, ``nan_to_num``, ``angle``, ``linspace``,
``interp``, each a traced form (selects and ops) that calls numpy's own function when nothing
traced reaches it (registry.py)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import TraceError
from . import lazy_numpy
from .registry import HOOKS, register
from .ufuncs import element_ufunc, as_array, each, elementwise, holds_traced, numeric, obj, result, traced
from .lazy import LazyArray, Unrollable
from .values import Condition, TracedArray, apply, builder, keeps_values, user_site, where


# -- functions whose numpy code branches on values ----------------------------------------------
@register(np, "where")
def _npwhere(condition, *xy):
    if len(xy) == 2 and traced([condition, *xy]) or holds_traced([condition, *xy]):
        if len(xy) != 2:
            raise TraceError(f"np.where(cond) with one argument on a traced condition at {user_site()}: its "
                             "result (the indices where cond holds) would depend on the data; use "
                             "np.where(cond, x, y)")
        c, x, y = obj(condition), obj(xy[0]), obj(xy[1])
        if any(isinstance(v, LazyArray) for v in (c, x, y)):
            return lazy_numpy.lazy_where(c, x, y)
        if any(isinstance(v, np.ndarray) for v in (c, x, y)):
            return result(elementwise(lazy_numpy.NP_WHERE, (c, x, y)))
        return result(lazy_numpy.np_where(c, x, y))
    return np.where(condition, *xy)


@register(np, "clip", bound=True)
def _npclip(b):
    args = b.arguments
    given = lambda *names: next((args[k] for k in names if args.get(k, np._NoValue) is not np._NoValue), None)  # noqa
    a, lo, hi = args["a"], given("a_min", "min"), given("a_max", "max")
    if not holds_traced([a, lo, hi]) or args.get("out") is not None or args.get("kwargs"):
        return np.clip(*b.args, **b.kwargs)
    r = a if lo is None else elementwise(element_ufunc(np.maximum), (obj(a), lo))
    return result(r if hi is None else elementwise(element_ufunc(np.minimum), (r, hi)))


@register(np, "select")
def _select(condlist, choicelist, default=0):
    if not holds_traced([condlist, choicelist, default]):
        return np.select(condlist, choicelist, default)
    r = default
    for c, v in reversed(list(zip(condlist, choicelist))):  # the first condition that holds wins
        r = where(obj(c), obj(v), r)
    return result(r)


@register(np, "piecewise")
def _piecewise(x, condlist, funclist, *args, **kw):
    if not holds_traced([x, condlist]):
        return np.piecewise(numeric(x), condlist, funclist, *args, **kw)
    x = obj(x)
    conds = [condlist] if isinstance(condlist, (Condition, bool)) or (
        isinstance(condlist, np.ndarray) and condlist.shape == np.shape(x)) else list(condlist)
    funcs = list(funclist)
    value = lambda f: HOOKS.intercept(f)(x, *args, **kw) if callable(f) else f  # noqa: E731
    r = value(funcs[len(conds)]) if len(funcs) > len(conds) else 0.0  # the "otherwise" function
    for c, f in reversed(list(zip(conds, funcs))):
        r = where(obj(c), value(f), r)
    return result(r)


@register(np, "sinc")
def _sinc(x):
    if not holds_traced([x]):
        return np.sinc(numeric(x))
    return each(_sinc1, x)


def _sinc1(x):
    if not traced((x,)):
        return float(np.sinc(x))
    y = math.pi * x
    # below |y| = 1 the series (to y**20: the value and its first derivatives exact to
    # rounding), so that derivatives do not come from the cancelling quotient
    y2 = y * y
    series = 0.0
    for k in range(10, -1, -1):  # sum of (-y2)**k / (2k+1)!, Horner's way
        series = (-1) ** k / math.factorial(2 * k + 1) + y2 * series
    return where(abs(y) < 1.0, series, apply("sin", y) / y)


@register(np, "nan_to_num")
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +-inf -> ``posinf``/``neginf`` (default: the largest finite number of the
    kernel's dtype, as numpy's of the array's); derivative 1 where x is finite, 0 elsewhere.
    A number past the kernel dtype's range counts as infinite (in a float32 kernel computing
    in double, exp(100) is inf once rounded: numpy's float32 arrays hold it as inf)."""
    if not holds_traced([x, nan, posinf, neginf]):
        return np.nan_to_num(numeric(x), copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    big = float(np.finfo(builder().dtype).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf

    def one(v):
        if not traced((v,)):
            v = float(v)
            return nan if v != v else hi if v > big else lo if v < -big else v
        return where(apply("isnan", v), nan, where(v > big, hi, where(v < -big, lo, v)))
    if not copy and isinstance(x, LazyArray):
        raise Unrollable(f"np.nan_to_num(..., copy=False) (in place) of an array at {user_site()}")
    r = each(one, x)
    if not copy and isinstance(x, np.ndarray) and x.dtype == object:  # numpy's in-place form
        x.view(np.ndarray)[...] = r
        return x
    return r


@register(np, "angle")
def _angle(z, deg=False):
    """The angle of a real number: 0 for x >= +0, pi for x <= -0 (and NaN for NaN)."""
    if not holds_traced([z]):
        return np.angle(numeric(z), deg)
    scale = 180.0 / math.pi if deg else 1.0
    return each(lambda v: apply("atan2", 0.0, v) * scale if traced((v,)) else float(np.angle(v, deg)), z)


@register(np, "linspace")
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    if not holds_traced([start, stop]):
        kw = {} if device is None else {"device": device}
        return np.linspace(numeric(start), numeric(stop), num, endpoint, retstep, dtype, axis, **kw)
    if dtype is not None and not keeps_values(dtype):
        raise TraceError(f"np.linspace(..., dtype={np.dtype(dtype)}) of traced endpoints at {user_site()}: the "
                         "points would be made integers, constants whose derivative is lost")
    if np.ndim(start) or np.ndim(stop) or axis != 0:
        raise TraceError(f"np.linspace of traced array endpoints at {user_site()}: symgrad takes scalar "
                         "endpoints; build the points as start + (stop - start) * np.linspace(0, 1, num)")
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else math.nan * stop
    pts = [k * step + start if div > 0 else start for k in range(num)]  # as numpy computes them
    if endpoint and num > 1:
        pts[-1] = stop
    arr = as_array(pts) if num else np.empty(0, dtype=object).view(TracedArray)
    return (arr, step) if retstep else arr


@register(np, "interp")
def _interp(x, xp, fp, left=None, right=None, period=None):
    if not holds_traced([x, xp, fp, left, right]):
        return np.interp(numeric(x), numeric(xp), numeric(fp), left, right, period)
    if holds_traced([xp]) or period is not None:
        raise TraceError(f"np.interp with traced breakpoints xp (or period=) at {user_site()}: symgrad "
                         "interpolates traced x or fp over constant xp")
    xp = np.asarray(xp, dtype=float)
    fp = obj(fp) if holds_traced([fp]) else np.asarray(fp, dtype=float)
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right

    def one(t):
        if not traced((t,)):  # a constant x: weights of fp
            if t < xp[0]:
                return lo
            if t > xp[-1]:
                return hi
            k = min(int(np.searchsorted(xp, t, side="right")) - 1, len(xp) - 2)
            if t == xp[-1]:
                return fp[-1]
            w = (t - xp[k]) / (xp[k + 1] - xp[k])
            return fp[k] * (1 - w) + fp[k + 1] * w
        r = where(t > xp[-1], hi, fp[-1])
        for k in range(len(xp) - 2, -1, -1):  # the segment [xp[k], xp[k+1]) that holds t
            seg = fp[k] + (t - xp[k]) * ((fp[k + 1] - fp[k]) / (xp[k + 1] - xp[k]))
            r = where(t < xp[k + 1], seg, r)
        return where(apply("isnan", t), t, where(t < xp[0], lo, r))  # nan stays nan, as in numpy
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return one(x)
    return each(one, x)
