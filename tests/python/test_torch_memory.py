"""Memory per op and the memory timeline of the PyTorch layer tracer (docs/memory.md), on real
training runs of Debian's PyTorch under `strata record --level layer`, checked against
torch.autograd.profiler_legacy(profile_memory=True) running in the same process over the same ops:
per op its cpu_memory_usage ("CPU Mem") and self_cpu_memory_usage ("Self CPU Mem"), and its raw
allocation log for the timeline. Peaks are checked against a brute-force pass over a timeline that
keeps every change (STRATA_MEMORY_INTERVAL_US=0)."""
import collections
import difflib
import json
import os
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_available, reason="Debian's python3-torch not installed")

COUNTER = "allocated memory (PyTorch CPU allocator, cpu)"

# Trains a small CNN (conv, batch norm, pooling, linear) or a 2-layer LSTM with SGD for a few steps
# inside the legacy profiler and a model span "profiled", then runs one inference pass (known
# answers from shapes). Writes the profiler's per-op memory, its raw allocation log (every alloc and
# free in the order the thread did them) and the tracer's memory_stats() before and after.
PROBE = r'''
import json, sys
import torch
import torch.autograd.profiler_legacy as legacy
import strata, strata.torch as st
kind, out, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.manual_seed(0)
if kind == "cnn":
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(32 * 16 * 16, 10))
    x = torch.randn(8, 3, 32, 32)
else:
    model = torch.nn.LSTM(32, 64, num_layers=2)
    x = torch.randn(20, 4, 32)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
records = []
parse = legacy._parse_legacy_records
legacy._parse_legacy_records = lambda thread_records: (records.append(thread_records), parse(thread_records))[1]
before = st.memory_stats()
with legacy.profile(profile_memory=True) as prof:
    with strata.span("profiled", level="model"):
        for _ in range(steps):
            opt.zero_grad()
            y = model(x)
            loss = (y[0] if isinstance(y, tuple) else y).sum()
            loss.backward()
            opt.step()
        del y, loss
log = [[r.cpu_memory_usage() for r in thread if r.kind() == "memory_alloc"] for thread in records[0]]
with torch.no_grad(), strata.span("inference", level="model"):
    model(x)
ops = [e for e in prof.function_events if e.name != "[memory]"]
json.dump({"ops": [[e.name, e.cpu_memory_usage, e.self_cpu_memory_usage] for e in ops],
           "log": [t for t in log if t], "before": before, "after": st.memory_stats()}, open(out, "w"))
'''


def record(tmp, kind, steps, env_extra=None):
    script = tmp / "probe.py"
    script.write_text(PROBE)
    trace = str(tmp / "trace.strata")
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", trace, "--level", "layer", "--",
                           SYSTEM_PYTHON, str(script), kind, str(tmp / "probe.json"), str(steps)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    spans = json.loads(run_strata("export", trace, "--format", "json").stdout)
    return spans, json.loads((tmp / "probe.json").read_text()), trace


_cache = {}


def probe(tmp_path_factory, kind, steps=3, interval=None):
    key = (kind, steps, interval)
    if key not in _cache:
        tmp = tmp_path_factory.mktemp(f"{kind}{interval}")
        extra = {"STRATA_MEMORY_INTERVAL_US": str(interval)} if interval is not None else None
        _cache[key] = record(tmp, kind, steps, extra)
    return _cache[key]


def window(spans, name):
    root = [s for s in spans if s["name"] == name]
    assert len(root) == 1
    return root[0]["start_ns"], root[0]["end_ns"]


def layer_ops(spans, name):
    start, end = window(spans, name)
    return [s for s in spans if s["level"] == "layer" and start <= s["start_ns"] <= end]


def net(span):
    return span["attributes"].get("net_alloc_bytes", 0)


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_net_and_self_memory_per_op_equal_the_profilers(tmp_path_factory, kind):
    """Every op of three training steps: net_alloc_bytes == the profiler's cpu_memory_usage and
    self_net_alloc_bytes == self_cpu_memory_usage, exactly (same allocations, same op boundaries).
    The profiler omits an op nested in an op of the same name (its "duplicate" rule: aten::sum
    inside aten::sum); such an op's memory then counts as its parent's self."""
    spans, prof, _ = probe(tmp_path_factory, kind)
    ops = layer_ops(spans, "profiled")
    assert len(ops) > 300
    assert all("alloc_bytes" in s["attributes"] for s in ops)
    theirs = prof["ops"]
    by_id = {s["span_id"]: s for s in ops}
    # The profiler's duplicate rule: an op whose begin directly follows its parent's of the same name.
    folded = collections.defaultdict(int)  # parent span id -> net of the child the profiler omits
    kept = []
    for i, s in enumerate(ops):
        parent = by_id.get(s["parent_id"])
        if i > 0 and parent is ops[i - 1] and parent["name"] == s["name"]:
            folded[parent["span_id"]] += net(s)
        else:
            kept.append(s)
    assert len(kept) == len(theirs)
    matcher = difflib.SequenceMatcher(None, [s["name"] for s in kept], [t[0] for t in theirs], autojunk=False)
    pairs = [(i + k, j + k) for i, j, n in matcher.get_matching_blocks() for k in range(n)]
    assert len(pairs) == len(theirs)  # the same ops in the same order
    for i, j in pairs:
        s, (name, total, self_total) = kept[i], theirs[j]
        assert net(s) == total, (name, s["attributes"], total)
        assert s["attributes"].get("self_net_alloc_bytes", 0) + folded[s["span_id"]] == self_total, (name, s)
    # The point of net: gross allocation is far above it where ops free their temporaries.
    gross = sum(s["attributes"]["alloc_bytes"] for s in ops if s["parent_id"] not in by_id)
    kept = sum(net(s) for s in ops if s["parent_id"] not in by_id)
    assert gross > 2 * abs(kept)


