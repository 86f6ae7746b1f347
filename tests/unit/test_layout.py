"""The shape of the code: no import circle in symgrad/ (every import statement counts, those
inside functions too), no module past 400 lines, every package installed, the op registry
complete, no derivative kind spelled outside its registry, and no sympy on the compile path
of an ordinary function."""
import ast
import pathlib
import re
import subprocess
import sys

import pytest

from symgrad.ir.cycles import cycles

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "symgrad"
MAX_LINES = 400
COMPILED = {"symgrad._native"}  # C modules (csrc/symgrad_call.c): leaves, they import nothing of symgrad


def _modules():
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    return mods


def _imports(name, path, mods):
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in mods or target in COMPILED else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in mods and m != name}


def _circles(graph):
    """The strongly connected components of more than one module, each sorted."""
    return [sorted(c) for c in cycles(graph, lambda m: sorted(graph[m]))]


def test_no_import_circle():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_circles():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_module_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_every_package_is_installed():
    text = (ROOT / "pyproject.toml").read_text()
    listed = set(re.search(r"^packages = \[(.*)\]", text, re.M).group(1).replace('"', "").replace(" ", "").split(","))
    present = {".".join(p.parent.relative_to(ROOT).parts) for p in PKG.rglob("__init__.py")}
    assert present <= listed, present - listed


def test_every_op_has_its_forms():
    """Each op of the registry has a value, a C spelling and a sympy form; the tracer's names,
    the sympy edges' tables, the vector functions (test_render_flags: the header's lists) and the
    reflected comparisons come from it (nothing else spells an op)."""
    from symgrad.tracing import names as tracer_names
    from symgrad.edges import from_sympy, to_sympy as symbolic
    from symgrad.ir import ops, program
    from symgrad.render import target
    assert set(ops.SYMPY) == set(ops.OPS) and all(ops.SYMPY.values())
    assert set(symbolic.OPS) == set(ops.OPS)
    assert set(tracer_names.MATH.values()) | set(tracer_names.NUMPY.values()) <= set(ops.OPS)
    assert tracer_names.MATH["fabs"] == "abs" and tracer_names.NUMPY["arctan2"] == "atan2"
    assert set(from_sympy._FUNCS.values()) | set(from_sympy._RELATIONS.values()) <= set(ops.OPS)
    assert {f.__name__ for f in from_sympy._FUNCS} >= {"sin", "Abs", "loggamma", "hypot", "expm1"}
    for name, op in ops.OPS.items():
        assert callable(op.value) and op.c, name
        assert (op.partials is None) == op.condition, name
        assert op.vector is None or op.library, name  # a vector variant is a library call
    assert target.VECTOR_FUNCTIONS is ops.VECTOR_FUNCTIONS
    assert program._FLIP is ops.SWAPPED is tracer_names.SWAPPED
    assert ops.SWAPPED == {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _literals(path):
    """The string literals of a module but its docstrings, and whether an f-string starts
    with "d" then a value (how the n-th derivative's kind is spelled: d3)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            yield n.lineno, n.value
        if isinstance(n, ast.JoinedStr) and len(n.values) > 1 and isinstance(n.values[0], ast.Constant) \
                and n.values[0].value == "d" and isinstance(n.values[1], ast.FormattedValue):
            yield n.lineno, "d<n>"


def test_no_derivative_kind_spelled_outside_its_registry():
    """Each derivative kind's name is written once, in transforms/kinds.py: the verbs, the
    build and codegen choices, the CLI and the messages ask the registry. ("value", the
    function itself, is also an ordinary word and a result's name: not checked.)"""
    from symgrad.transforms.kinds import KINDS
    names = set(KINDS) | {"d<n>"}
    home = PKG / "transforms" / "kinds.py"
    found = [f"{p.relative_to(ROOT)}:{line}: {text!r}" for p in sorted(PKG.rglob("*.py")) if p != home
             for line, text in _literals(p) if text in names or re.fullmatch(r"d[0-9]+", text)]
    assert found == []


def test_the_kind_finder_finds_kinds(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text('"""grad: a docstring"""\nx = ("hessian", f"d{3}", f"t{3}")\n')
    assert {"d<n>", "hessian"} <= {text for _, text in _literals(sample)}
    assert "grad: a docstring" not in {text for _, text in _literals(sample)}


@pytest.mark.parametrize("kinds", [("value",), ("grad",), ("hessian",), ("value", "grad", "hessian")])
def test_an_ordinary_function_compiles_without_sympy(kinds, tmp_path):
    code = ("import math, sys, symgrad\n"
            "F = symgrad.compile(lambda x, y: math.sin(x) * y ** 3 + math.fsum([x, y, 0.1]))\n"
            f"F.build(kinds={kinds!r})\n"
            "print('sympy' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "SYMGRAD_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]


def test_a_function_whose_arrays_stay_loops_compiles_without_sympy(tmp_path):
    code = ("import sys, numpy as np, symgrad\n"
            "X = np.linspace(0, 1, 1000)\n"
            "F = symgrad.compile(lambda p: np.sum((p[0] * np.exp(-p[1] * X) - X) ** 2), [(2,)])\n"
            "F.build(kinds=('value', 'grad', 'hessian'))\n"
            "print(F.hessian.loops, F.hessian(np.array([1.0, 0.5])).shape, 'sympy' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "SYMGRAD_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "(2,", "2)", "False"]
