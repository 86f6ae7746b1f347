import os
import tempfile

import pytest

# Every test session compiles into its own fresh cache, so results never depend on old entries.
_CACHE = tempfile.mkdtemp(prefix="symgrad-test-cache-")
os.environ["SYMGRAD_CACHE_DIR"] = _CACHE


@pytest.fixture
def cache_dir():
    return _CACHE
