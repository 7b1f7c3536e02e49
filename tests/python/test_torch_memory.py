"""Memory per op and the memory timeline of the PyTorch layer tracer (docs/memory.md), on real
training runs of Debian's PyTorch under `strata record --level layer`, checked against
torch.autograd.profiler_legacy(profile_memory=True) running in the same process over the same ops:
per op its cpu_memory_usage ("CPU Mem") and self_cpu_memory_usage ("Self CPU Mem"), and its raw
allocation log for the timeline. Peaks are checked against a brute-force pass over a timeline that
keeps every change (STRATA_MEMORY_INTERVAL_US=0)."""
import bisect
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
kind, out, steps, profiler = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
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
# The default profiler's event list hides an op whose parent has the same name and only that child
# (a display rule): keep every op it recorded.
torch.autograd.profiler_util.EventList._remove_dup_nodes = lambda self: None
records = []
parse = legacy._parse_legacy_records
legacy._parse_legacy_records = lambda thread_records: (records.append(thread_records), parse(thread_records))[1]
before = st.memory_stats()
with (legacy.profile if profiler == "legacy" else torch.autograd.profiler.profile)(profile_memory=True) as prof:
    with strata.span("profiled", level="model"):
        for _ in range(steps):
            opt.zero_grad()
            y = model(x)
            loss = (y[0] if isinstance(y, tuple) else y).sum()
            loss.backward()
            opt.step()
        del y, loss
log = [[r.cpu_memory_usage() for r in thread if r.kind() == "memory_alloc"] for thread in records[0]] if records else []
# The default profiler's memory events, microseconds since its start (it attributes them by time).
events = [] if profiler == "legacy" else [
    [e.start_us() - prof.kineto_results.trace_start_us(), e.nbytes()]
    for e in prof.kineto_results.events() if e.name() == "[memory]"]
with torch.no_grad(), strata.span("inference", level="model"):
    model(x)
ops = [e for e in prof.function_events if e.name != "[memory]"]
json.dump({"ops": [[e.name, e.cpu_memory_usage, e.self_cpu_memory_usage, e.time_range.start, e.time_range.end]
                   for e in ops],
           "log": [t for t in log if t], "events": events, "before": before, "after": st.memory_stats()},
          open(out, "w"))
