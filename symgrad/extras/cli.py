"""The ``symgrad`` command line: generate standalone C/CUDA files, or show a derivative.

    symgrad generate MODULE:FUNCTION --out DIR [--name NAME] [--shapes SHAPES] [--value]
                     [--grad] [--jacobian] [--jacobian-sparse] [--hessian] [--hessian-sparse]
                     [--hvp] [--derivative N] [--dtype T]
                     [--float32-math double|float] [--loop-min-size N] [--cuda]
    symgrad show MODULE:FUNCTION [--grad|--jacobian|--hessian|--hvp|...|--derivative N] [--shapes SHAPES]
                 [--latex] [--c] [--cuda] [--dtype T] [--float32-math double|float] [--loop-min-size N]
    symgrad --version

MODULE is an importable module or a path to a .py file. ``generate`` prints the paths it
wrote, then the command that compiles the C file. The kernel flags are the kinds of
call/verbs.kernel_kinds, "_" written "-": --hvp is the Hessian-vector product (a tangent
argument per argument, after them), --jacobian-sparse and --hessian-sparse the structural
non-zeros of the Jacobian and Hessian (the Hessian's lower triangle) with their pattern's
index arrays NAME_<kind>_rows, _cols, _indptr in the header and C file (codegen.pattern_source).
Errors print one line on stderr, in the command line's spellings (--shapes "[(3,)]" where the
library says shapes=[(3,)]: cli_spelling): exit status 2 for a malformed command line, 1 for
anything else."""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import re
import sys

from ..call.verbs import DEFAULT_KERNELS, kernel_kinds
from ..transforms.kinds import VALUE, kind as kind_of, nth_name


SHOW_LIMIT = 400  # operations of a closed form worth printing; larger: the straight-line program


class Usage(Exception):
    """A malformed command line (exit status 2)."""


