"""The cache no one else can poison, that heals itself, and that never stops the program.

Each test runs symgrad in a fresh process against a cache directory in some state (unsafe,
foreign, tampered, read-only, noexec, full) and checks the result and what was said. Tests
that need root (another user's files, mounts, pid namespaces) skip without it."""
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
                               reason="needs root (another user's files, mounts, namespaces)")

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


def run(tmp_path, check=True, **env):
    return run_python(SEED, tmp_path, check=check, **env)


def entries(d):
    return sorted(p.name for p in d.iterdir() if not p.name.startswith("."))


def modes(d):
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in d.iterdir()}


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o720])
def test_group_or_world_writable_cache_dir_is_refused(tmp_path, mode):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(cache, mode)
    r = run(tmp_path, SYMGRAD_CACHE_DIR=cache)
    assert r.lines[-1].startswith("CacheError") and str(cache) in r.lines[-1] and "writable by" in r.lines[-1]
    assert entries(cache) == []  # nothing written into it


def test_unsafe_default_location_falls_back_with_one_warning(tmp_path):
    base = tmp_path / "xdg"
    (base / "symgrad").mkdir(parents=True)
    os.chmod(base / "symgrad", 0o777)
    env = {k: v for k, v in os.environ.items()}
    r = run_python(SEED, tmp_path, XDG_CACHE_HOME=base, SYMGRAD_CACHE_DIR="", check=True)
    assert r.lines[-1] == WANT
    assert r.stderr.count("CacheWarning") == 1 and "writable by others" in r.stderr
    assert entries(base / "symgrad") == []
    assert env  # (the environment of this process is untouched)


def test_symlinked_cache_dir_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    r = run(tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "link")
    assert r.lines[-1].startswith("CacheError") and "symbolic link" in r.lines[-1]


def test_umask_000_still_gives_private_modes(tmp_path):
    cache = tmp_path / "cache"
    r = run_python("import os\nos.umask(0)\n" + SEED.replace("\n    ", "\n").strip(), tmp_path,
                   SYMGRAD_CACHE_DIR=cache)
    assert r.lines[-1] == WANT
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    found = modes(cache)
    assert found and all(m in (0o600, 0o700) for m in found.values()), found
    assert any(n.endswith(".so") and m == 0o700 for n, m in found.items())


def _entry(cache):
    meta = next(p for p in cache.glob("_sg_*.json"))
    lib = next(cache.glob(meta.name[:-5] + "-*.so"))
    return meta, lib


def _build_cache(tmp_path):
    cache = tmp_path / "cache"
    assert run(tmp_path, SYMGRAD_CACHE_DIR=cache).lines == [WANT]
    return cache


@pytest.mark.parametrize("damage", ["truncate", "empty", "foreign", "symlink", "garbage-meta", "hash",
                                    "other-kernel"])
