"""Realistic-workload suite, leveled runs and per-op statistics (issue 12, items 4 and 5): real
PyTorch programs recorded by `strata record`, every answer checked against the recorded spans.

Leveled runs (`--leveled --level library`, 1 and 3 runs per level) of torchvision's resnet18:
no span outside its parent, no overlapping slices on one Chrome track, library time within its
layer (kernel_pct <= 100%), "matched" counts equal to the spans counted in the export, and every
overhead reported with its spread and a noise verdict. Per-op statistics of a 2-layer LSTM training
loop against a brute-force count over the exported spans.

CI runs trimmed sizes; `STRATA_REALISTIC_FULL=1` (scripts/realistic_answers.sh) runs the full ones."""
import collections
import json
import os
import re
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FULL = os.environ.get("STRATA_REALISTIC_FULL") == "1"
INFER = os.path.join(REPO_ROOT, "examples", "pytorch", "infer.py")

torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch, torchvision"],
                                 capture_output=True).returncode == 0
needs_torch = pytest.mark.skipif(not torch_available, reason="Debian's python3-torch/torchvision not installed")


def info_values(path):
    """The Record chunk's key/value lines of `strata info`."""
    values = {}
    for line in run_strata("info", path).stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].startswith(("leveled.", "run.")):
            values[parts[0]] = parts[1].strip()
    return values


def export(path, fmt, tmp_path):
    out = str(tmp_path / f"export.{fmt}.json")
    run_strata("export", path, "--format", fmt, "-o", out)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def spans_outside_their_parent(spans):
    by_id = {(s["pid"], s["span_id"]): s for s in spans}
    bad = []
    for s in spans:
        p = by_id.get((s["pid"], s.get("parent_id")))
        if p is not None and not (p["start_ns"] <= s["start_ns"] and s["end_ns"] <= p["end_ns"]):
            bad.append((s["name"], p["name"]))
    return bad


def overlapping_chrome_slices(events):
    """Slices of one (pid, tid) track that overlap without nesting: what Perfetto cannot draw."""
    tracks = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            tracks[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    bad = 0
    for slices in tracks.values():
        slices.sort(key=lambda x: (x[0], -x[1]))
        open_ends = []
        for start, end in slices:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1] + 1e-6:  # Chrome JSON is in microseconds
                bad += 1
            open_ends.append(end)
    return bad


def outermost(spans, level):
    """Spans of `level` with no span of the same level among their ancestors."""
    by_id = {(s["pid"], s["span_id"]): s for s in spans}
    out = []
    for s in spans:
        if s["level"] != level:
            continue
        p, nested = by_id.get((s["pid"], s.get("parent_id"))), False
        while p is not None:
            if p["level"] == level:
                nested = True
                break
            p = by_id.get((p["pid"], p.get("parent_id")))
        if not nested:
            out.append(s)
    return out


def run_level_of_pid(spans):
    """pid -> the level its run was traced down to: the deepest level among its spans."""
    levels = {}
    for s in spans:
        levels.setdefault(s["pid"], set()).add(s["level"])
    order = ["model", "layer", "library"]
    return {pid: max(lv, key=lambda l: order.index(l) if l in order else -1) for pid, lv in levels.items()}


def record_leveled(tmp_path, runs):
    model = "resnet50" if FULL else "resnet18"
    iterations = 3 if FULL else 2
    out = str(tmp_path / f"leveled{runs}.strata")
    command = [STRATA, "record", "--leveled", "--level", "library", "--runs", str(runs), "-o", out, "--",
               SYSTEM_PYTHON, INFER, "--model", model, "--batch", "1", "--iterations", str(iterations),
               "--warmup", "1", "--image-size", "224" if FULL else "112"]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    return out, proc.stderr, iterations


