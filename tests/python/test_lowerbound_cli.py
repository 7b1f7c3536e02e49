"""strata model / bench / lowerbound end to end: models exported by PyTorch at test time, layer counts
checked against the onnx package's own node counts, the database miss warning, incremental runs, the
critical path as SVG, and the committed torchvision graphs checked against a fresh export."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from xml.etree import ElementTree

import pytest

from conftest import reachable_by_others

onnx = pytest.importorskip("onnx")
pytest.importorskip("torch")

BUILD = os.environ.get("STRATA_BUILD_DIR", "/work/main/build")
STRATA = os.path.join(BUILD, "bin", "strata")
HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "..", "lowerbound", "export_models.py")
ENV = dict(os.environ, OMP_NUM_THREADS="1")
SVG = "{http://www.w3.org/2000/svg}"


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


def test_model_lists_fusable_chains(models):
    table = json.loads(run("model", models["resnet18"], models["chain_net"], "--format", "json").stdout)["fusion_chains"]
    rows = {(r[0], r[1]): r[2:] for r in table["rows"]}
    # resnet18: stem + 8 first convs -> relu; 8 residual adds (+ relu), each fused into one conv.
    assert rows == {("resnet18", "relu"): [9, 9], ("resnet18", "sum+relu"): [8, 16], ("chain_net", "relu"): [2, 2]}


def test_malformed_model_is_one_error_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 10)
    p = run("model", str(bad), check=False)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0]


def test_query_miss_warns_then_incremental_bench_fills_it(models, tmp_path):
    db = str(tmp_path / "perf.sqlite")
    # Nothing measured: an error naming the command, never a bound of 0.000 ms.
    empty = run("lowerbound", models["branch_net"], "--db", db, check=False)
    assert empty.returncode == 1 and "has a measurement" in empty.stderr and "strata bench run" in empty.stderr
    assert "0.000" not in empty.stdout
    quick = ["--repetitions", "2", "--min-time-ms", "0.2", "--max-spread", "10"]  # noise has its own tests
    first = run("bench", "run", models["chain_net"], "--db", db, *quick)
    assert "benchmarked now:         5" in first.stdout
    # Some layers measured (those branch_net shares with chain_net): a bound, and a warning for the rest.
    miss = run("lowerbound", models["branch_net"], "--db", db)
    assert "have no measurement" in miss.stderr and "strata bench run" in miss.stderr
    second = run("bench", "run", models["branch_net"], "--db", db, *quick)
    assert "already in the database: 3" in second.stdout
    assert "benchmarked now:         2" in second.stdout
    hit = run("lowerbound", models["branch_net"], "--db", db, "--format", "json", "--dot", str(tmp_path / "g.dot"))
    # The DOT file is an output like any other: not replaced without --force (issue 13, item 1).
    dot_again = run("lowerbound", models["branch_net"], "--db", db, "--dot", str(tmp_path / "g.dot"), check=False)
    assert dot_again.returncode != 0 and "exists; pass --force" in dot_again.stderr
    run("lowerbound", models["branch_net"], "--db", db, "--dot", str(tmp_path / "g.dot"), "--force")
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


def test_generate_never_writes_through_links(models, tmp_path):
    """The output directory and its files follow the rules of outputs (issue 32): a link at -o is
    refused, and with --force a link planted at a generated file's name is refused, not followed."""
    victim_dir = tmp_path / "private"
    victim_dir.mkdir()
    victim = victim_dir / "CMakeLists.txt"
    victim.write_text("precious\n")
    link = tmp_path / "link"
    link.symlink_to(victim_dir)
    p = run("bench", "generate", models["chain_net"], "-o", str(link), "--force", check=False)
    assert p.returncode == 1 and "symbolic link" in p.stderr, p.stderr
    out = tmp_path / "gen"
    out.mkdir()
    (out / "CMakeLists.txt").symlink_to(victim)
    p = run("bench", "generate", models["chain_net"], "-o", str(out), "--force", check=False)
    assert p.returncode == 1 and "symbolic link" in p.stderr, p.stderr
    assert victim.read_text() == "precious\n" and sorted(os.listdir(victim_dir)) == ["CMakeLists.txt"]


def test_default_database_is_never_a_fixed_name_in_tmp(models, tmp_path):
    """Without $HOME the default database was /tmp/.cache/strata/perf.sqlite, a name another user
    could prepare (issue 32): now the password database's home, else no default."""
    fixed = "/tmp/.cache/strata/perf.sqlite"
    if os.path.lexists("/tmp/.cache"):
        pytest.skip("/tmp/.cache exists already: the test could not tell who made it")
    env = {k: v for k, v in ENV.items() if k not in ("HOME", "STRATA_PERF_DB")}
    if os.geteuid() == 0 and shutil.which("setpriv") and reachable_by_others(STRATA):
        # A uid without a password entry: no home at all, so no default database.
        command = ["setpriv", "--reuid=23456", "--regid=23456", "--clear-groups", "--", STRATA]
        shared = tempfile.mkdtemp(prefix="strata-perfdb-", dir="/tmp")  # reachable by that uid
        os.chmod(shared, 0o755)
        model = os.path.join(shared, "m.onnx")
        shutil.copy(models["chain_net"], model)
        os.chmod(model, 0o644)
    else:
        command, model = [STRATA], models["chain_net"]
    p = subprocess.run([*command, "lowerbound", str(model)], capture_output=True, text=True, env=env, timeout=300)
    try:
        assert not os.path.lexists("/tmp/.cache"), "the default database went to a fixed name in /tmp"
    finally:
        shutil.rmtree("/tmp/.cache", ignore_errors=True)
        if command[0] == "setpriv":
            shutil.rmtree(os.path.dirname(model), ignore_errors=True)
    if command[0] == "setpriv":
        assert p.returncode == 1 and "no home directory" in p.stderr, p.stderr


