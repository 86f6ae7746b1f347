"""A loaded kernel library (a plain shared object): its entry points, its strings, and the
object that calls one kernel. Through symgrad._native (csrc/symgrad_call.c, built when symgrad
is installed) where it was built; else through ctypes, slower per call and the same results."""
from __future__ import annotations

try:
    from . import _native
except ImportError:  # not built (no compiler at install time, a plain checkout): ctypes
    _native = None

NATIVE = _native is not None


if NATIVE:
    Callable = _native.Callable
else:
    class Callable:
        """The base of symgrad.Function where symgrad._native was not built: every call is
        the Python path (``_call``)."""

        _fast = None

        def __call__(self, *args, **kwargs):
            return self._call(*args, **kwargs)


class Library:
    """One opened library file; opening one that cannot be loaded raises OSError with the
    loader's message."""

    def __init__(self, path):
        self.path = str(path)
        if NATIVE:
            self._handle = _native.open(self.path)
        else:
            import ctypes
            self._cdll = ctypes.CDLL(self.path, mode=ctypes.RTLD_LOCAL)

    def symbol(self, name):
        """The address of ``name``, or 0 where the library has no such symbol."""
        if NATIVE:
            return _native.symbol(self._handle, name)
        import ctypes
        try:
            return ctypes.cast(getattr(self._cdll, name), ctypes.c_void_p).value or 0
        except AttributeError:
            return 0

    def string(self, name):
        """What ``const char *name(void)`` returns, or None where there is no such function."""
        return self._returned(name, "string", lambda ctypes: ctypes.c_char_p, bytes.decode)

    def integer(self, name):
        """What ``int name(void)`` returns, or None where there is no such function."""
        return self._returned(name, "integer", lambda ctypes: ctypes.c_int, int)

    def _returned(self, name, native, restype, convert):
        """Call ``name(void)``: through _native's function ``native``, or ctypes with the
        result type ``restype(ctypes)`` converted by ``convert``."""
        address = self.symbol(name)
        if not address:
            return None
        if NATIVE:
            return getattr(_native, native)(address)
        import ctypes
        return convert(ctypes.CFUNCTYPE(restype(ctypes))(address)())

    def set_data(self, name, arrays):
        """Call ``void name(const void *const *p)`` with the addresses of C-contiguous ``arrays``."""
        address = self.symbol(name)
        if NATIVE:
            _native.set_data(address, arrays)
            return
        import ctypes
        ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)(ptrs)

    def kernel(self, entry, dtype, args, results, skip, structure, stream_bytes):
        """The caller of entry point ``entry`` (``void entry(int64_t n, int mode, void *const *p)``,
        p: the arguments, ``skip`` NULLs, the results): a _native.Kernel, which symgrad.Function's
        calls reach without Python, or a ctypes one; both have ``run(n, mode, ins, outs)``."""
        address = self.symbol(entry)
        if not address:
            raise OSError(f"{self.path} has no entry point {entry}")
        code = "d" if str(dtype) == "float64" else "f"
        if NATIVE:
            return _native.Kernel(address, code, args, results, tuple(skip), structure,
                                  -1 if stream_bytes is None else int(stream_bytes))
        return _CtypesKernel(address, len(skip))


class _CtypesKernel:
    """run(n, mode, ins, outs) through ctypes: the call where symgrad._native was not built."""

    par_points, gil_points, chunk_bytes = 1, 0, 0  # as _native.Kernel's (ctypes always releases the GIL)

    def __init__(self, address, nskip):
        import ctypes
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p)(address)
        self._nskip = nskip

    def run(self, n, mode, ins, outs):
        import ctypes
        addrs = [x.ctypes.data for x in ins] + [None] * self._nskip + [w.ctypes.data for w in outs]
        self._fn(n, mode, (ctypes.c_void_p * len(addrs))(*addrs))
