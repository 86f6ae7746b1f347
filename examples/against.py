"""symgrad's benchmark figures at this checkout beside another commit's, measured in one run.

    python examples/against.py HEAD~1                      # quick cases, 3 rounds
    python examples/against.py f4e32f7 --rounds 5 --full   # the full point counts

Each round runs examples/benchmark.py (symgrad alone: first calls in cold processes, steady
batches, the scalar call, the warm start) once in each tree, in alternating order, each tree
importing its own symgrad; the table gives the median over rounds of each figure and the ratio
this checkout / the other. The other commit is checked out in a temporary git worktree with
this checkout's compiled module (symgrad/_native*.so) copied beside it."""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROW = re.compile(r"^(\w+)\s+(\d+)\s+symgrad\s+([\d.]+)\s+([\d.]+)\s+[\d.]+$", re.M)
FIGURES = {  # name: (pattern of benchmark.py's output, unit)
    "scalar call G(x)": (r"^\s+symgrad:\s+([\d.]+) us", "us"),
    "scalar call F.grad(x)": (r"^F\.grad\(x\) ([\d.]+) us", "us"),
    "warm start, founding": (r"^founding gradient ([\d.]+) s", "s"),
    "warm start, lj30": (r"lj30 gradient ([\d.]+) s, `import", "s"),
}


def figures(tree, args):
    """One run of the tree's own benchmark.py: {figure: value}."""
    cmd = [sys.executable, os.path.join(tree, "examples", "benchmark.py"), "--contenders", "symgrad",
           "--no-small-calls", "--repeat", str(args.repeat)] + ([] if args.full else ["--quick"])
    if args.cases:
        cmd += ["--cases", *args.cases]
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    found = {}
    for case, _, first, steady in ROW.findall(out.split("== all cases ==")[-1]):
        found[f"{case} first call s"] = float(first)
        found[f"{case} steady ms"] = float(steady)
    for name, (pattern, unit) in FIGURES.items():
        m = re.search(pattern, out, re.M)
        if m:
            found[f"{name} {unit}"] = float(m.group(1))
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="the commit to compare with (git rev)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=7, help="benchmark.py's --repeat")
    ap.add_argument("--full", action="store_true", help="full point counts (default: --quick)")
    ap.add_argument("--cases", nargs="*")
    args = ap.parse_args(argv)
    rev = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    other = tempfile.mkdtemp(prefix=f"symgrad-{rev}-")
    subprocess.run(["git", "worktree", "add", "-q", "--detach", other, rev], cwd=ROOT, check=True)
    try:
        for so in glob.glob(os.path.join(ROOT, "symgrad", "_native*")):
            shutil.copy(so, os.path.join(other, "symgrad"))
        runs = {head: [], rev: []}
        for k in range(args.rounds):
            for name, tree in ([(head, ROOT), (rev, other)] if k % 2 == 0 else [(rev, other), (head, ROOT)]):
                runs[name].append(figures(tree, args))
                print(f"# round {k + 1}/{args.rounds}: {name} done", file=sys.stderr, flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", other], cwd=ROOT)
    keys = [key for key in runs[head][0] if all(key in r for r in runs[head] + runs[rev])]
    print(f"{'median of ' + str(args.rounds) + ' rounds':<34} {head + ' (here)':>14} {rev:>14} {'ratio':>7}")
    for key in keys:
        a = statistics.median(r[key] for r in runs[head])
        b = statistics.median(r[key] for r in runs[rev])
        print(f"{key:<34} {a:>14.3f} {b:>14.3f} {a / b if b else float('nan'):>7.2f}")


if __name__ == "__main__":
    main()
