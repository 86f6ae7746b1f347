"""The precompiled runtime header (symgrad/pch.py): every kind of translation unit compiles to
the same object code reading it as reading the header's text, and a damaged one never fails a
build nor changes a result."""
import math
import os
import shutil
import subprocess
import time

import numpy as np
import pytest

import symgrad
from helpers import run_python
from symgrad.build import host, pch
from symgrad.render import TARGETS, render
from symgrad.render.target import units_text
from symgrad.render.runtime import csrc_dir


def ring8(x):
    return sum(math.sin(x[i]) * x[(i + 1) % 8] for i in range(8))


def lj(x):
    e = 0.0
    for i in range(5):
        for j in range(i + 1, 5):
            r2 = sum((x[3 * i + k] - x[3 * j + k]) ** 2 for k in range(3))
            e += 4.0 * (r2 ** -6 - r2 ** -3)
    return e


def _kernel(F):
    return render(F.optimized(), F.c_name, TARGETS["cpu", "float64"], host.vector_bits(), F.options, title=F.title)


def _units():
    """(label, unit text, extra flags) of a kernel of one unit, of a tail unit, of a unit of
    tiles and tail, of segments, and of two units appended (one CPU; kinds built together),
    which includes the header twice."""
    one = _kernel(symgrad.compile(lambda x: math.sin(x) * math.exp(-x * x), [()]).grad)
    tiles = _kernel(symgrad.compile(lambda x: 64 * x * (1 - x) * math.pow(1 - 2 * x, 2), [()]).grad)
    tail = _kernel(symgrad.compile(ring8, [(8,)]).grad)
    large = _kernel(symgrad.compile(lj, [(15,)], options=symgrad.Options(large_kernel_ops=1)).hessian)
    assert not one.parts and not one.tails and tail.tails and "_tiles(" in tiles.tails[0] and large.parts
    return [("one unit", one.source, one.cflags), ("tail unit", tail.tails[0], tail.cflags),
            ("tiles unit", tiles.tails[0], tiles.cflags), ("segments", large.parts[-1], large.cflags),
            ("appended units", units_text((tiles.source, tiles.tails[0])), tiles.cflags)]


def _flags(extra):
    return [*[f for f in host.flags() + tuple(extra) if not f.startswith("-l")], "-I", str(csrc_dir())]


def _precompiled(flags, text, seconds=120):
    """The precompiled header's -I arguments for ``text``, waiting for its build."""
    deadline = time.monotonic() + seconds
    pch.prepare(host.compiler(), flags, text, host.machine())
    while True:
        args = pch.include_dirs(host.compiler(), flags, text, host.machine())
        if args:
            return args
        assert time.monotonic() < deadline, "no precompiled header was built"
        time.sleep(0.05)


def _object(tmp_path, name, flags, text, pch_args=()):
    (tmp_path / name).mkdir()
    src, obj = tmp_path / name / "unit.c", tmp_path / name / "unit.o"  # one name: it is in the object
    src.write_text(text)
    r = subprocess.run([*host.compiler(), *flags[:-2], *pch_args, *flags[-2:], "-H", "-c", str(src), "-o", str(obj)],
                       capture_output=True, text=True, check=True)
    used = any(line.startswith("! ") and line.endswith(".gch") for line in r.stderr.splitlines())
    return obj.read_bytes(), used


def test_each_kind_of_unit_compiles_to_the_same_object_with_the_precompiled_header(tmp_path):
    for k, (label, text, extra) in enumerate(_units()):
        flags = _flags(extra)
        args = _precompiled(flags, text)
        plain, used_plain = _object(tmp_path, f"plain{k}", flags, text)
        fast, used = _object(tmp_path, f"pch{k}", flags, text, args)
        assert used and not used_plain, f"{label}: the precompiled header was {'not ' * (not used)}read"
        assert fast == plain, f"{label}: the object code differs with the precompiled header"


@pytest.fixture
def own_compiler(monkeypatch):
    """A compiler command of this test alone (a macro no unit uses): its own precompiled header,
    in a directory of its own, removed after the test (with any build still writing there)."""
    cc = f"{host.compiler()[0]} -DSYMGRAD_PCH_TEST_{os.getpid()}_{time.monotonic_ns()}"
    monkeypatch.setenv("CC", cc)
    monkeypatch.setattr(pch, "DIR", f"__pch_test_{os.getpid()}__")
    yield host.compiler()
    shutil.rmtree(csrc_dir() / pch.DIR, ignore_errors=True)


