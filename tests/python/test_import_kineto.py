"""`strata import` on real Kineto GPU traces, checked against counts computed here with Python's json
module (an implementation independent of the importer's simdjson reader)."""
import bisect
import gzip
import json
import os
import re
import subprocess

import pytest

from conftest import STRATA, run_strata

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "kineto")
TRACES = ["a100_alexnet_train.json.gz", "mi250_train.json.gz", "v100_train_rank0.json.gz"]

# The documented category -> level table (docs in src/import/kineto_importer.cc).
LEVEL_OF_CATEGORY = {
    "Trace": "application", "python_function": "application", "user_annotation": "model",
    "cpu_op": "layer", "cuda_runtime": "runtime_api", "cuda_driver": "runtime_api",
    "kernel": "device", "gpu_memcpy": "device", "gpu_memset": "device", "cuda_profiler_range": "device",
    "gpu_user_annotation": "device", "cuda_sync": "device",
}
DEVICE_WORK = {"kernel", "gpu_memcpy", "gpu_memset"}
# The documented category -> activity table; copies by Kineto's name "Memcpy <kind> (...)" or ROCm's
# args.kind, PyTorch's copying ops apart from other ops.
ACTIVITY_OF_CATEGORY = {
    "Trace": "annotation", "python_function": "python_function", "user_annotation": "annotation",
    "cpu_op": "cpu_op", "cuda_runtime": "runtime_call", "cuda_driver": "driver_call", "kernel": "kernel",
    "gpu_memset": "memset", "cuda_profiler_range": "device_range", "gpu_user_annotation": "device_range",
    "cuda_sync": "sync",
}
TENSOR_COPIES = {"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous"}


def expected_activity(e):
    if e.get("ph") in ("i", "I"):
        return "memory_event" if e.get("name") == "[memory]" else "annotation"
    cat, name = e.get("cat"), e.get("name", "")
    if cat == "gpu_memcpy":
        return "memcpy_" + e.get("args", {}).get("kind", name.split(" ")[1]).lower()
    if cat == "cpu_op" and name in TENSOR_COPIES:
        return "tensor_copy"
    if cat == "kernel" and name.startswith("nccl"):
        return "collective"
    return ACTIVITY_OF_CATEGORY.get(cat, "unknown")


def load_events(name):
    with gzip.open(os.path.join(DATA, name), "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def expected_links(events):
    """(device work, linked to a runtime call by correlation, tied to a running op by External id)."""
    runtime = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            runtime.setdefault(e["args"]["correlation"], e)
    owners = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {}):
            current = owners.get(e["args"]["External id"])
            if current is None or (current["cat"] == "user_annotation" and e["cat"] == "cpu_op"):
                owners[e["args"]["External id"]] = e
    # Per thread: cpu_ops sorted by start with the running maximum of their ends, so "is this call
    # inside some op of its thread" is one bisect.
    ops_by_tid = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            ops_by_tid.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    index = {}
    for key, ops in ops_by_tid.items():
        ops.sort()
        starts, max_end, best = [], [], float("-inf")
        for start, end in ops:
            best = max(best, end)
            starts.append(start)
            max_end.append(best)
        index[key] = (starts, max_end)

    def inside_op(call):
        starts, max_end = index.get((call["pid"], call["tid"]), ([], []))
        k = bisect.bisect_right(starts, call["ts"]) - 1
        return k >= 0 and max_end[k] >= call["ts"] + call["dur"]

    work = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_WORK]
    with_call = with_op = under_op = 0
    for e in work:
        call = runtime.get(e["args"].get("correlation"))
        if call is None:
            continue
        with_call += 1
        op = owners.get(e["args"].get("External id"))
        # The op must have been running when the launch was made (stale ids are not links).
        tied = op is not None and op["ts"] <= call["ts"] and call["ts"] + call["dur"] <= op["ts"] + op["dur"]
        with_op += tied
        under_op += tied or inside_op(call)
    return len(work), with_call, with_op, under_op


