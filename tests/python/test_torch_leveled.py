"""`strata record --runs`, `--leveled`, `--serialize` and the startup hook's chaining. The programs
here make each level's runs measurably different (sleeps chosen by the level being recorded), so the
test can tell which run a combined span's timing came from."""
import json
import os
import subprocess

from conftest import STRATA, SYSTEM_PYTHON, run_strata

# Per step: 10 ms before the op; the op sleeps 10 ms, plus 100 ms when layer level is recorded
# (the "overhead" of tracing layers). Model run: step ~20 ms. Layer run: step ~120 ms, op ~110 ms.
LEVEL_DEPENDENT = r'''
import os, time, strata
slow = int(os.environ["STRATA_LEVEL"]) >= strata.LEVELS["layer"]
for i in range(2):
    with strata.span("step", level="model", index=i):
        time.sleep(0.01)
        with strata.span("op", level="layer"):
            time.sleep(0.11 if slow else 0.01)
'''


def record(tmp_path, script_text, *options, env=None):
    script = tmp_path / "prog.py"
    script.write_text(script_text)
    out = str(tmp_path / "out.strata")
    proc = subprocess.run([STRATA, "record", "-o", out, *options, "--", SYSTEM_PYTHON, str(script)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    spans = json.loads(run_strata("export", out, "--format", "json").stdout)
    return spans, run_strata("info", out).stdout, proc.stderr


def record_value(info, key):
    for line in info.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == key:
            return " ".join(parts[1:])
    raise KeyError(key)


def ms(s):
    return (s["end_ns"] - s["start_ns"]) / 1e6


def test_leveled_keeps_every_run_and_times_each_level_by_its_own_runs(tmp_path):
    spans, info, stderr = record(tmp_path, LEVEL_DEPENDENT, "--leveled", "--level", "layer", "--runs", "2")
    steps = [s for s in spans if s["name"] == "step"]
    ops = [s for s in spans if s["name"] == "op"]
    # Every run as recorded: 2 model-only runs (steps only) and 2 layer runs (steps and ops).
    assert len(steps) == 8 and len(ops) == 4
    # Each run keeps its own timeline: every op lies inside its step, in the same process.
    by_id = {(s["pid"], s["span_id"]): s for s in spans}
    for op in ops:
        step = by_id[(op["pid"], op["parent_id"])]
        assert step["name"] == "step" and step["start_ns"] <= op["start_ns"] <= op["end_ns"] <= step["end_ns"]
    # Model-only runs' steps take ~20 ms, the layer runs' ~120 ms: no span was re-timed.
    pids_with_ops = {s["pid"] for s in ops}
    model_only = [ms(s) for s in steps if s["pid"] not in pids_with_ops]
    traced = [ms(s) for s in steps if s["pid"] in pids_with_ops]
    assert len(model_only) == 4 and all(15 <= t < 70 for t in model_only), model_only
    assert all(t >= 115 for t in traced), traced
    assert record_value(info, "leveled.levels") == "model,layer"
    # The layer level's cost, on the 2 x 2 model spans matched between the model and layer runs.
    assert record_value(info, "leveled.layer.on") == "model"
    assert record_value(info, "leveled.layer.matched") == "4"
    assert record_value(info, "leveled.layer.unmatched") == "0"
    assert record_value(info, "leveled.layer.unmatched_source") == "0"
    # ~100 ms per step, 2 steps per run: with its spread over the 2 repetitions and a verdict.
    overhead_ns = int(record_value(info, "leveled.layer.overhead_ns"))
    assert 180e6 <= overhead_ns <= 260e6, overhead_ns
    assert int(record_value(info, "leveled.layer.overhead_min_ns")) <= overhead_ns
    assert int(record_value(info, "leveled.layer.overhead_max_ns")) >= overhead_ns
    assert float(record_value(info, "leveled.layer.overhead_pct")) > 200
    assert record_value(info, "leveled.layer.verdict") == "above noise"
    assert "above noise (run-to-run spread" in stderr
    # Analyses read the runs where the level they time was the deepest: the model table the
    # model-only runs (~20 ms steps), the layer table the layer runs (~110 ms ops).
    tables = json.loads(run_strata("analyze", str(tmp_path / "out.strata"), "--analysis", "model_table,layer_table",
                                   "--format", "json").stdout)
    model = tables["model_table"]
    latency = model["rows"][0][model["columns"].index("latency_ms")]
    assert 15 <= latency < 70, latency
    assert any("from the 2 runs traced down to model" in n for n in model["notes"])
    layer = tables["layer_table"]
    assert layer["rows"][0][layer["columns"].index("latency_ms")] >= 105


def test_leveled_counts_spans_that_have_no_counterpart(tmp_path):
    # The layer run does one more step than the model run: its step matches nothing.
    text = LEVEL_DEPENDENT.replace("for i in range(2):", "for i in range(3 if slow else 2):")
    spans, info, stderr = record(tmp_path, text, "--leveled", "--level", "layer")
    assert len([s for s in spans if s["name"] == "step"]) == 2 + 3
    assert record_value(info, "leveled.layer.matched") == "2"
    assert record_value(info, "leveled.layer.unmatched") == "1"
    # One run per level: the overhead is shown, and so is that its noise is unknown.
    assert record_value(info, "leveled.layer.verdict") == "noise unknown"
    assert "1 run: noise unknown (--runs 3 or more measures it)" in stderr


def test_runs_repeats_the_command_into_one_trace(tmp_path):
    spans, info, _ = record(tmp_path, "import strata\nwith strata.span('work', level='model'):\n    pass\n",
                            "--runs", "3")
    assert len(spans) == 3 and len({s["pid"] for s in spans}) == 3
    assert record_value(info, "runs") == "3"
    for r in range(3):
        assert int(record_value(info, f"run.layer.{r}.wall_ns")) > 0  # layer: record's default level


def test_serialize_runs_with_one_thread_and_blocking_launches(tmp_path):
    text = ("import os, strata\nwith strata.span('env', level='model', omp=os.environ.get('OMP_NUM_THREADS', ''),"
            " cuda=os.environ.get('CUDA_LAUNCH_BLOCKING', '')):\n    pass\n")
    spans, info, _ = record(tmp_path, text, "--serialize")
    assert spans[0]["attributes"] == {"omp": "1", "cuda": "1"}
    assert "OMP_NUM_THREADS=1" in record_value(info, "serialized")


def test_layer_startup_hook_runs_the_sitecustomize_it_shadows(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "marker"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = dict(os.environ, PYTHONPATH=str(site))
    record(tmp_path, "import strata\nwith strata.span('x', level='model'):\n    pass\n", "--level", "layer", env=env)
    assert marker.read_text() == "ran"
