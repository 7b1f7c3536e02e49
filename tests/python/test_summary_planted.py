"""`strata summary` on training scripts with a planted bottleneck (issue 33). Each script
(examples/pytorch/train_planted.py, nothing of Strata in it) is recorded with `strata record --level
layer`; the verdict, the findings, the step count and the process roles must be right, and the
breakdown must add up to the step time. The known answers come from the script itself: it counts its
steps and evaluation passes and times its waits for data with its own clock."""
import json
import os
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "examples", "pytorch", "train_planted.py")
torch_ok = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_ok, reason="Debian's python3-torch is not installed")


def record(tmp_path, *args, quiet=True):
    out = str(tmp_path / "planted.strata")
    proc = subprocess.run([STRATA, "record", *(["--quiet"] if quiet else []), "--level", "layer", "-o", out, "--",
                           SYSTEM_PYTHON, SCRIPT, *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout.strip().splitlines()[-1])
    record.stderr = proc.stderr
    return json.loads(run_strata("summary", "--format", "json", out).stdout), ran, out


def rules(s):
    return [f["rule"] for f in s["findings"]]


def phase_ms(s, phase):
    return next(row["ms"] for row in s["breakdown"] if row["phase"] == phase)


def check_common(s, ran):
    assert s["workload"]["kind"] == "training"
    assert s["workload"]["steps"] == ran["steps"]
    assert s["workload"]["step_source"] == "optimizer_step"
    assert len(s["steps"]) == ran["steps"]
    # The phases partition every step: their sum is the steps' summed time (within 2%).
    total = sum(st["ms"] for st in s["steps"])
    parts = sum(row["ms"] for row in s["breakdown"] if row["phase"] != "init")
    assert abs(parts - total) <= 0.02 * total, (parts, total)
    for st in s["steps"]:
        assert abs(sum(st[p] for p in ("data", "forward", "backward", "optimizer", "eval", "communication", "other"))
                   - st["ms"]) <= 0.02 * st["ms"] + 0.002, st
    assert "gpu" not in s  # a CPU run: no device block, no device verdict
    assert s["bottleneck"]["kind"] in ("input", "framework_overhead", "cpu_compute")


def iterations_verdict(path):
    tables = json.loads(run_strata("iterations", path, "--format", "json").stdout)
    summary = tables["iterations_summary"]
    return summary["rows"][0][summary["columns"].index("verdict")]


def test_input_bound_single_process_loader(tmp_path):
    s, ran, path = record(tmp_path, "--case", "input", "--steps", "40", "--batch", "4", quiet=False)
    # `strata record` ends with the summary's three lines.
    short = [line for line in record.stderr.splitlines() if line.startswith("strata: ")]
    assert short[-3].startswith("strata: training, 40 steps (optimizer_step)"), record.stderr
    assert short[-1].startswith("strata: bottleneck: input"), record.stderr
    # `strata iterations` says so too (it said "device-bound" on this CPU run before).
    assert iterations_verdict(path) == "input-bound"
    check_common(s, ran)
    assert [p["role"] for p in s["processes"]] == ["main"]
    # The script itself waited for data most of its loop.
    assert ran["data_wait_ms"] >= 0.5 * ran["loop_ms"], ran
    assert s["bottleneck"]["kind"] == "input", s["bottleneck"]
    assert rules(s)[0] == "input_bound", s["findings"]
    assert "num_workers=0" in s["findings"][0]["message"]
    # Strata's data phase is the script's own wait (its timer also counts the loop's Python around next()).
    assert abs(phase_ms(s, "data") - ran["data_wait_ms"]) <= 0.15 * ran["data_wait_ms"], (s["breakdown"], ran)


def test_compute_bound_with_workers_and_eval_passes(tmp_path):
    s, ran, path = record(tmp_path, "--case", "compute", "--steps", "40", "--eval-every", "10")
    check_common(s, ran)
    roles = sorted(p["role"] for p in s["processes"])
    assert roles == ["dataloader_worker", "dataloader_worker", "main"], s["processes"]
    assert s["bottleneck"]["kind"] == "cpu_compute", s["bottleneck"]
    assert iterations_verdict(path) in ("op-bound", "host-bound", "balanced")  # a CPU run: never device-bound
    assert "input_bound" not in rules(s) or ran["data_wait_ms"] >= 0.15 * ran["loop_ms"]
    # Every evaluation pass is flagged, on the step it follows.
    assert [st["index"] for st in s["steps"] if st["eval"]] == ran["eval_after"]
    assert "eval_passes" in rules(s)
    assert phase_ms(s, "eval") > 0
    # The default analyze tables describe the main process's steps, never the workers' ops.
    out = run_strata("analyze", path, "--analysis", "layer_table", "--format", "json").stdout
    table = json.loads(out)
    notes = " ".join(table[0]["notes"] if isinstance(table, list) else table["layer_table"]["notes"])
    assert "training steps of the main process" in notes, notes
    assert "DataLoader worker processes are the input pipeline" in notes, notes


def test_framework_overhead_tiny_mlp(tmp_path):
    s, ran, _ = record(tmp_path, "--case", "overhead", "--steps", "300")
    check_common(s, ran)
    assert s["bottleneck"]["kind"] == "framework_overhead", s["bottleneck"]
    assert phase_ms(s, "data") == 0


def test_memory_growing_per_step(tmp_path):
    s, ran, _ = record(tmp_path, "--case", "memory", "--steps", "60")
    check_common(s, ran)
    assert "memory_growth" in rules(s), s["findings"]
    growth = next(f for f in s["findings"] if f["rule"] == "memory_growth")["evidence"]
    # The script keeps 64 x 1024 floats (256 KiB) more every step: at least that much growth.
    mb = float(growth.split(": ")[1].split(" MB")[0])
    assert mb * 1e6 >= (ran["kept"] - 1) * 64 * 1024 * 4, growth


def test_thread_oversubscription(tmp_path):
    # The script gives its main process and each of its 2 DataLoader workers as many intra-op threads as
    # the cores it may use, and each worker splits an elementwise op evenly among its threads: by
    # construction every worker thread does a like share of the work (CPU time, whatever the load), so
    # at least 2 x cores threads compute, more than the rule's 1.5 per core.
    s, ran, _ = record(tmp_path, "--case", "threads", "--steps", "40", "--batch", "4")
    assert ran["threads"] == ran["cpus"] and ran["num_workers"] == 2, ran
    roles = sorted(p["role"] for p in s["processes"])
    assert roles == ["dataloader_worker", "dataloader_worker", "main"], s["processes"]
    finding = next((f for f in s["findings"] if f["rule"] == "thread_oversubscription"), None)
    assert finding is not None, s["findings"]
    threads, processes, cores = (float(finding["evidence"].split(" threads in ")[0]),
                                 float(finding["evidence"].split(" in ")[1].split(" processes")[0]),
                                 float(finding["evidence"].split(" on ")[1].split(" cores")[0]))
    # The cores are those the script was allowed to use (its affinity: Strata's end.cpus), and the
    # workers' threads alone exceed 1.5 per core.
    assert cores == ran["cpus"] and processes == 3, finding["evidence"]
    assert threads >= 2 * ran["threads"] > 1.5 * cores, finding["evidence"]
