"""What a loop kernel computes where (render/loops.py prints it): the groups of loops (sums
over the same variables, scatters, map results), the home of every node (the top level or a
group's loop body), which nodes print inside their user, and the C name of every other."""
from __future__ import annotations

import math

from ..errors import CompileError
from ..ir.graph import Graph, number
from ..ir.nodes import is_arg, is_atom, is_const, is_extremum, is_leaf, is_loop, is_neg, is_pick, is_pow, is_read, \
    is_reduction, is_select, is_sum, calls_library, reads_data, reads_index
from .c import Printer, integer_power
from .indices import index_c
from .schedule import cname

CHUNKS = 16          # pieces of the outermost loop (fixed: results do not depend on threads)


class _View:
    """The program as c.Printer reads it: which nodes are printed inside their user."""

    def __init__(self, nodes, inline):
        self.nodes, self.inline = nodes, inline
        self.ref_of = {i: i for i in range(len(nodes))}
        self.refs = {n: n for n in nodes if is_arg(n)}


class _LoopPrinter(Printer):
    """c.Printer, a select with a 0 branch (a guard) spelled as a bit mask (symgrad_keep):
    gcc vectorises no loop that accumulates a conditional (lj by broadcasting: 2x slower)."""

    def _node(self, low, i, top=False):
        n = low.nodes[i]
        if is_select(n) and (top or low.inline[i]):
            zero = [is_const(low.nodes[j]) and number(low.nodes[j]) == 0 and
                    math.copysign(1, number(low.nodes[j])) > 0 for j in n[2:]]
            if zero[1] != zero[0]:
                c = self.operand(low, n[1])
                return f"symgrad_keep{self.suffix}({c if zero[1] else '!(' + c + ')'}, " \
                       f"{self.operand(low, n[3] if zero[0] else n[2])})"
        return super()._node(low, i, top)


class LoopGroup:
    """The loops over one set of index variables and what they compute: sums (accumulators),
    scatter terms (output, coef, weight, index) or map results."""

    def __init__(self, n, loops, order=None):
        self.n, self.loops, self.sums, self.maps, self.stores = n, loops, [], [], []  # stores: (result, weight, index)
        self.order = order  # (block, run): sums in numpy's order only (pairwise.py); None: any order;
        # ("pick", op): the extremum nodes of one body (render/loops.py: _extremum_loop)
        self.buffers, self.scatter = [], []  # (result, coef) of each buffer; (buffer, weight, index)
        self.reads = set()  # the top-level nodes and sums its bodies read

    def add_scatter(self, r, coef, weight, index):
        """A scatter term into result ``r``: weights of one coefficient share a buffer."""
        if (r, coef) not in self.buffers:
            self.buffers.append((r, coef))
        self.scatter.append((self.buffers.index((r, coef)), weight, index))


