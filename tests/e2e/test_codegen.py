"""Build-time code generation: the command line, standalone C99 and CUDA files, and what
they compute against the in-process Functions."""
import ctypes
import math
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgrad
from symgrad.extras.codegen import sources
from helpers import ROOT

import bench_cases  # noqa: E402  (examples/, on the path through helpers)

CC = os.environ.get("CC", "cc")
STRICT = ["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off"]
NVCC = shutil.which("nvcc")
SEED_PY = """
import math


def seed(x):
    return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)


def vec(v, k):
    return [math.sin(v[0]) * k, v[0] * v[1] ** 3 - k, math.hypot(v[1], k) + abs(v[0])]


def rosen(x):
    return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))


def bad(x):
    while x > 0:
        x = x - 1.0
    return x
"""


def cli(*args, cwd):
    r = subprocess.run([sys.executable, "-m", "symgrad", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    return r


@pytest.fixture
def module(tmp_path):
    (tmp_path / "model.py").write_text(SEED_PY)
    return tmp_path / "model.py"


def test_cli_founding_function_links_with_a_c_program_in_both_dtypes(tmp_path, module):
    for dtype, T, math_ in (("float64", "double", "double"), ("float32", "float", "double"),
                            ("float32", "float", "float")):
        out = tmp_path / f"gen_{dtype}_{math_}"
        r = cli("generate", f"{module}:seed", "--out", out, "--grad", "--dtype", dtype, "--float32-math", math_,
                cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert sorted(p.name for p in out.iterdir()) == ["seed.c", "seed.h"]
        assert ("double" in (out / "seed.c").read_text()) == (math_ == "double")
        (tmp_path / "main.c").write_text(textwrap.dedent(f"""
            #include <stdio.h>
            #include "seed.h"
            int main(void) {{
                {T} x = 3, d = 0, xs[3] = {{0.5, 3, -1}}, ds[3];
                seed_grad(&x, &d);
                seed_grad_batch(3, xs, ds);
                printf("%.17g %.17g\\n", (double)d, (double)ds[1]);
                return 0;
            }}
        """))
        exe = tmp_path / f"main_{dtype}_{math_}"
        subprocess.run([CC, *STRICT, f"-I{out}", str(tmp_path / "main.c"), str(out / "seed.c"), "-o", str(exe),
                        "-lm"], check=True)
        assert subprocess.run([str(exe)], capture_output=True, text=True).stdout.split() == ["-75279680"] * 2


def _library(tmp_path, files, name):
    """Compile generated NAME.c (strict C99, no warning) into a shared library."""
    d = tmp_path / name
    d.mkdir()
    for fname, text in files.items():
        (d / fname).write_text(text)
    so = d / f"lib{name}.so"
    subprocess.run([CC, *STRICT, "-fPIC", "-shared", str(d / f"{name}.c"), "-o", str(so), "-lm"], check=True)
    return ctypes.CDLL(str(so))


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_jacobian_and_hessian_layouts_match_the_functions(tmp_path, dtype):
    ns = {}
    exec(compile(SEED_PY, str(tmp_path / "model.py"), "exec"), ns)  # (also: code without source)
    (tmp_path / "model.py").write_text(SEED_PY)
    V = symgrad.compile(ns["vec"], [(2,), ()], dtype=dtype)
    R = symgrad.compile(ns["rosen"], [(4,)], dtype=dtype)
    lib = _library(tmp_path, sources(V, ["jacobian"], "vec"), "vec")
    rlib = _library(tmp_path, sources(R, ["grad", "hessian"], "rosen"), "rosen")
    rng = np.random.default_rng(0)
    v = rng.uniform(0.2, 2.0, (6, 2)).astype(dtype)
    k = rng.uniform(0.5, 1.5, 6).astype(dtype)
    jv, jk = (np.zeros((6, 3, 2), dtype), np.zeros((6, 3), dtype))
    lib.vec_jacobian_batch(ctypes.c_int64(6), _ptr(v), _ptr(k), _ptr(jv), _ptr(jk))
    want_v, want_k = V.jacobian(v, k)
    tol = 1e-14 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(jv, want_v, rtol=tol)
    np.testing.assert_allclose(jk, want_k, rtol=tol)
    x = rng.uniform(-2, 2, (5, 4)).astype(dtype)
    h = np.zeros((5, 4, 4), dtype)
    rlib.rosen_hessian_batch(ctypes.c_int64(5), _ptr(x), _ptr(h))
    np.testing.assert_array_equal(h, R.hessian(x))  # polynomial: the same operations, bit for bit
    one = np.zeros((4, 4), dtype)
    rlib.rosen_hessian(_ptr(np.ascontiguousarray(x[2])), _ptr(one))
    np.testing.assert_array_equal(one, h[2])
    g = np.zeros((5, 4), dtype)
    rlib.rosen_grad_batch(ctypes.c_int64(5), _ptr(x), _ptr(g))
    np.testing.assert_array_equal(g, R.grad(x))
    # a gradient run by its value_and_grad kernel (a large program): the standalone gradient
    # prints that kernel's statements, the same bits
    L = symgrad.compile(ns["rosen"], [(4,)], dtype=dtype, options=symgrad.Options(large_kernel_ops=1))
    llib = _library(tmp_path, sources(L, ["grad"], "rosenl"), "rosenl")
    llib.rosenl_grad_batch(ctypes.c_int64(5), _ptr(x), _ptr(g))
    np.testing.assert_array_equal(g, L.grad(x))
    assert L.grad.c_source == L.value_and_grad.c_source


def test_header_documents_each_kernel():
    F = symgrad.compile(bench_cases.rosen8, [(8,)])
    h = sources(F, ["value", "hessian"], "rosen")["rosen.h"]
    for text in ("void rosen_value(const double *a_x, double *out);",
                 "void rosen_hessian_batch(int64_t n, const double *a_x, double *d2_x_x);",
                 "a_x: an array of shape (8,) (8 doubles, C order) -- x",
                 "d2_x_x: an array of shape (8, 8) (64 doubles, C order)",
                 "Hessian of rosen8(x)", "Results must not overlap arguments"):
        assert text in h, text


def test_generated_files_include_only_standard_headers(module, tmp_path):
    F = symgrad.compile(lambda x: math.lgamma(x) + math.erf(x))
    files = sources(F, ["value", "grad", "d2"], "g", cuda=True)
    for fname, text in files.items():
        includes = {line.split()[1] for line in text.splitlines() if line.startswith("#include")}
        assert includes <= {"<math.h>", "<stdint.h>", "<stddef.h>", '"g.h"'}, (fname, includes)
    assert "symgrad_polygamma" in files["g.c"]  # the portable maths travel with the file
    lib = _library(tmp_path, files, "g")
    x, d2 = np.array([1.7]), np.zeros(1)
    lib.g_d2_batch(ctypes.c_int64(1), _ptr(x), _ptr(d2))
    np.testing.assert_allclose(d2, F.derivative(2)(x), rtol=1e-14)


def test_cli_errors_are_one_line_with_the_exit_status(tmp_path, module):
    cases = [
        (["generate", f"{module}:nope", "--out", tmp_path / "o"], 1, "has no function 'nope'"),
        (["generate", "no_such_module:f", "--out", tmp_path / "o"], 1, "cannot import module 'no_such_module'"),
        (["generate", str(tmp_path / "missing.py") + ":f", "--out", tmp_path / "o"], 1, "no such file"),
        (["generate", "model", "--out", tmp_path / "o"], 2, "expected MODULE:FUNCTION"),
        (["generate", f"{module}:bad", "--out", tmp_path / "o"], 1, "TraceError: the `while` loop at bad()"),
        (["generate", f"{module}:seed", "--out", tmp_path / "o", "--shapes", "[(,"], 2, "--shapes must be"),
        (["generate", f"{module}:seed", "--out", tmp_path / "o", "--shapes", "[(2,), (3,)]"], 1,
         "shapes gives 2 argument shapes"),
        (["generate", f"{module}:seed", "--out", tmp_path / "o", "--derivative", "0"], 2, "--derivative needs"),
        (["generate", f"{module}:seed"], 2, "the following arguments are required: --out"),
        (["frobnicate"], 2, "invalid choice"),
        (["show", f"{module}:seed", "--grad", "--hessian"], 2, "not allowed with argument"),
        (["generate", f"{module}:seed", "--out", tmp_path / "o", "--float32-math", "float"], 2,
         "--float32-math float needs --dtype float32"),
    ]
    for args, status, text in cases:
        r = cli(*args, cwd=tmp_path)
        assert r.returncode == status, (args, r.stderr)
        last = r.stderr.strip().splitlines()
        assert text in last[-1], (args, r.stderr)
        if status == 1:
            assert len(last) == 1 and last[0].startswith("symgrad: "), r.stderr  # one line, no traceback
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())  # nothing half-written


def test_cli_show(tmp_path, module):
    r = cli("show", f"{module}:seed", "--grad", "--c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "gradient of seed(x)" in r.stdout and "operations:" in r.stdout and "void seed_grad(" in r.stdout
    r = cli("show", f"{module}:seed", "--latex", cwd=tmp_path)
    assert "\\left(" in r.stdout
    r = cli("show", f"{module}:seed", "--derivative", "0", "--c", cwd=tmp_path)  # d0: the function itself
    assert r.returncode == 0 and "void seed_d0(" in r.stdout, r.stderr
    (tmp_path / "big.py").write_text("import sys\nsys.path.insert(0, " + repr(os.path.join(ROOT, "examples"))
                                     + ")\nimport bench_cases\ndef lj(p):\n    return bench_cases.lj(p, 8)\n")
    r = cli("show", f"{tmp_path / 'big.py'}:lj", "--shapes", "(24,)", "--grad", cwd=tmp_path)
    assert r.returncode == 0 and "straight-line program" in r.stdout and "d_p[24] = [" in r.stdout


def test_generate_writes_nothing_when_it_fails(tmp_path, module):
    out = tmp_path / "out"
    out.mkdir()
    r = cli("generate", f"{module}:vec", "--out", out, "--grad", "--shapes", "[(2,), ()]",
            cwd=tmp_path)  # the gradient of a vector: refused
    assert r.returncode == 1 and "scalar-valued" in r.stderr
    assert list(out.iterdir()) == []


# -- CUDA ---------------------------------------------------------------------------------------
CASES = {"seed_grad": ("seed", [()], "grad"), "rosen8_hessian": ("rosen8", [(8,)], "hessian"),
         "trig2_grad": ("trig2", [(), ()], "grad"), "lj6_grad": ("lj6", [(18,)], "grad")}


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cuda_files_compile_for_sm80_and_sm90(tmp_path, dtype):
    for case, (fname, shapes, what) in CASES.items():
        F = symgrad.compile(bench_cases.FUNCS[fname], shapes, dtype=dtype)
        cu = tmp_path / f"{case}.cu"
        cu.write_text(getattr(F, what).cuda_source)
        for arch in ("sm_80", "sm_90"):
            r = subprocess.run([NVCC, "-ptx", f"-arch={arch}", "--fmad=false", str(cu), "-o", str(tmp_path / "k.ptx")],
                               capture_output=True, text=True)
            assert r.returncode == 0, (case, arch, r.stderr)
            assert ".entry" in (tmp_path / "k.ptx").read_text()


SHIM = """
#define __device__
#define __global__
#define __forceinline__ inline
struct sg_dim3 { unsigned x; };
static sg_dim3 blockIdx, threadIdx, blockDim, gridDim;
"""


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cuda_bodies_on_the_host_are_bitwise_the_c_kernels(tmp_path, dtype):
    """The CUDA per-point functions, compiled as host C++ with __device__ and friends defined
    away, agree bit for bit with the standalone C kernels (same statements, same libm,
    no FMA contraction)."""
    if shutil.which("g++") is None:
        pytest.skip("no C++ compiler")
    (tmp_path / "shim.h").write_text(SHIM)
    rng = np.random.default_rng(3)
    for case, (fname, shapes, what) in CASES.items():
        F = symgrad.compile(bench_cases.FUNCS[fname], shapes, dtype=dtype)
        G = getattr(F, what)
        files = sources(F, [what], case, cuda=True)
        clib = _library(tmp_path, {k: v for k, v in files.items() if not k.endswith(".cu")}, case)
        name = f"{case}_{what}"
        nargs, nres = len(G.args), len(G.result_shapes())
        T = "double" if dtype == "float64" else "float"
        params = ", ".join([f"const {T} *a{i}" for i in range(nargs)] + [f"{T} *r{i}" for i in range(nres)])
        call = ", ".join([f"a{i}" for i in range(nargs)] + [f"r{i}" for i in range(nres)])
        (tmp_path / f"{case}_host.cpp").write_text(files[f"{case}.cu"] + f'\nextern "C" void host_{name}({params}) '
                                                   f"{{ {name}({call}); }}\n")
        so = tmp_path / f"lib{case}_host.so"
        subprocess.run(["g++", "-std=c++17", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-include",
                        str(tmp_path / "shim.h"), str(tmp_path / f"{case}_host.cpp"), "-o", str(so)], check=True)
        hlib = ctypes.CDLL(str(so))
        for _ in range(20):
            inputs = [np.ascontiguousarray(x[0]).astype(dtype) for x in
                      bench_cases.make_inputs(fname, 1, rng)]
            outs_c = [np.zeros(s, dtype) for s in G.result_shapes()]
            outs_h = [np.zeros(s, dtype) for s in G.result_shapes()]
            getattr(clib, name)(*[_ptr(a) for a in inputs], *[_ptr(o) for o in outs_c])
            getattr(hlib, f"host_{name}")(*[_ptr(a) for a in inputs], *[_ptr(o) for o in outs_h])
            for a, b in zip(outs_c, outs_h):
                assert a.tobytes() == b.tobytes(), case
            for a, want in zip(outs_c, [G(*inputs)] if nres == 1 else G(*inputs)):
                np.testing.assert_allclose(a, want, rtol=1e-13 if dtype == "float64" else 2e-6, atol=1e-300)


def test_to_cuda_says_what_is_missing():
    F = symgrad.compile(bench_cases.seed)
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"CuPy.*symgrad\[cuda\]"):
            F.grad.to_cuda()
        return
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any failure to find a device
        count = 0
    if count == 0:
        with pytest.raises(RuntimeError, match="no CUDA GPU"):
            F.grad.to_cuda()
        return
    x = cupy.linspace(-1, 2, 1000)
    np.testing.assert_allclose(cupy.asnumpy(F.grad.to_cuda()(x)), F.grad(cupy.asnumpy(x)), rtol=1e-13)


# -- golden files: a renderer change shows as a diff ---------------------------------------------
def _small():
    def small(x, v):
        return math.sin(x) * v[0] + symgrad.where(v[1] > x, v[1] ** 2, math.log(x)) / 3.0
    return symgrad.compile(small, [(), (2,)])


def ring8(x):
    return sum(math.sin(x[i]) * x[(i + 1) % 8] for i in range(8))


def test_golden_files_of_each_target(golden):
    from symgrad.render import TARGETS, render
    G = _small().grad
    k = render(G.optimized(), G.c_name, TARGETS["cpu", "float64"], 256, G.options, title=G.title)
    golden("small_grad_cpu.c", k.text)
    R = symgrad.compile(ring8, [(8,)]).grad  # 16 numbers a point: its tail is a unit of its own
    k = render(R.optimized(), R.c_name, TARGETS["cpu", "float64"], 256, R.options, title=R.title)
    golden("ring_grad_cpu.c", k.text)
    files = sources(_small(), ["value", "grad"], "small", cuda=True)
    for fname, text in files.items():
        golden(fname, text)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_standalone_fsum_carries_its_runtime_function_and_the_same_bits(tmp_path, dtype):
    F = symgrad.compile(lambda x, y: math.fsum([x, 1e16, y, -1e16, 0.1]) * y, dtype=dtype)
    files = sources(F, ["value"], "fs")
    assert "symgrad_fsum" in files["fs.c"].split("fs_value")[0]  # defined before the kernel
    lib = _library(tmp_path, files, "fs")
    x, y = (np.array([0.3, -2.5, 1e-17], dtype), np.array([0.7, 3.0, -1e-17], dtype))
    out = np.zeros(3, dtype)
    lib.fs_value_batch(ctypes.c_int64(3), _ptr(x), _ptr(y), _ptr(out))
    np.testing.assert_array_equal(out, F(x, y))


# -- the CLI's --hvp, --jacobian-sparse, --hessian-sparse (issue 47) ---------------------------
def _cli_library(tmp_path, module, name, *args):
    """``symgrad generate`` of ``args`` into tmp_path/name, compiled under -Wall -Wextra -Werror."""
    out = tmp_path / name
    r = cli("generate", f"{module}:{name}", "--out", out, *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    so = out / f"lib{name}.so"
    subprocess.run([CC, *STRICT, "-fPIC", "-shared", str(out / f"{name}.c"), "-o", str(so), "-lm"], check=True)
    return ctypes.CDLL(str(so)), (out / f"{name}.h").read_text()


def _pattern_of(lib, header, kernel):
    """(rows, cols, indptr, shape) of a sparse kernel, from its library and header."""
    define = {line.split()[1]: int(line.split()[2]) for line in header.splitlines()
              if line.startswith("#define ") and len(line.split()) == 3}
    nnz, nrows, ncols = (define[f"{kernel.upper()}_{what}"] for what in ("NNZ", "NROWS", "NCOLS"))
    rows, cols, indptr = (np.ctypeslib.as_array((ctypes.c_int64 * n).in_dll(lib, f"{kernel}_{what}"))
                          for what, n in (("rows", nnz), ("cols", nnz), ("indptr", nrows + 1)))
    for what in ("rows", "cols", "indptr"):
        assert f"extern const int64_t {kernel}_{what}[];" in header
    return rows, cols, indptr, (nrows, ncols)


def test_cli_sparse_kernels_and_their_patterns_equal_the_in_process_ones(tmp_path, module):
    lib, header = _cli_library(tmp_path, module, "rosen", "--shapes", "[(4,)]", "--hessian-sparse", "--hvp")
    R = symgrad.compile(_seed_module(tmp_path)["rosen"], [(4,)])
    x = np.random.default_rng(3).uniform(-2, 2, (5, 4))
    rows, cols, indptr, shape = _pattern_of(lib, header, "rosen_hessian_sparse")
    want_rows, want_cols, want = R.hessian(x, sparse="lower")
    assert shape == (4, 4) and np.array_equal(rows, want_rows) and np.array_equal(cols, want_cols)
    assert np.array_equal(indptr, [0, 1, 3, 5, 7])
    values = np.zeros((5, len(rows)))
    lib.rosen_hessian_sparse_batch(ctypes.c_int64(5), _ptr(x), _ptr(values))
    np.testing.assert_array_equal(values, want)  # a polynomial: the same operations, bit for bit
    dense = R.hessian(x)
    assert np.array_equal(dense[:, rows, cols], values)
    v = np.random.default_rng(4).uniform(-1, 1, (5, 4))
    hvp = np.zeros((5, 4))
    lib.rosen_hvp_batch(ctypes.c_int64(5), _ptr(x), _ptr(v), _ptr(hvp))
    np.testing.assert_array_equal(hvp, R.hvp(x, v))
    np.testing.assert_allclose(hvp, np.einsum("nij,nj->ni", dense, v), rtol=1e-13)

    lib, header = _cli_library(tmp_path, module, "vec", "--shapes", "[(2,), ()]", "--jacobian-sparse")
    V = symgrad.compile(_seed_module(tmp_path)["vec"], [(2,), ()])
    rows, cols, indptr, shape = _pattern_of(lib, header, "vec_jacobian_sparse")
    a, k = np.array([0.3, 1.7]), 0.9
    J = V.jacobian(a, k, sparse=True)  # by every argument: columns a[0], a[1], k
    assert shape == J.shape == (3, 3) and np.array_equal(indptr, J.indptr)
    values = np.zeros(len(rows))
    lib.vec_jacobian_sparse(_ptr(a), _ptr(np.array([k])), _ptr(values))
    np.testing.assert_allclose(values, J[rows, cols], rtol=1e-15)
    assert np.array_equal(V.jacobian_sparsity().toarray()[rows, cols], np.ones(len(rows), bool))


def _seed_module(tmp_path):
    ns = {}
    exec(compile(SEED_PY, str(tmp_path / "model.py"), "exec"), ns)
    return ns


def test_cli_messages_use_the_command_lines_spellings(tmp_path, module):
    r = cli("generate", f"{module}:rosen", "--out", tmp_path / "o", cwd=tmp_path)  # --shapes forgotten
    assert r.returncode == 1 and "--shapes" in r.stderr, r.stderr
    assert "shapes=" not in r.stderr.replace(r.stderr[r.stderr.find("`"):r.stderr.rfind("`") + 1], "")
    r = cli("generate", f"{module}:rosen", "--out", tmp_path / "o", "--shapes", "[(2,), (3,)]", cwd=tmp_path)
    assert r.returncode == 1 and "error: --shapes gives 2 argument shapes" in r.stderr, r.stderr
    from symgrad.extras.cli import cli_spelling
    assert cli_spelling("pass shapes=[(3,)] (or shapes=[()]); shapes= was not given at `f(shapes=[1])`") == \
        'pass --shapes "[(3,)]" (or --shapes "[()]"); --shapes was not given at `f(shapes=[1])`'
    assert cli_spelling("compile it with options=symgrad.Options(loop_min_size=0), dtype='float32'") == \
        "compile it with --loop-min-size 0, --dtype float32"


def test_cli_refuses_a_sparse_kernel_of_no_entries(tmp_path):
    (tmp_path / "lin.py").write_text("def lin(x):\n    return 2 * x[0] - x[1]\n")
    r = cli("generate", f"{tmp_path / 'lin.py'}:lin", "--out", tmp_path / "o", "--shapes", "[(2,)]",
            "--hessian-sparse", cwd=tmp_path)
    assert r.returncode == 1 and "no structural non-zeros" in r.stderr, r.stderr
    r = cli("show", f"{tmp_path / 'lin.py'}:lin", "--shapes", "[(2,)]", "--hessian-sparse", cwd=tmp_path)
    assert r.returncode == 0 and "no entries: every entry is identically 0" in r.stdout, r.stderr


def test_cli_keeps_the_users_own_messages_as_written(tmp_path):
    """Only symgrad's messages are spelled for the command line: a ValueError of the user's
    code that says shapes=[(3,)] reaches the terminal as the user wrote it."""
    (tmp_path / "own.py").write_text("def f(x):\n    raise ValueError(\"bad: shapes=[(3,)] dtype='float32'\")\n")
    r = cli("show", f"{tmp_path / 'own.py'}:f", cwd=tmp_path)
    assert r.returncode == 1 and "bad: shapes=[(3,)] dtype='float32'" in r.stderr, r.stderr
