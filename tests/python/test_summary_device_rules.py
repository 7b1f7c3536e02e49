"""`strata summary`'s device rules (issue 33), each fired by a cause planted in a generated Kineto trace and
silent on its control: host synchronizations in the loop, copies from pageable memory, many short
kernels with the device idle (launch-bound), GEMMs without tensor cores on a GPU that has them, a
mostly idle device, and (rules of any trace) a slow first step and one slow step later. The generator computes the planted numbers itself (sync share of step time, busy
share as the union of device intervals inside the steps); the test compares Strata's to them. The
thresholds are docs/summary.md's."""
import json

import pytest

from conftest import run_strata

PID = 4242


def _event(cat, name, pid, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": pid if pid else 7, "ts": ts, "dur": dur,
            "args": args}


def _union(intervals):
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def planted_trace(cause, steps=8, compute_major=8):
    """Kineto JSON of `steps` ProfilerSteps of one process; returns (document, facts computed here)."""
    events = [{"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python3"}}]
    device, syncs, step_windows = [], [], []
    t, corr = 1_000_000.0, 1
    kernels = 60 if cause == "launch" else 4
    for step in range(steps):
        start = t
        for k in range(kernels):
            duration = {"launch": 5.0, "idle": 100.0}.get(cause, 900.0)
            gap = {"launch": 55.0, "idle": 600.0}.get(cause, 30.0)
            name = ("volta_sgemm_128x64_nn" if cause in ("simt", "simt_old_gpu")
                    else "ampere_bf16_s16816gemm_relu" if k % 2 else "vectorized_elementwise_kernel")
            events.append(_event("cpu_op", "aten::mm", PID, t, 20.0, **{"External id": corr}))
            events.append(_event("cuda_runtime", "cudaLaunchKernel", PID, t + 2, 10.0, correlation=corr))
            events.append(_event("kernel", name, 0, t + 15, duration, device=0, stream=7, correlation=corr))
            device.append((t + 15, t + 15 + duration))
            corr += 1
            t += duration + gap
        if (cause == "warmup" and step == 0) or (cause == "outlier" and step == 5):
            events.append(_event("cpu_op", "aten::copy_", PID, t, 9000.0))  # host work, device idle
            t += 9010
        if cause == "sync":
            events.append(_event("cuda_runtime", "cudaDeviceSynchronize", PID, t, 1500.0, correlation=corr))
            events.append(_event("cuda_sync", "Device Synchronize", 0, t + 1, 1490.0, device=0, stream=7,
                                 correlation=corr))
            syncs.append(1490.0)
            corr, t = corr + 1, t + 1510
        if cause in ("pageable", "pinned"):
            kind = "Pageable" if cause == "pageable" else "Pinned"
            events.append(_event("cuda_runtime", "cudaMemcpyAsync", PID, t, 10.0, correlation=corr))
            events.append(_event("gpu_memcpy", f"Memcpy HtoD ({kind} -> Device)", 0, t + 5, 200.0, device=0,
                                 stream=7, correlation=corr, bytes=1 << 20))
            device.append((t + 5, t + 205))
            corr, t = corr + 1, t + 210
        events.append(_event("user_annotation", f"ProfilerStep#{step}", PID, start, t - start + 1))
        step_windows.append((start, t + 1))
        t += 5
    wall = sum(end - start for start, end in step_windows)
    inside = [(max(s, ws), min(e, we)) for s, e in device for ws, we in step_windows if s < we and e > ws]
    facts = {"steps": steps, "sync_pct": 100 * sum(syncs) / wall, "busy_pct": 100 * _union(inside) / wall,
             "syncs": len(syncs)}
    doc = {"schemaVersion": 1, "traceEvents": events,
           "deviceProperties": [{"id": 0, "name": "generated GPU", "computeMajor": compute_major,
                                 "computeMinor": 0}]}
    return doc, facts


def summarize(tmp_path, cause, **kwargs):
    doc, facts = planted_trace(cause, **kwargs)
    path = tmp_path / f"{cause}.json"
    path.write_text(json.dumps(doc))
    return json.loads(run_strata("summary", "--format", "json", str(path)).stdout), facts


def rules(summary):
    return {f["rule"]: f for f in summary["findings"]}


DEVICE_RULES = {"host_sync", "pageable_h2d", "launch_bound", "no_tensor_cores", "low_gpu_utilization"}


@pytest.mark.parametrize("cause,rule,verdict", [
    ("sync", "host_sync", "sync"),
    ("pageable", "pageable_h2d", "gpu_compute"),
    ("launch", "launch_bound", "gpu_idle"),
    ("simt", "no_tensor_cores", "gpu_compute"),
    ("idle", "low_gpu_utilization", "gpu_idle"),
])
def test_each_planted_cause_fires_its_rule(tmp_path, cause, rule, verdict):
    s, facts = summarize(tmp_path, cause)
    assert s["workload"]["steps"] == facts["steps"]
    assert s["bottleneck"]["kind"] == verdict, s["bottleneck"]
    found = rules(s)
    assert rule in found, (cause, list(found))
    # Only what was planted (a short-kernel idle device is also low utilization: launch-bound's cause).
    expected = {rule} | ({"low_gpu_utilization"} if cause == "launch" else set())
    assert set(found) & DEVICE_RULES == expected, list(found)
    assert s["findings"][0]["rule"] == rule, "the planted cause is ranked first"
    assert s["gpu"]["busy_pct"] == pytest.approx(facts["busy_pct"], abs=0.1)


@pytest.mark.parametrize("cause,rule,slow_step", [("warmup", "warmup_step", 0), ("outlier", "outlier_steps", 5)])
def test_a_planted_slow_step_is_named(tmp_path, cause, rule, slow_step):
    s, facts = summarize(tmp_path, cause)
    assert s["workload"]["steps"] == facts["steps"]
    found = rules(s)
    assert rule in found, list(found)
    assert not {"warmup_step", "outlier_steps"} - {rule} & set(found), list(found)
    durations = [st["ms"] for st in s["steps"]]
    assert max(range(len(durations)), key=durations.__getitem__) == slow_step
    if rule == "outlier_steps":
        assert f"the slowest is step {slow_step} " in found[rule]["evidence"], found[rule]["evidence"]


def test_the_sync_share_is_the_planted_one(tmp_path):
    s, facts = summarize(tmp_path, "sync")
    evidence = rules(s)["host_sync"]["evidence"]
    assert evidence.startswith(f"{facts['syncs']} synchronizations"), evidence
    assert f"{facts['sync_pct']:.1f}% of step time" in evidence, (evidence, facts)


@pytest.mark.parametrize("cause,kwargs", [
    ("base", {}),  # busy, tensor-core GEMMs, no syncs, no copies
    ("pinned", {}),  # a copy from pinned memory is not a pageable one
    ("simt_old_gpu", {"compute_major": 6}),  # no tensor cores to use: SIMT GEMMs are right
])
def test_controls_fire_no_device_rule(tmp_path, cause, kwargs):
    s, facts = summarize(tmp_path, cause, **kwargs)
    assert s["workload"]["steps"] == facts["steps"]
    assert not s["findings"], s["findings"]  # steps all alike too: no warm-up, no outlier
    assert s["bottleneck"]["kind"] == "gpu_compute"
    assert s["gpu"]["busy_pct"] == pytest.approx(facts["busy_pct"], abs=0.1)
