import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/helpers.py
import symgrad  # noqa: E402

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

