"""strata.load(): the spans, the tree and the analysis tables of traces of every format as pandas
DataFrames, checked against the CLI (`strata analyze --format csv`, `strata export --format csv`):
same columns, same row counts, same values (reals to the CSV's printed precision)."""
import csv
import io
import math
import os
import sys

import pytest

from conftest import PYTHON_PKG, run_strata

pd = pytest.importorskip("pandas")
sys.path.insert(0, PYTHON_PKG)
import strata  # noqa: E402  (the build tree's package)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(REPO, "tests", "data")
NATIVE_LIBRARY = os.path.join(DATA, "format_1_0", "resnet18_library.trace")
NATIVE_GPU = os.path.join(DATA, "format_1_0", "h100_bert_small.trace")
KINETO = os.path.join(DATA, "kineto", "a100_alexnet_train.json.gz")
KINETO_RANK = os.path.join(DATA, "kineto", "multirank_rank0.json.gz")
NSYS = os.path.join(DATA, "nsys", "h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite")
ORT = os.path.join(REPO, "tests", "import", "data", "ort_profile.json")
TF = os.path.join(REPO, "tests", "import", "data", "tf_timeline.json")
NCU = os.path.join(REPO, "tests", "import", "data", "b200_cublaslt_fp8_gemm_details.csv.log")

# (trace, analyses) pairs: every reader, host-side and device-side tables.
CASES = [
    (NATIVE_LIBRARY, ["model_table", "layer_table", "op_stats", "layer_type_aggregate", "runs", "gpu_kernel_summary"]),
    (NATIVE_GPU, ["kernel_table", "kernels_by_name", "layer_device_split"]),
    (KINETO, ["kernel_table", "op_stats", "gpu_kernel_summary", "iterations", "memcpy_summary"]),
    (KINETO_RANK, ["rank_breakdown", "kernels_by_layer"]),
    (NSYS, ["gpu_kernel_summary", "cuda_api_summary", "kernel_table", "range_summary"]),
    (ORT, ["layer_table", "op_stats", "rank_breakdown"]),
    (TF, ["layer_table", "op_stats"]),
    (NCU, ["kernel_table", "metrics_by_layer", "gpu_kernel_summary"]),
]


def cli_tables(path, name):
    """`strata analyze PATH --analysis NAME --format csv` as {table: (columns, rows)}; None (and the
    message) when the analysis reports missing input."""
    proc = run_strata("analyze", path, "--analysis", name, "--format", "csv", check=False)
    if proc.returncode != 0:
        return None, proc.stderr
    tables, current = {}, None
    lines = proc.stdout.splitlines(keepends=True)
    chunks = {}
    for line in lines:
        if line.startswith("# "):
            current = line[2:].strip()
            chunks[current] = []
        else:
            chunks.setdefault(current, []).append(line)
    for table, body in chunks.items():
        rows = list(csv.reader(io.StringIO("".join(body))))
        tables[table] = (rows[0], rows[1:])
    return tables, proc.stderr


def same_cell(text, value):
    if isinstance(value, float) and math.isnan(value):
        return text in ("", "nan")
    if value is pd.NA or value is None:
        return text == ""
    if isinstance(value, str):
        return text == value
    if "." in text:  # a real printed with as many decimals as the table asked for
        decimals = len(text.split(".")[1])
        return abs(float(text) - float(value)) <= 0.51 * 10 ** -decimals + 1e-12 * abs(float(value))
    return text != "" and int(text) == int(value)


def as_frames(result):
    if isinstance(result, pd.DataFrame):
        return {result.attrs["name"]: result}
    return dict(result)


@pytest.mark.parametrize("path,names", CASES, ids=[os.path.basename(c[0]) for c in CASES])
def test_analysis_tables_equal_the_cli_csv(strata_bin, path, names):
    trace = strata.load(path)
    for name in names:
        expected, stderr = cli_tables(path, name)
        if expected is None:  # the CLI says the input is missing: so must the API, with its line
            with pytest.raises(strata.MissingInputError) as err:
                trace.analysis(name)
            assert str(err.value).splitlines()[0] in stderr
            continue
        frames = as_frames(trace.analysis(name))
        if len(expected) == 1 and None in expected:  # one table: the CLI prints no "# name" line
            expected = {next(iter(frames)): expected[None]}
        assert list(frames) == list(expected), name
        for table, (columns, rows) in expected.items():
            df = frames[table]
            assert list(df.columns) == columns, (name, table)
            assert len(df) == len(rows), (name, table)
            for r, row in enumerate(rows):
                for c, text in enumerate(row):
                    value = df.iat[r, c]
                    assert same_cell(text, value), (name, table, r, columns[c], text, value)


def test_every_case_has_a_table(strata_bin):
    # The comparison above would pass on an empty result; at least these must give rows.
    for path, name in [(NATIVE_LIBRARY, "layer_table"), (KINETO, "kernel_table"), (NSYS, "gpu_kernel_summary"),
                       (ORT, "op_stats"), (TF, "op_stats"), (KINETO_RANK, "rank_breakdown"),
                       (NCU, "metrics_by_layer")]:
        df = strata.load(path).analysis(name)
        assert len(df) > 0, (path, name)


