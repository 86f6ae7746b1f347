"""Program -> program clean-up before printing, with cost linear in the program.

Closed-form programs (no body) get sympy's CSE across all outputs at once.
Straight-line programs get dead-code elimination and forward substitution of
temporaries used exactly once (bounded in size), of negations (exact wherever the
sign goes; -(-x) is x) and of constant reciprocals. A
condition that several selects test becomes a temporary (0 or 1) evaluated once.
Constants fold as sympy builds each expression; integer powers become
multiplications in the printer."""
from __future__ import annotations

import sympy as sp

from .realfns import Recip
from .symbolic import SymProgram, nodes, split, substitute


def optimize(prog: SymProgram, options) -> SymProgram:
    if not prog.body:
        prog = _cse(prog)
    return _shared_conditions(_inline_single_use(_dead_code(prog), options.max_inlined_nodes))


def _cse(prog):
    exprs = prog.output_exprs()
    if all(e.is_Atom for e in exprs):
        return prog
    temps = sp.numbered_symbols("c.", real=True)  # never a Python name
    body, reduced = sp.cse(exprs, symbols=temps, order="none")
    return SymProgram(prog.args, tuple(body), split(reduced, prog.outputs))


def only(prog, outputs):
    """``prog`` computing only ``outputs`` (some of its own): the statements they need, as
    they are (no other change: the same operations, the same bits)."""
    return _dead_code(prog.with_outputs(outputs))


def _dead_code(prog):
    needed = set()
    for e in prog.output_exprs():
        needed |= e.free_symbols
    kept = []
    for t, e in reversed(prog.body):
        if t in needed:
            kept.append((t, e))
            needed |= e.free_symbols
    kept.reverse()
    return SymProgram(prog.args, tuple(kept), prog.outputs)


def _occurrences(e, counts, temps):
    stack = [e]
    while stack:
        x = stack.pop()
        if x.is_Symbol:
            if x in temps:
                counts[x] = counts.get(x, 0) + 1
        elif x.args:
            stack.extend(x.args)


def _negated_symbol(e):
    return e.is_Mul and len(e.args) == 2 and e.args[0] == -1 and e.args[1].is_Symbol


def _inline_single_use(prog, max_nodes):
    temps = {t for t, _ in prog.body}
    counts = {}
    for _, e in prog.body:
        _occurrences(e, counts, temps)
    for e in prog.output_exprs():
        _occurrences(e, counts, temps)
    # A select read by another select stays a statement: a chain of selects (the index of
    # np.max's pick, differentiate._pick_chains) nested into one expression would keep every
    # condition alive to its end.
    chained = set().union(*[e.free_symbols for _, e in prog.body if isinstance(e, sp.Piecewise)])
    env, body = {}, []
    for t, e in prog.body:
        e = substitute(e, env) if any(s in env for s in e.free_symbols) else e
        n = nodes(e)
        # a reciprocal of a constant goes back into every use: x * (1/3.0) printed as a
        # multiplication would round differently from the division x / 3.0 that was written
        if counts.get(t, 0) == 1 and n <= max_nodes and not (isinstance(e, sp.Piecewise) and t in chained) \
                or isinstance(e, Recip) or e.is_Atom or _negated_symbol(e):
            env[t] = e
        else:
            body.append((t, e))
    outs = [substitute(e, env) if env else e for e in prog.output_exprs()]
    return SymProgram(prog.args, tuple(body), split(outs, prog.outputs))


def _conditions(e):
    """The compound conditions of the selects in ``e``, inner ones first."""
    found, stack = [], [(e, False)]
    while stack:
        x, done = stack.pop()
        if done:
            found.append(x)
            continue
        if isinstance(x, sp.Piecewise):
            for _, c in x.args:
                if not c.is_Atom:
                    stack.append((c, True))
        stack.extend((a, False) for a in x.args)
    return found


def _shared_conditions(prog):
    """Each compound condition tested by two or more selects (a chain of max steps tests each
    comparison for the value and twice for the derivative) becomes a temporary, placed before
    its first use."""
    statements = [e for _, e in prog.body] + list(prog.output_exprs())
    found = [_conditions(e) for e in statements]
    counts = {}
    for cs in found:
        for c in cs:
            counts[c] = counts.get(c, 0) + 1
    if all(n == 1 for n in counts.values()):
        return prog
    env, body, outs = {}, [], []
    targets = [t for t, _ in prog.body] + [None] * (len(statements) - len(prog.body))
    for t, e, cs in zip(targets, statements, found):
        for c in cs:
            if counts[c] > 1 and c not in env:
                b = sp.Symbol(f"b.{len(env)}", real=True)  # never a Python name
                body.append((b, substitute(c, env)))
                env[c] = b
        e = substitute(e, env) if any(counts[c] > 1 for c in cs) else e
        if t is None:
            outs.append(e)
        else:
            body.append((t, e))
    return SymProgram(prog.args, tuple(body), split(outs, prog.outputs))
