"""`strata summary` on every real Kineto and Nsight Systems trace of tests/data (issue 33): the step count
equals the trace's ProfilerStep marks (counted here from the raw JSON), the device busy share of the
steps equals a union of kernel/copy/memset intervals computed here from the raw JSON (within 1
point), every process has a role, and a trace without device activity never gets a device verdict.
The answers come from the files, not from Strata. Each trace's whole JSON is also kept as a golden
(tests/golden/summary/; regenerate with `STRATA_UPDATE_GOLDEN=1 STRATA_BUILD_DIR=build /usr/bin/python3
-m pytest tests/python/test_summary_traces.py -k golden`, then review the diff)."""
import functools
import gzip
import json
import os
import sqlite3

import pytest

from conftest import run_strata

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
KINETO = ["kineto/a100_alexnet_train.json.gz", "kineto/a100_cupti_counters.json.gz", "kineto/mi250_train.json.gz",
          "kineto/multirank_rank0.json.gz", "kineto/multirank_rank1.json.gz", "kineto/v100_train_rank0.json.gz",
          "kineto/h100_cuda_sync_small.json", "kineto_hopper/h100_bert_small.json.gz",
          "kineto_hopper/h100_vit_image_classification.json.gz"]
NSYS = ["nsys/a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite", "nsys/a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite",
        "nsys/h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite"]
DEVICE_KINDS = {"input", "framework_overhead", "cpu_compute", "gpu_compute", "gpu_idle", "memcpy", "communication",
                "sync", "none"}
ROLES = {"main", "dataloader_worker", "subprocess", "rank"}


@functools.lru_cache(maxsize=None)
def summary_text(path):
    return run_strata("summary", "--format", "json", path).stdout


def summary(path):
    return json.loads(summary_text(path))


def events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def union(intervals):
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        start = max(start, reach)
        if end > start:
            total += end - start
            reach = end
    return total


def clipped(intervals, window):
    a, b = window
    return [(max(s, a), min(e, b)) for s, e in intervals if e > a and s < b]


@pytest.mark.parametrize("name", KINETO)
def test_kineto_steps_and_device_busy(name):
    path = os.path.join(DATA, name)
    ev = [e for e in events(path) if e.get("ph") == "X"]
    # Host-side ProfilerStep marks (a gpu_user_annotation copy of a step is not another step).
    steps = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in ev
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
    s = summary(path)
    assert {p["role"] for p in s["processes"]} <= ROLES
    assert s["bottleneck"]["kind"] in DEVICE_KINDS
    phases = {row["phase"] for row in s["breakdown"]}
    assert {"data", "forward", "backward", "optimizer", "eval", "communication", "other", "init"} == phases
    if steps:
        assert s["workload"]["steps"] == len(steps)
        assert s["workload"]["step_source"] == "profiler_step"
    # Device work: kernels, copies, memsets. A CUPTI range-profiler trace's `cuda_profiler_range` events
    # are the ranges its counters were read over, not executions (the importer types them as device
    # ranges since 9da2bcb): no device activity of their own.
    device = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in ev
              if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not device:
        assert "gpu" not in s
        return
    assert "gpu" in s
    if steps:
        busy = sum(union(clipped(device, w)) for w in steps)
        wall = sum(b - a for a, b in steps)
        assert abs(s["gpu"]["busy_pct"] - 100.0 * busy / wall) <= 1.0, (s["gpu"], 100.0 * busy / wall)
    # The shares partition the steps.
    g = s["gpu"]
    assert abs(g["kernel_pct"] + g["memcpy_pct"] + g["memset_pct"] - g["busy_pct"]) <= 0.05
    assert abs(g["busy_pct"] + g["idle_pct"] - 100.0) <= 0.05


