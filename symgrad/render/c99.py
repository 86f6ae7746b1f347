"""Standalone C99: kernels for other people's builds, with no symgrad at run time.

For a kernel K of arguments a1..am and results r1..rk (T = double or float):

    void K(const T *a1, ..., const T *am, T *r1, ..., T *rk);               one point
    void K_batch(int64_t n, const T *a1, ..., const T *am, T *r1, ..., T *rk);  n points

point i of aj at aj + i*sj (sj its number of entries), arrays in C order. Only standard
headers, no allocation, no global state; K_batch is a plain loop over the per-point body
(OpenMP only under _OPENMP). The per-point bodies are the same statements every target
prints (printer.segment_lines); ``Emitter`` is the scaffolding, cuda.py derives from it."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .runtime import csrc_dir
from .c import Printer
from .schedule import segment_lines
from .schedule import schedule
from .target import TARGETS


@dataclass(frozen=True)
class Unit:
    """One kernel as standalone source: its documented declarations (for the header), its
    definitions, and the portable maths functions (csrc/symgrad_math.h) it calls."""
    name: str
    declarations: str
    definitions: str
    helpers: frozenset


class Emitter:
    """Standalone C99 scaffolding around the shared per-point statements."""

    batch_entry = "batch"  # the entry point of n points
    batch_doc = "n points one after another, point i of each array at array + i * (its entries)"

    def __init__(self, prog, name, target, options, title):
        self.sched = schedule(prog, name, options)
        self.target, self.options, self.title = target, options, title
        self.printer = Printer(self.sched.names, target, options)

    # -- pieces ---------------------------------------------------------------------------
    def params(self, restrict=True):
        T, q = self.target.real, self.target.restrict + " " if restrict else ""
        return ([f"const {T} *{q}{a.name}" for a in self.sched.args]
                + [f"{T} *{q}{r.name}" for r in self.sched.results])

    def names(self):
        return [a.name for a in self.sched.args] + [r.name for r in self.sched.results]

    def _unused(self, lines, names):
        """(void) casts for parameters a function does not read (-Wunused-parameter)."""
        text = "\n".join(lines)
        return [f"    (void){n};" for n in names if not re.search(rf"\b{re.escape(n)}\b", text)]

    def segments(self):
        """One function per segment (several segments pass temporaries through sg_t)."""
        s = self.sched
        if len(s.segments) == 1:
            return []
        out = []
        params = self.params() + [f"{self.target.math} *{self.target.restrict} sg_t"]
        for i in range(len(s.segments)):
            lines = segment_lines(s, i, self.printer)
            out += [f"{self.target.inline} void {s.name}_s{i}({', '.join(params)}) {{",
                    *self._unused(lines, self.names() + ["sg_t"]), *lines, "}", ""]
        return out

    def point(self):
        """The per-point function: the statements, or the calls of the segments."""
        s = self.sched
        if len(s.segments) == 1:
            body = segment_lines(s, 0, self.printer)
        else:
            body = [f"    {self.target.math} sg_t[{max(1, s.scratch)}];"]
            body += [f"    {s.name}_s{i}({', '.join(self.names() + ['sg_t'])});" for i in range(len(s.segments))]
        return [f"{self.point_qualifier()}void {s.name}({', '.join(self.params())}) {{",
                *self._unused(body, self.names()), *body, "}", ""]

    def point_qualifier(self):
        return ""

    def at(self, i):
        sizes = [a.size for a in self.sched.args] + [r.size for r in self.sched.results]
        return ", ".join(f"{c} + {i}*{n}" for c, n in zip(self.names(), sizes))

    def batch(self):
        s = self.sched
        return [f"void {self.target.entry(s.name, 'batch')}(int64_t n, {', '.join(self.params())}) {{",
                "#ifdef _OPENMP",
                "#pragma omp parallel for",
                "#endif",
                "    for (int64_t i = 0; i < n; ++i)",
                f"        {s.name}({self.at('i')});",
                "}", ""]

    def prototypes(self):
        s = self.sched
        plain = ", ".join(self.params(restrict=False))
        return [f"void {s.name}({plain});", f"void {self.target.entry(s.name, 'batch')}(int64_t n, {plain});"]

    def doc(self):
        """The header's comment for this kernel: what it computes, argument order, shapes, layout."""
        s, T = self.sched, self.target.real

        def describe(slot):
            shape = "a number" if slot.shape == () else f"an array of shape {slot.shape} ({slot.size} {T}s, C order)"
            return f" *   {slot.name}: {shape}" + (f" -- {slot.label}" if slot.label != slot.name else "")
        lines = [f"/* {s.name}: {self.title}".replace("*/", "* /"),
                 f" * Arguments, in this order (T = {T}):", *[describe(a) for a in s.args],
                 " * Results, after the arguments:", *[describe(r) for r in s.results],
                 f" * {s.name}(...) evaluates one point; {self.target.entry(s.name, self.batch_entry)}(n, ...) evaluates "
                 f"{self.batch_doc}. Results must not overlap arguments. */"]
        return lines

    def helpers(self, text):
        return frozenset(n for n in _helpers() if re.search(rf"\b{n}\(", text))

    def unit(self):
        body = "\n".join(self.segments() + self.point() + self.batch())
        return Unit(self.sched.name, "\n".join(self.doc() + self.prototypes()), body, self.helpers(body))