def test_params_reach_the_analysis(strata_bin):
    trace = strata.load(NATIVE_LIBRARY)
    top = trace.analysis("op_stats", top=3)
    assert len(top) == 3
    assert len(trace.analysis("op_stats")) > 3
    with pytest.raises(ValueError, match="no_such_key"):
        trace.analysis("op_stats", no_such_key=1)
    with pytest.raises(ValueError, match="unknown analysis"):
        trace.analysis("no_such_analysis")


def spans_csv(path):
    proc = run_strata("export", path, "--format", "csv")  # to standard output
    return list(csv.DictReader(io.StringIO(proc.stdout)))


@pytest.mark.parametrize("path", [NATIVE_LIBRARY, KINETO, NSYS, ORT, NCU], ids=os.path.basename)
def test_spans_and_tree_equal_the_span_export(strata_bin, path):
    spans = strata.load(path).spans
    exported = spans_csv(path)
    assert len(spans) == len(exported)
    for name in ["id", "parent", "parent_id", "depth", "link", "level", "kind", "activity", "name", "process",
                 "pid", "tid", "stream", "device", "rank", "start_ns", "end_ns", "duration_ns"]:
        assert name in spans.columns
    assert (spans["duration_ns"] == spans["end_ns"] - spans["start_ns"]).all()
    for i, row in enumerate(exported):
        assert int(row["span_id"], 16) == spans["id"].iat[i]
        assert int(row["start_ns"]) == spans["start_ns"].iat[i]
        assert int(row["end_ns"]) == spans["end_ns"].iat[i]
        assert row["name"] == spans["name"].iat[i]
        assert row["level"] == spans["level"].iat[i]
        assert row["activity"] == spans["activity"].iat[i]
        assert int(row["pid"]) == spans["pid"].iat[i]
        parent = spans["parent"].iat[i]
        if row["parent_link"] == "process":  # a parent in another process: the file's link, not the tree's
            assert parent == -1
        elif row["parent_id"]:
            assert parent >= 0 and int(row["parent_id"], 16) == spans["id"].iat[parent]
            assert row["parent_link"] == spans["link"].iat[i]
            assert spans["depth"].iat[i] == spans["depth"].iat[parent] + 1
        else:
            assert parent == -1 and spans["depth"].iat[i] == 0


def test_kineto_file_from_tests_data(strata_bin):
    trace = strata.load(KINETO)
    spans = trace.spans
    assert len(spans) > 500
    kernels = spans[spans["activity"] == "kernel"]
    assert len(kernels) > 0 and (kernels["stream"] >= 0).all() and (kernels["device"] >= 0).all()
    assert (kernels["level"] == "device").all()
    assert spans["level"].cat.ordered  # application < model < layer < ... < device
    # Kernels hang under their launches (correlation) and the launches under the ops.
    assert (kernels["link"] == "correlation").mean() > 0.9
    processes = trace.processes
    assert len(processes) >= 1 and processes["span_count"].sum() == len(spans)
    grid = trace.attribute("grid_x")
    assert len(grid) > 0 and set(grid.index) <= set(kernels.index)
    assert (grid > 0).all()
    attrs = trace.attributes
    assert set(attrs.columns) == {"span", "key", "type", "int_value", "double_value", "text"}
    assert (attrs["span"].diff().dropna() >= 0).all()  # in span order
    assert isinstance(trace.stats, pd.DataFrame) and isinstance(trace.warnings, list)


def test_several_inputs_are_one_trace(strata_bin):
    one = strata.load(KINETO_RANK)
    both = strata.load(KINETO_RANK, os.path.join(DATA, "kineto", "multirank_rank1.json.gz"))
    assert len(both.spans) > len(one.spans)
    assert len(both.processes) > len(one.processes)


def test_bad_inputs_say_what_is_wrong(strata_bin, tmp_path):
    with pytest.raises(FileNotFoundError):
        strata.load(tmp_path / "missing.strata")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01not a trace at all" * 10)
    with pytest.raises(strata.StrataError, match="junk.bin"):
        strata.load(junk)
    trace = strata.load(ORT)
    trace.close()
    with pytest.raises(ValueError, match="closed"):
        trace.spans


def test_analyses_lists_the_registry(strata_bin):
    listed = strata.analyses()
    proc = run_strata("analyze", "--list")
    cli_names = [line.split()[0] for line in proc.stdout.splitlines() if line and not line.startswith(" ")]
    assert list(listed["name"]) == cli_names


def test_tables_show_in_notebooks(strata_bin):
    df = strata.load(NATIVE_LIBRARY).analysis("layer_table")
    assert "<table" in df._repr_html_()
    assert df.attrs["title"]
    trace = strata.load(NATIVE_LIBRARY)
    assert "layer" in trace._repr_html_() and "<table" in trace._repr_html_()
    tables = strata._analysis.Tables(a=df, b=df)
    assert tables._repr_html_().count("<table") == 2
