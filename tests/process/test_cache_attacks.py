"""The cache against hostile neighbours and unlucky timing: directories above the cache that
someone else could change, processes writing the same entry at once, forks in the middle of
a build, metadata and files of the wrong kind, a compiler that refuses the code.

Each test runs symgrad in fresh processes; a compiler wrapper (CC) counts compilations or
slows one down where timing matters. Tests that need another user or root skip without it."""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

from helpers import run_python

pytestmark = pytest.mark.slow

ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="needs root (another user's files)")

SEED = """
    import math, sys, warnings
    import symgrad
    warnings.simplefilter("always")
    def seed(x):
        return 64 * x * (1 - x) * math.pow(1 - 2 * x, 2) * math.pow(1 - 8 * x + 8 * x * x, 2)
    try:
        print(symgrad.compile(seed).grad(3.0))
    except (symgrad.CacheError, symgrad.CompileError) as e:
        print(type(e).__name__, str(e).replace(chr(10), " | "))
"""
WANT = "-75279680.0"


def counting_cc(tmp_path, sleep=0.0, fail=False):
    """A C compiler that logs each call (one line per call) to tmp_path/cc.log: gcc itself,
    optionally after a pause, or one that refuses every program."""
    log, cc = tmp_path / "cc.log", tmp_path / "cc.sh"
    body = 'echo "error: this compiler refuses everything" >&2; exit 1' if fail else f'sleep {sleep}; exec gcc "$@"'
    cc.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{body}\n')
    cc.chmod(0o755)
    return cc, log


def compiles(log):
    """How many kernels were compiled (calls that produce a library)."""
    return sum(" -o " in line and ".so" in line for line in log.read_text().splitlines()) if log.exists() else 0


# -- the directories above the cache --------------------------------------------------------------
def test_cache_below_a_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # anyone could rename the cache away and put a link in its place
    r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=shared / "cache")
    assert r.lines[-1].startswith("CacheError") and f"{shared} is writable by everyone" in r.lines[-1]
    assert list(shared.iterdir()) == []  # not even created
    os.chmod(shared, 0o1777)  # sticky, like /tmp: others cannot rename what is ours
    assert run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=shared / "cache").lines == [WANT]


def test_default_cache_below_an_unsafe_directory_falls_back(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    os.chmod(xdg, 0o777)
    r = run_python(SEED, tmp_path, XDG_CACHE_HOME=xdg, SYMGRAD_CACHE_DIR="")
    assert r.lines == [WANT] and r.stderr.count("CacheWarning") == 1 and "another user could replace it" in r.stderr
    assert list(xdg.iterdir()) == [] or not any((xdg / "symgrad").iterdir())


def test_symbolic_links_above_the_cache_are_followed_and_checked(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)  # a link of ours to a safe place: fine
    assert run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "via" / "cache").lines == [WANT]
    assert any(p.suffix == ".json" for p in (real / "cache").iterdir())
    unsafe = tmp_path / "unsafe"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)
    (tmp_path / "via2").symlink_to(unsafe)  # a link of ours to an unsafe place: refused
    r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "via2" / "cache")
    assert r.lines[-1].startswith("CacheError") and f"{unsafe} is writable by everyone" in r.lines[-1]


@ROOT_ONLY
def test_home_of_another_user_is_not_a_cache_for_root(tmp_path):
    """sudo keeping HOME: root must not build into a directory another user controls."""
    user = "symgrad_test_home"
    if subprocess.run(["useradd", "-M", user], capture_output=True).returncode not in (0, 9):
        pytest.skip("cannot create a user here")
    try:
        home = tmp_path / "home"
        home.mkdir()
        shutil.chown(home, user)
        r = run_python(SEED, tmp_path, HOME=home, XDG_CACHE_HOME="", SYMGRAD_CACHE_DIR="")
        assert r.lines == [WANT] and "is owned by another user" in r.stderr
        assert not (home / ".cache" / "symgrad").exists() or not any((home / ".cache" / "symgrad").iterdir())
    finally:
        subprocess.run(["userdel", user], capture_output=True)


def test_missing_parents_are_created_private_whatever_the_umask(tmp_path):
    cache = tmp_path / "a" / "b" / "c" / "cache"
    r = run_python("import os\nos.umask(0)\n" + textwrap.dedent(SEED), tmp_path, SYMGRAD_CACHE_DIR=cache)
    assert r.lines[-1] == WANT
    for d in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c", cache):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


# -- entries of the wrong kind ---------------------------------------------------------------------
@pytest.mark.parametrize("content", ["[]", "1", "null", '"text"', "[" * 100000 + "]" * 100000, "fifo"],
                         ids=["list", "number", "null", "string", "deep", "fifo"])
def test_metadata_of_the_wrong_kind_is_rebuilt(tmp_path, content):
    cache = tmp_path / "cache"
    assert run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache).lines == [WANT]
    meta = next(cache.glob("_sg_*.json"))
    meta.unlink()
    if content == "fifo":
        os.mkfifo(meta, 0o600)  # must not block the reader
    else:
        meta.write_text(content)
    r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache, timeout=60)
    assert r.lines == [WANT] and "was damaged" in r.stderr
    assert run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache).stderr.count("damaged") == 0


