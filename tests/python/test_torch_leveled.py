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
            return parts[1]
    raise KeyError(key)


def test_leveled_takes_each_span_from_the_run_where_its_level_was_deepest(tmp_path):
    spans, info, stderr = record(tmp_path, LEVEL_DEPENDENT, "--leveled", "--level", "layer", "--runs", "2")
    steps = [s for s in spans if s["name"] == "step"]
    ops = [s for s in spans if s["name"] == "op"]
    assert len(steps) == 4 and len(ops) == 4  # 2 repetitions of the deepest run, 2 steps each
    ms = lambda s: (s["end_ns"] - s["start_ns"]) / 1e6  # noqa: E731
    # Steps timed by the model-only runs (~20 ms), ops by the layer runs (~110 ms).
    assert all(15 <= ms(s) < 70 for s in steps), [ms(s) for s in steps]
    assert all(ms(s) >= 105 for s in ops), [ms(s) for s in ops]
    # Every op still points at its step (structure from the deepest run).
    by_id = {s["span_id"]: s for s in spans}
    assert all(by_id[s["parent_id"]]["name"] == "step" for s in ops)
    assert record_value(info, "leveled.levels") == "model,layer"
    assert record_value(info, "leveled.model.matched") == "4"
    assert record_value(info, "leveled.model.unmatched") == "0"
    assert record_value(info, "leveled.model.unmatched_source") == "0"
    # The layer level adds ~100 ms per step to the model spans: 2 x 100 ms over ~2 x 20 ms.
    overhead_ns = int(record_value(info, "leveled.layer.overhead_ns"))
    assert 180e6 <= overhead_ns <= 260e6, overhead_ns
    assert float(record_value(info, "leveled.layer.overhead_pct")) > 200
    assert "overhead" in stderr and "layer" in stderr


def test_leveled_counts_spans_that_have_no_counterpart(tmp_path):
    # The layer run does one more step than the model run: its step and op match nothing.
    text = LEVEL_DEPENDENT.replace("for i in range(2):", "for i in range(3 if slow else 2):")
    spans, info, _ = record(tmp_path, text, "--leveled", "--level", "layer")
    assert len([s for s in spans if s["name"] == "step"]) == 3
    assert record_value(info, "leveled.model.matched") == "2"
    assert record_value(info, "leveled.model.unmatched") == "1"


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