'''


def record(tmp, kind, steps, env_extra=None, profiler="legacy"):
    script = tmp / "probe.py"
    script.write_text(PROBE)
    trace = str(tmp / "trace.strata")
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", trace, "--level", "layer", "--",
                           SYSTEM_PYTHON, str(script), kind, str(tmp / "probe.json"), str(steps), profiler],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    spans = json.loads(run_strata("export", trace, "--format", "json").stdout)
    return spans, json.loads((tmp / "probe.json").read_text()), trace


_cache = {}


def probe(tmp_path_factory, kind, steps=3, interval=None, profiler="legacy"):
    key = (kind, steps, interval, profiler)
    if key not in _cache:
        tmp = tmp_path_factory.mktemp(f"{kind}{interval}{profiler}")
        extra = {"STRATA_MEMORY_INTERVAL_US": str(interval)} if interval is not None else None
        _cache[key] = record(tmp, kind, steps, extra, profiler)
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
        s, (name, total, self_total, _, _) = kept[i], theirs[j]
        assert net(s) == total, (name, s["attributes"], total)
        assert s["attributes"].get("self_net_alloc_bytes", 0) + folded[s["span_id"]] == self_total, (name, s)
    # The point of net: gross allocation is far above it where ops free their temporaries.
    gross = sum(s["attributes"]["alloc_bytes"] for s in ops if s["parent_id"] not in by_id)
    kept = sum(net(s) for s in ops if s["parent_id"] not in by_id)
    assert gross > 2 * abs(kept)


def test_default_profiler_differs_only_at_microsecond_boundaries(tmp_path_factory):
    """torch.autograd.profiler.profile credits each memory event to every op whose [start, end] in
    whole microseconds holds the event's microsecond: an event in the microsecond where one op ends
    and the next begins lands in both or in the neighbour. Every op where it disagrees with Strata
    has such an event at one of its ends; most ops agree (LSTM: many sub-microsecond ops)."""
    spans, prof, _ = probe(tmp_path_factory, "lstm", profiler="default")
    ops = layer_ops(spans, "profiled")
    theirs = prof["ops"]
    # Its list is sorted by (start, -end) in whole microseconds, which reorders ops of one
    # microsecond: pair the k-th op of each name on both sides instead.
    ours_by_name, theirs_by_name = collections.defaultdict(list), collections.defaultdict(list)
    for s in ops:
        ours_by_name[s["name"]].append(s)
    for t in theirs:
        theirs_by_name[t[0]].append(t)
    assert {k: len(v) for k, v in ours_by_name.items()} == {k: len(v) for k, v in theirs_by_name.items()}
    times = sorted(t for t, _ in prof["events"])
    agree = 0
    for name, mine in ours_by_name.items():
        for s, (_, total, _, start, end) in zip(mine, theirs_by_name[name]):
            if net(s) == total:
                agree += 1
                continue
            near = [t for t in (start, end) if bisect.bisect_left(times, t - 1) < bisect.bisect_right(times, t + 1)]
            assert near, (name, net(s), total, start, end)
    assert len(ops) > 10000 and agree > 0.8 * len(ops)


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


# Many live blocks (the tracker's table grows far past its first 1,024 slots), freed in random order,
# from four threads at once, then a DataLoader with two forked workers: the live level comes back to
# where it was, every byte accounted, and the timeline's peak is the tracker's.
STRESS = r'''
import json, random, sys, threading
import torch
import strata.torch as st
out = sys.argv[1]
random.seed(1)
before = st.memory_stats()
def churn(seed, keep):
    rng = random.Random(seed)
    blocks = [torch.empty(rng.randrange(1, 4096), dtype=torch.uint8) for _ in range(6000)]
    keep.append(sum(b.numel() for b in blocks))
    rng.shuffle(blocks)
    while blocks:
        blocks.pop()
sizes = []
threads = [threading.Thread(target=churn, args=(k, sizes)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
middle = st.memory_stats()
class Data(torch.utils.data.Dataset):
    def __len__(self): return 64
    def __getitem__(self, i): return torch.full((256,), float(i))
total = sum(float(b.sum()) for b in torch.utils.data.DataLoader(Data(), batch_size=8, num_workers=2))
json.dump({"before": before, "middle": middle, "after": st.memory_stats(), "churned": sum(sizes),
           "total": total}, open(out, "w"))
'''


def test_many_blocks_threads_and_forked_workers(tmp_path):
    script = tmp_path / "stress.py"
    script.write_text(STRESS)
    trace = str(tmp_path / "t.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", trace, "--level", "layer", "--", SYSTEM_PYTHON,
                           str(script), str(tmp_path / "out.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "out.json").read_text())
    assert r["total"] == sum(range(64)) * 256
    b, m = r["before"], r["middle"]
    assert m["live_bytes"] == b["live_bytes"]  # every block freed, from whichever thread
    assert m["allocations"] - b["allocations"] >= 24000 and m["frees"] - b["frees"] >= 24000
    assert m["untracked_frees"] == 0
    assert m["peak_live_bytes"] - b["live_bytes"] >= max(1, r["churned"] // 4)  # one thread's blocks at least
    spans = json.loads(run_strata("export", trace, "--format", "json").stdout)
    by_pid = collections.defaultdict(list)
    for s in spans:
        if s["kind"] == "counter" and s["name"] == COUNTER:
            by_pid[s["pid"]].append(s["attributes"]["metric.value"])
    main_pid = min(by_pid, key=lambda pid: min(s["start_ns"] for s in spans if s["pid"] == pid))
    assert max(by_pid[main_pid]) == r["after"]["peak_live_bytes"]
    assert len(by_pid) == 3  # the workers' tracks, each its own process