def _load(spec):
    """The function named by MODULE:FUNCTION."""
    if ":" not in spec:
        raise Usage(f"expected MODULE:FUNCTION (a module or a .py file, a colon, a function name), got {spec!r}")
    module, _, attr = spec.rpartition(":")
    if not module or not attr:
        raise Usage(f"expected MODULE:FUNCTION, got {spec!r}")
    if module.endswith(".py") or os.sep in module:
        path = os.path.abspath(module)
        if not os.path.isfile(path):
            raise LookupError(f"no such file: {module}")
        sys.path.insert(0, os.path.dirname(path))
        name = os.path.splitext(os.path.basename(path))[0]
        spec_ = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec_)
        sys.modules[name] = mod
        try:
            spec_.loader.exec_module(mod)
        except Exception as e:
            raise LookupError(f"importing {module} failed: {type(e).__name__}: {e}") from None
    else:
        sys.path.insert(0, os.getcwd())
        try:
            mod = importlib.import_module(module)
        except Exception as e:
            raise LookupError(f"cannot import module {module!r}: {type(e).__name__}: {e}") from None
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LookupError(f"{module} has no function {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise LookupError(f"{module}:{attr} is a {type(obj).__name__}, not a function")
    return obj


def _shapes(text):
    if text is None:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise Usage(f"--shapes must be a Python list of shapes, e.g. \"[(8,), ()]\", got {text!r}") from None
    if isinstance(value, int) and not isinstance(value, bool):
        return [(value,)]  # "8": one argument of 8 entries
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        return [value]     # "(8,)" or "()": one argument
    if not isinstance(value, (list, tuple)):
        raise Usage(f"--shapes must be a Python list of shapes, e.g. \"[(8,), ()]\", got {text!r}")
    return list(value)


def _parser():
    from .. import __version__
    from ..options import DEFAULT
    p = argparse.ArgumentParser(prog="symgrad", description="Exact derivatives of plain Python functions, as C.")
    p.add_argument("--version", action="version", version=f"symgrad {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    loops = dict(type=int, default=DEFAULT.loop_min_size, metavar="N",
                 help="arrays (arguments, closed-over data) of at least N entries stay loops (default: "
                      "%(default)s; 0: none). Standalone source has no loops: it then holds them element by "
                      "element (a warning says so)")
    g = sub.add_parser("generate", help="write standalone C (and CUDA) files for a function's kernels")
    g.add_argument("function", metavar="MODULE:FUNCTION")
    g.add_argument("--out", required=True, metavar="DIR", help="directory for NAME.h, NAME.c (NAME.cu)")
    g.add_argument("--name", help="prefix of the files and kernels (default: the function's name)")
    g.add_argument("--shapes", help='core shape of each argument, e.g. "[(8,), ()]" (default: scalars)')
    for kind in kernel_kinds():
        g.add_argument(_flag(kind), action="store_true", help=f"a kernel of {_words(kind)}")
    g.add_argument("--derivative", type=int, action="append", default=[], metavar="N",
                   help="the N-th derivative by the first (scalar) argument (repeatable)")
    g.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    g.add_argument("--float32-math", choices=["double", "float"], default="double",
                   help="arithmetic of float32 kernels: double (the float64 result, rounded once) or "
                        "float (faster; intermediates past 3.4e38 overflow)")
    g.add_argument("--loop-min-size", **loops)
    g.add_argument("--cuda", action="store_true", help="also NAME.cu (CUDA)")
    s = sub.add_parser("show", help="print a function's derivative, operation counts, source")
    s.add_argument("function", metavar="MODULE:FUNCTION")
    s.add_argument("--shapes")
    which = s.add_mutually_exclusive_group()
    for kind in kernel_kinds()[1:]:
        which.add_argument(_flag(kind), action="store_true", help=f"show {_words(kind)}")
    which.add_argument("--derivative", type=int, metavar="N")
    s.add_argument("--latex", action="store_true", help="LaTeX instead of sympy's pretty form")
    s.add_argument("--c", action="store_true", help="also the standalone C source")
    s.add_argument("--cuda", action="store_true", help="also the CUDA source")
    s.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    s.add_argument("--float32-math", choices=["double", "float"], default="double")
    s.add_argument("--loop-min-size", **loops)
    return p


def _flag(kind):
    """The command line's flag of kernel kind ``kind``: --grad, --jacobian-sparse."""
    return "--" + kind.replace("_", "-")


def _words(kind):
    return "the function" if kind == VALUE else "the " + kind_of(kind).words.removesuffix(" of ")


def _generate(a, F):
    from .codegen import sources, write_files
    kinds = [k for k in kernel_kinds() if getattr(a, k)]
    kinds += [nth_name(n) for n in a.derivative]
    for n in a.derivative:
        if n < 1:
            raise Usage(f"--derivative needs an order of at least 1, got {n}")
    if not kinds:
        kinds = list(DEFAULT_KERNELS)
    from ..render.target import c99_build
    paths = write_files(a.out, sources(F, kinds, a.name, a.cuda))
    for path in paths:
        print(path)
    print("build:", c99_build(str(next(p for p in paths if p.suffix == ".c"))))


def _show(a, F):
    import sympy as sp
    if a.derivative is not None and a.derivative < 0:
        raise Usage(f"--derivative needs an order of at least 0, got {a.derivative}")
    from .codegen import functions
    asked = [k for k in kernel_kinds()[1:] if getattr(a, k)]
    G = functions(F, asked)[0][1] if asked else F.derivative(a.derivative) if a.derivative is not None else F
    print(f"# {G.title}, traced program of {G.traced.count_ops()} operations")
    if G.loops:  # no closed form, no straight-line program to print
        print(f"# its arrays stayed loops (those of at least {F.options.loop_min_size} entries): "
              "--loop-min-size 0 shows it element by element")
    else:
        from ..edges.to_sympy import to_sympy
        before, after = G.derived(), G.optimized()
        if to_sympy(after).inlined(SHOW_LIMIT) is not None:
            expr = G.expr
            if isinstance(expr, sp.NDimArray) and not len(expr):  # (sympy cannot print an empty array)
                print("# no entries: every entry is identically 0 (no structural non-zeros)")
            else:
                print(sp.latex(expr) if a.latex else sp.pretty(expr, use_unicode=True))
        else:  # the closed form would explode: one assignment a line, like a jaxpr
            print("# straight-line program (its closed form is too large to show):")
            print(after)
        print(f"# operations: {before.count_ops()} before optimisation, {after.count_ops()} after")
    if a.c or a.cuda:
        from .codegen import sources
        kind = asked[0] if asked else VALUE if G is F else G.kind
        for fname, text in sources(F, [kind], None, a.cuda).items():
            if fname.endswith(".cu") and not a.cuda or not fname.endswith(".cu") and not a.c:
                continue
            print(f"# ---- {fname}")
            print(text)


def main(argv=None):
    a = _parser().parse_args(argv)  # argparse itself exits 2 on a malformed command line
    try:
        if a.float32_math != "double" and a.dtype != "float32":
            raise Usage(f"--float32-math {a.float32_math} needs --dtype float32 (float64 kernels compute in double)")
        if a.loop_min_size < 0:
            raise Usage(f"--loop-min-size needs a number of entries of at least 0, got {a.loop_min_size}")
        import symgrad
        fn = _load(a.function)
        F = symgrad.compile(fn, _shapes(a.shapes), dtype=a.dtype,
                            options=symgrad.Options(float32_math=a.float32_math, loop_min_size=a.loop_min_size))
        F.traced  # trace now: an untraceable function fails here, with its line
        (_generate if a.command == "generate" else _show)(a, F)
    except Usage as e:
        _fail(e, 2)
    except (LookupError, ValueError, TypeError, OSError, ImportError) as e:
        _fail(e, 1)
    except Exception as e:  # symgrad.TraceError, CompileError, CacheError: one line, not a traceback
        import symgrad
        if isinstance(e, (symgrad.TraceError, symgrad.CompileError, symgrad.CacheError)):
            _fail(e, 1, type(e).__name__)
        raise
    return 0


def _fail(e, status, what="error"):
    message = " ".join(str(e).split())
    if _raised_by_symgrad(e):  # (a message of the user's own code stays as written)
        message = cli_spelling(message)
    print(f"symgrad: {what}: {message}", file=sys.stderr)
    sys.exit(status)


def _raised_by_symgrad(e):
    """Whether exception ``e`` was raised in symgrad's own code (its innermost frame)."""
    tb = e.__traceback__
    if tb is None:
        return True  # (Usage: made here)
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.startswith(os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)


# What the library's messages say in Python (its keywords) -> what the command line takes
_SPELLINGS = (
    (re.compile(r"(?<![-\w.])shapes=(\[[^\]]*\])"), lambda m: f'--shapes "{m.group(1)}"'),
    (re.compile(r"(?<![-\w.])shapes="), lambda m: "--shapes"),
    (re.compile(r"^shapes (?=gives|must)"), lambda m: "--shapes "),
    (re.compile(r"(?<![-\w.])dtype=(['\"]?)(float(?:32|64))\1"), lambda m: f"--dtype {m.group(2)}"),
    (re.compile(r"options=symgrad\.Options\(loop_min_size=(\d+)\)"), lambda m: f"--loop-min-size {m.group(1)}"),
    (re.compile(r"symgrad\.Options\(float32_math=(['\"]?)(\w+)\1\)"), lambda m: f"--float32-math {m.group(2)}"),
)


def cli_spelling(message):
    """A message of the library in the command line's spellings: ``shapes=[(3,)]`` becomes
    ``--shapes "[(3,)]"``, a bare ``shapes=`` ``--shapes``, ``dtype='float32'`` ``--dtype float32``,
    ``options=symgrad.Options(loop_min_size=0)`` ``--loop-min-size 0``. A line of the user's
    code it quotes (`in backquotes`) stays as written."""
    parts = re.split(r"(`[^`]*`)", message)
    for i in range(0, len(parts), 2):
        for pattern, spelled in _SPELLINGS:
            parts[i] = pattern.sub(spelled, parts[i])
    return "".join(parts)


if __name__ == "__main__":
    sys.exit(main())
