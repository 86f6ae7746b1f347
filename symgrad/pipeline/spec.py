"""What a Function is, as plain frozen data: its name, where its program comes from (a
Source, traced lazily and once), argument shapes, dtype, options, the derivative steps
taken and how its results nest. The pipeline (memo.py) computes everything else from it."""
from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass

from ..transforms.kinds import VALUE, kind as kind_of, title


def c_identifier(name):
    """A valid ASCII C identifier for any name: the name itself where it is one, else the name
    with other characters replaced and a short hash of the original (fünf and f_nf differ)."""
    name = name or "f"
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if s[0].isdigit():
        s = "f_" + s
    if s != name:
        s += "_" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return s


@dataclass(frozen=True, eq=False)
class Spec:
    py_name: str      # the Python function's name
    name: str         # c_identifier(py_name)
    source: object    # the pipeline.source.Source its program comes from
    dtype: object     # numpy dtype: float64 or float32
    args: tuple       # ((name, core shape), ...), known before tracing
    options: object   # symgrad.Options
    steps: tuple = ()  # the derivatives taken, in order: (kind, argument indices)
    structure: object = 0  # how its results nest (structure.py)

    @property
    def kind(self):
        return "_".join(k for k, _ in self.steps) or VALUE

    @property
    def c_name(self):
        return f"{self.name}_{self.kind}"

    @property
    def what(self):
        """How messages name it: "f (grad)"."""
        return f"{self.py_name} ({self.kind})"

    @property
    def title(self):
        """What it computes, in words (for comments and documentation)."""
        return title(self.steps, f"{self.py_name}({', '.join(n for n, _ in self.args)})")

    @property
    def sparse(self):
        """Whether it computes the entries of a sparsity pattern (its last kind's)."""
        return bool(self.steps) and kind_of(self.steps[-1][0]).pattern is not None

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)
