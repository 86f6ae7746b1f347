"""symgrad's exceptions."""


class TraceError(Exception):
    """The tracer met Python it cannot turn into an exact expression."""


class CompileError(Exception):
    """Generating, compiling or loading a kernel failed."""


class CacheError(Exception):
    """The kernel cache directory cannot be used safely (another user could change what runs)."""


class CacheWarning(UserWarning):
    """symgrad could not use its cache as it is and went on another way (said once)."""


class ScalarUsedAsArray(TraceError):
    """A traced scalar argument was used as an array: ``shapes=`` was not given for it."""

    def __init__(self, message, scalars=()):
        super().__init__(message)
        self.scalars = tuple(scalars)  # names of the arguments traced as scalars

    def for_call(self, names, call_args):
        """The same error naming the argument(s) this call passes as arrays and the shapes=
        that compiles them."""
        shapes = [np_shape(a) for a in call_args]
        arrays = [n for n, s in zip(names, shapes) if s != () and n in self.scalars]
        if len(shapes) != len(names) or not arrays:
            return self
        which = ", ".join(repr(n) for n in arrays)
        return ScalarUsedAsArray(f"argument {which} is used as an array; pass shapes={shapes!r} (one core "
                                 "shape per argument: the shape of one point, batch dimensions left out). "
                                 f"Seen: {self.args[0]}", self.scalars)


def np_shape(value):
    import numpy as np
    try:
        return tuple(np.shape(value))
    except Exception:  # noqa: BLE001 - a ragged value: no shape to suggest
        return ()
