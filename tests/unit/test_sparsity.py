"""Sparsity patterns and sparse derivative programs on the IR, without a C compiler: the
pattern against the non-zeros of the dense derivative at random points (a fuzzed family),
and each sparse entry against the dense one, bit for bit."""
import math

import numpy as np
import pytest

from symgrad.errors import CompileError
from symgrad.ir.evaluate import evaluate
from symgrad.ir.program import Arg, Builder, Output
from symgrad.tracing import trace
from symgrad.transforms import derive, hessian, sparsity

UNARY = ["sin", "cos", "exp", "tanh", "atan", "sqrt_abs", "square", "floor"]
BINARY = ["add", "sub", "mul", "div", "atan2"]


def _tree(b, rng, names, depth):
    """A random expression over the variables ``names`` (indices of argument 0's entries), each
    variable used once, so no derivative cancels: its non-zeros are its structure's."""
    if len(names) == 1 or depth == 0 or rng.random() < 0.15:
        node = b.node("arg", 0, names[0])
        for v in names[1:]:  # left over at depth 0: a product keeps each one
            node = b.node("mul", node, b.node("arg", 0, v))
        return node
    if rng.random() < 0.35:
        op = UNARY[rng.integers(len(UNARY))]
        x = _tree(b, rng, names, depth - 1)
        if op == "sqrt_abs":
            return b.node("sqrt", b.node("add", b.node("abs", x), b.const(1)))
        if op == "square":
            return b.node("pow", x, b.const(2))
        if op == "floor":  # a step: nothing passes through it, so its operand's variables drop out
            return b.node("add", b.node("floor", x), b.node("arg", 0, names[0]))
        return b.node(op, x)
    cut = int(rng.integers(1, len(names)))
    op = BINARY[rng.integers(len(BINARY))]
    return b.node(op, _tree(b, rng, names[:cut], depth - 1), _tree(b, rng, names[cut:], depth - 1))


def _program(seed, n=7, outputs=3):
    rng = np.random.default_rng(seed)
    b = Builder()
    refs = []
    for _ in range(outputs):
        names = [int(v) for v in rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False)]
        refs.append(_tree(b, rng, names, 5))
    return b.program([Arg("x", (n,))], [Output("y", (outputs,), tuple(refs))])


def _dense(pattern_of, dense, prog, points):
    """(the pattern as a set, {entries non-zero at some point})."""
    p = pattern_of(prog, (0,))
    got = set(zip(p.rows.tolist(), p.cols.tolist()))
    (d,) = evaluate(dense, points)
    d = d.reshape(len(points), *p.shape)
    return p, got, {tuple(e) for e in np.argwhere(np.any(d != 0, axis=0)).tolist()}


@pytest.mark.parametrize("seed", range(40))
def test_jacobian_pattern_is_the_non_zeros_and_values_are_the_dense_bits(seed):
    prog = _program(seed)
    points = np.random.default_rng(100 + seed).uniform(0.2, 1.3, (4, 7))
    p, got, nonzero = _dense(sparsity.jacobian_pattern, derive.jacobian(prog, (0,), stack=True), prog, points)
    assert got == nonzero
    assert list(zip(p.rows, p.cols)) == sorted(got)  # CSR order
    (values,) = evaluate(sparsity.jacobian(prog, (0,), p), points)
    (dense,) = evaluate(derive.jacobian(prog, (0,), stack=True), points)
    assert np.array_equal(values, dense[:, p.rows, p.cols])