@pytest.mark.parametrize("name", TRACES)
def test_import_counts_match_python_json(strata_bin, tmp_path, name):
    events = load_events(name)
    out = tmp_path / "t.strata"
    r = run_strata("import", os.path.join(DATA, name), "-o", str(out))
    # Spans per level, from the JSON.
    expected = {}
    for e in events:
        if e.get("ph") == "X":
            level = LEVEL_OF_CATEGORY.get(e.get("cat"), "application")
            expected[level] = expected.get(level, 0) + 1
        elif e.get("ph") in ("i", "I"):
            expected["application"] = expected.get("application", 0) + 1
    spans = json.loads(run_strata("export", str(out), "--format", "json").stdout)
    got = {}
    for s in spans:
        got[s["level"]] = got.get(s["level"], 0) + 1
    assert got == expected
    # Activity types per (name, type), from the JSON's categories.
    want_types = {}
    for e in events:
        if e.get("ph") in ("X", "i", "I"):
            key = (e["name"], expected_activity(e))
            want_types[key] = want_types.get(key, 0) + 1
    got_types = {}
    for s in spans:
        got_types[(s["name"], s["activity"])] = got_types.get((s["name"], s["activity"]), 0) + 1
    assert got_types == want_types
    # Every event accounted for: spans + metadata + flows (bound or counted as dropped) = events read.
    m = re.search(r"(\d+) events read, (\d+) spans written", r.stdout)
    assert m and int(m.group(1)) == len(events) and int(m.group(2)) == len(spans)
    m = re.search(r"events: (\d+) spans, (\d+) metadata, (\d+) flow links, (\d+) dropped", r.stdout)
    assert m, r.stdout
    spans_n, metadata, flows, dropped = (int(g) for g in m.groups())
    assert metadata == sum(1 for e in events if e.get("ph") == "M")
    assert flows + dropped == sum(1 for e in events if e.get("ph") in ("s", "t", "f"))
    assert spans_n + metadata + flows + dropped == len(events)
    # Links from the correlation engine, as the import summary prints them.
    expected_counts = expected_links(events)
    m = re.search(r"device work: (\d+) spans, (\d+) linked to their runtime call by correlation id, (\d+) to their "
                  r"framework op by External id, (\d+) under a framework op", r.stdout)
    assert m, r.stdout
    assert tuple(int(g) for g in m.groups()) == expected_counts


def test_kernel_attributes_and_exact_times(strata_bin, tmp_path):
    name = "a100_alexnet_train.json.gz"
    kernels = [e for e in load_events(name) if e.get("cat") == "kernel"]
    out = tmp_path / "t.strata"
    run_strata("import", os.path.join(DATA, name), "-o", str(out))
    spans = [s for s in json.loads(run_strata("export", str(out), "--format", "json").stdout) if s["kind"] == "execution"]
    by_corr = {s["correlation_id"]: s for s in spans}
    for k in kernels:
        s = by_corr[k["args"]["correlation"]]
        assert s["name"] == k["name"]
        assert s["start_ns"] == k["ts"] * 1000 and s["end_ns"] - s["start_ns"] == k["dur"] * 1000
        assert s["device"] == k["args"]["device"] and s["stream"] == k["args"]["stream"]
        # Kineto's spellings become the canonical keys, its [x, y, z] arrays integers.
        assert s["attributes"]["registers_per_thread"] == k["args"]["registers per thread"]
        assert [s["attributes"]["grid_" + a] for a in "xyz"] == k["args"]["grid"]
        assert [s["attributes"]["block_" + a] for a in "xyz"] == k["args"]["block"]
        assert s["attributes"]["achieved_occupancy"] == k["args"]["est. achieved occupancy %"]
        assert s["attributes"]["external_correlation_id"] == k["args"]["External id"]
        assert s["activity"] == "kernel"


# torch.profiler's CUPTI range-profiler counters (experimental_config profiler_metrics): Kineto writes
# one cuda_profiler_range event per profiled kernel, named after it, but at times it makes up (the
# profiling window split evenly: 121 ms each in this run). They are ranges on the device track, not
# kernel executions: the kernel tables and analyses must not count them.
def test_profiler_ranges_are_device_ranges_not_kernels(strata_bin, tmp_path):
    name = "a100_cupti_counters.json.gz"
    events = load_events(name)
    ranges = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_profiler_range"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert len(ranges) == 77 and len(kernels) == 0  # what the file holds, read with Python's json
    out = tmp_path / "t.strata"
    run_strata("import", os.path.join(DATA, name), "-o", str(out))
    spans = json.loads(run_strata("export", str(out), "--format", "json").stdout)
    device_ranges = [s for s in spans if s["activity"] == "device_range"]
    assert sorted(s["name"] for s in device_ranges) == sorted(e["name"] for e in ranges)
    assert all(s["kind"] == "span" and s["level"] == "device" for s in device_ranges)
    assert sum(s["activity"] == "kernel" for s in spans) == len(kernels)
    # Their counters stay with them, as metrics (the SASS FP counts also as flops).
    counters = sorted(k for k in ranges[0]["args"] if k.startswith("smsp__"))
    assert counters
    want = sorted((e["name"], tuple(e["args"][k] for k in counters)) for e in ranges)
    got = sorted((s["name"], tuple(s["attributes"]["metric." + k] for k in counters)) for s in device_ranges)
    assert got == want
    assert all("metric.flops" in s["attributes"] for s in device_ranges)
    # The kernel analyses see no kernel (before: 77 "kernels" of 121 ms, 9.35 s in all).
    r = run_strata("analyze", str(out), "-a", "kernels_by_name", "--format", "csv", check=False)
    assert "kernel" in r.stderr and r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.strip() == ""


