"""`strata iterations` on real PyTorch CPU training loops recorded with `strata record --level layer`:
the iteration count is never given; the loops' own step markers (when present) are used here only
as the reference, never by the miner."""
import json
import os
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
torch_ok = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_ok, reason="Debian's python3-torch is not installed")


def record_layer(tmp_path, script, *args):
    out = str(tmp_path / "loop.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "--level", "layer", "-o", out, "--", SYSTEM_PYTHON,
                           os.path.join(ROOT, "examples", "pytorch", script), *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def mine(path, *extra):
    proc = run_strata("iterations", path, "--format", "json", *extra)
    return json.loads(proc.stdout)


def flagged(tables):
    return [row[0] for row in tables["iterations"]["rows"] if "extra_" in (row[-1] or "")]


def verdict(tables):
    note = [n for n in tables["diagnosis"]["notes"] if n.startswith("loop 0 verdict:")][0]
    return note.split("verdict: ")[1].split(".")[0]


def test_train_loop_with_eval_every_k(tmp_path):
    path = record_layer(tmp_path, "train.py", "--iterations", "20", "--eval-every", "5")
    tables = mine(path)
    summary = tables["iterations_summary"]
    assert len(summary["rows"]) == 1, summary
    assert summary["rows"][0][2] == 20  # iterations of loop 0
    assert flagged(tables) == [4, 9, 14, 19]  # the iterations followed by an evaluation pass
    # The script's own train_step markers agree: every mined iteration starts inside one.
    assert any("20 'train_step' model-level spans; 20 of the 20" in n for n in summary["notes"]), summary["notes"]
    # Emitted iteration spans land at level iteration.
    out = str(tmp_path / "with_iterations.strata")
    run_strata("iterations", path, "--emit", out)
    spans = json.loads(run_strata("export", out, "--format", "json").stdout)
    assert sum(1 for s in spans if s.get("level") == "iteration") == 20


@pytest.mark.parametrize("args,expected", [
    ((), "device-bound"),
    (("--host-work-ms", "30"), "host-bound"),
    (("--input-copy-mb", "150"), "copy-bound"),
])
def test_diagnosis_cases(tmp_path, args, expected):
    path = record_layer(tmp_path, "train_loop_iterations.py", "--iterations", "24", "--eval-every", "6", *args)
    tables = mine(path)
    assert tables["iterations_summary"]["rows"][0][2] == 24
    assert flagged(tables) == [5, 11, 17, 23]
    assert verdict(tables) == expected, tables["diagnosis"]


def test_bad_input_is_one_line(tmp_path):
    bogus = tmp_path / "bogus.strata"
    bogus.write_bytes(b"not a trace at all")
    proc = run_strata("iterations", str(bogus), check=False)
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and str(bogus) in proc.stderr, proc.stderr
    proc = run_strata("iterations", str(bogus), "--iterations", "x", check=False)
    assert proc.returncode == 2 and "iterations" in proc.stderr
