"""Iteration mining on realistic PyTorch training loops (issue 12): CNN, RNN and transformer models,
300 and 2,000 steps, an evaluation pass every k steps, gradient accumulation. Each loop is recorded with
`strata record --level layer` (examples/pytorch/train_realistic.py has no Strata call in it) and mined
with `strata iterations`; the step count must be exact and the steps followed by an evaluation pass
flagged, with nested repetition (RNN time steps, micro-batches) reported as structure inside the step.
Full sizes (10,000+ steps, every model): scripts/iterations_realistic.sh."""
import json
import os
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SCRIPT = os.path.join(ROOT, "examples", "pytorch", "train_realistic.py")
torch_ok = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
pytestmark = pytest.mark.skipif(not torch_ok, reason="Debian's python3-torch is not installed")


def record(tmp_path, *args):
    out = str(tmp_path / "loop.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "--level", "layer", "-o", out, "--", SYSTEM_PYTHON, SCRIPT,
                           *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ran = json.loads(proc.stdout.strip().splitlines()[-1])  # what the script ran: steps, evals
    return out, ran


def tables_of(path, *extra):
    return json.loads(run_strata("iterations", path, "--format", "json", *extra).stdout)


def column(table, name):
    index = table["columns"].index(name)
    return [row[index] for row in table["rows"]]


def flagged(tables):
    return [row[0] for row in tables["iterations"]["rows"] if "extra_" in (row[-1] or "")]


def check_steps(tables, ran):
    summary = tables["iterations_summary"]
    assert len(summary["rows"]) == 1, summary["notes"]
    assert column(summary, "iterations") == [ran["steps"]], summary["notes"]
    # Every evaluation pass is flagged on the step it follows (extra_after), and nothing else is.
    assert flagged(tables) == ran["eval_after"], summary["notes"]
    # PyTorch's optimizer marks its step (Optimizer.step#...): the mark picked the level.
    assert any("training-step mark" in n for n in summary["notes"]), summary["notes"]


# (model, steps, extra arguments): 5, 300 and 2,000 steps; small models and short sequences keep a
# 2,000-step run well under a minute.
CASES = [
    # Short loops (detection needs >= 3 steps), micro-batches after a set-up of 36 torch.randint calls.
    ("gru_mlp", 5, ["--eval-every", "2", "--grad-accum", "2"]),
    ("cnn", 2000, ["--eval-every", "200"]),
    ("gru_mlp", 2000, ["--eval-every", "250", "--seq-len", "4"]),
    ("gru_mlp", 300, ["--eval-every", "25"]),  # the GRU case: 12 time steps per step
    ("transformer", 300, ["--eval-every", "30"]),
    ("cnn_lstm_transformer", 300, ["--eval-every", "50", "--grad-accum", "2", "--seq-len", "6"]),
]


@pytest.mark.parametrize("model,steps,extra", CASES, ids=[f"{m}-{s}" for m, s, _ in CASES])
def test_training_steps_are_the_iterations(tmp_path, model, steps, extra):
    path, ran = record(tmp_path, "--model", model, "--steps", str(steps), *extra)
    assert ran["steps"] == steps
    tables = tables_of(path)
    check_steps(tables, ran)
    nested = tables.get("nested")
    if model == "gru_mlp":
        # The GRU's backward runs one group of autograd ops per time step: nested, never iterations.
        seq_len = int(extra[extra.index("--seq-len") + 1]) if "--seq-len" in extra else 12
        assert nested is not None, tables["iterations_summary"]["notes"]
        assert any(ops == 14 and copies >= seq_len - 1 for ops, copies in
                   zip(column(nested, "unit_ops"), column(nested, "copies_max"))), nested
    if "--grad-accum" in extra:
        # Two micro-batches per optimizer step: their forward/backward repeats inside the step.
        assert nested is not None and 2 in column(nested, "copies_max"), nested


def test_sampled_mining_equals_exact(tmp_path):
    # 300 GRU steps are ~64,000 ops: longer than the sample, so the default run mines a sample.
    path, ran = record(tmp_path, "--model", "gru_mlp", "--steps", "300", "--eval-every", "20")
    sampled = json.loads(run_strata("analyze", path, "--analysis", "iterations", "--format", "json").stdout)
    exact = json.loads(run_strata("analyze", path, "--analysis", "iterations", "--param", "sample_ops=0",
                                  "--format", "json").stdout)
    assert any("mined on a sample" in n for n in sampled["iterations_summary"]["notes"])
    assert not any("mined on a sample" in n for n in exact["iterations_summary"]["notes"])
    assert sampled["iterations"]["rows"] == exact["iterations"]["rows"]
    assert column(sampled["iterations_summary"], "iterations") == [300]
