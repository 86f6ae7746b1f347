"""No module outside symgrad/ir/ compares an IR node's tag with a string (issue 48, item 3):
they ask symgrad/ir/nodes.py (is_sum, is_atom, op_of, ...). An AST scan of every module: a
comparison (==, !=, in, not in) or a match between a node's tag and an op's name (a
registered op or arg/const/read/sum), alone or in a tuple, list or set, literal or a
module's constant (its own or imported from symgrad). A node's tag is ``x[0]``, ``x.op``,
``op_name(x)``, or a name bound in the same function to one of them or as the first of an
unpacking (``op, a, b = n``; in a for loop only a starred one, ``for op, *a in nodes``: not a
dict's items)."""
import ast
import importlib
import pathlib

import pytest

import symgrad
from symgrad.ir.nodes import STRUCTURAL
from symgrad.ir.ops import OPS

NAMES = frozenset(OPS) | frozenset(STRUCTURAL)
ROOT = pathlib.Path(symgrad.__file__).parent


def _strings(node, consts):
    """The strings ``node`` spells (a literal, a collection of them, a module constant), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out = set()
        for e in node.elts:
            s = _strings(e, consts)
            if s is None:
                return None
            out |= s
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("frozenset", "set", "tuple") and len(node.args) == 1:
        return _strings(node.args[0], consts)
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    return None


def _module_constants(tree, package):
    """{name: strings} of the module's own constants of strings and those it imports from symgrad."""
    consts = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            s = _strings(st.value, {})
            if s:
                consts[st.targets[0].id] = s
        elif isinstance(st, ast.ImportFrom) and package is not None and (st.level or (st.module or "").startswith(
                "symgrad")):
            try:
                mod = importlib.import_module(("." * st.level) + (st.module or ""), package)
            except ImportError:
                continue
            for a in st.names:
                v = getattr(mod, a.name, None)
                if isinstance(v, (tuple, list, set, frozenset)) and v and all(isinstance(x, str) for x in v):
                    consts[a.asname or a.name] = set(v)
    return consts


def _is_tag(e, tags):
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and e.slice.value == 0:
        return True
    if isinstance(e, ast.Attribute) and e.attr == "op":
        return True
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "op_name":
        return True
    return isinstance(e, ast.Name) and e.id in tags


def _scopes(tree):
    """The module and each function, with the statements that are its own (not a nested function's)."""
    out = [tree]
    out += [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    return out


def _own(scope):
    """The nodes of ``scope`` not inside a nested function."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))


def scan(source, package=None):
    """[(line, text)] of the comparisons of a node's tag with an op's name in ``source``."""
    tree = ast.parse(source)
    consts = _module_constants(tree, package)
    hits = set()
    for scope in _scopes(tree):
        own = list(_own(scope))
        tags = set()
        for n in own:
            loop = isinstance(n, (ast.For, ast.comprehension))
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if loop or isinstance(
                n, (ast.AnnAssign, ast.NamedExpr)) else []
            for t in targets:
                if isinstance(t, (ast.Tuple, ast.List)) and t.elts and isinstance(t.elts[0], ast.Name) and \
                        (not loop or any(isinstance(e, ast.Starred) for e in t.elts)):
                    tags.add(t.elts[0].id)  # op, *a = n; op, a, b = n; for op, *a in nodes
                elif isinstance(t, ast.Name) and getattr(n, "value", None) is not None and _is_tag(n.value, ()):
                    tags.add(t.id)  # op = n[0]
        for n in own:
            if isinstance(n, ast.Compare):
                parts = [n.left] + n.comparators
                for a, b in zip(parts, parts[1:]):
                    for x, y in ((a, b), (b, a)):
                        s = _strings(y, consts)
                        if _is_tag(x, tags) and s and s & NAMES:
                            hits.add((n.lineno, ast.unparse(n)))
            elif isinstance(n, ast.Match):
                for case in n.cases:
                    for p in ast.walk(case.pattern):
                        first = p.patterns[0] if isinstance(p, ast.MatchSequence) and p.patterns else \
                            p if _is_tag(n.subject, tags) else None
                        if isinstance(first, ast.MatchValue) and (_strings(first.value, consts) or set()) & NAMES:
                            hits.add((case.pattern.lineno, ast.unparse(case.pattern)))
    return sorted(hits)


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] != "ir":
            yield rel


def test_no_tag_comparisons_outside_the_ir():
    found = []
    for rel in _modules():
        package = ".".join(("symgrad",) + rel.parts[:-1])
        found += [f"symgrad/{rel}:{line}: {text}" for line, text in scan((ROOT / rel).read_text(), package)]
    assert found == [], "ask symgrad/ir/nodes.py instead:\n" + "\n".join(found)


SAMPLE = '''
from symgrad.ir.graph import LEAVES

KINDS = ("read", "sum")


def f(nodes, n, c):
    if n[0] == "sum":
        return 1
    op, *a = n
    if op in ("arg", "const"):
        return 2
    if nodes[3][0] not in KINDS:
        return 3
    kind, s = c
    if kind == "infix" or n.shape[0] == 3:  # not node tags' op names
        return 4
    for name, rule in RULES.items():        # nor a dict's keys
        if name in KINDS:
            return 9
    t = n[0]
    if "select" == t or n.op != "mul":
        return 5
    if op_name(n) in LEAVES:
        return 6
    match n:
        case ("pow", x, y):
            return 7
        case (name, x):                     # a capture, no name
            return 8


def g(op):
    return op == "sum"                      # a parameter: not read off a node here
'''


def test_scanner_finds_planted_comparisons():
    found = scan(SAMPLE, "symgrad.render")  # (lines counted from SAMPLE's first, blank)
    assert [line for line, _ in found] == [8, 11, 13, 22, 22, 24, 27]
    assert found[:2] == [(8, "n[0] == 'sum'"), (11, "op in ('arg', 'const')")]
    assert found[2:] == [(13, "nodes[3][0] not in KINDS"), (22, "'select' == t"), (22, "n.op != 'mul'"),
                         (24, "op_name(n) in LEAVES"), (27, "['pow', x, y]")]


def test_structural_ops_beside_the_registry():
    """Every op a node may name is described once: the registry's or a structural one."""
    from symgrad.ir.nodes import is_leaf, op_of, operands
    assert not NAMES - set(OPS) - set(STRUCTURAL) and not set(OPS) & set(STRUCTURAL)
    assert op_of(("mul", 0, 1)) is OPS["mul"] and op_of(("sum", 2, ((0, 5),))).name == "sum"
    assert operands(("sum", 2, ((0, 5),), (128, 5))) == (2,) and operands(("select", 1, 2, 3)) == (1, 2, 3)
    assert [is_leaf(n) for n in (("arg", 0, 1), ("const", "i", 3), ("read", "a", 0, (0, ((1, 1),))),
                                 ("sum", 2, ((1, 4),)))] == [True, True, True, False]


@pytest.mark.parametrize("rel", ["transforms/derive.py", "render/loops.py", "ir/graph.py", "tracing/lazy.py"])
def test_modules_split_under_400_lines(rel):
    assert len((ROOT / rel).read_text().splitlines()) <= 400
