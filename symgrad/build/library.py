"""A loaded kernel library (a plain shared object): its entry points, its strings, and the
object that calls one kernel. Through symgrad._native (csrc/symgrad_call.c, built when symgrad
is installed) where it was built; else through ctypes, slower per call and the same results."""
from __future__ import annotations

import re
import struct

try:
    from .. import _native
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

    def kernel(self, entry, dtype, args, results, skip, structure, stream_bytes, one=0):
        """The caller of entry point ``entry`` (``void entry(int64_t n, int mode, void *const *p)``,
        p: the arguments, ``skip`` NULLs, the results): a _native.Kernel, which symgrad.Function's
        calls reach without Python, or a ctypes one; both have ``run(n, mode, ins, outs)``.
        ``one``: the address of an entry of the same form for single points (one_lane)."""
        address = self.symbol(entry)
        if not address:
            raise OSError(f"{self.path} has no entry point {entry}")
        code = "d" if str(dtype) == "float64" else "f"
        if NATIVE:
            return _native.Kernel(address, code, args, results, tuple(skip), structure,
                                  -1 if stream_bytes is None else int(stream_bytes), one)
        return _CtypesKernel(address, len(skip))

    def one_lane(self, entry):
        """The address of one-lane entry ``entry`` (Options.one_point), where the library has it,
        the call path is _native's and one_lane_agrees(); else 0 (single points keep the blocks)."""
        address = self.symbol(entry) if NATIVE else 0  # no copy (rolled kernels): no file to read
        return address if address and self.one_lane_agrees() else 0

    def one_lane_agrees(self):
        """Whether a one-lane copy computes what the blocks do: the library calls each vector
        maths function in one variant only (libmvec's of the blocks' width, or the scalar
        function everywhere). Not where GCC left a block's lane loop scalar, or vectorised one
        in another width: the copy's helpers (csrc/symgrad_rt.h: symgrad_one_*) call the
        vectorised variant, and a last bit could differ."""
        if not hasattr(self, "_agrees"):
            names = undefined_symbols(self.path)
            self._agrees = names is not None and one_variant_each(names)
        return self._agrees


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


_VARIANT = re.compile(r"_ZGV[a-z][NM][0-9]+[a-z]+_(\w+)$")  # a vector variant (x86 vector ABI): _ZGVdN4v_sin


def one_variant_each(names):
    """Whether, among symbol ``names``, each C maths function with vector variants
    (render.target.VECTOR_FUNCTIONS, double's and float's) is named once: as itself or as one variant."""
    from ..render.target import VECTOR_FUNCTIONS
    seen = {}
    for name in names:
        m = _VARIANT.match(name)
        fn = m.group(1) if m else name
        if fn in VECTOR_FUNCTIONS or (fn.endswith("f") and fn[:-1] in VECTOR_FUNCTIONS):
            seen.setdefault(fn, set()).add(name)
    return all(len(v) == 1 for v in seen.values())


def undefined_symbols(path):
    """The names a shared object takes from other libraries (its undefined dynamic symbols),
    read from its ELF tables; None where it is not a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4:6] != b"\x02\x01":
        return None
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    # each section: name, type, flags, addr, offset, size, link, info, addralign, entsize
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for sec in sections:
        if sec[1] != 11:  # SHT_DYNSYM
            continue
        strings = sections[sec[6]][4]
        for at in range(sec[4], sec[4] + sec[5], 24):  # Elf64_Sym: name, info, other, shndx, value, size
            name, _, _, shndx = struct.unpack_from("<IBBH", data, at)
            if shndx == 0 and name:
                end = data.index(b"\0", strings + name)
                names.add(data[strings + name:end].decode("ascii", "replace"))
    return names
