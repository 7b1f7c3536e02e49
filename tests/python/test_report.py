"""strata report in a browser (issue 18 item 2).

Headless Chromium (Debian's `chromium`) driven by playwright-core (report/node_modules, pinned by
report/package-lock.json; both installed by scripts/setup.sh) loads the report of a real PyTorch CPU
run recorded here at library level with CPU samples, of a real imported Kineto GPU trace, and of a
real two-rank job merged with `strata merge`. For each chart the page draws, the data points read
back from ECharts (getInstanceByDom(el).getOption()) are compared with the CSV of the same analysis
from `strata analyze`: as many points as rows, and the same values. No console error, no page error,
no request other than the file itself. Screenshots are kept under BUILD/test-artifacts/report/.

Skipped (with the reason) only when node or chromium is absent; a missing playwright-core fails.
"""
import csv
import io
import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD_DIR, SYSTEM_PYTHON, run_strata

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODE_MODULES = os.path.join(ROOT, "report", "node_modules")
BROWSER_CHECK = os.path.join(ROOT, "tests", "report", "browser_check.js")
ARTIFACTS = os.path.join(BUILD_DIR, "test-artifacts", "report")
NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MAX_ROWS = 5000  # ReportOptions::max_rows (the report's default)
FLAME_MAX_NODES, FLAME_MIN_SHARE = 4000, 0.0005  # ReportOptions' flame-graph defaults

needs_browser = pytest.mark.skipif(
    NODE is None or CHROMIUM is None,
    reason="needs node and chromium (scripts/setup.sh installs both: apt-get install nodejs npm chromium)")


def report_of(traces, name, *extra):
    os.makedirs(ARTIFACTS, exist_ok=True)
    html = os.path.join(ARTIFACTS, name + ".html")
    run_strata("report", *traces, "-o", html, "--force", *extra)
    return html