@pytest.mark.parametrize("bits", [None, 512])
def test_a_damaged_precompiled_header_is_discarded_and_the_kernel_is_right(own_compiler, monkeypatch, bits):
    """The header damaged is the one the kernel's own compile reads: its flags are the kernel's
    (on an AVX-512 CPU a kernel of scalars adds -mprefer-vector-width=512; bits=512 renders as
    there, which any x86-64 GCC compiles)."""
    if bits:
        monkeypatch.setattr(host, "vector_bits", lambda: bits)
    c = 1.0 + 2.0 ** -20 + (bits or 0) * 2.0 ** -40  # a function no other test compiles
    G = symgrad.compile(lambda x: math.exp(c * x) * x, [()]).grad
    kernel = _kernel(G)
    assert bool(bits) == any("512" in f for f in kernel.cflags)
    args = _precompiled(_flags(kernel.cflags), kernel.source)
    gch = os.path.join(args[1], pch.GCH)
    with open(gch, "r+b") as f:  # cut short: GCC stops with "cannot read PCH file"
        f.truncate(os.path.getsize(gch) // 2)
    x = np.linspace(0.25, 2.0, 8)
    np.testing.assert_allclose(G(x), np.exp(c * x) * (1.0 + c * x), rtol=1e-15, atol=0)
    assert not os.path.exists(args[1])  # removed: no compile reads it again


def test_a_precompiled_header_whose_files_changed_is_not_read(monkeypatch, tmp_path, own_compiler):
    """Each file GCC read to make it (the header's copy, system headers) is listed with its size
    and time; a process that finds one changed removes it instead of reading it."""
    monkeypatch.chdir(tmp_path)  # where the other process runs (CC's options may be relative to it)
    cc = own_compiler
    text = '/* x */\n#include "symgrad_rt.h"\n'
    flags = _flags(())
    args = _precompiled(flags, text)
    with open(os.path.join(args[1], "deps")) as f:
        files = [line.split(" ", 2)[2] for line in f.read().splitlines()]
    assert os.path.join(args[1], pch.HEADER) in files and "/math.h" in " ".join(files)
    ask = (f"from symgrad.build import host, pch; pch.DIR = {pch.DIR!r}; "
           f"print(pch.include_dirs({cc!r}, {flags!r}, {text!r}, host.machine()))")
    assert run_python(ask, tmp_path, CC=" ".join(cc)).lines == [repr(args)]
    os.utime(os.path.join(args[1], "symgrad_math.h"), ns=(0, 0))
    assert run_python(ask, tmp_path, CC=" ".join(cc)).lines == ["[]"]
    assert not os.path.exists(args[1])


def test_a_unit_with_anything_but_defines_before_the_include_reads_the_header_itself():
    flags, cc, cpu = _flags(()), host.compiler(), host.machine()
    assert pch._place(cc, flags, '/* a */\n#define A\n#include "symgrad_rt.h"\n', cpu) is not None
    assert pch._place(cc, flags, 'int x;\n#include "symgrad_rt.h"\n', cpu) is None
    assert pch._place(cc, flags, "/* no runtime */\nint x;\n", cpu) is None


def _ccache_named_gcc(tmp_path):
    """/usr/lib/ccache's layout: a link named gcc to a program named ccache (here a copy of the
    compiler: an ELF file, as ccache is)."""
    real = tmp_path / "ccache"
    shutil.copy(shutil.which(host.compiler()[0]), real)
    (tmp_path / "gcc").symlink_to(real)
    return [str(tmp_path / "gcc")]


@pytest.mark.parametrize("cc", [["ccache", "gcc"], ["no-such-compiler-anywhere"], _ccache_named_gcc])
def test_no_precompiled_header_for_a_compiler_wrapper_or_a_missing_compiler(cc, tmp_path):
    cc = cc(tmp_path) if callable(cc) else cc
    assert pch._place(cc, _flags(()), '#include "symgrad_rt.h"\n', host.machine()) is None


def test_a_removed_working_directory_with_options_in_cc(monkeypatch, tmp_path, own_compiler):
    """A CC with options makes the working directory part of the .gch's name; where that
    directory is gone, units read the header itself and the kernel builds."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)
    assert pch._place(own_compiler, _flags(()), '#include "symgrad_rt.h"\n', host.machine()) is None
    c = 1.0 + 2.0 ** -21  # a function no other test compiles
    G = symgrad.compile(lambda x: math.exp(c * x) * x + 1.0, [()]).grad
    assert G(0.5) == pytest.approx(math.exp(c * 0.5) * (1.0 + c * 0.5), rel=1e-15)


def _no_shell(*args, **kwargs):
    raise OSError("no shell")


@pytest.mark.parametrize("start", [_no_shell, lambda *args, **kwargs: (2, "sh: 1: Cannot fork")])
def test_a_build_that_cannot_start_leaves_no_marker(monkeypatch, own_compiler, start):
    """The marker that keeps other processes from building the same .gch goes where the build
    does not start (no shell, or one that cannot fork): they build it at once, not after
    pch.STALE seconds."""
    from symgrad.build import spawn
    monkeypatch.setattr(spawn, "run", start)
    text = '/* y */\n#include "symgrad_rt.h"\n'
    pch.prepare(own_compiler, _flags(()), text, host.machine())
    root = csrc_dir() / pch.DIR
    assert os.path.isdir(root) and not [p for p in os.listdir(root) if p.endswith(".building")]