@needs_torch
@pytest.mark.parametrize("runs", [1, 3])
def test_leveled_resnet_runs_give_possible_numbers(tmp_path, runs):
    path, stderr, iterations = record_leveled(tmp_path, runs)
    spans = export(path, "json", tmp_path)
    chrome = export(path, "chrome", tmp_path)
    events = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
    # Every run kept as recorded: one process per run and level, each its own timeline.
    assert len({s["pid"] for s in spans}) == 3 * runs
    assert spans_outside_their_parent(spans) == []
    assert overlapping_chrome_slices(events) == 0
    deepest = run_level_of_pid(spans)
    by_run_level = collections.defaultdict(list)
    for s in spans:
        by_run_level[deepest[s["pid"]]].append(s)

    # Library time within its layer: per layer op of a library run, its library spans fit inside it.
    by_id = {(s["pid"], s["span_id"]): s for s in spans}
    library_in_layer = collections.defaultdict(int)
    for s in by_run_level["library"]:
        if s["level"] != "library":
            continue
        p = by_id.get((s["pid"], s.get("parent_id")))
        while p is not None and p["level"] != "layer":
            p = by_id.get((p["pid"], p.get("parent_id")))
        assert p is not None, s
        library_in_layer[(p["pid"], p["span_id"])] += s["end_ns"] - s["start_ns"]
    for key, library_ns in library_in_layer.items():
        layer = by_id[key]
        assert library_ns <= layer["end_ns"] - layer["start_ns"], (layer["name"], library_ns)
    tables = json.loads(run_strata("analyze", path, "--analysis", "layer_device_split,model_table,layer_table",
                                   "--format", "json", "--param", "top=0").stdout)
    split = tables["layer_device_split"]
    pct = split["columns"].index("kernel_pct")
    assert split["rows"] and all(row[pct] <= 100.0 for row in split["rows"]), split["rows"]
    assert any(f"traced down to library" in n for n in split["notes"])
    assert any(f"traced down to model" in n for n in tables["model_table"]["notes"])
    assert any(f"traced down to layer" in n for n in tables["layer_table"]["notes"])

    # "matched": the spans of the level above counted in the export, pairwise per repetition.
    values = info_values(path)
    model_spans = [s for s in by_run_level["model"] if s["level"] == "model"]
    layer_ops = outermost(by_run_level["layer"], "layer")
    assert int(values["leveled.layer.matched"]) == len(model_spans) == runs * iterations
    assert int(values["leveled.library.matched"]) == len(layer_ops)
    assert values["leveled.library.on"] == "layer" and values["leveled.layer.on"] == "model"
    for level in ("layer", "library"):
        assert values[f"leveled.{level}.unmatched"] == "0" and values[f"leveled.{level}.unmatched_source"] == "0"
        lo, mid, hi = (int(values[f"leveled.{level}.overhead_{k}"]) for k in ("min_ns", "ns", "max_ns"))
        assert lo <= mid <= hi
    # Every overhead with its spread and a noise verdict; one run says the noise is unknown.
    row_re = re.compile(r"^\s+(layer|library|down to library)\s+(model|layer)\s+(\d+)\s+(\d+)\s+(-?\d+\.\d+)\s+"
                        r"(-?\d+\.\d+)%\s+\[(-?\d+\.\d+), (-?\d+\.\d+)\]; (.*)$")
    rows = [m for m in map(row_re.match, stderr.splitlines()) if m]
    assert len(rows) == 3, stderr
    for m in rows:
        overhead, low, high, noise = float(m.group(5)), float(m.group(7)), float(m.group(8)), m.group(9)
        assert low <= overhead <= high, m.group(0)
        if runs == 1:
            assert noise.startswith("1 run: noise unknown (--runs 3 or more measures it)"), m.group(0)
        else:
            assert re.match(r"(within|above) noise \(run-to-run spread \d+\.\d+ ms\)", noise), m.group(0)
        if overhead < 0:  # a negative overhead is never presented as a cost
            assert "below zero" in noise, m.group(0)
    for level in ("layer", "library"):
        verdict = values[f"leveled.{level}.verdict"]
        assert verdict == "noise unknown" if runs == 1 else verdict in ("within noise", "above noise")


LSTM_TRAIN = r'''
import sys, torch
torch.manual_seed(0)
torch.set_num_threads(1)
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(1000, 64)
        self.lstm = torch.nn.LSTM(64, 128, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(128, 10)
    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.fc(h[:, -1])
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randint(0, 1000, (8, 20)); y = torch.randint(0, 10, (8,))
for step in range(int(sys.argv[1])):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
'''


@needs_torch
def test_op_stats_of_an_lstm_training_loop_match_the_spans(tmp_path):
    script = tmp_path / "lstm_train.py"
    script.write_text(LSTM_TRAIN)
    path = str(tmp_path / "lstm.strata")
    steps = "300" if FULL else "20"
    proc = subprocess.run([STRATA, "record", "--quiet", "--level", "layer", "-o", path, "--", SYSTEM_PYTHON,
                           str(script), steps], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    spans = [s for s in export(path, "json", tmp_path) if s["level"] == "layer"]
    # Brute force: top-level op time, each op's total and self (minus its nearest nested ops).
    top = outermost(spans, "layer")
    top_ns = sum(s["end_ns"] - s["start_ns"] for s in top)
    by_id = {(s["pid"], s["span_id"]): s for s in spans}
    total, self_ns, durations = collections.Counter(), collections.Counter(), collections.defaultdict(list)
    for s in spans:
        d = s["end_ns"] - s["start_ns"]
        total[s["name"]] += d
        self_ns[s["name"]] += d
        durations[s["name"]].append(d / 1e6)
        p = by_id.get((s["pid"], s.get("parent_id")))
        if p is not None:  # layer-level parent (the export holds only layer spans here, all direct)
            self_ns[p["name"]] -= d
    table = json.loads(run_strata("analyze", path, "--analysis", "op_stats", "--param", "top=0",
                                  "--format", "json").stdout)["op_stats"]
    col = {c: i for i, c in enumerate(table["columns"])}
    rows = {r[col["name"]]: r for r in table["rows"]}
    assert set(rows) == set(total)
    for name, row in rows.items():
        assert row[col["total_ms"]] == pytest.approx(total[name] / 1e6, abs=2e-4), name
        assert row[col["self_ms"]] == pytest.approx(max(0, self_ns[name]) / 1e6, abs=2e-3), name
        assert row[col["total_pct"]] == pytest.approx(100 * total[name] / top_ns, abs=0.006), name
        ordered = sorted(durations[name])
        k = (len(ordered) - 1) * 0.9
        p90 = ordered[int(k)] + (ordered[min(int(k) + 1, len(ordered) - 1)] - ordered[int(k)]) * (k - int(k))
        assert row[col["p90_ms"]] == pytest.approx(p90, abs=2e-4), name
    # The LSTM is a large share of the loop's op time, measured against top-level ops only.
    assert rows["aten::lstm"][col["total_pct"]] == pytest.approx(100 * total["aten::lstm"] / top_ns, abs=0.006)
    assert sum(r[col["self_pct"]] for r in rows.values()) == pytest.approx(100, abs=0.01 * len(rows))
