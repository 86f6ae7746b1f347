"""How a Function's results nest: a structure is an int (the index of one result among the
flat results) or a tuple of structures. Plain data, read by every layer (derivative kinds,
tracing, calls), so it sits below all of them."""
from __future__ import annotations


def argnums(argnums, nargs):
    """(structure, list of argument indices) in JAX's convention."""
    if argnums is None:
        argnums = 0 if nargs == 1 else tuple(range(nargs))
    single = isinstance(argnums, int) and not isinstance(argnums, bool)
    if not single and not isinstance(argnums, (tuple, list)):
        raise ValueError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    nums = [argnums] if single else list(argnums)
    if not nums:
        raise ValueError("argnums is empty: name at least one argument to differentiate by")
    for i in nums:
        if not isinstance(i, int) or isinstance(i, bool) or not -nargs <= i < nargs:
            raise ValueError(f"argnums must be ints in range for {nargs} argument(s), got {argnums!r}")
    nums = [i % nargs for i in nums]
    if len(set(nums)) != len(nums):
        raise ValueError(f"argnums repeats an argument: {argnums!r}")
    return (0 if single else tuple(range(len(nums)))), nums


def shift(structure, by):
    if isinstance(structure, int):
        return structure + by
    return tuple(shift(s, by) for s in structure)


def nest(structure, flat):
    if isinstance(structure, int):
        return flat[structure]
    return tuple(nest(s, flat) for s in structure)


def flatten(structure, value):
    if isinstance(structure, int):
        return [value]
    if not isinstance(value, (tuple, list)) or len(value) != len(structure):
        return None
    res = []
    for s, v in zip(structure, value):
        f = flatten(s, v)
        if f is None:
            return None
        res += f
    return res


def describe(structure):
    return "an array" if isinstance(structure, int) else f"a tuple of {len(structure)}"
