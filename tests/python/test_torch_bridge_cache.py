"""The PyTorch bridge's build cache (strata/_torch_bridge.py) with a stand-in compiler: a miss compiles
once, a hit does not compile, a corrupt entry is rebuilt, concurrent first uses compile once, a
failing compile and a missing compiler say why. Fast: no torch, no real compile (the real compile
is test_torch_bridge.py's)."""
import multiprocessing
import os
import stat
import sys

import pytest

from conftest import PYTHON_PKG

sys.path.insert(0, PYTHON_PKG)
from strata import _torch_bridge as tb  # noqa: E402


def fake_compiler(folder, body):
    """A `c++` that runs `body` (sh) with the output file in $out and counts its runs in calls.log."""
    path = folder / "fake-c++"
    path.write_text("#!/bin/sh\n"
                    'if [ "$1" = --version ]; then echo "fake c++ 1.0"; exit 0; fi\n'
                    f'echo run >> "{folder}/calls.log"\n'
                    'out=""; prev=""; for a in "$@"; do [ "$prev" = -o ] && out="$a"; prev="$a"; done\n' + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def calls(folder):
    log = folder / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def plan(folder, cxx, key="torch-9.9.9-abi1-0123456789abcdef"):
    return tb.Build(key=key, torch_version="9.9.9", abi=1, cxx=cxx, source_dir=str(folder), includes=[],
                    torch_libs=["/lib/libtorch_cpu.so", "/lib/libc10.so"], runtime="/lib/libstrata_torch_rt.so")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def test_miss_compiles_then_hit_does_not(cache):
    cxx = fake_compiler(cache, 'printf "library-bytes" > "$out"\n')
    build = plan(cache, cxx)
    path, how = tb.cached_bridge(build)
    assert how.startswith("compiled in ") and calls(cache) == 1
    assert path == os.path.join(tb.cache_root(), build.key, tb.LIBRARY)
    assert open(path).read() == "library-bytes"
    assert tb.entry_is_valid(os.path.dirname(path))
    path2, how2 = tb.cached_bridge(build)
    assert (path2, how2) == (path, "cached") and calls(cache) == 1
    # No temporary folders or corrupt copies are left beside the entry.
    assert sorted(os.listdir(tb.cache_root())) == [build.key, build.key + ".lock"]


def test_corrupt_entry_is_detected_and_rebuilt(cache):
    cxx = fake_compiler(cache, 'printf "library-bytes" > "$out"\n')
    build = plan(cache, cxx)
    path, _ = tb.cached_bridge(build)
    with open(path, "r+b") as f:  # one flipped byte (a torn copy, a disk error)
        f.write(b"L")
    assert not tb.entry_is_valid(os.path.dirname(path))
    path2, how = tb.cached_bridge(build)
    assert path2 == path and how.startswith("rebuilt in ") and "corrupt" in how and calls(cache) == 2
    assert open(path).read() == "library-bytes" and tb.entry_is_valid(os.path.dirname(path))
    # An entry whose manifest is missing (a crash between the two writes) is rebuilt as well.
    os.remove(os.path.join(os.path.dirname(path), tb.MANIFEST))
    assert tb.cached_bridge(build)[1].startswith("rebuilt in ") and calls(cache) == 3


def test_other_key_is_another_entry(cache):
    cxx = fake_compiler(cache, 'printf "x" > "$out"\n')
    tb.cached_bridge(plan(cache, cxx, key="torch-1.13.0-abi1-aaaaaaaaaaaaaaaa"))
    tb.cached_bridge(plan(cache, cxx, key="torch-2.11.0-abi1-bbbbbbbbbbbbbbbb"))
    assert calls(cache) == 2


def _first_use(folder, cxx, queue):
    os.environ["XDG_CACHE_HOME"] = str(folder / "cache")
    queue.put(tb.cached_bridge(plan(folder, cxx)))


def test_concurrent_first_uses_compile_once(cache):
    # A slow compile: the other processes arrive while the first one holds the lock.
    cxx = fake_compiler(cache, 'sleep 1; printf "library-bytes" > "$out"\n')
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_first_use, args=(cache, cxx, queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert calls(cache) == 1, results
    assert len({path for path, _ in results}) == 1
    hows = sorted(how.split(" in ")[0] for _, how in results)
    assert hows.count("compiled") == 1 and all(h.startswith("cached") for h in hows if h != "compiled"), hows
    assert open(results[0][0]).read() == "library-bytes"


def test_failed_compile_names_the_error_and_keeps_the_log(cache):
    cxx = fake_compiler(cache, 'echo "torch_bridge.cc:1:1: error: no such header" >&2; exit 1\n')
    build = plan(cache, cxx)
    with pytest.raises(tb.BridgeUnavailable) as err:
        tb.cached_bridge(build)
    message = str(err.value)
    assert "did not compile" in message and "error: no such header" in message
    log = os.path.join(tb.cache_root(), build.key + ".log")
    assert log in message and "no such header" in open(log).read()
    assert not os.path.exists(os.path.join(tb.cache_root(), build.key))
    assert not [n for n in os.listdir(tb.cache_root()) if ".tmp-" in n]


def test_no_compiler(monkeypatch):
    monkeypatch.setenv("STRATA_CXX", "/nonexistent/c++")
    with pytest.raises(tb.BridgeUnavailable, match=r"no C\+\+ compiler: STRATA_CXX=/nonexistent/c\+\+ not found"):
        tb.find_compiler()
    monkeypatch.delenv("STRATA_CXX")
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(tb.BridgeUnavailable, match=r"none of c\+\+, g\+\+, clang\+\+ on PATH"):
        tb.find_compiler()


def test_compile_command_matches_the_running_torch(cache):
    build = plan(cache, "/usr/bin/g++")._replace(abi=0, includes=["/t/include", "/t/include/api"])
    cmd = tb.compile_command(build, "/out.so")
    assert "-D_GLIBCXX_USE_CXX11_ABI=0" in cmd and "-std=c++17" in cmd
    assert cmd[cmd.index("-o") + 1] == "/out.so"
    assert ["-isystem", "/t/include"] == cmd[cmd.index("/t/include") - 1:cmd.index("/t/include") + 1]
    assert "/lib/libtorch_cpu.so" in cmd and "/lib/libstrata_torch_rt.so" in cmd
    assert "-Wl,-rpath,/lib" in cmd
    # Debian's headers in /usr/include: not passed as -isystem (clang would then search it before
    # the C++ library's own headers, and <cstdlib>'s #include_next fails).
    debian = tb.compile_command(build._replace(includes=["/usr/include", "/usr/include/torch/csrc/api/include"]), "/o")
    assert "/usr/include" not in debian and "/usr/include/torch/csrc/api/include" in debian


def test_unusable_cache_folder_says_so(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_folder))
    cxx = fake_compiler(tmp_path, 'printf "x" > "$out"\n')
    with pytest.raises(tb.BridgeUnavailable, match="the bridge cache .* is not usable .*set XDG_CACHE_HOME"):
        tb.cached_bridge(plan(tmp_path, cxx))
    assert calls(tmp_path) == 0


def test_headers_of_the_running_torch_are_found(tmp_path):
    class FakeTorch:
        __file__ = str(tmp_path / "torch" / "__init__.py")

    (tmp_path / "torch" / "include" / "ATen").mkdir(parents=True)
    (tmp_path / "torch" / "include" / "ATen" / "record_function.h").write_text("")
    dirs = tb.torch_include_dirs(FakeTorch)
    include = tmp_path / "torch" / "include"
    assert dirs == [str(include), str(include / "torch" / "csrc" / "api" / "include")]


def test_prebuilt_bridge_only_for_the_libtorch_it_was_built_against(tmp_path, monkeypatch):
    (tmp_path / "libstrata_torch.so").write_bytes(b"")
    running = tmp_path / "libtorch_cpu.so.2.11"
    running.write_bytes(b"")
    monkeypatch.setattr(tb.strata, "_library_dir", lambda: str(tmp_path))
    monkeypatch.setattr(tb, "loaded_library", lambda stem: str(running) if stem == "libtorch_cpu" else None)
    assert tb._prebuilt() is None  # no .for file: a Strata built before it existed, or by hand
    (tmp_path / "libstrata_torch.built-for").write_text("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0\n")
    assert tb._prebuilt() is None  # built for Debian's 1.13, running another torch
    (tmp_path / "libstrata_torch.built-for").write_text(f"{running}\n")
    assert tb._prebuilt() == str(tmp_path / "libstrata_torch.so")
