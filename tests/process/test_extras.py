"""The optional extras install from wheels alone: no system library, no compile of theirs."""
import os
import subprocess
import sys
import re

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow


def _extra(name):
    """The requirements of extra ``name`` in pyproject.toml (one line each: tomllib is 3.11's)."""
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        line = re.search(rf"^{name} = \[(.*?)\]", f.read(), re.M)
    return re.findall(r'"([^"]+)"', line.group(1))


def test_the_ipopt_extra_is_a_wheel_with_ipopt_bundled(tmp_path):
    """pip install 'symgrad[ipopt]' needs no system IPOPT: each requirement of the extra has a
    wheel for this platform (cyipopt itself is a source package built against a system IPOPT)."""
    for req in _extra("ipopt"):
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                            "-d", str(tmp_path), req], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{req}: no wheel for this platform\n{r.stderr[-2000:]}"
    wheels = os.listdir(tmp_path)
    assert wheels and all(w.endswith(".whl") for w in wheels), wheels
