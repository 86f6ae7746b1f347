import os
import tempfile

import pytest

import symgrad

# Every test session compiles into its own fresh cache, so results never depend on old entries.
_CACHE = tempfile.mkdtemp(prefix="symgrad-test-cache-")
os.environ["SYMGRAD_CACHE_DIR"] = _CACHE


@pytest.fixture
def cache_dir():
    return _CACHE


@pytest.fixture(params=["expression", "reverse"])
def strategy(request, monkeypatch):
    """Run a test through both differentiation strategies (closed form and reverse accumulation)."""
    limit = 10**9 if request.param == "expression" else 0
    monkeypatch.setattr(symgrad.options, "DEFAULT", symgrad.Options(inline_limit=limit))
    return request.param


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(code, cwd, *argv, timeout=180, check=True, **env):
    """Run ``code`` (dedented) as a script file in a fresh Python process inside ``cwd``,
    with symgrad importable; returns the completed process (stdout lines via .lines)."""
    import subprocess
    import sys
    import textwrap
    script = os.path.join(str(cwd), f"script_{abs(hash(code)) % 10**8}.py")
    with open(script, "w") as f:
        f.write(textwrap.dedent(code))
    full = {k: v for k, v in os.environ.items() if k != "CC"}
    full["PYTHONPATH"] = os.pathsep.join([ROOT, str(cwd), full.get("PYTHONPATH", "")])
    full.update({k: str(v) for k, v in env.items()})
    r = subprocess.run([sys.executable, script, *map(str, argv)], env=full, capture_output=True, text=True,
                       timeout=timeout, cwd=str(cwd))
    if check:
        assert r.returncode == 0, r.stderr[-4000:]
    r.lines = r.stdout.split("\n")[:-1] if r.stdout else []
    return r