@pytest.mark.parametrize("seed", range(40))
def test_hessian_pattern_is_the_non_zeros_and_values_are_the_dense_bits(seed):
    prog = _program(seed, outputs=1)
    prog = prog.__class__(prog.args, prog.nodes, (Output("y", (), prog.outputs[0].refs),))
    points = np.random.default_rng(200 + seed).uniform(0.2, 1.3, (4, 7))
    p, got, nonzero = _dense(sparsity.hessian_pattern, hessian.hessian(prog, (0,)), prog, points)
    assert p.lower and all(r >= c for r, c in got)
    assert got == {(r, c) for r, c in nonzero if r >= c}
    (values,) = evaluate(sparsity.hessian(prog, (0,), p), points)
    (dense,) = evaluate(hessian.hessian(prog, (0,)), points)
    assert np.array_equal(values, dense.reshape(4, 7, 7)[:, p.rows, p.cols])


@pytest.mark.parametrize("n", [sparsity._SMALL, sparsity._SMALL + 1, 3 * sparsity._SMALL])
@pytest.mark.parametrize("seed", range(4))
def test_patterns_of_sets_and_bitsets_are_the_non_zeros(seed, n, monkeypatch):
    """Past sparsity._SETS_PAST columns (made 0 here) a set of columns is a frozenset up to
    _SMALL columns and a bitset past that, both in one program (a node of a few columns beside
    one of them all): the same non-zeros as the dense derivative, and as bitsets alone."""
    prog = _program(1000 + seed, n=n, outputs=3)
    one = prog.__class__(prog.args, prog.nodes, (Output("y", (), (prog.outputs[0].refs[0],)),))
    points = np.random.default_rng(300 + seed).uniform(0.6, 1.3, (3, n))
    dense_j, dense_h = derive.jacobian(prog, (0,), stack=True), hessian.hessian(one, (0,))
    bitsets = sparsity.jacobian_pattern(prog, (0,)), sparsity.hessian_pattern(one, (0,))
    monkeypatch.setattr(sparsity, "_SETS_PAST", 0)
    p, got, nonzero = _dense(sparsity.jacobian_pattern, dense_j, prog, points)
    assert got == nonzero
    assert np.array_equal(p.rows, bitsets[0].rows) and np.array_equal(p.cols, bitsets[0].cols)
    p, got, nonzero = _dense(sparsity.hessian_pattern, dense_h, one, points)
    assert got == {(r, c) for r, c in nonzero if r >= c}
    assert np.array_equal(p.rows, bitsets[1].rows) and np.array_equal(p.cols, bitsets[1].cols)


