"""FLOPs and bytes on oneDNN library spans (issue 12), from the interposer's primitive descriptors and
from oneDNN's verbose lines, and the rooflines that read them on a real CPU trace.

The probe (tests/onednn/onednn_cost_probe.cc) runs one primitive of each kind with a formula, on real
layer shapes; the expected numbers below are worked out from those shapes. resnet18's convolutions
are checked against PyTorch's own FLOP counter (torch.autograd.profiler, with_flops=True)."""
import json
import os
import subprocess

import pytest

from conftest import BUILD_DIR, STRATA, SYSTEM_PYTHON, run_strata

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROBE = os.path.join(BUILD_DIR, "bin", "onednn_cost_probe")
TRACER = os.path.join(BUILD_DIR, "lib", "libstrata_onednn.so")
needs_probe = pytest.mark.skipif(not (os.path.exists(PROBE) and os.path.exists(TRACER)),
                                 reason="oneDNN tracer or probe not built (libdnnl-dev missing)")
torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch, torchvision"],
                                 capture_output=True).returncode == 0

F32 = 4
# (probe step, span name, flops, bytes), from the shapes in onednn_cost_probe.cc.
EXPECTED = [
    ("convolution", "onednn::convolution", 2 * 64 * 112 * 112 * 3 * 7 * 7,
     F32 * (3 * 224 * 224 + 64 * 3 * 7 * 7 + 64 * 112 * 112)),
    ("convolution_depthwise", "onednn::convolution", 2 * 32 * 112 * 112 * 9 + 32 * 112 * 112,
     F32 * (32 * 112 * 112 + 32 * 9 + 32 + 32 * 112 * 112)),
    ("deconvolution", "onednn::deconvolution", 2 * 16 * 14 * 14 * 8 * 16,
     F32 * (16 * 14 * 14 + 8 * 16 * 16 + 8 * 28 * 28)),
    ("matmul", "onednn::matmul", 2 * 2 * 64 * 256 * 128 + 2 * 64 * 256,
     F32 * (2 * 64 * 128 + 2 * 128 * 256 + 256 + 2 * 64 * 256)),
    ("inner_product", "onednn::inner_product", 2 * 512 * 1000 + 1000, F32 * (512 + 512 * 1000 + 1000 + 1000)),
    ("eltwise", "onednn::eltwise", 64 * 112 * 112, F32 * 2 * 64 * 112 * 112),
    ("pooling_max", "onednn::pooling_v2", 64 * 56 * 56 * 9, F32 * 64 * (112 * 112 + 56 * 56)),
    ("pooling_avg", "onednn::pooling_v2", 512 * (49 + 1), F32 * 512 * (49 + 1)),
    ("batch_norm_inference", "onednn::batch_normalization", 2 * 64 * 56 * 56,
     F32 * (2 * 64 * 56 * 56 + 4 * 64)),
    ("batch_norm_training", "onednn::batch_normalization", 6 * 2 * 64 * 28 * 28,
     F32 * (2 * 2 * 64 * 28 * 28 + 4 * 64)),
]


def record(tmp_path, command, mode, name):
    out = str(tmp_path / f"{name}.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", out, "--level", "library", "--onednn", mode, "--",
                           *command], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(run_strata("export", out, "--format", "json").stdout)


def library(spans):
    return [s for s in spans if s["level"] == "library"]


@needs_probe
@pytest.mark.parametrize("mode", ["interpose", "verbose"])
def test_each_primitive_kind_carries_its_flops_and_bytes(tmp_path, mode):
    _, spans = record(tmp_path, [PROBE], mode, mode)
    lib = library(spans)
    assert len(lib) == len(EXPECTED), [s["name"] for s in lib]
    for span, (step, name, flops, nbytes) in zip(lib, EXPECTED):
        a = span["attributes"]
        assert span["name"] == name, step
        assert a["source"] == ("interposer" if mode == "interpose" else "verbose")
        assert a["metric.flops"] == flops, (step, a)
        assert a["metric.bytes"] == nbytes, (step, a)


@needs_probe
@pytest.mark.skipif(not torch_available, reason="Debian's python3-torch/torchvision not installed")
def test_resnet18_convolution_flops_equal_pytorchs_count_and_the_roofline_runs(tmp_path):
    # PyTorch's own FLOP counter on the same model and input, in a process of its own.
    reference = subprocess.run([SYSTEM_PYTHON, "-c", """
import torch, torchvision
m = torchvision.models.resnet18().eval()
with torch.no_grad(), torch.autograd.profiler.profile(with_flops=True) as p:
    m(torch.randn(1, 3, 224, 224))
print(' '.join(str(e.flops) for e in p.function_events if e.name == 'aten::conv2d'))
"""], capture_output=True, text=True, check=True).stdout.split()
    torch_flops = [int(f) for f in reference]
    assert len(torch_flops) == 20
    command = [SYSTEM_PYTHON, os.path.join(REPO_ROOT, "examples/pytorch/infer.py"), "--model", "resnet18",
               "--batch", "1", "--iterations", "1", "--warmup", "0"]
    per_mode = {}
    for mode in ("interpose", "verbose"):
        path, spans = record(tmp_path, command, mode, mode)
        convs = [s for s in library(spans) if s["name"] == "onednn::convolution"]
        assert len(convs) == 20
        per_mode[mode] = [s["attributes"]["metric.flops"] for s in convs]
        assert per_mode[mode] == torch_flops
        assert all(s["attributes"]["metric.bytes"] > 0 for s in convs)
    # The rooflines run on this CPU trace: every convolution name placed, the CPU peaks named.
    tables = json.loads(run_strata("analyze", path, "--analysis", "kernel_roofline,layer_roofline", "--format",
                                   "json", "--param", "top=0").stdout)
    roof = tables["kernel_roofline"]
    col = {c: i for i, c in enumerate(roof["columns"])}
    conv = [r for r in roof["rows"] if r[col["kernel"]] == "onednn::convolution"]
    assert len(conv) == 1 and conv[0][col["flop_per_byte"]] > 0 and conv[0][col["gflop_per_s"]] > 0
    assert any("GFLOP/s" in n for n in roof["notes"])
    layers = tables["layer_roofline"]
    assert len(layers["rows"]) == 20  # one row per convolution layer (the layers with oneDNN work)
