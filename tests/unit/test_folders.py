"""The folders show the pipeline: symgrad/ holds the facade and what every stage shares, each
stage is a package of its own, and the public names of the extras are one line each."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "symgrad"
STAGES = ["tracing", "ir", "transforms", "render", "build", "call", "pipeline", "edges", "extras"]
TOP = {"__init__", "__main__", "function", "options", "errors", "signature", "forksafe", "structure",
       "codegen", "dask", "ipopt"}  # the last three: public names of extras/ (symgrad.dask, ...)


def test_the_top_level_is_the_facade_and_what_every_stage_shares():
    assert {p.stem for p in PKG.glob("*.py")} == TOP


def test_each_stage_is_a_package_that_says_what_it_holds():
    found = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
    assert found == sorted(STAGES)
    for name in STAGES:
        assert ast.get_docstring(ast.parse((PKG / name / "__init__.py").read_text())), name


def test_the_public_names_of_the_extras_only_re_export_them():
    for name in ("codegen", "dask", "ipopt"):
        tree = ast.parse((PKG / f"{name}.py").read_text())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert all(isinstance(n, ast.ImportFrom) and n.module == f"extras.{name}" for n in body), name