def test_known_answers_from_shapes(tmp_path_factory):
    """Inference (no grad): a convolution keeps exactly its output, [N, C_out, H, W] fp32 at padding 1;
    an LSTM its output [T, N, H] and final states h_n, c_n [layers, N, H]; both allocate more on the way
    (gross), and their peak lies between the two."""
    spans, _, _ = probe(tmp_path_factory, "cnn")
    convs = [s for s in layer_ops(spans, "inference") if s["name"] == "aten::conv2d"]
    assert len(convs) == 2
    for s in convs:
        (n, _, h, w), (c_out, *_), *_ = json.loads(s["attributes"]["shapes"])
        a = s["attributes"]
        assert a["net_alloc_bytes"] == n * c_out * h * w * 4, a
        assert a["alloc_bytes"] >= a["peak_alloc_bytes"] >= a["net_alloc_bytes"], a
    spans, _, _ = probe(tmp_path_factory, "lstm")
    [lstm] = [s for s in layer_ops(spans, "inference") if s["name"] == "aten::lstm"]
    a = lstm["attributes"]
    assert a["net_alloc_bytes"] == (20 * 4 * 64 + 2 * 2 * 4 * 64) * 4, a
    assert a["alloc_bytes"] > 10 * a["net_alloc_bytes"], a  # every time step's gates, freed again
    assert a["alloc_bytes"] >= a["peak_alloc_bytes"] >= a["net_alloc_bytes"], a


def counters(spans):
    samples = [(s["start_ns"], s["attributes"]["metric.value"]) for s in spans
               if s["kind"] == "counter" and s["name"] == COUNTER]
    assert samples and all(s["attributes"]["device"] == "cpu" for s in spans if s["name"] == COUNTER)
    return sorted(samples)


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_timeline_keeps_the_peak_of_the_allocation_log_with_bounded_samples(tmp_path_factory, kind):
    """The counter track, sampled at most every 100 us (plus the held-back maximum and last value),
    peaks exactly where the profiler's allocation log peaks: the live level before the profiler
    started plus the log's highest running sum."""
    spans, prof, _ = probe(tmp_path_factory, kind)
    samples = counters(spans)
    start, end = window(spans, "profiled")
    assert len(prof["log"]) == 1  # one thread allocated: the log's order is the true order
    level = highest = 0
    for change in prof["log"][0]:
        level += change
        highest = max(highest, level)
    inside = [v for t, v in samples if start <= t <= end]
    assert max(inside) == prof["before"]["live_bytes"] + highest
    assert max(v for _, v in samples) == prof["after"]["peak_live_bytes"]
    # Thinning: at most three samples per 100 us interval.
    assert len(inside) <= 3 * ((end - start) // 100_000 + 1)
    assert prof["after"]["timeline_samples"] <= prof["after"]["allocations"] + prof["after"]["frees"]


def test_peaks_per_op_match_a_full_timeline(tmp_path_factory):
    """With every change sampled, brute force per op: peak_alloc_bytes = highest level inside the op
    minus the level when it began; peak_live_bytes = highest level right after one of its
    allocations (an upward step inside it)."""
    spans, _, _ = probe(tmp_path_factory, "cnn", interval=0)
    samples = counters(spans)
    times = [t for t, _ in samples]
    import bisect
    checked = 0
    for s in layer_ops(spans, "profiled") + layer_ops(spans, "inference"):
        a = s["attributes"]
        lo = bisect.bisect_left(times, s["start_ns"])
        hi = bisect.bisect_right(times, s["end_ns"])
        if lo == hi:
            assert a.get("peak_alloc_bytes", 0) == 0 and "peak_live_bytes" not in a, s
            continue
        base = samples[lo - 1][1] if lo > 0 else 0
        values = [v for _, v in samples[lo:hi]]
        assert a["peak_alloc_bytes"] == max(0, max(values) - base), (s["name"], a, base, values)
        ups = [v for k, v in enumerate(values) if v > (values[k - 1] if k else base)]
        assert a.get("peak_live_bytes") == (max(ups) if ups else None), (s["name"], a, base, values)
        checked += 1
    assert checked > 100


def test_chrome_export_has_the_counter_track(tmp_path_factory):
    spans, _, trace = probe(tmp_path_factory, "cnn")
    doc = json.loads(run_strata("export", trace, "--format", "chrome").stdout)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "C" and e["name"] == COUNTER]
    assert len(events) == len(counters(spans))
    # Numeric series only (Perfetto reads every arg of a "C" event as a number).
    assert all(set(e["args"]) == {"value"} and isinstance(e["args"]["value"], (int, float)) for e in events)
    assert max(e["args"]["value"] for e in events) == max(v for _, v in counters(spans))
