"""The command line as docs/build-time.md shows it: its first bash block run line by line and its C built
with the printed build line; --version; standalone C of a function over closed-over data."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symgrad
from helpers import ROOT

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("cc") is None, reason="the printed build line runs cc")]


def cli(args, cwd):
    return subprocess.run([sys.executable, "-m", "symgrad", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)


def build_time_block():
    """The command lines of docs/build-time.md's first bash block."""
    text = open(os.path.join(ROOT, "docs", "build-time.md")).read()
    block = re.search(r"^```bash\n(.*?)^```", text, re.M | re.S)
    assert block, "docs/build-time.md has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def built(tmp_path, line, main_c):
    """Run a printed build line as a shell does, link main.c with its object and -lm, run it."""
    assert line.startswith("build: "), line
    subprocess.run(["sh", "-c", line[len("build: "):]], cwd=tmp_path, check=True)
    obj = shlex.split(line, comments=True)[-1]
    assert obj.endswith(".o") and (tmp_path / obj).is_file(), line
    (tmp_path / "main.c").write_text(textwrap.dedent(main_c))
    subprocess.run(["cc", "-std=c99", f"-I{os.path.dirname(obj)}", "main.c", obj, "-o", "main", "-lm"],
                   cwd=tmp_path, check=True)
    return subprocess.run(["./main"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()


SEED_MAIN = """
    #include <stdio.h>
    #include "seed.h"
    int main(void) {
        double x = 3.0, d = 0;
        seed_grad(&x, &d);
        printf("%.17g\\n", d);
        return 0;
    }
"""


def test_build_time_block_runs_as_written(tmp_path):
    (tmp_path / "examples").mkdir()
    shutil.copy(os.path.join(ROOT, "examples", "model.py"), tmp_path / "examples" / "model.py")
    lines = build_time_block()
    assert len(lines) == 3
    builds = []
    for line in lines:
        argv = shlex.split(line, comments=True)
        assert argv[0] == "symgrad", line
        r = cli(argv[1:], tmp_path)
        assert r.returncode == 0, (line, r.stderr)
        for named in re.findall(r"gen/[\w.]+", line.partition("#")[2]):  # the files its comment says
            assert (tmp_path / named).is_file(), (line, named)
        if argv[1] == "generate":
            printed = r.stdout.splitlines()
            assert printed[-1].startswith("build: ") and all((tmp_path / p).is_file() for p in printed[:-1])
            builds.append(printed[-1])
        else:
            assert "gradient of seed(x)" in r.stdout and "void seed_grad(" in r.stdout
            also = cli([a for a in argv[1:] if a != "--c"] + ["--latex", "--cuda"], tmp_path)  # its comment's
            assert also.returncode == 0 and "\\left(" in also.stdout and "__global__" in also.stdout, also.stderr
    assert builds[0] == "build: cc -std=c99 -O2 -ffp-contract=off -c gen/seed.c -o gen/seed.o  # then link with -lm"
    assert built(tmp_path, builds[0], SEED_MAIN) == ["-75279680"]


def test_version():
    r = cli(["--version"], ROOT)
    assert r.returncode == 0 and r.stdout == f"symgrad {symgrad.__version__}\n", r.stderr


DATA_PY = """
import numpy as np

W = np.linspace(0.5, 1.5, 500)


def fit(x):
    return np.sum(W * np.sin(W * x))
"""

FIT_MAIN = """
    #include <stdio.h>
    #include "fit.h"
    int main(void) {
        double x = 0.7, v = 0, d = 0;
        fit_value(&x, &v);
        fit_grad(&x, &d);
        printf("%.17g %.17g\\n", v, d);
        return 0;
    }
"""


def test_closed_over_data_generates_element_by_element(tmp_path):
    (tmp_path / "data.py").write_text(DATA_PY)
    W = np.linspace(0.5, 1.5, 500)
    want = [np.sum(W * np.sin(W * 0.7)), np.sum(W * W * np.cos(W * 0.7))]
    for extra, warned in (([], True), (["--loop-min-size", "0"], False)):
        out = tmp_path / f"gen{len(extra)}"
        r = cli(["generate", "data.py:fit", "--out", out.name, "--value", "--grad", *extra], tmp_path)
        assert r.returncode == 0, r.stderr
        if warned:  # one line: the data, and where it went
            assert r.stderr.count("\n") == 1 and "500 entries of its closed-over data are printed into it" in r.stderr
        else:
            assert r.stderr == ""
        got = built(tmp_path, r.stdout.splitlines()[-1], FIT_MAIN)
        np.testing.assert_allclose([float(g) for g in got], want, rtol=1e-13)
    assert cli(["generate", "data.py:fit", "--out", "o", "--loop-min-size", "-1"], tmp_path).returncode == 2
    r = cli(["show", "data.py:fit", "--grad", "--c"], tmp_path)  # loops: no closed form, the C all the same
    assert r.returncode == 0 and "stayed loops" in r.stdout and "void fit_grad(" in r.stdout, r.stderr