@pytest.mark.parametrize("sets_past", [0, 2048])
def test_wide_and_narrow_sets_in_one_program(sets_past, monkeypatch):
    """Nodes of every column beside nodes of two (and their products), as sets and as bitsets."""
    monkeypatch.setattr(sparsity, "_SETS_PAST", sets_past)
    n = 3 * sparsity._SMALL

    def f(x):
        s, half = sum(x[k] for k in range(n)), sum(x[k] for k in range(n // 2))
        return np.array([s * s * x[0], x[1] * x[2], math.sin(half) * x[n - 1]])
    prog = trace(f, [(n,)])
    j = sparsity.jacobian_pattern(prog, (0,))
    rows = [set(j.cols[j.rows == r].tolist()) for r in range(3)]
    assert rows == [set(range(n)), {1, 2}, set(range(n // 2)) | {n - 1}]
    scalar = trace(lambda x: f(x).sum(), [(n,)])
    h = sparsity.hessian_pattern(scalar, (0,))
    want = {(r, c) for r in range(n) for c in range(r + 1)}  # (s*s*x0: every pair)
    assert set(zip(h.rows.tolist(), h.cols.tolist())) == want
    scalar = trace(lambda x: x[1] * x[2] + math.sin(sum(x[k] for k in range(n // 2))) * x[n - 1], [(n,)])
    h = sparsity.hessian_pattern(scalar, (0,))
    half = range(n // 2)
    want = {(2, 1)} | {(r, c) for r in half for c in half if r >= c} | {(n - 1, c) for c in half}
    assert set(zip(h.rows.tolist(), h.cols.tolist())) == want


def test_full_pattern_of_a_lower_triangle_is_symmetric_in_csr_order():
    prog = trace(lambda x: x[0] * x[2] + math.sin(x[1] * x[2]) + x[3] ** 3, [(4,)])
    p = sparsity.hessian_pattern(prog, (0,))
    assert set(zip(p.rows.tolist(), p.cols.tolist())) == {(1, 1), (2, 0), (2, 1), (2, 2), (3, 3)}
    rows, cols, take = p.full()
    entries = list(zip(rows.tolist(), cols.tolist()))
    assert entries == sorted({(1, 1), (0, 2), (2, 0), (1, 2), (2, 1), (2, 2), (3, 3)})
    assert [(p.rows[k], p.cols[k]) for k in take] == [(max(r, c), min(r, c)) for r, c in entries]


def test_columns_of_several_arguments_and_rows_of_several_results():
    def f(a, b):
        return np.array([a[1] * b, math.exp(a[0]), a[1] + 2 * b])
    prog = trace(f, [(2,), ()])
    p = sparsity.jacobian_pattern(prog, (0, 1))
    assert p.shape == (3, 3)
    assert list(zip(p.rows.tolist(), p.cols.tolist())) == [(0, 1), (0, 2), (1, 0), (2, 1), (2, 2)]
    only_b = sparsity.jacobian_pattern(prog, (1,))
    assert only_b.shape == (3, 1) and list(zip(only_b.rows.tolist(), only_b.cols.tolist())) == [(0, 0), (2, 0)]


def test_steps_comparisons_and_selects_pass_on_what_their_rules_say():
    def f(x):
        y = math.floor(x[0]) * x[1] + (x[2] if x[3] > 0 else x[4] ** 2)
        return y * x[5]
    prog = trace(f, [(6,)])
    j = sparsity.jacobian_pattern(prog, (0,))
    assert j.cols.tolist() == [1, 2, 4, 5]  # not floor's x0, not the condition's x3
    h = sparsity.hessian_pattern(prog, (0,))
    assert set(zip(h.rows.tolist(), h.cols.tolist())) == {(4, 4), (5, 1), (5, 2), (5, 4)}


def test_linear_functions_have_an_empty_hessian_pattern():
    prog = trace(lambda x: 3 * x[0] - x[1] / 2 + 1, [(2,)])
    p = sparsity.hessian_pattern(prog, (0,))
    assert p.nnz == 0 and p.shape == (2, 2)
    (values,) = evaluate(sparsity.hessian(prog, (0,), p), np.ones(2))
    assert values.shape == (0,)


def test_a_pattern_that_misses_an_entry_is_refused():
    prog = trace(lambda x: x[0] * x[1], [(2,)])
    p = sparsity.hessian_pattern(prog, (0,))
    short = sparsity.Pattern(p.rows[:0], p.cols[:0], p.shape, True)
    with pytest.raises(CompileError, match="outside its sparsity pattern"):
        sparsity.hessian(prog, (0,), short)


def test_a_collocation_problem_has_its_band_pattern():
    N = 20
    h = 0.1

    def con(free):
        th, om, T = free[:N], free[N:2 * N], free[2 * N:]
        c1 = (th[1:] - th[:-1]) / h - om[1:]
        c2 = (om[1:] - om[:-1]) / h + 9.81 * np.sin(th[1:]) - T[1:]
        return np.concatenate([c1, c2, np.array([th[0], om[-1]])])
    prog = trace(con, [(3 * N,)])
    p = sparsity.jacobian_pattern(prog, (0,))
    assert p.nnz == 3 * (N - 1) + 4 * (N - 1) + 2
    rows = {r: set() for r in range(2 * N)}
    for r, c in zip(p.rows.tolist(), p.cols.tolist()):
        rows[r].add(c)
    assert rows[0] == {0, 1, N + 1} and rows[N - 1] == {1, N, N + 1, 2 * N + 1} and rows[2 * N - 1] == {2 * N - 1}