# -- concurrent writers and readers -----------------------------------------------------------------
def test_a_second_writer_keeps_the_first_writers_library(tmp_path):
    """Two processes that build the same kernel at once: the one that stores last must not
    delete the library the other has just written (and may be about to load)."""
    cache = tmp_path / "cache"
    assert run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache).lines == [WANT]
    meta = next(cache.glob("_sg_*.json"))
    first = json.loads(meta.read_text())["library"]
    meta.unlink()  # as if the other writer had not stored its metadata yet
    # the other writer's compiler gives other bytes for the same key (gcc's builds are
    # reproducible: a compiler of another name, which the key leaves out, that stamps a random build id)
    other = tmp_path / "other-cc.sh"
    other.write_text('#!/bin/sh\nexec gcc -Wl,--build-id=uuid "$@"\n')
    other.chmod(0o755)
    r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache, CC=other)
    assert r.lines == [WANT] and "CacheWarning" not in r.stderr
    second = json.loads(meta.read_text())["library"]
    assert second != first and (cache / first).exists()  # both still there
    # a reader holding the first metadata still loads the first library
    m = json.loads(meta.read_text())
    m.update(library=first, sha256=__import__("hashlib").sha256((cache / first).read_bytes()).hexdigest())
    meta.write_text(json.dumps(m))
    r = run_python(textwrap.dedent(SEED) + "\nprint(" + repr(first) + " in open('/proc/self/maps').read())", tmp_path,
                   SYMGRAD_CACHE_DIR=cache)
    assert r.lines == [WANT, "True"] and "CacheWarning" not in r.stderr


def test_libraries_no_metadata_lists_are_swept_when_old(tmp_path):
    cache = tmp_path / "cache"
    assert run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache).lines == [WANT]
    meta = next(cache.glob("_sg_*.json"))
    listed = cache / json.loads(meta.read_text())["library"]
    orphan = cache / listed.name.replace(listed.name.split("-")[1][:16], "0" * 16)
    shutil.copy(listed, orphan)
    old = os.path.getmtime(orphan) - 2 * 86400
    os.utime(orphan, (old, old))
    run_python(SEED.replace("return 64", "return 61"), tmp_path, SYMGRAD_CACHE_DIR=cache)  # a build sweeps
    assert not orphan.exists() and listed.exists()


def test_writers_racing_through_a_slow_compiler(tmp_path):
    """Three processes build the same kernel at once, a fourth loads it while they store:
    every one gets the right value and no warning, and the cache ends with a valid entry."""
    cc, log = counting_cc(tmp_path, sleep=1.0)
    cache = tmp_path / "cache"
    script = tmp_path / "race.py"
    script.write_text(textwrap.dedent(SEED))
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(cache), CC=str(cc), PYTHONPATH=os.pathsep.join(sys.path),
               TMPDIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [o[0].split() for o in outs] == [[WANT]] * 3, [o[1] for o in outs]
    assert not any("CacheWarning" in o[1] for o in outs), [o[1] for o in outs]
    r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache, CC=cc)
    assert r.lines == [WANT] and "CacheWarning" not in r.stderr
    assert compiles(log) == 3  # the fourth process loaded a stored library


# -- where kernels go when the cache cannot take them --------------------------------------------------
def test_kernels_built_privately_are_reused_by_later_processes(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    cc, log = counting_cc(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o500)  # read-only: the kernel goes to the private directory
    try:
        for _ in range(3):
            r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache, CC=cc)
            assert r.lines == [WANT]
        assert compiles(log) == 1
    finally:
        os.chmod(cache, 0o700)


@ROOT_ONLY
def test_kernels_built_privately_are_reused_read_only_mount(tmp_path):
    cc, log = counting_cc(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro,mode=700", "tmpfs", str(cache)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        for _ in range(3):
            r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=cache, CC=cc)
            assert r.lines == [WANT]
        assert compiles(log) == 1
    finally:
        subprocess.run(["umount", str(cache)])


@ROOT_ONLY
def test_a_private_directory_name_taken_by_someone_else(tmp_path):
    user = "symgrad_test_squat"
    if subprocess.run(["useradd", "-M", user], capture_output=True).returncode not in (0, 9):
        pytest.skip("cannot create a user here")
    try:
        tmp = tmp_path / "tmp"
        tmp.mkdir()
        os.chmod(tmp, 0o1777)
        squat = tmp / f"symgrad-{os.getuid()}"
        squat.mkdir()
        shutil.chown(squat, user)
        home = tmp_path / "home"
        home.mkdir()
        (home / ".cache").write_text("")  # the cache cannot be made: the private directory is needed
        r = run_python(SEED, tmp_path, HOME=home, XDG_CACHE_HOME="", SYMGRAD_CACHE_DIR="", TMPDIR=tmp)
        assert r.lines == [WANT] and "owned by another user" in r.stderr and "removed when it exits" in r.stderr
        assert sorted(p.name for p in tmp.iterdir()) == [squat.name]  # nothing left behind
        assert list(squat.iterdir()) == []
    finally:
        subprocess.run(["userdel", user], capture_output=True)