# Op names of 100 KB and more of repeated text compress past the reader's 128:1 chunk limit: the
# importer's writer stores such chunks uncompressed, so every name loads back (before: exit 0, then
# every name of those chunks undefined).
def test_huge_repetitive_names_survive_import(strata_bin, tmp_path):
    names = [("aten::conv2d_%d_" % i) * (100_000 // 14 + 500 * i) for i in range(30)]
    names += ["small_op_%d" % i for i in range(100)]
    events = [{"ph": "X", "cat": "cpu_op", "name": n, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5}
              for i, n in enumerate(names)]
    src = tmp_path / "huge_names.json"
    src.write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "t.strata"
    run_strata("import", str(src), "-o", str(out))
    info = run_strata("info", str(out)).stdout
    assert "undefined string" not in info and "corrupt" not in info, info
    spans = json.loads(run_strata("export", str(out), "--format", "json").stdout)
    assert sorted(s["name"] for s in spans) == sorted(names)


def test_imported_trace_works_with_info_and_export(strata_bin, tmp_path):
    out = tmp_path / "t.strata"
    run_strata("import", os.path.join(DATA, "mi250_train.json.gz"), "-o", str(out))
    info = run_strata("info", str(out)).stdout
    assert "finished cleanly" in info
    chrome = json.loads(run_strata("export", str(out), "--format", "chrome").stdout)
    assert chrome


@pytest.mark.parametrize("content,needle", [
    (b"\x89STRATA\n" + b"\0" * 40, "already a Strata trace"),
    (b"hello", "not JSON"),
    (b'{"a": 1}', "not a profiler trace"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": ', "offset"),
    # two traces appended to one file: the second is not dropped without a word
    (b'{"traceEvents": []}\n{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}]}', "offset 20: "),
])
def test_foreign_input_is_one_error_line(strata_bin, tmp_path, content, needle):
    path = tmp_path / "in.json"
    path.write_bytes(content)
    r = run_strata("import", str(path), "-o", str(tmp_path / "o.strata"), check=False)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and str(path) in lines[0], r.stderr
    assert not (tmp_path / "o.strata").exists()


CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "fuzz", "corpus", "fuzz_import_kineto")
EVENT = b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"n": 1}}'


def comma_case(kind):
    """(document, offset of the byte the error must name) for a trailing comma of `kind`."""
    if kind == "fuzz corpus":  # the file the fuzzer found: a comma before traceEvents' "]" at the end
        with open(os.path.join(CORPUS, "trailing_comma_events.json"), "rb") as f:
            doc = f.read()
        return doc, doc.rindex(b"]")
    head = b'{"traceEvents": [' + EVENT + b", "
    if kind == "array end":
        doc = head + EVENT + b",\n  ]}"
        return doc, doc.rindex(b"]")
    if kind == "object end":
        doc = head + EVENT[:-1] + b", }]}"
        return doc, len(doc) - 3
    doc = head + EVENT[:-2] + b",\n}}]}"  # args end
    return doc, len(doc) - 4


# JSON has no trailing commas, no real trace has one (checked on every trace of tests/data and
# ../shared/traces), and the generic parse rejects them: so does `strata import`, whichever of its
# paths reads the events, with one line naming the file and the offset of the bracket after the comma.
@pytest.mark.parametrize("kind", ["fuzz corpus", "array end", "object end", "args end"])
def test_trailing_comma_is_one_error_line_with_its_offset(strata_bin, tmp_path, kind):
    doc, offset = comma_case(kind)
    path = tmp_path / "comma.json"
    path.write_bytes(doc)
    r = run_strata("import", str(path), "-o", str(tmp_path / "o.strata"), check=False)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}: offset {offset}: not valid JSON" in lines[0], r.stderr
    assert not (tmp_path / "o.strata").exists()
    fixed = doc[:offset].rstrip()[:-1] + doc[offset:]  # the same without the comma imports
    path.write_bytes(fixed)
    run_strata("import", str(path), "-o", str(tmp_path / "o.strata"))
