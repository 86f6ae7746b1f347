"""The README a newcomer reads in ten minutes and the docs/ pages it links: its length, what
its first screen holds, the test command CI runs, and every relative link resolving to a file
(and a heading, where it names one). The blocks themselves run in tests/process/test_doc_snippets.py."""
import glob
import os
import re

import pytest

from helpers import ROOT

PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def read(page):
    with open(os.path.join(ROOT, page)) as f:
        return f.read()


def slug(heading):
    """The anchor MkDocs (and GitHub) gives a heading: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


def anchors(page):
    text = re.sub(r"^```.*?^```", "", read(page), flags=re.S | re.M)  # a '# comment' in a block is no heading
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_readme_is_short():
    assert len(read("README.md").splitlines()) <= 250


def test_readme_opens_with_the_two_commands_ci_runs():
    first = re.search(r"^```bash\n(.*?)^```", read("README.md"), re.S | re.M).group(1).splitlines()
    assert first[0].startswith("python3 -m venv .venv && .venv/bin/pip install") and "examples/seed.py" in first[0]
    assert first[1] == ".venv/bin/python -m pytest -q -n 2 tests"
    assert read(".ci/run").rstrip().splitlines()[-1] == first[1]  # CI runs exactly README's test command


def test_first_screen_has_the_newcomers_path():
    screen = "\n".join(read("README.md").splitlines()[:40])
    for what, pattern in (("install", r"pip install"), ("first gradient", r"\.grad\(3\.0\)"),
                          ("batch", r"F\.grad\(np\.random\.rand\(\d[\d_]*, 8\)\)"), ("SciPy", r"minimize\(F, .*jac=F\.grad")):
        assert re.search(pattern, screen), f"README's first 40 lines lack {what} ({pattern})"


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    links = [link for link in LINK.findall(read(page)) if not re.match(r"[a-z]+:", link)]
    for link in links:
        path, _, anchor = link.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        assert os.path.isfile(os.path.join(ROOT, target)), f"{page}: {link} names no file"
        if anchor and target.endswith(".md"):
            assert anchor in anchors(target), f"{page}: {link}: {target} has no heading #{anchor}"


def test_the_links_are_seen():
    links = LINK.findall(read("README.md"))
    assert "docs/cache.md#without-a-compiler" in links and "docs/api.md" in links
    assert slug("Beyond one process: pickling, multiprocessing, Dask") == "beyond-one-process-pickling-multiprocessing-dask"


def test_every_page_is_in_the_site():
    nav = read("mkdocs.yml")
    for page in PAGES[1:]:
        assert f" {os.path.basename(page)}\n" in nav, f"{page} is not in mkdocs.yml's nav"
