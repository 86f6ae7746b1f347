"""Every runnable snippet of README's "Methods, keywords and defaults" and "SciPy cookbook"
sections runs as a script and prints what it says it prints."""
import os
import re

import pytest

from helpers import ROOT, run_python

pytestmark = pytest.mark.slow

SECTIONS = ("### Methods, keywords and defaults", "## SciPy cookbook")


def snippets():
    text = open(os.path.join(ROOT, "README.md")).read()
    found = []
    for head in SECTIONS:
        start = text.index(head + "\n")
        level = head.split()[0]
        nxt = re.search(rf"^{level} ", text[start + len(head):], re.M)
        body = text[start:start + len(head) + (nxt.start() if nxt else len(text))]
        for m in re.finditer(r"^(#+ [^\n]*)$|^```python\n(.*?)^```", body, re.S | re.M):
            if m.group(1):
                title = m.group(1).lstrip("# ")
            else:
                found.append(pytest.param(m.group(2), id=re.sub(r"\W+", "-", title)[:40]))
    return found


EXPECT = {"minimize": 6, "least_squares": 4, "solve_ivp": 6, "Sparse": 5, "multiprocessing": 1, "Dask": 1}


@pytest.mark.parametrize("code", snippets())
def test_readme_snippet_runs(code, tmp_path, request):
    needs = [m for m in ("scipy", "dask", "distributed") if re.search(rf"^(import|from) {m}\b", code, re.M)]
    for m in needs:
        pytest.importorskip(m)
    r = run_python(code, tmp_path, timeout=600, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    for key, lines in EXPECT.items():
        if request.node.callspec.id.startswith(key):
            assert len(r.lines) == lines, r.stdout
            assert all("evaluations" in line or "evaluation a point" in line for line in r.lines), r.stdout


def test_the_sections_hold_snippets():
    ids = [p.id for p in snippets()]
    assert len(ids) == 7 and {i.split("-")[0] for i in ids} >= set(EXPECT), ids
