"""Every ```python block of README.md and docs/*.md runs as a script in a fresh process and
prints what the page says: a block of ``>>>`` lines runs as a doctest, and a ```text block
right after a block is its output (doctest's rules: ``...`` matches anything, whitespace
runs compare equal). Blocks needing an optional package skip where it is missing, except
scipy and cyipopt under CI, which installs them."""
import doctest
import glob
import os
import re

import pytest

from helpers import ROOT, run_python

pytestmark = pytest.mark.slow

PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)
HEADING = re.compile(r"^#+ (.*)$", re.M)
OPTIONAL = ("scipy", "dask", "distributed", "cyipopt", "cupy", "jax")
IN_CI = ("scipy", "cyipopt")  # .ci/run installs them: a block needing them never skips there


def blocks(page):
    """(id, code, expected output or None) of each python block of ``page``."""
    text = open(os.path.join(ROOT, page)).read()
    fences = list(FENCE.finditer(text))
    found = []
    for i, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        nxt = fences[i + 1] if i + 1 < len(fences) else None
        follows = nxt is not None and nxt.group(1) == "text" and not text[m.end():nxt.start()].strip()
        heads = HEADING.findall(text[:m.start()])
        where = re.sub(r"\W+", "-", heads[-1] if heads else "top").strip("-")[:32]
        found.append((f"{page}:{where}:{len(found)}", m.group(2), nxt.group(2) if follows else None))
    return found


def needs(code):
    """The optional packages a block imports (symgrad.ipopt and symgrad.dask count as theirs)."""
    mods = set(re.findall(rf"^\s*(?:import|from) ({'|'.join(OPTIONAL)})\b", code, re.M))
    mods |= {"cyipopt"} if re.search(r"\bsymgrad\.ipopt\b", code) else set()
    mods |= {"dask"} if re.search(r"\bsymgrad\.dask\b", code) else set()
    return sorted(mods)


def require(module):
    if os.environ.get("CI") and module in IN_CI:
        return
    mod = pytest.importorskip(module)
    if module == "cupy":
        try:
            count = mod.cuda.runtime.getDeviceCount()
        except Exception:  # noqa: BLE001 - no driver, no device: the GPU is what is missing
            count = 0
        if not count:
            pytest.skip("no CUDA GPU visible to CuPy")


ALL = [pytest.param(code, out, id=name) for page in PAGES for name, code, out in blocks(page)]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """One kernel cache for every block: a function two pages compile is compiled once."""
    return tmp_path_factory.mktemp("kernels") / "cache"


@pytest.mark.parametrize("code,expected", ALL)
def test_doc_block_runs(code, expected, tmp_path, kernels):
    for module in needs(code):
        require(module)
    if code.lstrip().startswith(">>>"):
        (tmp_path / "block.txt").write_text(code)
        code = ("import doctest, sys\n"
                "r = doctest.testfile('block.txt', module_relative=False, optionflags=doctest.ELLIPSIS)\n"
                "sys.exit(1 if r.failed else 0)\n")
    r = run_python(code, tmp_path, timeout=600, check=False, SYMGRAD_CACHE_DIR=kernels)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    if expected is not None:
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        assert doctest.OutputChecker().check_output(expected, r.stdout, flags), (expected, r.stdout)


def test_the_pages_hold_blocks():
    """The parser sees the blocks: the README's doctest and tour, and the cookbook's seven."""
    readme = blocks("README.md")
    assert readme[0][1].startswith(">>> import math, symgrad") and readme[1][2] is not None, readme[:2]
    cookbook = blocks(os.path.join("docs", "cookbook.md"))
    assert len(cookbook) == 7 and all(out for _, _, out in cookbook), [n for n, _, _ in cookbook]
    assert needs("import symgrad.ipopt\nfrom scipy.optimize import minimize") == ["cyipopt", "scipy"]