@pytest.mark.parametrize("name", NSYS)
def test_nsys_device_work_and_roles(name):
    path = os.path.join(DATA, name)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    kernels = db.execute("select count(*) from CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    s = summary(path)
    assert s["workload"]["steps"] == 0  # no ProfilerStep in these exports
    assert {p["role"] for p in s["processes"]} <= ROLES
    assert ("gpu" in s) == (kernels > 0)


def test_breakdown_sums_to_step_time():
    s = summary(os.path.join(DATA, "kineto/v100_train_rank0.json.gz"))
    steps = [row for row in s["breakdown"] if row["phase"] != "init"]
    total = sum(row["ms"] for row in steps)
    per_step = sum(st["ms"] for st in s["steps"])
    assert abs(total - per_step) <= 0.02 * per_step
    assert abs(sum(row["pct"] for row in steps) - 100.0) <= 0.1


def test_python_summary_is_the_cli_json():
    import sys
    from conftest import PYTHON_PKG
    sys.path.insert(0, PYTHON_PKG)
    import strata
    path = os.path.join(DATA, "kineto/v100_train_rank0.json.gz")
    with strata.load(path) as trace:
        assert trace.summary() == summary(path)


GOLDEN = os.path.join(os.path.dirname(__file__), "..", "golden", "summary")


@pytest.mark.parametrize("name", KINETO + NSYS)
def test_summary_json_golden(name):
    """`strata summary --format json` byte for byte as kept in tests/golden/summary/<trace>.json: any
    change of a number, a finding or a field shows in review as the golden's diff."""
    text = summary_text(os.path.join(DATA, name))
    golden = os.path.join(GOLDEN, os.path.basename(name).split(".json")[0].split(".sqlite")[0] + ".json")
    if os.environ.get("STRATA_UPDATE_GOLDEN") == "1":
        os.makedirs(GOLDEN, exist_ok=True)
        with open(golden, "w", encoding="utf-8") as f:
            f.write(text)
        return
    assert os.path.exists(golden), f"{golden} missing: run with STRATA_UPDATE_GOLDEN=1 and review the diff"
    with open(golden, encoding="utf-8") as f:
        assert text == f.read(), \
            f"golden mismatch: {golden} (if the change is intended: STRATA_UPDATE_GOLDEN=1, then review the diff)"


HOST_CATEGORIES = {"python_function", "cpu_op", "user_annotation", "cpu_instant_event"}


@pytest.mark.parametrize("name", KINETO)
def test_host_events_on_pid_0_stay_with_the_run(name):
    """No process has pid 0: Kineto writes it for a thread it could not place (tqdm's monitor thread in
    the H100 traces). Those events are counted (import.host_events_of_pid_0, equal to the raw JSON's
    count) and shown on the main process, never as a subprocess "pid 0" of the run."""
    path = os.path.join(DATA, name)
    raw = sum(1 for e in events(path) if e.get("pid") == 0 and e.get("ph") == "X" and e.get("cat") in HOST_CATEGORIES)
    assert 0 not in [p["pid"] for p in summary(path)["processes"]]
    counted = [line.split() for line in run_strata("info", path).stdout.splitlines()
               if "import.host_events_of_pid_0" in line]
    # "  pid N   import.host_events_of_pid_0   COUNT  info  ...": the count follows the stat's name.
    assert sum(int(f[f.index("import.host_events_of_pid_0") + 1]) for f in counted) == raw, counted


def test_a_gpu_run_without_device_activity_gets_no_cpu_verdict():
    """The A100 counters trace holds CUDA runtime calls and CUPTI counter ranges (kernels replayed for
    counters) but no kernel, copy or memset event (counted here from the raw JSON): its host op times wait
    for the device (aten::cudnn_convolution ~0.5 s a call), so a cpu_compute verdict would be wrong."""
    path = os.path.join(DATA, "kineto/a100_cupti_counters.json.gz")
    cats = [e.get("cat") for e in events(path)]
    assert cats.count("cuda_runtime") > 0
    assert not {"kernel", "gpu_memcpy", "gpu_memset"} & set(cats)
    b = summary(path)["bottleneck"]
    assert b["kind"] == "none", b
    assert "without device activity" in b["evidence"] and str(cats.count("cuda_runtime")) in b["evidence"], b