# -- the compiler ---------------------------------------------------------------------------------
def test_a_compiler_that_refuses_the_code_is_asked_once(tmp_path):
    cc, log = counting_cc(tmp_path, fail=True)
    r = run_python(SEED, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache", CC=cc)
    assert r.lines[-1].startswith("CompileError") and "refuses everything" in r.lines[-1]
    assert "CacheWarning" not in r.stderr  # the cache is fine; the code was refused
    calls = log.read_text().splitlines()
    assert calls.count("--version") <= 1  # asked while the code compiles
    lines = [line for line in calls if line != "--version"]  # one build: each translation unit once, in one directory
    assert len(lines) == len(set(lines)) and len({os.path.dirname(line.split(" -o ")[1].split()[0]) for line in lines}) == 1


# -- fork -------------------------------------------------------------------------------------------
FORK_WHILE_BUILDING = """
    import os, threading, time
    import numpy as np, symgrad
    F = symgrad.compile(lambda x: x * x + 3.0 * x - 1.0)
    G = symgrad.compile(lambda x: x * x * x)
    t = threading.Thread(target=lambda: print("thread", F(2.0), flush=True))
    t.start()
    time.sleep(1.0)                      # the thread is compiling F now (the compiler is slow)
    pid = os.fork()
    if pid == 0:                         # the child uses F, whose build lock the thread held
        print("child", F(np.arange(3.0)).tolist(), G(2.0), flush=True)
        os._exit(0)
    t.join()
    _, status = os.waitpid(pid, 0)
    print("status", status)
"""


def test_fork_while_another_thread_builds(tmp_path):
    cc, _ = counting_cc(tmp_path, sleep=3.0)
    r = run_python(FORK_WHILE_BUILDING, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache", CC=cc, timeout=120)
    assert sorted(r.lines) == ["child [-1.0, 3.0, 9.0] 8.0", "status 0", "thread 9.0"]


FORK_WHILE_IMPORTING = """
    import os, sys, threading, time
    import symgrad
    # slowmod stands for a package a build imports lazily (sympy, symgrad.render), whose
    # import a fork cannot be timed to land in
    symgrad.forksafe.LAZY_PACKAGES |= {"slowmod"}
    with open("slowmod.py", "w") as f:
        f.write("import time\\ntime.sleep(2.0)\\nVALUE = 42\\n")
    sys.path.insert(0, os.getcwd())
    t = threading.Thread(target=lambda: __import__("slowmod"))
    t.start()
    time.sleep(0.5)                      # the thread is inside slowmod's import now
    pid = os.fork()
    if pid == 0:
        import slowmod
        print("child", slowmod.VALUE, flush=True)
        os._exit(0)
    t.join()
    print("status", os.waitpid(pid, 0)[1])
"""


def test_fork_waits_for_an_import_in_another_thread(tmp_path):
    """A build imports sympy and the renderer lazily, so a fork can land in the middle of an
    import (it did under load in the test above): the child would find the module half made
    and its import lock held by a thread it does not have, and hang."""
    r = run_python(FORK_WHILE_IMPORTING, tmp_path, timeout=60)
    assert sorted(r.lines) == ["child 42", "status 0"]


FORK_WHILE_ANOTHER_PACKAGE_IMPORTS = """
    import os, sys, threading, time
    import symgrad
    with open("othermod.py", "w") as f:
        f.write("import time\\ntime.sleep(5.0)\\n")
    sys.path.insert(0, os.getcwd())
    threading.Thread(target=lambda: __import__("othermod"), daemon=True).start()
    time.sleep(0.5)
    t = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    print("fork took", round(time.monotonic() - t))
    os.waitpid(pid, 0)
"""


def test_fork_does_not_wait_for_imports_of_other_packages(tmp_path):
    """The wait is for symgrad's lazy imports only: a fork is not held up by another
    library's slow (or hung) import in a background thread."""
    r = run_python(FORK_WHILE_ANOTHER_PACKAGE_IMPORTS, tmp_path, timeout=60)
    assert r.lines == ["fork took 0"]


LARGE_CORE = """
    import resource, numpy as np, symgrad
    F = symgrad.compile(lambda a: np.sum(a * a), shapes=[(64, 64)])
    a = np.broadcast_to(np.linspace(0.0, 1.0, 64 * 64).reshape(64, 64), (8192, 64, 64))
    F(a[:2])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = F(a)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(bool(np.allclose(r, np.sum(a[0] * a[0]), rtol=1e-13)), grown)
"""


def test_broadcast_input_with_a_large_core_is_copied_a_chunk_at_a_time(tmp_path):
    """8192 points of 32 KiB each (256 MiB if materialised) through about a megabyte of copies."""
    r = run_python(LARGE_CORE, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    ok, grown = r.lines[-1].split()
    assert ok == "True" and float(grown) < 8.0, grown  # MiB
