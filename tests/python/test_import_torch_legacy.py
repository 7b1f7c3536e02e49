"""`strata import` of the Chrome JSON that torch.autograd.profiler writes without Kineto (Debian's
PyTorch 1.13, CPU): a bare array of events with no category, ops on the pid "CPU functions". The file
is made here by a real training run (an LSTM and an MLP, several steps), and the imported spans are
checked against the JSON read with Python's json module."""
import json
import os
import subprocess

import pytest

from conftest import SYSTEM_PYTHON, run_strata

MAKE_TRACE = r"""
import sys, torch
torch.manual_seed(0)
lstm = torch.nn.LSTM(16, 32, batch_first=True)
head = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
params = list(lstm.parameters()) + list(head.parameters())
opt = torch.optim.SGD(params, lr=0.01)
x = torch.randn(8, 12, 16)
y = torch.randint(0, 4, (8,))
with torch.autograd.profiler.profile() as prof:
    for step in range(int(sys.argv[2])):
        with torch.autograd.profiler.record_function("step"):
            out, _ = lstm(x)
            loss = torch.nn.functional.cross_entropy(head(out[:, -1]), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
prof.export_chrome_trace(sys.argv[1])
"""


def make_legacy_trace(path, steps):
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip("Debian's /usr/bin/python3 with PyTorch is not installed")
    r = subprocess.run([SYSTEM_PYTHON, "-c", MAKE_TRACE, str(path), str(steps)], capture_output=True, text=True)
    if r.returncode != 0 and "No module named 'torch'" in r.stderr:
        pytest.skip("PyTorch is not installed for /usr/bin/python3")
    assert r.returncode == 0, r.stderr
    with open(path) as f:
        return json.load(f)


def test_legacy_autograd_export_imports_ops_at_layer_level(strata_bin, tmp_path):
    src = tmp_path / "legacy.json"
    events = make_legacy_trace(src, steps=20)
    # What this test is about: the legacy shape (a bare array, no categories, "CPU functions").
    assert isinstance(events, list) and len(events) > 2000
    assert all("cat" not in e and e["pid"] == "CPU functions" for e in events)
    out = tmp_path / "t.strata"
    r = run_strata("import", str(src), "-o", str(out), check=False)
    assert r.returncode == 0, r.stderr
    spans = json.loads(run_strata("export", str(out), "--format", "json").stdout)
    complete = [e for e in events if e["ph"] == "X"]
    assert len(spans) == len(complete)
    # Every op is a layer-level span with its name; the names and counts equal the JSON's.
    assert {s["level"] for s in spans} == {"layer"}
    want, got = {}, {}
    for e in complete:
        want[e["name"]] = want.get(e["name"], 0) + 1
    for s in spans:
        got[s["name"]] = got.get(s["name"], 0) + 1
    assert got == want
    assert got["step"] == 20
    # Copying ops are told apart from other ops, as for Kineto's cpu_op.
    activities = {s["activity"] for s in spans}
    assert "cpu_op" in activities
    # The layer analyses see the ops.
    table = run_strata("analyze", str(out), "--analysis", "op_stats", "--param", "level=layer", "--format", "csv", check=False)
    assert table.returncode == 0, table.stderr
    assert "aten::lstm" in table.stdout


def test_legacy_export_detected_also_with_format_kineto(strata_bin, tmp_path):
    src = tmp_path / "legacy.json"
    make_legacy_trace(src, steps=1)
    out = tmp_path / "t.strata"
    run_strata("import", str(src), "--format", "kineto", "-o", str(out))
    spans = json.loads(run_strata("export", str(out), "--format", "json").stdout)
    assert spans and {s["level"] for s in spans} == {"layer"}
