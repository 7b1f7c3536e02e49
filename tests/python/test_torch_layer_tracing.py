"""PyTorch layer tracer and oneDNN library tracer, recorded with `strata record` on Debian's PyTorch
(/usr/bin/python3). Every check compares against something measured independently in the same run
(torch.autograd.profiler), never against typed-in numbers."""
import collections
import json
import os
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch, torchvision"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_available, reason="Debian's python3-torch/torchvision not installed")

# Runs one model twice (warm-up, then measured) with torch.autograd.profiler on around a model span,
# and writes what the profiler saw: its event list (name, input shapes) and key_averages totals.
PROBE = r'''
import collections, json, sys
import torch, torchvision
import strata
name, out, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
model = torchvision.models.__dict__[name](weights=None, **kwargs).eval()
x = torch.randn(1, 3, size, size)
# The profiler's event list hides an op whose parent has the same name and only that child (a
# display rule, applied on microsecond timestamps): keep every op it recorded.
torch.autograd.profiler_util.EventList._remove_dup_nodes = lambda self: None
with torch.no_grad():
    model(x)
    with torch.autograd.profiler.profile(record_shapes=True, profile_memory=True) as prof:
        with strata.span("profiled", level="model"):
            model(x)
ops = [e for e in prof.function_events if e.name != "[memory]"]  # frees outside any op (profile_memory)
json.dump({"events": [[e.name, e.input_shapes] for e in ops],
           "memory": [[e.name, e.time_range.start, e.cpu_memory_usage, e.cpu_parent is None] for e in ops],
           "totals": {k.key: [k.count, k.cpu_time_total * 1000.0] for k in prof.key_averages()}}, open(out, "w"))
'''


def record_and_load(tmp_path, command, level, extra=()):
    out = str(tmp_path / "trace.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", out, "--level", level, *extra, "--", *command],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(run_strata("export", out, "--format", "json").stdout), out


def descendants(spans, root):
    by_id = {s["span_id"]: s for s in spans}
    out = []
    for s in spans:
        p = by_id.get(s["parent_id"])
        while p is not None and p is not root:
            p = by_id.get(p["parent_id"])
        if p is root:
            out.append(s)
    return out


def profiler_shapes(shapes):
    """Strata lists the shapes inside a tensor-list input ([[[1,64,8,8],[1,128,8,8]],[]] for aten::cat);
    the profiler writes [] for it. Same data otherwise."""
    parsed = json.loads(shapes)
    flat = [[] if any(isinstance(d, list) for d in entry) else entry for entry in parsed]
    return json.dumps(flat, separators=(",", ":"))


_probe_cache = {}


def probe(tmp_path_factory, model, size):
    if model not in _probe_cache:
        tmp = tmp_path_factory.mktemp(model)
        script = tmp / "probe.py"
        script.write_text(PROBE)
        spans, _ = record_and_load(tmp, [SYSTEM_PYTHON, str(script), model, str(tmp / "prof.json"), str(size)], "layer")
        root = [s for s in spans if s["name"] == "profiled"]
        assert len(root) == 1
        ops = [s for s in descendants(spans, root[0]) if s["level"] == "layer"]
        _probe_cache[model] = (ops, json.loads((tmp / "prof.json").read_text()), root[0])
    return _probe_cache[model]


@pytest.mark.parametrize("model,size", [("resnet18", 64), ("mobilenet_v2", 64), ("googlenet", 64)])
def test_layer_spans_are_the_ops_the_framework_ran(tmp_path_factory, model, size):
    ops, prof, root = probe(tmp_path_factory, model, size)
    ours = collections.Counter((s["name"], profiler_shapes(s["attributes"].get("shapes"))) for s in ops)
    theirs = collections.Counter((name, json.dumps(shapes, separators=(",", ":"))) for name, shapes in prof["events"])
    assert len(prof["events"]) > 100
    assert ours == theirs, f"only in Strata: {ours - theirs}; only in the profiler: {theirs - ours}"
    # Same thread as the model span, inside it.
    assert all(s["tid"] == root["tid"] and root["start_ns"] <= s["start_ns"] <= s["end_ns"] <= root["end_ns"]
               for s in ops)


def test_per_op_totals_agree_with_profiler_key_averages(tmp_path_factory):
    ops, prof, _ = probe(tmp_path_factory, "resnet18", 64)
    totals = collections.defaultdict(float)
    counts = collections.Counter()
    for s in ops:
        totals[s["name"]] += s["end_ns"] - s["start_ns"]
        counts[s["name"]] += 1
    grand = sum(t for _, t in prof["totals"].values())
    compared = 0
    for name, (count, total_ns) in prof["totals"].items():
        # Ops under 1% of the time are dominated by the two tracers' own callbacks (both run for
        # every op here), so their totals say more about the tracers than about the op.
        if total_ns < 0.01 * grand:
            continue
        compared += 1
        assert abs(totals[name] - total_ns) <= 0.05 * total_ns, (name, totals[name], total_ns)
    assert compared >= 5


