"""Which arguments a function is traced over, and their core shapes (no sympy needed)."""
from __future__ import annotations

import inspect
import numbers


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


def traced_params(fn, shapes):
    """(names, core shapes) of the positional arguments ``fn`` is traced over."""
    if shapes is not None and (isinstance(shapes, (numbers.Number, str)) or not hasattr(shapes, "__len__")):
        raise ValueError(f"shapes must list one core shape per argument, e.g. shapes=[(), (8,)]; got {shapes!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise TypeError(f"symgrad needs a Python function, got {fn!r}") from None
    ps = list(sig.parameters.values())
    name = getattr(fn, "__name__", "f")
    params = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
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
    names = [params[i].name if i < len(params) else f"arg{i}" for i in range(n)]
    return names, parse_shapes(shapes, n)
