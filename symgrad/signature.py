"""Which arguments a function is traced over, their core shapes, and how a call binds to
them: keyword arguments, overridden defaults and methods' ``self`` (no sympy needed)."""
from __future__ import annotations

import hashlib
import inspect
import numbers

import numpy as np

TRACED = "traced"  # a defaulted parameter given a value at the call: traced as a scalar argument
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def parse_shapes(shapes, n):
    if shapes is None:
        return [()] * n
    out = []
    for s in shapes:
        if isinstance(s, bool) or s is None or isinstance(s, str):
            raise ValueError(f"each shape must be a tuple of positive ints, e.g. (3,) or (2, 2); got {s!r}")
        s = (s,) if isinstance(s, numbers.Integral) else tuple(s)
        if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in s):
            raise ValueError(f"each shape must be a tuple of positive ints, e.g. (3,) or (2, 2); got {s!r}")
        out.append(tuple(int(d) for d in s))
    return out


def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        raise TypeError(f"symgrad needs a Python function, got {fn!r}") from None


def in_class_body(fn, first):
    """Whether ``fn`` is defined in a class body and its first parameter is named ``first``."""
    if not inspect.isfunction(fn):
        return False
    parts = fn.__qualname__.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return False
    ps = [p for p in _signature(fn).parameters.values() if p.kind in _POSITIONAL]
    return bool(ps) and ps[0].name == first


def is_method(fn):
    """Whether ``fn`` is defined in a class body and takes ``self`` first: ``compile`` then
    makes a Function that binds ``self`` when read from an instance."""
    return in_class_body(fn, "self")