def load_in_browser(html, name):
    if not os.path.isdir(os.path.join(NODE_MODULES, "playwright-core")):
        pytest.fail(f"{NODE_MODULES}/playwright-core missing: run scripts/setup.sh (npm ci in report/)")
    png = os.path.join(ARTIFACTS, name + ".png")
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    proc = subprocess.run([NODE, BROWSER_CHECK, html, png, CHROMIUM], capture_output=True, text=True, env=env,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    page = json.loads(proc.stdout)
    assert os.path.getsize(png) > 10000, "the screenshot is (nearly) empty"
    return page


def analysis_tables(traces, analysis):
    """The CSV tables `strata analyze --analysis NAME --format csv` prints, by name ({} when the
    analysis lacks input)."""
    out = run_strata("analyze", *traces, "--analysis", analysis, "--format", "csv", check=False)
    return csv_tables(out.stdout, analysis)


def csv_tables(text, name):
    """Tables of a `--format csv` output, each after its "# NAME" line (the first one: `name`)."""
    tables, lines = {}, []
    for line in text.splitlines(keepends=True):
        if line.startswith("# "):
            if lines:
                tables[name] = list(csv.DictReader(io.StringIO("".join(lines))))
            name, lines = line[2:].strip(), []
        else:
            lines.append(line)
    if lines:
        tables[name] = list(csv.DictReader(io.StringIO("".join(lines))))
    return tables


def same_value(shown, text):
    if text in ("", None):
        return shown is None or shown == "" or shown == "-"
    try:
        expected = float(text)
    except ValueError:
        return str(shown) == text
    return shown is not None and abs(float(shown) - expected) <= 1e-9 * max(1.0, abs(expected))


def expected_flame_frames(trace):
    """Brute force over `strata profile --format collapsed`: every distinct stack prefix at least
    FLAME_MIN_SHARE of the samples wide, at most FLAME_MAX_NODES of them."""
    folded = run_strata("profile", trace, "--format", "collapsed").stdout
    width, total = {}, 0
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit() or int(count) == 0:
            continue
        total += int(count)
        frames = stack.split(";")
        for n in range(1, len(frames) + 1):
            key = tuple(frames[:n])
            width[key] = width.get(key, 0) + int(count)
    wide = {k: w for k, w in width.items() if w >= FLAME_MIN_SHARE * total}
    # The kept root frames' widths (all of them while no more than FLAME_MAX_NODES frames are wide).
    roots = sum(w for k, w in wide.items() if len(k) == 1) if len(wide) <= FLAME_MAX_NODES else None
    return min(len(wide), FLAME_MAX_NODES), roots


def cli_summary(traces):
    return json.loads(run_strata("summary", *traces, "--format", "json").stdout)


def check_summary_charts(chart, points, page, summary):
    """The summary's charts: the per-step breakdown plots the CLI JSON's steps, phase by phase; the
    timeline is the step of median duration (the earliest of equals), its spans inside that step."""
    steps = summary["steps"]
    if chart["analysis"] == "summary":
        assert len(points) == len(steps), f"{len(points)} steps drawn, {len(steps)} in strata summary"
        for series in chart["series"]:
            for i, (shown, step) in enumerate(zip(series["data"], steps)):
                assert same_value(shown, str(step[series["name"]])), (series["name"], i, shown, step)
        return
    timeline = page["step_timeline"]
    median = sorted(range(len(steps)), key=lambda i: steps[i]["ms"])[(len(steps) - 1) // 2]
    assert timeline["step"] == steps[median]["index"]
    assert abs(timeline["ms"] - steps[median]["ms"]) <= 0.0015
    assert len(points) == len(timeline["spans"]) > 0
    assert all(0 <= p[0] <= p[1] <= timeline["ms"] + 1e-9 for p in points)


def check_page(page, traces, expected_charts, flame_trace=None, cli_tables=None):
    """cli_tables: {analysis: {table: rows}} for analyses whose CSV comes from another command than
    `strata analyze TRACE --analysis NAME` (the lower bound: `strata lowerbound MODEL --trace TRACE`)."""
    assert page["console_errors"] == [], page["console_errors"]
    assert page["page_errors"] == [], page["page_errors"]
    assert page["report_errors"] == [], page["report_errors"]
    assert page["requests"] == [], f"the report fetched something: {page['requests']}"
    # The answer first; analyses without data in one line at the end, never as a box of their own.
    assert page["sections"][0] == "summary", page["sections"]
    summary = cli_summary(traces)
    assert page["summary"] == summary
    assert page["no_data_lines"] <= 1
    charts = {c["id"]: c for c in page["charts"]}
    missing_charts = set(expected_charts) - set(charts)
    assert not missing_charts, f"charts not drawn: {missing_charts}; page says: {page['missing']}"
    csv_cache = dict(cli_tables or {})
    for chart in page["charts"]:
        assert chart["width"] > 100 and chart["height"] > 100, chart["id"]
        assert chart["series"], f"{chart['id']}: no series"
        data_series = [s for s in chart["series"] if s["id"] == "data"]
        assert len(data_series) == 1, chart["id"]
        points = data_series[0]["data"]
        if chart["analysis"] == "flame":
            frames, roots = expected_flame_frames(flame_trace)
            assert len(points) == frames, f"flame: {len(points)} frames drawn, {frames} expected"
            assert roots is None or sum(p[2] for p in points if p[0] == 0) == roots, "root frames' widths"
            continue
        if chart["analysis"] in ("summary", "step_timeline"):
            check_summary_charts(chart, points, page, summary)
            continue
        if chart["analysis"] not in csv_cache:
            csv_cache[chart["analysis"]] = analysis_tables(traces, chart["analysis"])
        rows = csv_cache[chart["analysis"]].get(chart["table"])
        assert rows is not None, f"{chart['id']}: strata analyze has no table {chart['table']}"
        assert len(points) == min(len(rows), MAX_ROWS), \
            f"{chart['id']}: {len(points)} points drawn, {len(rows)} rows in the CSV"
        for series in chart["series"]:  # series named after a column plot that column, row by row
            if rows and series.get("name") in rows[0]:
                for i, (shown, row) in enumerate(zip(series["data"], rows)):
                    assert same_value(shown, row[series["name"]]), \
                        f"{chart['id']} {series['name']} row {i}: {shown} drawn, {row[series['name']]} in the CSV"
    return charts


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, strata_bin):
    """A real PyTorch CPU run: resnet18 at two batch sizes, library level (oneDNN primitives carry
    FLOPs and bytes: rooflines), with CPU samples (flame graph)."""
    out = str(tmp_path_factory.mktemp("report") / "resnet18.strata")
    proc = subprocess.run(
        [strata_bin, "record", "--quiet", "--level", "library", "--sample", "-o", out, "--",
         SYSTEM_PYTHON, os.path.join(ROOT, "examples", "pytorch", "infer.py"), "--model", "resnet18",
         "--batch", "1,2", "--iterations", "4", "--warmup", "1", "--image-size", "64", "--threads", "1"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


@needs_browser
def test_report_of_a_real_pytorch_run(recorded):
    html = report_of([recorded], "resnet18_cpu")
    assert os.path.getsize(html) < 5 * 1024 * 1024
    page = load_in_browser(html, "resnet18_cpu")
    charts = check_page(page, [recorded],
                        ["model", "layer-sequence", "layer-types", "device-split", "kernel_roofline",
                         "layer_roofline", "iteration-timeline", "iteration-metrics", "flame"], flame_trace=recorded)
    # Two batch sizes: two bars, and the roofline has the device's ceilings as a second series.
    assert len([s for s in charts["model"]["series"] if s["id"] == "data"][0]["data"]) == 2
    assert any(s["id"] == "roof" for s in charts["kernel_roofline"]["series"])
    # No ranks in a single-process run: the section says what to do instead.
    assert any("rank_breakdown" in m and "strata merge" in m for m in page["missing"])


@needs_browser
def test_report_of_an_imported_gpu_trace():
    trace = os.path.join(ROOT, "tests", "data", "kineto", "a100_alexnet_train.json.gz")
    html = report_of([trace], "a100_alexnet_kineto")
    page = load_in_browser(html, "a100_alexnet_kineto")
    check_page(page, [trace], ["layer-sequence", "layer-types", "device-split", "kernels", "ranks"])
    # Kineto kernels carry no FLOP counters: the roofline section says what to record.
    assert any("kernel_roofline" in m and "--metrics" in m for m in page["missing"])
    assert any("no CPU samples" in m for m in page["missing"])


@needs_browser
def test_report_of_a_merged_two_rank_job(tmp_path):
    ranks = [os.path.join(ROOT, "tests", "data", "kineto", f"multirank_rank{r}.json.gz") for r in (0, 1)]
    merged = str(tmp_path / "job.strata")
    run_strata("merge", *ranks, "-o", merged)
    html = report_of([merged], "multirank_merged")
    page = load_in_browser(html, "multirank_merged")
    charts = check_page(page, [merged], ["ranks", "kernels", "device-split"])
    assert len([s for s in charts["ranks"]["series"] if s["id"] == "data"][0]["data"]) == 2


def test_report_refuses_to_replace_a_file_without_force(tmp_path):
    trace = os.path.join(ROOT, "tests", "data", "kineto", "h100_cuda_sync_small.json")
    out = tmp_path / "r.html"
    out.write_text("keep me")
    proc = run_strata("report", trace, "-o", str(out), check=False)
    assert proc.returncode != 0 and "--force" in proc.stderr, proc.stderr
    assert out.read_text() == "keep me"
    run_strata("report", trace, "-o", str(out), "--force")
    assert out.read_text().startswith("<!DOCTYPE html>")
    proc = run_strata("report", trace, check=False)
    assert proc.returncode == 2 and "--output is required" in proc.stderr, proc.stderr  # one usage line
    # A link planted where the report goes: refused even with --force, its target untouched.
    victim = tmp_path / "private.txt"
    victim.write_text("precious\n")
    out.unlink()
    out.symlink_to(victim)
    proc = run_strata("report", trace, "-o", str(out), "--force", check=False)
    assert proc.returncode == 1 and "symbolic link" in proc.stderr, proc.stderr
    assert victim.read_text() == "precious\n" and out.is_symlink()


# Real Nsight Systems exports (tests/data/nsys/README.md): NVTX ranges are the layers of the H100 run;
# CloverLeaf's A100 run has kernels and no NVTX.
NSYS_CASES = [
    ("h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite",
     ["layer-sequence", "layer-types", "device-split", "kernels", "iteration-timeline", "iteration-metrics"]),
    ("a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite", ["kernels", "iteration-timeline", "iteration-metrics"]),
]


@needs_browser
@pytest.mark.parametrize("export,expected", NSYS_CASES, ids=[c[0].split("_nsys")[0] for c in NSYS_CASES])
def test_report_of_an_imported_nsys_export(export, expected):
    trace = os.path.join(ROOT, "tests", "data", "nsys", export)
    name = export.split("_nsys")[0] + "_nsys"
    page = load_in_browser(report_of([trace], name), name)
    charts = check_page(page, [trace], expected)
    assert set(charts) == set(expected), f"charts drawn: {sorted(charts)}"
    # No model given: the lower-bound section says what to pass.
    assert any(m.startswith("framework_vs_bound: no model given") and "--model" in m for m in page["missing"])


LB_DATA = os.path.join(ROOT, "tests", "lowerbound", "data")
LB_MODEL = os.path.join(LB_DATA, "resnet18.onnx")
LB_TRACE = os.path.join(LB_DATA, "resnet18_cpu_library.trace")  # recorded with OMP_NUM_THREADS=1


@pytest.fixture(scope="module")
def perf_db(tmp_path_factory):
    """resnet18's layers benchmarked here with oneDNN on one thread (the recorded run's count)."""
    db = str(tmp_path_factory.mktemp("perfdb") / "perf.sqlite")
    run_strata("bench", "run", LB_MODEL, "--db", db, "--threads", "1", "--repetitions", "2", "--min-time-ms", "0.2",
               "--max-spread", "10", timeout=600)
    return db


@needs_browser
def test_report_lower_bound_section_plots_the_lowerbound_cli_tables(perf_db):
    bound = ["--model", LB_MODEL, "--db", perf_db, "--threads", "1"]
    page = load_in_browser(report_of([LB_TRACE], "resnet18_lower_bound", *bound), "resnet18_lower_bound")
    cli = run_strata("lowerbound", LB_MODEL, "--db", perf_db, "--threads", "1", "--trace", LB_TRACE, "--format", "csv")
    tables = csv_tables(cli.stdout, "lower_bounds")
    charts = check_page(page, [LB_TRACE], ["lower-bound", "layer-gaps", "layer-sequence", "layer-types"],
                        cli_tables={"framework_vs_bound": tables})
    assert "lower-bound" in page["sections"]
    assert not any(m.startswith("framework_vs_bound") for m in page["missing"]), page["missing"]
    # Measured, sequential and parallel bound: one bar each, the CSV's numbers (check_page compared them).
    assert [s["name"] for s in charts["lower-bound"]["series"]] == \
        ["measured_ms", "sequential_bound_ms", "parallel_bound_ms"]
    # The gap chart stacks bound + gap = the framework's op time, row by row (to the CSV's 0.01 us).
    gaps = tables["layer_gaps"]
    assert len(gaps) == 10  # --top's default, resnet18 has more matched layers
    series = {s["name"]: s["data"] for s in charts["layer-gaps"]["series"]}
    for i, row in enumerate(gaps):
        assert abs(series["bound_us"][i] + series["gap_us"][i] - float(row["measured_us"])) <= 0.011, row
    # The sequential bound is the sum of the layers' bounds and the parallel one at most that.
    summary = tables["framework_vs_bound"][0]
    assert float(summary["parallel_bound_ms"]) <= float(summary["sequential_bound_ms"])


def test_report_lower_bound_options_need_a_model_and_a_measured_database(tmp_path, perf_db):
    trace = os.path.join(ROOT, "tests", "data", "nsys", NSYS_CASES[1][0])  # kernels only, no layers
    out = str(tmp_path / "r.html")
    proc = run_strata("report", LB_TRACE, "-o", out, "--db", perf_db, check=False)
    assert proc.returncode == 2 and "--db" in proc.stderr and "--model" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage" * 10)
    proc = run_strata("report", LB_TRACE, "-o", out, "--model", str(bad), "--db", perf_db, check=False)
    assert proc.returncode == 1 and str(bad) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    empty = str(tmp_path / "empty.sqlite")
    proc = run_strata("report", LB_TRACE, "-o", out, "--model", LB_MODEL, "--db", empty, check=False)
    assert proc.returncode == 1 and "strata bench run" in proc.stderr, proc.stderr
    assert not os.path.exists(out)
    # A trace without framework ops: the report is written, the section and stderr say why.
    proc = run_strata("report", trace, "-o", out, "--model", LB_MODEL, "--db", perf_db, "--threads", "1", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "no lower-bound comparison" in proc.stderr
    with open(out, encoding="utf-8") as f:
        html = f.read()
    assert '"framework_vs_bound":{"missing":"' in html and "no model given" not in html


def embedded_data(html):
    """The JSON the page draws from (<script id="strata-data">; '<' is written \\u003c in it)."""
    with open(html, encoding="utf-8") as f:
        text = f.read()
    start = text.index('<script id="strata-data" type="application/json">')
    start = text.index(">", start) + 1
    return json.loads(text[start:text.index("</script>", start)])


SUMMARY_TRACES = [
    os.path.join(ROOT, "tests", "data", "kineto", "a100_alexnet_train.json.gz"),
    os.path.join(ROOT, "tests", "data", "nsys", NSYS_CASES[0][0]),
    os.path.join(ROOT, "tests", "golden", "inputs", "cpu_model.trace"),
]


@pytest.mark.parametrize("trace", SUMMARY_TRACES, ids=lambda p: os.path.basename(p).split(".")[0])
def test_report_embeds_what_strata_summary_prints(tmp_path, trace):
    """The page's summary is `strata summary --format json` of the same trace, value for value."""
    html = str(tmp_path / "r.html")
    run_strata("report", trace, "-o", html)
    data = embedded_data(html)
    assert data["summary"] == cli_summary([trace])


# Kernel names as C++ templates print them: a long shared start, the part that tells them apart in
# the middle, and a long shared end; two differ only in their last character, two are equal but for
# one character in the middle, 150 characters from either end.
PREFIX = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, " \
         "at::native::binary_internal::"
SUFFIX = "Functor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, float, float>)"
LONG_NAMES = [PREFIX + op + SUFFIX for op in ("Mul", "Div", "Add", "Sub")] + \
    [PREFIX + "Mul" + SUFFIX + "1", PREFIX + "Mul" + SUFFIX + "2"] + \
    ["x" * 150 + "A" + "y" * 150, "x" * 150 + "B" + "y" * 150, "relu_kernel"]


def long_name_trace(path):
    """Two ProfilerSteps, each op launching one kernel of LONG_NAMES."""
    pid, tid, stream = 77, 77, 7
    events, t, corr = [], 1000.0, 1
    for step in range(2):
        start = t
        for k, kernel in enumerate(LONG_NAMES):
            events += [
                {"ph": "X", "cat": "cpu_op", "name": f"aten::op{k}", "pid": pid, "tid": tid, "ts": t, "dur": 30.0,
                 "args": {"External id": corr}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid, "ts": t + 2,
                 "dur": 5.0, "args": {"cbid": 211, "correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream, "ts": t + 8,
                 "dur": 5.0 + k, "args": {"device": 0, "stream": stream, "correlation": corr}}]
            corr += 1
            t += 40.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid, "tid": tid,
                       "ts": start - 1, "dur": t - start + 1})
        t += 10.0
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"schemaVersion": 1, "traceEvents": events}, f)


@needs_browser
def test_report_labels_keep_what_tells_long_names_apart(tmp_path):
    trace = str(tmp_path / "long_names.json")
    long_name_trace(trace)
    page = load_in_browser(report_of([trace], "long_names"), "long_names")
    charts = check_page(page, [trace], ["kernels", "step-breakdown", "step-timeline"])
    labels = charts["kernels"]["categories"][0]
    names = [r["kernel"] for r in analysis_tables([trace], "kernels_by_name")["kernels_by_name"]]
    assert len(labels) == len(names) == len(LONG_NAMES)
    assert len(set(labels)) == len(labels), f"rows that look alike: {labels}"
    assert all(len(label) <= 36 for label in labels), labels
    for label, name in zip(labels, names):
        # Each label shows the part of its name that no other name shares at that place.
        if name.startswith(PREFIX) and name.endswith(SUFFIX):
            assert name[len(PREFIX):len(PREFIX) + 3] in label, (label, name)
        elif name.startswith("x" * 150):
            assert name[150] in label.replace("x", "").replace("y", ""), (label, name)
        elif name == "relu_kernel":
            assert label == name
    # Hovering each row shows its full name (payload_check.js moves the mouse over every bar).
    html = os.path.join(ARTIFACTS, "long_names.html")
    proc = subprocess.run([NODE, os.path.join(ROOT, "tests", "report", "payload_check.js"), CHROMIUM, html],
                          capture_output=True, text=True, env=dict(os.environ, NODE_PATH=NODE_MODULES), timeout=180)
    assert proc.returncode == 0, proc.stderr
    hovered = {c["id"]: c for c in json.loads(proc.stdout)[html]["charts"]}["kernels"]
    shown = " ".join(hovered["tooltips"])
    assert all(name in shown for name in LONG_NAMES), shown
