"""examples/build_time: a package whose build step writes its kernels with symgrad installs
and runs where neither symgrad nor sympy can be imported; the C program prints the founding
derivative."""
import os
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow
EXAMPLE = os.path.join(ROOT, "examples", "build_time")

BLOCKED = """
import sys, importlib.abc
class Uninstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("sympy", "symgrad", "mpmath"):
            raise ImportError(f"{name} is not installed in this environment")
sys.meta_path.insert(0, Uninstalled())
import numpy as np, fitpkg
print(fitpkg.seed_grad(3.0), fitpkg.seed_grad(np.array([3.0, 0.5]))[0], fitpkg.rosen_hessian(np.ones(4))[1, 1])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("sympy", "symgrad")))
"""


def fresh_venv(path):
    """A new virtual environment that sees this interpreter's packages (pip, setuptools, wheel,
    cffi, numpy: the test extra) through a .pth file, and nothing of the machine's base Python."""
    import importlib.util
    import sysconfig
    with_pip = importlib.util.find_spec("pip") is None  # else this interpreter's pip, through the .pth
    subprocess.run([sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), str(path)], check=True)
    py = str(path / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "test_extra.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    return py


def test_package_builds_with_symgrad_and_runs_without_it(tmp_path):
    src = tmp_path / "fitpkg"
    shutil.copytree(os.path.join(EXAMPLE, "fitpkg"), src, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    py = fresh_venv(tmp_path / "venv")
    env = dict(os.environ, PYTHONPATH=ROOT)  # symgrad for the build step only
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", str(src)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    run_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([py, "-c", BLOCKED], cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:2] == ["-75279680.0 -75279680.0 1002.0", "[]"]


def test_c_program_prints_the_founding_derivative(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make")
    work = tmp_path / "build_time"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("gen", "seed_program", "build"))
    r = subprocess.run(["make", "-s", f"PYTHON={sys.executable}"], cwd=work / "c_program", capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["-75279680", "-75279680"]
