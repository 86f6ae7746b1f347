"""The imports of symgrad/ point down the pipeline only: every import (those inside functions
too) goes to a part of a rank at most the importer's. A stage knows the stages before it,
never those after (transforms do not call kernels, tracing does not know how a Function is
called); the facade (function.py, __init__.py) sits on top of them all, extras above it."""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])  # (this folder: test_layout's import walker)
from test_layout import _imports, _modules  # noqa: E402

# ranks, low to high: a module's rank is that of the longest of these prefixes of its name
RANKS = [
    ("symgrad.errors", "symgrad.options", "symgrad.signature", "symgrad.forksafe", "symgrad.structure",
     "symgrad._native"),
    ("symgrad.ir",),
    ("symgrad.tracing", "symgrad.edges"),
    ("symgrad.transforms",),
    ("symgrad.render",),
    ("symgrad.build",),
    ("symgrad.call",),
    ("symgrad.pipeline",),
    ("symgrad.function", "symgrad"),
    ("symgrad.extras", "symgrad.codegen", "symgrad.dask", "symgrad.ipopt", "symgrad.__main__"),
]
# (importer, imported): why it goes up (at most three)
ALLOWED = {}


def rank(module):
    best = None
    for r, prefixes in enumerate(RANKS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".") and p != "symgrad") and (best is None or len(p) > best[1]):
                best = (r, len(p))
    assert best is not None, f"{module} has no rank: add it to RANKS"
    return best[0]


def upward(graph):
    """[(importer, imported)] of the imports of ``graph`` that go to a higher rank."""
    return sorted((m, t) for m, targets in graph.items() for t in targets if rank(t) > rank(m))


def test_imports_point_down_the_pipeline():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    found = [e for e in upward(graph) if e not in ALLOWED]
    assert found == []


def test_every_module_has_a_rank_and_the_allow_list_is_short():
    assert len(ALLOWED) <= 3
    for m in _modules():
        rank(m)


def test_the_checker_finds_an_import_up():
    graph = {"symgrad.transforms.kinds": {"symgrad.call.calling", "symgrad.ir.program"},
             "symgrad.call.calling": {"symgrad.render.target"}, "symgrad": {"symgrad.function"}}
    assert upward(graph) == [("symgrad.transforms.kinds", "symgrad.call.calling")]
    assert rank("symgrad.function") == rank("symgrad") > rank("symgrad.pipeline.memo")