@functools.lru_cache(maxsize=None)
def _helpers():
    """The functions csrc/symgrad_math.h defines (every portable helper an op's C spelling calls)."""
    text = (csrc_dir() / "symgrad_math.h").read_text()
    return tuple(re.findall(r"^SYMGRAD_FN(?:_INLINE)? \w+ (symgrad_\w+)\(", text, re.M))


def emit(prog, name, target, options, title) -> Unit:
    """Standalone C99 of ``prog``: the kernel ``name``'s documented declarations and definitions."""
    return Emitter(prog, name, target, options, title).unit()


def helper_source(names):
    """The portable maths functions ``names`` from csrc/symgrad_math.h, as text to paste."""
    if not names:
        return ""
    text = (csrc_dir() / "symgrad_math.h").read_text()
    start = text.index("#ifndef SYMGRAD_FN")
    end = text.rindex("#endif")  # the include guard's
    head, *functions = text[start:end].split("\n/* ")
    keep = [f for f in functions if any(re.search(rf"\b{n}\(", f.split("{", 1)[0]) for n in names)]
    return "\n/* ".join([head] + keep).strip() + "\n"


def c99_files(units, name, dtype_note=""):
    """(NAME.h, NAME.c) for kernels of one name."""
    guard = re.sub(r"[^0-9A-Za-z]", "_", name).upper() + "_H"
    header = [f"/* {name}.h: generated by symgrad; C99, standard headers only. {dtype_note}".rstrip() + " */",
              f"#ifndef {guard}", f"#define {guard}", "", "#include <stdint.h>", "",
              "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    for u in units:
        header += [u.declarations, ""]
    header += ["#ifdef __cplusplus", "}", "#endif", "", f"#endif /* {guard} */", ""]
    helpers = frozenset().union(*[u.helpers for u in units]) if units else frozenset()
    c99 = TARGETS["c99", "float64"]  # float32's flags are the same
    source = [f"/* {name}.c: generated by symgrad; C99, standard headers only, no allocation, no global state.",
              f" * Compile with {' '.join(c99.flags)} (each operation rounds as written), link with "
              f"{' '.join(c99.libs)}. */", "#include <math.h>", "#include <stddef.h>", "#include <stdint.h>", "",
              f'#include "{name}.h"', ""]
    if helpers:
        source += [helper_source(helpers)]
    source += [u.definitions for u in units]
    return "\n".join(header), "\n".join(source)
