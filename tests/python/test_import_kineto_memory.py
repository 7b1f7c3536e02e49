"""`strata import` of real H100 Kineto traces recorded with profile_memory=True: every op's memory
attributes and the memory timeline, checked against a brute-force pass over the "[memory]" events
read here with Python's json module (independent of the importer's reader). Definitions:
docs/memory.md."""
import collections
import decimal
import gzip
import json
import os

import pytest

from conftest import run_strata

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "kineto_hopper")
TRACES = ["h100_bert_small.json.gz", "h100_vit_image_classification.json.gz"]
HOST_TYPES = {0, 2, 5}  # c10::DeviceType CPU, MKLDNN, IDEEP: torch.profiler's "CPU Mem"


def ns(value):
    """Chrome-trace microseconds (decimal text) to integer ns, rounded half up as the importer does."""
    return int((decimal.Decimal(value) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_UP))


def load(name):
    with gzip.open(os.path.join(DATA, name), "rt") as f:
        return json.load(f, parse_float=decimal.Decimal)["traceEvents"]


def expected(events):
    """Per cpu_op (name, start, end) -> {key: value} by brute force: an event counts toward every op
    of its thread whose [start, end] holds its time, as self toward the innermost (latest-starting)."""
    ops = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            start = ns(e["ts"])
            ops[(e["pid"], e["tid"])].append((e["name"], start, start + ns(e["dur"])))
    memory = collections.defaultdict(list)
    for e in events:
        if e.get("name") == "[memory]" and e.get("ph") == "i" and "Bytes" in e["args"]:
            a = e["args"]
            memory[(e["pid"], e["tid"])].append((ns(e["ts"]), int(a["Bytes"]), a.get("Total Allocated"),
                                                 int(a.get("Device Type", 0)) not in HOST_TYPES))
    out = {}
    for track, track_ops in ops.items():
        events_here = sorted(memory.get(track, []), key=lambda m: m[0])
        for op in track_ops:
            name, start, end = op
            sums = {"": collections.Counter(), "device_": collections.Counter()}
            live = {"": None, "device_": None}
            seen = {"": False, "device_": False}
            for ts, b, total, on_device in events_here:
                if not start <= ts <= end or b == 0:
                    continue
                inner = [o for o in track_ops if o[1] <= ts <= o[2]]
                innermost = max(inner, key=lambda o: (o[1], -o[2])) == op
                for p in ("", "device_") if on_device else ("",):
                    s = sums[p]
                    seen[p] = True
                    s["alloc"] += max(b, 0)
                    s["freed"] += max(-b, 0)
                    s["peak"] = max(s["peak"], s["alloc"] - s["freed"])
                    if innermost:
                        s["self"] += b
                    if b > 0 and total is not None:
                        live[p] = max(live[p], int(total)) if live[p] is not None else int(total)
            want = {}
            for p in ("", "device_"):
                if not seen[p]:
                    continue
                s = sums[p]
                want.update({p + "alloc_bytes": s["alloc"], p + "freed_bytes": s["freed"],
                             p + "net_alloc_bytes": s["alloc"] - s["freed"], p + "self_net_alloc_bytes": s["self"],
                             p + "peak_alloc_bytes": s["peak"]})
                if live[p] is not None:
                    want[p + "peak_live_bytes"] = live[p]
            out[op] = want or {"alloc_bytes": 0}
    return out


@pytest.mark.parametrize("name", TRACES)
def test_op_memory_and_timeline_match_brute_force(tmp_path, name):
    events = load(name)
    want = expected(events)
    trace = str(tmp_path / "t.strata")
    run_strata("import", os.path.join(DATA, name), "-o", trace)
    spans = json.loads(run_strata("export", trace, "--format", "json").stdout)
    ops = [s for s in spans if s["level"] == "layer" and s["kind"] == "span"]
    assert len(ops) == len(want) > 100
    keys = ("alloc_bytes", "freed_bytes", "net_alloc_bytes", "self_net_alloc_bytes", "peak_alloc_bytes",
            "peak_live_bytes")
    with_memory = 0
    for s in ops:
        got = {k: v for k, v in s["attributes"].items() if k.removeprefix("device_") in keys}
        assert got == want[(s["name"], s["start_ns"], s["end_ns"])], s["name"]
        with_memory += "net_alloc_bytes" in got
    assert with_memory > 20
    # Timeline: one sample per event with "Total Allocated", on its device's track, same values.
    tracks = collections.defaultdict(list)
    for s in spans:
        if s["kind"] == "counter" and s["name"].startswith("allocated memory ("):
            tracks[s["attributes"]["device"]].append((s["start_ns"], s["attributes"]["metric.value"]))
    raw = collections.defaultdict(list)
    for e in events:
        if e.get("name") == "[memory]" and "Bytes" in e["args"] and "Total Allocated" in e["args"]:
            a = e["args"]
            device = "cpu" if int(a["Device Type"]) in HOST_TYPES else f"cuda:{int(a['Device Id'])}"
            raw[device].append((ns(e["ts"]), int(a["Total Allocated"])))
    assert set(tracks) == set(raw) == {"cpu", "cuda:0"}
    for device in raw:
        assert sorted(tracks[device]) == sorted(raw[device]), device
    # The Chrome export shows each track with the same peak (a number Perfetto can plot).
    doc = json.loads(run_strata("export", trace, "--format", "chrome").stdout)
    peaks = collections.defaultdict(float)
    for e in doc["traceEvents"]:
        if e.get("ph") == "C" and e["name"].startswith("allocated memory ("):
            assert set(e["args"]) == {"value"}
            peaks[e["name"]] = max(peaks[e["name"]], e["args"]["value"])
    assert sorted(peaks.values()) == sorted(max(v for _, v in raw[d]) for d in raw)
