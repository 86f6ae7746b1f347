"""No module of symgrad reads or writes another module's private names: an attribute
``x._name`` (one leading underscore, not a dunder) where ``x`` is not ``self``/``cls`` is
allowed only where ``_name`` is defined in the same module (a def, a class, an assignment,
``self._name =``), and ``from m import _name`` of a name module ``m`` defines is refused.
Private names of other libraries (numpy's np._NoValue, sys._getframe) are theirs: only names
that some symgrad module defines count; the compiled module ``_native`` is a module, not a
name. ALLOWED holds the few exceptions, each with why."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "symgrad"

# (module path, attribute): why it is read across modules
ALLOWED = {
    ("symgrad/call/verbs.py", "_derive"):
        "F._derive(kind, argnums) is the protocol of csrc/symgrad_call.c's Verb (it calls it by that name); "
        "the Python Verb and the module verbs call it the same way",
}


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined(tree):
    """The private names a module defines: defs, classes, assigned names, self./cls. attributes."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return {n for n in out if _private(n)}


def accesses(tree, own, ours):
    """(line, expression) of each access ``x._name`` of a name of ``ours`` not in ``own``."""
    return [(node.lineno, f"{ast.unparse(node.value)}.{node.attr}") for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr in ours
            and node.attr not in own and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def part(path):
    """The unit whose private names are its own: the module itself."""
    return path


def private_imports(tree, ours):
    """(line, name) of each ``from <a symgrad module> import _name`` of a private name some module
    of symgrad defines (stdlib's ``from importlib import _bootstrap`` is the stdlib's)."""
    return [(node.lineno, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and (node.level or (node.module or "").split(".")[0] == "symgrad") for alias in node.names
            if _private(alias.name) and alias.name in ours and alias.name != "_native"]


def violations(files):
    """{(path, attribute): [line, ...]} of ``files`` ({path: source text})."""
    trees = {path: ast.parse(text) for path, text in files.items()}
    own = {}
    for path, tree in trees.items():
        own.setdefault(part(path), set()).update(defined(tree))
    ours = set().union(*own.values())
    found = {}
    for path, tree in trees.items():
        for line, expr in accesses(tree, own[part(path)], ours):
            found.setdefault((path, expr.rsplit(".", 1)[1]), []).append(line)
        for line, name in private_imports(tree, ours):
            found.setdefault((path, name), []).append(line)
    return found


def test_no_module_reads_another_modules_private_names():
    files = {str(p.relative_to(ROOT)): p.read_text() for p in PKG.rglob("*.py")}
    found = {k: v for k, v in violations(files).items() if k not in ALLOWED}
    assert found == {}


def test_the_allow_list_is_short_and_used():
    files = {str(p.relative_to(ROOT)): p.read_text() for p in PKG.rglob("*.py")}
    assert len(ALLOWED) <= 3
    assert set(ALLOWED) <= set(violations(files))  # an exception no longer needed is dropped


def test_the_scanner_finds_a_planted_read_a_planted_write_and_a_planted_import():
    files = {
        "symgrad/tracing/c.py": "def _helper():\n    return 1\n",
        "a.py": "class Thing:\n    def __init__(self):\n        self._secret = 1\n    def peek(self, other):\n"
                "        return other._secret\n",  # its own module's name: allowed
        "b.py": "import np\ndef f(thing):\n    thing._cache = 2\n    return thing._secret + np._NoValue\n",
    }
    assert violations(files) == {("b.py", "_secret"): [4]}
    files["symgrad/tracing/d.py"] = "from . import c\ndef g():\n    return c._helper()\n"  # a module beside it
    assert violations(files) == {("b.py", "_secret"): [4], ("symgrad/tracing/d.py", "_helper"): [3]}
    files["symgrad/tracing/d.py"] = "from .c import _helper\nfrom . import _native\n"  # imported by name
    assert violations(files) == {("b.py", "_secret"): [4], ("symgrad/tracing/d.py", "_helper"): [1]}
    del files["symgrad/tracing/d.py"]
    files["a.py"] += "def g(t):\n    return t._cache\n"  # _cache: defined in b.py only by a write from outside
    assert violations(files) == {("b.py", "_secret"): [4]}
    files["c.py"] = "_cache = None\n"
    assert violations(files) == {("b.py", "_secret"): [4], ("b.py", "_cache"): [3], ("a.py", "_cache"): [7]}
