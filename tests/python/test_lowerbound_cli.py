"""strata model / bench / lowerbound end to end: models exported by PyTorch at test time, layer counts
checked against the onnx package's own node counts, the database miss warning, incremental runs."""
import collections
import json
import os
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("torch")

BUILD = os.environ.get("STRATA_BUILD_DIR", "/work/main/build")
STRATA = os.path.join(BUILD, "bin", "strata")
HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "..", "lowerbound", "export_models.py")
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def run(*args, check=True):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True, env=ENV, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"strata {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("onnx")
    subprocess.run([sys.executable, EXPORT, str(out), "chain_net", "branch_net", "resnet18"], check=True,
                   capture_output=True, timeout=300)
    return {name: str(out / f"{name}.onnx") for name in ("chain_net", "branch_net", "resnet18")}


def test_layer_ir_matches_onnx_node_counts(models):
    for name, path in models.items():
        tables = json.loads(run("model", path, "--layers", "--format", "json").stdout)
        layers = tables[f"layers_{name}"]["rows"]
        graph = onnx.load(path).graph
        assert len(layers) == len(graph.node)
        type_col = tables[f"layers_{name}"]["columns"].index("type")
        assert collections.Counter(r[type_col] for r in layers) == collections.Counter(n.op_type for n in graph.node)


def test_unique_layers_across_models(models):
    tables = json.loads(run("model", models["chain_net"], models["branch_net"], "--format", "json").stdout)
    rows = {r[0]: r for r in tables["unique_layers"]["rows"]}
    cols = tables["unique_layers"]["columns"]
    assert rows["chain_net"][cols.index("unique")] == 6
    assert rows["branch_net"][cols.index("unique")] == 5
    assert rows["branch_net"][cols.index("new_vs_earlier_models")] == 2
    assert rows["ALL"][cols.index("unique")] == 8


def test_malformed_model_is_one_error_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 10)
    p = run("model", str(bad), check=False)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0]


def test_query_miss_warns_then_incremental_bench_fills_it(models, tmp_path):
    db = str(tmp_path / "perf.sqlite")
    miss = run("lowerbound", models["branch_net"], "--db", db)
    assert "have no measurement" in miss.stderr and "strata bench run" in miss.stderr
    first = run("bench", "run", models["chain_net"], "--db", db, "--repetitions", "2", "--min-time-ms", "0.2")
    assert "benchmarked now:         5" in first.stdout
    second = run("bench", "run", models["branch_net"], "--db", db, "--repetitions", "2", "--min-time-ms", "0.2")
    assert "already in the database: 3" in second.stdout
    assert "benchmarked now:         2" in second.stdout
    hit = run("lowerbound", models["branch_net"], "--db", db, "--format", "json", "--dot", str(tmp_path / "g.dot"))
    assert "have no measurement" not in hit.stderr
    row = json.loads(hit.stdout)["lower_bounds"]["rows"][0]
    cols = json.loads(hit.stdout)["lower_bounds"]["columns"]
    seq, par = row[cols.index("sequential_ms")], row[cols.index("parallel_ms")]
    assert 0 < par < seq  # two branches: the critical path skips the cheaper one
    assert "color=red" in (tmp_path / "g.dot").read_text()


def test_generate_writes_buildable_project_files(models, tmp_path):
    out = tmp_path / "gen"
    p = run("bench", "generate", models["chain_net"], "-o", str(out), "--layout", "nchw,nhwc")
    assert "wrote 18 benchmarks" in p.stdout
    for f in ("benchmarks.cc", "onednn_ops.h", "bench_case.h", "CMakeLists.txt"):
        assert (out / f).exists()