def test_allocated_bytes_agree_with_shapes_and_profiler_memory(tmp_path_factory):
    """alloc_bytes: gross bytes from PyTorch's CPU allocator while the op ran, nested ops included.
    Checked per op against what the op's shapes say it must allocate, and in total against the
    profiler's cpu_memory_usage (the same allocations net of frees) in the same run. The profiler
    attributes memory events by microsecond timestamp, so per op it sometimes credits a sibling; only
    its total is compared."""
    ops, prof, root = probe(tmp_path_factory, "resnet18", 64)
    assert all(s["attributes"].get("alloc_bytes") is not None for s in ops)
    by_name = collections.defaultdict(list)
    for s in ops:
        by_name[s["name"]].append(s)
    # In-place ops allocate nothing; max pooling allocates its fp32 output and int64 indices
    # ([1,64,16,16] at 64x64 input); the classifier its [1,1000] fp32 output; batch norm at least its
    # output, the size of its input.
    assert all(s["attributes"]["alloc_bytes"] == 0 for s in by_name["aten::relu_"] + by_name["aten::add_"])
    assert [s["attributes"]["alloc_bytes"] for s in by_name["aten::max_pool2d_with_indices"]] == [64 * 16 * 16 * 12]
    assert [s["attributes"]["alloc_bytes"] for s in by_name["aten::linear"]] == [1000 * 4]
    assert len(by_name["aten::batch_norm"]) == 20
    for s in by_name["aten::batch_norm"]:
        n, c, h, w = json.loads(s["attributes"]["shapes"])[0]
        assert s["attributes"]["alloc_bytes"] >= n * c * h * w * 4, s
    # Totals over the top-level ops (children are included in their parents on both sides).
    by_id = {s["span_id"]: s for s in ops}
    top = [s for s in ops if s["parent_id"] not in by_id]
    ours_total = sum(s["attributes"]["alloc_bytes"] for s in top)
    theirs_total = sum(usage for _, _, usage, top_level in prof["memory"] if top_level)
    assert ours_total >= theirs_total > 0, (ours_total, theirs_total)


def test_layer_spans_carry_shapes_module_paths_and_nest_under_predict(tmp_path):
    spans, _ = record_and_load(
        tmp_path, [SYSTEM_PYTHON, os.path.join(REPO_ROOT, "examples/pytorch/infer.py"), "--model", "resnet18",
                   "--batch", "2", "--iterations", "1", "--warmup", "0", "--image-size", "64"], "library")
    predicts = [s for s in spans if s["name"] == "predict"]
    # predict_step(batch_size=2) is stored under the canonical key the analyses read.
    assert len(predicts) == 1 and predicts[0]["attributes"]["batch"] == 2
    assert "batch_size" not in predicts[0]["attributes"] and predicts[0]["activity"] == "annotation"
    inside = descendants(spans, predicts[0])
    layers = [s for s in inside if s["level"] == "layer"]
    first_conv = min((s for s in layers if s["name"] == "aten::conv2d"), key=lambda s: s["start_ns"])
    assert first_conv["attributes"]["shapes"].startswith("[[2,3,64,64],[64,3,7,7]")
    assert first_conv["attributes"]["module"] == "conv1"
    assert {s["attributes"].get("module") for s in layers} >= {"layer1.0.conv1", "layer4.1.bn2", "fc"}
    # Library level: oneDNN primitives under the op that ran them, with oneDNN's own shapes.
    by_id = {s["span_id"]: s for s in spans}
    library = [s for s in inside if s["level"] == "library"]
    assert library, "no oneDNN primitive recorded (libstrata_onednn.so not built?)"
    for s in library:
        assert s["name"].startswith("onednn::") and s["attributes"].get("impl")
        assert by_id[s["parent_id"]]["level"] == "layer"
    convs = [s for s in library if s["name"] == "onednn::convolution"]
    assert any("src:[2,3,64,64] weights:[64,3,7,7]" in s["attributes"]["shapes"] for s in convs)
    assert all(by_id[s["parent_id"]]["name"] == "aten::mkldnn_convolution" for s in convs)
    # Activity types, set by the tracers: oneDNN primitives are library calls; PyTorch ops are CPU
    # ops, and the ops that copy tensor data (infer.py's aten::to, aten::copy_) tensor copies.
    assert {s["activity"] for s in library} == {"library_call"}
    copies = {"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous"}
    ops = [s for s in spans if s["level"] == "layer"]
    assert {s["activity"] for s in ops if s["name"] in copies} == {"tensor_copy"}
    assert {s["activity"] for s in ops if s["name"] not in copies} == {"cpu_op"}
    assert any(s["name"] in copies for s in ops)


def test_model_level_installs_no_layer_tracer(tmp_path):
    spans, _ = record_and_load(
        tmp_path, [SYSTEM_PYTHON, os.path.join(REPO_ROOT, "examples/pytorch/infer.py"), "--model", "resnet18",
                   "--iterations", "2", "--warmup", "0", "--image-size", "64"], "model")
    assert [s["level"] for s in spans] == ["model", "model"]


def test_training_example_marks_train_and_eval_steps(tmp_path):
    spans, _ = record_and_load(
        tmp_path, [SYSTEM_PYTHON, os.path.join(REPO_ROOT, "examples/pytorch/train.py"), "--iterations", "4",
                   "--eval-every", "2", "--batch", "4"], "layer")
    names = collections.Counter(s["name"] for s in spans if s["level"] == "model")
    assert names == {"train_step": 4, "eval_step": 2}
    # Backward ops run on autograd's thread(s) or the main one: they are recorded either way.
    assert any(s["name"].startswith("autograd::engine::evaluate_function") for s in spans)