def test_damaged_entries_are_rebuilt_with_a_warning(tmp_path, damage):
    cache = _build_cache(tmp_path)
    meta, lib = _entry(cache)
    data = lib.read_bytes()
    if damage == "truncate":
        lib.write_bytes(data[:len(data) // 2])
    elif damage == "empty":
        lib.write_bytes(b"")
    elif damage == "foreign":
        lib.write_bytes(open(sys.executable, "rb").read()[:len(data)])
    elif damage == "symlink":
        other = tmp_path / "elsewhere.so"
        other.write_bytes(data)
        lib.unlink()
        lib.symlink_to(other)
    elif damage == "garbage-meta":
        meta.write_text("{not json")
    elif damage == "hash":
        meta.write_text(meta.read_text().replace('"sha256": "', '"sha256": "0'))
    elif damage == "other-kernel":
        # another function's complete, valid entry filed under this key: the library says so
        run_python(SEED.replace("return 64", "return 65"), tmp_path, SYMGRAD_CACHE_DIR=cache)
        metas = sorted(cache.glob("_sg_*.json"), key=os.path.getmtime)
        other_meta = metas[-1]
        import json
        m = json.loads(other_meta.read_text())
        m["key"] = meta.name[4:-5]
        newlib = cache / m["library"].replace(other_meta.name[4:-5], meta.name[4:-5])
        shutil.copyfile(cache / m["library"], newlib)
        os.chmod(newlib, 0o700)
        m["library"] = newlib.name
        lib.unlink()
        meta.write_text(json.dumps(m))
    r = run(tmp_path, SYMGRAD_CACHE_DIR=cache)
    assert r.lines == [WANT]
    assert "was damaged" in r.stderr or "describes another kernel" in r.stderr
    assert run(tmp_path, SYMGRAD_CACHE_DIR=cache).stderr.count("damaged") == 0  # healed


def test_writes_never_follow_symlinks(tmp_path):
    cache = _build_cache(tmp_path)
    meta, lib = _entry(cache)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    meta.unlink()
    meta.symlink_to(victim)  # the metadata name now points at someone's file
    assert run(tmp_path, SYMGRAD_CACHE_DIR=cache).lines == [WANT]
    assert victim.read_text() == "precious"
    assert not meta.is_symlink()  # replaced by our own file, the link itself


def test_read_only_cache_uses_what_it_has_and_builds_elsewhere(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    cache = _build_cache(tmp_path)
    os.chmod(cache, 0o500)
    try:
        r = run(tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines == [WANT] and "CacheWarning" not in r.stderr  # the kernel was there
        r = run_python(SEED.replace("return 64", "return 63"), tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines == [str(-75279680.0 * 63 / 64)] and r.stderr.count("CacheWarning") == 1
    finally:
        os.chmod(cache, 0o700)


@ROOT_ONLY
def test_read_only_mount(tmp_path):
    cache = _build_cache(tmp_path)
    if subprocess.run(["mount", "--bind", "-o", "ro", str(cache), str(cache)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount read-only here")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(cache)], check=True)
        r = run(tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines == [WANT] and "CacheWarning" not in r.stderr
        r = run_python(SEED.replace("return 64", "return 63"), tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines == [str(-75279680.0 * 63 / 64)] and r.stderr.count("CacheWarning") == 1
        assert "Read-only" in r.stderr or "read-only" in r.stderr
    finally:
        subprocess.run(["umount", str(cache)])


def test_unwritable_home_and_no_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cache").write_text("not a directory")  # ~/.cache cannot be made
    r = run_python(SEED, tmp_path, HOME=home, XDG_CACHE_HOME="", SYMGRAD_CACHE_DIR="")
    assert r.lines == [WANT] and r.stderr.count("CacheWarning") == 1
    r = run_python("import os\nos.environ.pop('HOME', None)\n" + SEED.replace("\n    ", "\n").strip(), tmp_path,
                   XDG_CACHE_HOME="", SYMGRAD_CACHE_DIR="")
    assert r.lines == [WANT]
    assert not (tmp_path / "~").exists()  # never a cache at ./~/.cache


@ROOT_ONLY
def test_noexec_cache(tmp_path):
    cache = tmp_path / "noexec"
    cache.mkdir(mode=0o700)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,noexec,mode=700", "tmpfs", str(cache)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        r = run(tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines == [WANT] and r.stderr.count("CacheWarning") == 1 and "noexec" not in r.lines[-1]
    finally:
        subprocess.run(["umount", str(cache)])


@ROOT_ONLY
def test_full_disk(tmp_path):
    cache = tmp_path / "full"
    cache.mkdir(mode=0o700)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k,mode=700", "tmpfs", str(cache)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        r = run(tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines == [WANT]  # built in the private directory instead
        assert r.stderr.count("CacheWarning") == 1 and "No space left" in r.stderr
        # nothing can be built anywhere: one clear error with the compiler's own message
        private = tmp_path / "fulltmp"
        private.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(private)], check=True)
        try:
            r = run_python(SEED.replace("return 64", "return 62"), tmp_path, SYMGRAD_CACHE_DIR=cache,
                           TMPDIR=private)
            assert r.lines[-1].startswith("CompileError") and "No space left" in r.lines[-1]
        finally:
            subprocess.run(["umount", str(private)])
    finally:
        subprocess.run(["umount", str(cache)])


@ROOT_ONLY
def test_cache_of_another_user_and_a_planted_library(tmp_path):
    user = "symgrad_test_other"
    if subprocess.run(["useradd", "-M", user], capture_output=True).returncode not in (0, 9):
        pytest.skip("cannot create a user here")
    try:
        cache = _build_cache(tmp_path)
        meta, lib = _entry(cache)
        marker = tmp_path / "planted-ran"
        src = tmp_path / "plant.c"
        src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void p(void) '
                       f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
        subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
        import hashlib
        import json
        m = json.loads(meta.read_text())
        m["sha256"] = hashlib.sha256(lib.read_bytes()).hexdigest()
        meta.write_text(json.dumps(m))  # a complete, consistent entry: the planter knows the key
        shutil.chown(cache, user)
        for p in cache.iterdir():
            shutil.chown(p, user)
        probe = textwrap.dedent(SEED) + "\nprint(" + repr(str(lib)) + " in open('/proc/self/maps').read())\n"
        r = run_python(probe, tmp_path, SYMGRAD_CACHE_DIR=cache)
        assert r.lines[0].startswith("CacheError") and "owned by another user" in r.lines[0]
        assert r.lines[1] == "False" and not marker.exists()
        # the same directory as the default location: a private directory instead
        base = tmp_path / "xdg"
        base.mkdir()
        cache.rename(base / "symgrad")
        r = run_python(probe.replace(str(lib), str(base / "symgrad" / lib.name)), tmp_path, XDG_CACHE_HOME=base,
                       SYMGRAD_CACHE_DIR="")
        assert r.lines == [WANT, "False"] and not marker.exists() and "CacheWarning" in r.stderr
    finally:
        subprocess.run(["userdel", user], capture_output=True)


@ROOT_ONLY
def test_same_pid_in_two_pid_namespaces(tmp_path):
    if shutil.which("unshare") is None or subprocess.run(["unshare", "--pid", "--fork", "true"]).returncode:
        pytest.skip("cannot make pid namespaces here")
    cache = tmp_path / "cache"
    script = tmp_path / "ns.py"
    script.write_text("import os\nassert os.getpid() == 1, os.getpid()\n" + SEED.replace("\n    ", "\n").strip())
    env = dict(os.environ, SYMGRAD_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join(sys.path))
    cmd = ["unshare", "--pid", "--fork", sys.executable, str(script)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [o[0].split() for o in outs] == [[WANT], [WANT]], [o[1] for o in outs]


def test_stale_build_directories_are_swept(tmp_path):
    cache = _build_cache(tmp_path)
    stale, fresh = cache / ".build-stale", cache / ".build-fresh"
    stale.mkdir()
    fresh.mkdir()
    old = os.path.getmtime(stale) - 2 * 86400
    os.utime(stale, (old, old))
    run_python(SEED.replace("return 64", "return 61"), tmp_path, SYMGRAD_CACHE_DIR=cache)  # a build sweeps
    assert not stale.exists() and fresh.exists()


FORK = """
    import math, multiprocessing as mp, numpy as np, symgrad
    F = symgrad.compile(lambda x: math.sin(x) * x)
    x = np.linspace(0.0, 1.0, 10**6)
    F(x)                                       # the parent's thread team is up
    G = symgrad.compile(lambda x: x ** 3)

    def work(k):
        y = np.linspace(0.0, 1.0, 2 * 10**5)
        return float(F(y)[-1]) + float(G.grad(y)[-1]) + k   # a loaded kernel, and a new one

    if __name__ == "__main__":
        with mp.get_context("fork").Pool(2) as pool:
            print(pool.map_async(work, range(4)).get(timeout=120))
"""


def test_forked_children_evaluate_without_hanging(tmp_path):
    r = run_python(FORK, tmp_path, timeout=240, SYMGRAD_CACHE_DIR=tmp_path / "cache", OMP_NUM_THREADS=2)
    want = [3.0 + 0.8414709848078965 + k for k in range(4)]
    got = eval(r.lines[-1])
    assert len(got) == 4 and all(abs(g - w) < 1e-12 for g, w in zip(got, want))


BROADCAST = """
    import resource, numpy as np, symgrad
    F = symgrad.compile(lambda x, y: x * y + 1.0)
    y = np.arange(10**7, dtype=float)
    x = np.broadcast_to(np.float64(2.0), (10**7,))
    F(x[:10], y[:10])                          # compiled and loaded first
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = F(x, y)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(bool(np.array_equal(r, 2.0 * y + 1.0)), grown * 1024 / r.nbytes)
"""


def test_broadcast_input_is_not_materialised(tmp_path):
    r = run_python(BROADCAST, tmp_path, SYMGRAD_CACHE_DIR=tmp_path / "cache")
    ok, ratio = r.lines[-1].split()
    assert ok == "True"
    assert float(ratio) <= 1.10  # the result itself, and not another copy of the input