class LoopPlan:
    """Where each node of ``prog`` is computed and how it is named, for one loop kernel."""

    def __init__(self, prog, name, target, options):
        self.prog, self.name, self.target, self.options = prog, name, target, options
        self.M, self.W = target.math, target.block
        nodes = prog.nodes
        # vector maths: loops of the block's lanes as vectors, one libmvec variant (lanes.py)
        self.simd = f"SYMGRAD_LANES({self.W})" if any(map(calls_library, nodes)) else "SYMGRAD_SIMD"
        g = Graph(prog)
        self.vars = [g.loop_vars(i) for i in range(len(nodes))]
        taken = set()
        self.arg_c = [cname(a.name, taken, "a_") for a in prog.args]
        self.res_c = [cname(o.name, taken) for o in prog.outputs]
        self.groups, by_var = {}, {}

        def group(loops, order=None):  # (sums in numpy's order: a loop of their own over the same variables)
            key = loops if order is None else ("numpy", loops, order)
            grp = self.groups.get(key)
            if grp is None:
                grp = self.groups[key] = LoopGroup(len(self.groups), loops, order)
                for v, _ in loops:
                    if v in by_var and by_var[v].loops != loops:
                        raise CompileError(f"{name}: loop variable {v} bound twice (a bug in symgrad)")
                    by_var[v] = grp
            return grp
        for i, n in enumerate(nodes):
            if is_sum(n):
                group(*n[2:]).sums.append(i)
            elif is_extremum(n):
                group(n[2], ("pick", n[3])).sums.append(i)
        for r, o in enumerate(prog.outputs):
            if o.loops:
                group(o.loops).maps.append(r)
            for c, w, loops, index in o.adds or ():
                if loops and o.stores:
                    group(loops).stores.append((r, w, index))
                elif loops:
                    group(loops).add_scatter(r, c, w, index)
        for g in [g for g in self.groups.values() if g.order and g.order[0] != "pick"]:  # a few other sums over its loops: in its loop
            free = self.groups.get(g.loops)
            if free is not None and not (free.maps or free.stores or free.scatter) and len(free.sums) <= 8:
                g.sums, free.sums = g.sums + free.sums, []
        self.by_var = by_var
        # where each node is computed (None: the top level) and who uses it there
        self.home = [self._home(i) for i in range(len(nodes))]
        # the depth of a group's loop nest a node is computed at: that of its innermost variable
        self.level = [self._level(i) for i in range(len(nodes))]
        uses, where = [0] * len(nodes), [set() for _ in nodes]

        def use(j, home, level=None):  # (level None: the innermost of ``home``)
            uses[j] += 1
            where[j].add((home, len(home) - 1 if level is None and home else level or 0))
        for i, n in enumerate(nodes):
            if is_reduction(n):
                use(n[1], n[2])
            elif not is_leaf(n):
                for j in n[1:]:
                    use(j, self.home[i], self.level[i])
        for o in prog.outputs:
            for r in o.refs:
                use(r, o.loops or None)
            for c, w, loops, _ in o.adds or ():
                use(c, None)
                use(w, loops or None)
        pinned = set()
        for n in nodes:
            if is_pow(n) and (integer_power(nodes, n[2]) or 0) not in (0, 1, -1):
                pinned.add(n[1])
            if is_pick(n):  # a chain of selects or picks (np.max): each link a statement
                pinned.update(j for j in n[1:] if is_pick(nodes[j]))
        inline, size = [False] * len(nodes), [0] * len(nodes)
        for i, n in enumerate(nodes):
            if is_atom(n):
                inline[i] = True
                continue
            if is_loop(n):
                continue
            size[i] = 1 + sum(size[j] for j in n[1:] if inline[j])
            alone = where[i] == {(self.home[i], self.level[i])}
            if alone and (is_neg(n) or (uses[i] == 1 and i not in pinned
                                            and size[i] <= options.max_inlined_nodes)):
                inline[i] = True
        self.view = _View(nodes, inline)
        self.names = {}
        for i, n in enumerate(nodes):
            if is_arg(n):
                self.names[n] = f"sg_v{n[1]}_{n[2]}"
            elif is_reduction(n):
                self.names[i] = f"sg_A{i}"
            elif is_read(n):
                self.names[i] = f"sg_r{i}"
            elif not inline[i]:
                self.names[i] = f"t{i}" if self.home[i] is None else f"u{i}"
        self.printer = _LoopPrinter(self.names, target, options)
        self.ops = sum(1 for n in nodes if not is_leaf(n))

    def _home(self, i):
        vs = self.vars[i]
        if not vs:
            return None
        homes = {self.by_var[v].loops for v in vs if v in self.by_var}
        if len(homes) != 1 or not all(v in self.by_var for v in vs):
            raise CompileError(f"{self.name}: node {i} varies with the loops of two groups (a bug in symgrad)")
        return homes.pop()

    def _level(self, i):
        home = self.home[i]
        if not home:
            return 0
        order = [v for v, _ in home]
        return max((order.index(v) for v in self.vars[i]), default=0)

    def p(self, i):
        """Node ``i`` where it is used."""
        return self.printer.operand(self.view, i)

    def define(self, i, indent):
        """The statement that computes named node ``i``."""
        n = self.prog.nodes[i]
        if reads_index(n):
            return f"{indent}const {self.M} {self.names[i]} = ({self.M})({index_c(n[3])});"
        if is_read(n):
            src = f"sg_d{n[2]}" if reads_data(n) else self.arg_c[n[2]]
            return f"{indent}const {self.M} {self.names[i]} = ({self.M}){src}[{index_c(n[3])}];"
        return f"{indent}const {self.M} {self.names[i]} = {self.printer._node(self.view, i, top=True)};"

    def statements(self, roots, home):
        """The named nodes computed at ``home`` (None: the top level) that ``roots`` need, ascending."""
        seen, stack, out = set(), list(roots), []
        nodes = self.prog.nodes
        while stack:
            i = stack.pop()
            if i in seen or self.home[i] != home or is_atom(nodes[i]):
                continue
            seen.add(i)
            n = nodes[i]
            if is_reduction(n):
                continue
            if not self.view.inline[i]:
                out.append(i)
            if not is_leaf(n):
                stack.extend(n[1:])
        return sorted(out)

    def needs(self, roots, home):
        """The top-level named nodes and sums that the nodes ``roots`` at ``home`` read."""
        seen, stack, out = set(), list(roots), set()
        nodes = self.prog.nodes
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            n = nodes[i]
            if is_atom(n):
                continue
            if self.home[i] is None and (i not in roots or home is not None):
                if is_reduction(n) or not self.view.inline[i]:
                    out.add(i)
                    continue
            if is_reduction(n):
                continue
            if not is_leaf(n):
                stack.extend(n[1:])
        return out

    def loops(self, loops, indent):
        """Nested loops over ``loops``, the first over this chunk's piece (sg_c) of its range:
        (opening lines, indent of the innermost body, closing lines)."""
        lines, close = [], []
        (v0, e0) = loops[0]
        lines.append(f"{indent}for (int64_t sg_i{v0} = {e0}*sg_c/{CHUNKS}; sg_i{v0} < {e0}*(sg_c + 1)/{CHUNKS}; "
                     f"++sg_i{v0}) {{")
        close.append(f"{indent}}}")
        ind = indent + "    "
        for v, e in loops[1:]:
            lines.append(f"{ind}for (int64_t sg_i{v} = 0; sg_i{v} < {e}; ++sg_i{v}) {{")
            close.insert(0, f"{ind}}}")
            ind += "    "
        return lines, ind, close
