import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/helpers.py

# Every test session compiles into its own fresh cache, so results never depend on old entries.
_CACHE = tempfile.mkdtemp(prefix="symgrad-test-cache-")
os.environ["SYMGRAD_CACHE_DIR"] = _CACHE


@pytest.fixture
def cache_dir():
    return _CACHE


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/ from the current renderer instead of comparing")


@pytest.fixture
def golden(request):
    """golden(name, text): compare ``text`` with tests/golden/<name> (or rewrite it under
    --update-golden), so a renderer change shows as a diff."""
    import pathlib
    root = pathlib.Path(__file__).parent / "golden"

    def check(name, text):
        path = root / name
        if request.config.getoption("--update-golden"):
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"no golden file {path}: run pytest with --update-golden"
        assert text == path.read_text(), f"{name} differs from tests/golden/{name} (--update-golden to accept)"
    return check