def traced_params(fn, shapes, skip=0):
    """(names, core shapes) of the positional arguments ``fn`` is traced over (after the
    first ``skip``, which are bound: a method's ``self``)."""
    if shapes is not None and (isinstance(shapes, (numbers.Number, str)) or not hasattr(shapes, "__len__")):
        raise ValueError(f"shapes must list one core shape per argument, e.g. shapes=[(), (8,)]; got {shapes!r}")
    ps = list(_signature(fn).parameters.values())
    name = getattr(fn, "__name__", "f")
    params = [p for p in ps if p.kind in _POSITIONAL][skip:]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in ps)
    kwonly = [p.name for p in ps if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if kwonly:
        raise TypeError(f"{name} has keyword-only parameters without defaults ({', '.join(kwonly)}); "
                        "symgrad traces positional arguments: give them defaults or make them positional")
    required = [p for p in params if p.default is p.empty]
    if shapes is None:
        if varargs:
            raise TypeError(f"{name} takes *args: pass shapes=[...] with one shape per argument")
        n = len(required)
    else:
        n = len(shapes)
        if n > len(params) and not varargs:
            raise ValueError(f"shapes gives {n} argument shapes but {name} takes {len(params)} "
                             "positional arguments")
        if n < len(required):
            raise ValueError(f"shapes gives {n} argument shapes but {name} has {len(required)} required "
                             f"arguments ({', '.join(p.name for p in required)}): one shape per argument")
    taken = {p.name for p in ps}
    names = []
    for i in range(n):  # arguments of *args: argI, kept clear of the real parameters' names
        name = params[i].name if i < len(params) else f"arg{i}"
        while i >= len(params) and name in taken:
            name += "_"
        names.append(name)
    return names, parse_shapes(shapes, n)


def constant_key(value, name):
    """A key that identifies ``value`` exactly, for a parameter passed as a trace constant
    (each value compiles its own kernel): numbers, strings, None, tuples of them, arrays."""
    if value is None or isinstance(value, (bool, str, bytes, numbers.Number, np.generic)):
        return (type(value).__qualname__, repr(value))
    if isinstance(value, tuple):
        return ("tuple",) + tuple(constant_key(v, name) for v in value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return ("ndarray", str(value.dtype), value.shape, digest)
    raise TypeError(f"argument {name!r} = {type(value).__name__} cannot be passed to a compiled function: a "
                    "parameter beyond the traced ones is a constant of the trace, one kernel per value, and "
                    "must be a number, a string, None, a tuple of these or a numeric numpy array; make it "
                    "a traced argument (with shapes=) instead")


def bind(fn, skip, names, args, kwargs, what):
    """Bind a call to the traced parameters ``names`` of ``fn`` (after ``skip`` bound ones)
    and to any defaulted parameters it also passes. Returns (values of ``names`` in order,
    spec, values of the TRACED extras in spec order, constants by name); spec is a tuple of
    (parameter name, TRACED or a constant key) in parameter order. A defaulted parameter whose
    default is a float is traced (a scalar argument of the kernel, so new values reuse it);
    any other default (an int count, a string, None, a flag) is a constant of the trace."""
    n = len(names)
    keywords = set(names)  # traced arguments that can be passed by keyword
    if fn is None:  # a program without a Python function: only its own arguments, by name
        params, by_name = [], {}
    else:
        ps = list(_signature(fn).parameters.values())
        params = [p for p in ps if p.kind in _POSITIONAL][skip:]
        by_name = {p.name: p for p in ps[skip:] if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        var_kw = any(p.kind == p.VAR_KEYWORD for p in ps)
        keywords = {p.name for p in params[:n] if p.kind != p.POSITIONAL_ONLY}
    values, given = [None] * n, [False] * n
    for i, v in enumerate(args[:n]):
        values[i], given[i] = v, True
    extras = {}
    described = f"{what} takes {n} argument(s) ({', '.join(names)})"
    defaulted = [p.name for p in params[n:]]
    if defaulted:
        described += f" and {len(defaulted)} more with defaults ({', '.join(defaulted)})"
    for i, v in enumerate(args[n:], start=n):
        if i >= len(params):
            raise TypeError(f"{described}, got {len(args)} positional arguments")
        extras[params[i].name] = v
    for key, v in kwargs.items():
        if key in keywords:
            i = names.index(key)
            if given[i]:
                raise TypeError(f"{what} got multiple values for argument {key!r}")
            values[i], given[i] = v, True
        elif key in by_name and by_name[key].kind != inspect.Parameter.POSITIONAL_ONLY:
            if key in extras:
                raise TypeError(f"{what} got multiple values for argument {key!r}")
            extras[key] = v
        elif fn is not None and var_kw and key not in by_name:
            extras[key] = v
        else:
            raise TypeError(f"{what} got an unexpected keyword argument {key!r}; its arguments are "
                            + ", ".join(names + [p for p in by_name if p not in names]))
    missing = [name for name, g in zip(names, given) if not g]
    if missing:
        raise TypeError(f"{described}, got {sum(given)}: missing {', '.join(map(repr, missing))}")
    order = {name: k for k, name in enumerate(by_name)}
    spec, traced, consts = [], [], {}
    for key in sorted(extras, key=lambda k: order.get(k, len(order))):
        v = extras[key]
        default = by_name[key].default if key in by_name else None
        if isinstance(default, (float, np.floating)):
            arr = np.asarray(v)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"argument {key!r} of {what} must be real numbers (its default is "
                                f"{default!r}), got {type(v).__name__}")
            spec.append((key, TRACED))
            traced.append(v)
        else:
            spec.append((key, constant_key(v, key)))
            consts[key] = v
    return values, tuple(spec), traced, consts


def call_arguments(fn, prefix, n, values, spec, consts):
    """(positional, keyword) arguments that call ``fn`` with the bound ``prefix``, the first
    ``n`` traced ``values``, and each extra of ``spec`` (traced values follow the first n)."""
    extra_values, k = {}, n
    for name, how in spec:
        if how == TRACED:
            extra_values[name] = values[k]
            k += 1
        else:
            extra_values[name] = consts[name]
    positional = list(prefix) + list(values[:n])
    if not extra_values:
        return positional, {}
    params = [p for p in _signature(fn).parameters.values() if p.kind in _POSITIONAL]
    rest = params[len(positional):]
    last_only = max((i for i, p in enumerate(rest) if p.name in extra_values
                     and p.kind == p.POSITIONAL_ONLY), default=-1)
    for p in rest[:last_only + 1]:  # positional-only extras go by position, defaults filling gaps
        positional.append(extra_values.pop(p.name) if p.name in extra_values else p.default)
    return positional, extra_values


def checked_keywords(name):
    """Decorator: a keyword the function does not take raises a TypeError naming it as
    ``name`` (as the user called it) and the parameter probably meant; its signature stays."""
    import functools
    import inspect

    def wrap(fn):
        takes = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            for k in kwargs:
                if k not in takes:
                    import difflib
                    meant = difflib.get_close_matches(k, takes, n=1)
                    hint = f"did you mean {meant[0]!r}?" if meant else f"it takes {', '.join(takes)}"
                    raise TypeError(f"{name}() got an unexpected keyword argument {k!r}; {hint}")
            return fn(*args, **kwargs)
        return checked
    return wrap