def test_svg_of_the_critical_path_with_an_awkward_model_name(models, tmp_path):
    # The model name is the file's stem: long, with double and single quotes, a backslash and spaces,
    # all of which end up in the DOT title and in the paths handed to graphviz.
    stem = "net \"quoted\" it's a \\ back " + "x" * 150
    model = tmp_path / f"{stem}.onnx"
    shutil.copy(models["branch_net"], model)
    db = str(tmp_path / "perf.sqlite")
    run("bench", "run", str(model), "--db", db, "--repetitions", "2", "--min-time-ms", "0.2", "--max-spread", "10")
    out_dir = tmp_path / "it's out"
    out_dir.mkdir()
    svg = out_dir / "critical path.svg"
    p = run("lowerbound", str(model), "--db", db, "--svg", str(svg), "--format", "json")
    assert "critical path (SVG)" in p.stderr, p.stderr
    table = json.loads(p.stdout)["lower_bounds"]
    critical_layers = table["rows"][0][table["columns"].index("critical_path_layers")]
    root = ElementTree.parse(svg).getroot()
    assert root.tag == SVG + "svg"
    texts = ["".join(t.itertext()) for t in root.iter(SVG + "text")]
    assert any(t.startswith(stem + ": sequential ") and " ms, parallel (critical path) " in t for t in texts), texts
    # The critical path is drawn red: one red node per layer on it, and red edges between them.
    red_nodes = [g for g in root.iter(SVG + "g") if g.get("class") == "node"
                 and any(shape.get("stroke") == "red" for shape in g.iter(SVG + "polygon"))]
    red_edges = [g for g in root.iter(SVG + "g") if g.get("class") == "edge"
                 and any(path.get("stroke") == "red" for path in g.iter(SVG + "path"))]
    assert len(red_nodes) == critical_layers
    assert len(red_edges) == critical_layers - 1


def test_committed_torchvision_graphs_are_what_the_exporter_makes(tmp_path):
    # tests/lowerbound/data holds googlenet, vgg16, alexnet and mobilenet_v2 as export_models.py makes
    # them (structure only: no 528 MB of vgg16 weights written); the C++ tests rely on that.
    names = ("googlenet", "vgg16", "alexnet", "mobilenet_v2")
    p = subprocess.run([sys.executable, EXPORT, str(tmp_path), *names], check=True, capture_output=True,
                       text=True, timeout=600)
    for name in names:
        assert f"{name}.onnx" in p.stdout and "(structure only)" in p.stdout, p.stdout
        fresh = json.loads(run("model", str(tmp_path / f"{name}.onnx"), "--layers", "--format", "json").stdout)
        committed = json.loads(run("model", os.path.join(HERE, "..", "lowerbound", "data", f"{name}.onnx"),
                                   "--layers", "--format", "json").stdout)
        assert fresh[f"layers_{name}"] == committed[f"layers_{name}"], name
        assert os.path.getsize(tmp_path / f"{name}.onnx") < 100_000


def test_database_passwords_stay_out_of_argv_files_and_messages(models, tmp_path):
    """Issue 13.3: a keyword/value string is refused (it used to become an SQLite file named after the
    password), a password on the command line is refused (every user can read it in `ps`), and one
    in $STRATA_PERF_DB never reaches a message."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    p = subprocess.run([STRATA, "bench", "run", models["chain_net"], "--db", "host=localhost password=hunter2"],
                       capture_output=True, text=True, env=ENV, cwd=cwd, timeout=60)
    assert p.returncode == 2 and "keyword/value string" in p.stderr and "hunter2" not in p.stderr
    assert list(cwd.iterdir()) == []
    p = run("lowerbound", models["chain_net"], "--db", "postgresql://u:hunter2@127.0.0.1:1/x", check=False)
    assert p.returncode == 2 and "visible to every user" in p.stderr and "~/.pgpass" in p.stderr
    assert "hunter2" not in p.stderr
    env = dict(ENV, STRATA_PERF_DB="postgresql://u@127.0.0.1:1/x?password=hunter2&connect_timeout=2")
    p = subprocess.run([STRATA, "lowerbound", models["chain_net"]], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 1 and "cannot connect" in p.stderr and "password=***" in p.stderr
    assert "hunter2" not in p.stderr


def test_lowerbound_trace_reads_an_imported_kineto_trace_directly(tmp_path):
    """Issue 14: `lowerbound --trace` reads a foreign profile as every command does (the repository's
    A100 Kineto trace of torchvision alexnet, .json.gz), and its GPU kernels reach tensor_cores."""
    root = os.path.join(HERE, "..", "..")
    onnx_model = os.path.join(root, "tests", "lowerbound", "data", "alexnet.onnx")
    kineto = os.path.join(root, "tests", "data", "kineto", "a100_alexnet_train.json.gz")
    db = str(tmp_path / "perf.sqlite")
    run("bench", "run", onnx_model, "--db", db, "--repetitions", "2", "--min-time-ms", "0.2", "--max-spread", "10")
    p = run("lowerbound", onnx_model, "--db", db, "--trace", kineto, "--format", "json")
    tables = json.loads(p.stdout)
    assert "framework_vs_bound" in tables and "tensor_cores" in tables
    cols = tables["framework_vs_bound"]["columns"]
    assert tables["framework_vs_bound"]["rows"][0][cols.index("matched_layers")] > 0
    tc = tables["tensor_cores"]
    assert any(row[0] == "TOTAL" for row in tc["rows"])
