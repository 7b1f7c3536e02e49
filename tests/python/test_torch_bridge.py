"""The PyTorch bridge compiled at first use (strata/_torch_bridge.py), recorded with `strata record
--level layer` on Debian's torch 1.13 (/usr/bin/python3): a cache miss compiles a bridge that records
the same layer spans as the bridge Strata built against this torch (libstrata_torch.so); the next run
is a cache hit; a corrupted entry is rebuilt; with no compiler the Python hooks still record the
layer. Each route is told apart by its one stderr line, never by timing. About two real compiles."""
import collections
import os
import subprocess

import pytest

from conftest import BUILD_DIR, SYSTEM_PYTHON, record

torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_available, reason="Debian's python3-torch not installed")

PREBUILT = os.path.join(BUILD_DIR, "lib", "libstrata_torch.so")

MODEL = r'''
import torch
import strata
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 6 * 6, 4))
x = torch.randn(2, 3, 8, 8)
with torch.no_grad():
    for i in range(2):
        with strata.span("step", level="model"):
            model(x)
'''


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "model.py"
    path.write_text(MODEL)
    return str(path)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One cache for the module: the miss, then the hit, then the corrupt entry, in that order."""
    return str(tmp_path_factory.mktemp("xdg-cache"))


def run(tmp_path, script, cache_home, **env_changes):
    env = dict(os.environ, XDG_CACHE_HOME=cache_home)
    env.pop("CXX", None)
    env.pop("STRATA_TORCH_LIB", None)
    for key, value in env_changes.items():
        env[key] = value
    spans, proc = record(tmp_path, [SYSTEM_PYTHON, script], level="layer", env=env)
    lines = [ln for ln in proc.stderr.splitlines() if "layer tracer:" in ln]
    assert len(lines) == 1, proc.stderr  # one line says which route, once
    return spans, lines[0]


def layer_ops(spans):
    """The layer spans as (name, shapes, module) with their counts."""
    return collections.Counter((s["name"], s["attributes"].get("shapes"), s["attributes"].get("module"))
                               for s in spans if s["level"] == "layer")


def entries(cache_home):
    root = os.path.join(cache_home, "strata", "torch-bridge")
    return sorted(n for n in os.listdir(root) if not n.startswith(".") and os.path.isdir(os.path.join(root, n))) \
        if os.path.isdir(root) else []


_reference = {}


def prebuilt_ops(tmp_path_factory, script):
    if "ops" not in _reference:
        if not os.path.exists(PREBUILT):
            pytest.skip("no prebuilt bridge (Strata built without libtorch-dev)")
        spans, line = run(tmp_path_factory.mktemp("prebuilt"), script, str(tmp_path_factory.mktemp("unused")),
                          STRATA_TORCH_BRIDGE="auto")
        assert "layer tracer: prebuilt bridge (built with Strata for this libtorch_cpu" in line, line
        _reference["ops"] = layer_ops(spans)
    return _reference["ops"]


def test_prebuilt_bridge_is_used_for_the_torch_it_was_built_against(tmp_path_factory, script):
    ops = prebuilt_ops(tmp_path_factory, script)
    names = {name for name, _, _ in ops}
    assert {"aten::conv2d", "aten::relu", "aten::linear", "aten::addmm"} <= names, names


def test_cache_miss_compiles_a_bridge_equal_to_the_prebuilt_one(tmp_path, tmp_path_factory, script, cache):
    assert entries(cache) == []
    spans, line = run(tmp_path, script, cache, STRATA_TORCH_BRIDGE="compile")
    assert "layer tracer: compiled bridge (compiled in " in line, line
    (key,) = entries(cache)
    assert key.startswith("torch-1.13") and os.path.join(cache, "strata", "torch-bridge", key) in line
    ops = layer_ops(spans)
    assert ops == prebuilt_ops(tmp_path_factory, script)
    layer = [s for s in spans if s["level"] == "layer"]
    assert all("alloc_bytes" in s["attributes"] for s in layer)  # the memory tracker runs too


def test_second_run_is_a_cache_hit(tmp_path, tmp_path_factory, script, cache):
    (key,) = entries(cache)
    library = os.path.join(cache, "strata", "torch-bridge", key, "libstrata_torch_bridge.so")
    before = os.stat(library)
    spans, line = run(tmp_path, script, cache, STRATA_TORCH_BRIDGE="compile")
    assert "layer tracer: compiled bridge (cached, " in line, line
    after = os.stat(library)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rebuilt
    assert entries(cache) == [key]
    assert layer_ops(spans) == prebuilt_ops(tmp_path_factory, script)


def test_corrupted_cache_entry_is_detected_and_rebuilt(tmp_path, tmp_path_factory, script, cache):
    (key,) = entries(cache)
    library = os.path.join(cache, "strata", "torch-bridge", key, "libstrata_torch_bridge.so")
    with open(library, "r+b") as f:  # a torn write: the ELF header is garbage now
        f.write(b"\0" * 64)
    spans, line = run(tmp_path, script, cache, STRATA_TORCH_BRIDGE="compile")
    assert "layer tracer: compiled bridge (rebuilt in " in line and "corrupt" in line, line
    assert entries(cache) == [key]
    assert open(library, "rb").read(4) == b"\x7fELF"
    assert layer_ops(spans) == prebuilt_ops(tmp_path_factory, script)


@pytest.mark.parametrize("no_compiler, why", [
    ({"STRATA_CXX": "/nonexistent"}, "no C++ compiler: STRATA_CXX=/nonexistent not found"),
    ({"PATH": "/nonexistent"}, "no C++ compiler: none of c++, g++, clang++ on PATH"),
])
def test_no_compiler_falls_back_to_python_hooks(tmp_path, tmp_path_factory, script, no_compiler, why):
    cache_home = str(tmp_path / "cache")
    spans, line = run(tmp_path, script, cache_home, STRATA_TORCH_BRIDGE="compile", **no_compiler)
    assert f"layer tracer: python hooks ({why}" in line, line
    assert entries(cache_home) == []
    by_id = {s["span_id"]: s for s in spans}
    layer = [s for s in spans if s["level"] == "layer"]
    in_steps = [s for s in layer if by_id.get(s["parent_id"], {}).get("name") == "step"]
    # The ops the Python hooks see (below autograd) under each model step, with their module paths.
    per_step = collections.Counter((s["name"], s["attributes"].get("module")) for s in in_steps)
    for op, module in [("aten::convolution", "0"), ("aten::relu", "1"), ("aten::addmm", "3")]:
        assert per_step[(op, module)] == 2, per_step
    assert all("alloc_bytes" not in s["attributes"] for s in layer)  # no memory tracking on this route
    # Every op name it records is one the native bridge records too (it sees a subset of the ops).
    native = {name for name, _, _ in prebuilt_ops(tmp_path_factory, script)}
    assert {s["name"] for s in layer} <= native
