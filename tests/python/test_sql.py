"""SQL over a trace (`strata export --format sqlite`, `strata sql`): the example queries of docs/sql.md
answer what the analyses and the JSON export say, on a real layer-level PyTorch recording and on a
real Kineto GPU trace (shared/traces/kineto/a100_alexnet_train.json.gz: AlexNet training on an A100,
see the README there)."""
import csv
import io
import json
import os
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KINETO = os.path.join(REPO, "tests", "data", "kineto", "a100_alexnet_train.json.gz")  # attribution: tests/data/kineto/README.md

# docs/sql.md, "Top kernels" and "Ops by total time": op_stats counts every span of the level but
# counters and instants (on the device, executions only).
TOP_OPS = """SELECT name, count(*) AS count, sum(dur_ns) AS total_ns FROM spans
 WHERE level = '{level}' AND kind NOT IN ('counter', 'instant') {extra}
 GROUP BY name ORDER BY total_ns DESC, name LIMIT {top}"""

# docs/sql.md, "Ops inside each model span": every layer-level descendant of each model span.
OPS_IN_MODEL = """WITH RECURSIVE under(model, id) AS (
   SELECT id, id FROM spans WHERE level = 'model'
   UNION ALL SELECT under.model, s.id FROM span_table s JOIN under ON s.parent = under.id)
 SELECT m.id AS model, m.name, count(*) AS ops FROM under JOIN spans o ON o.id = under.id
   JOIN spans m ON m.id = under.model
 WHERE o.level = 'layer' GROUP BY m.id ORDER BY m.start_ns"""

# docs/sql.md, "Idle gaps on each device stream": time between consecutive executions.
IDLE_GAPS = """SELECT track, prev_end AS gap_start_ns, start_ns - prev_end AS gap_ns FROM (
   SELECT track, start_ns, max(end_ns) OVER (PARTITION BY track ORDER BY start_ns, id
     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
   FROM spans WHERE level = 'device' AND kind = 'execution')
 WHERE start_ns > prev_end ORDER BY gap_ns DESC, track, gap_start_ns LIMIT {top}"""


def sql_csv(trace, query):
    out = run_strata("sql", trace, query, "--format", "csv").stdout
    return list(csv.DictReader(io.StringIO(out)))


def op_stats(trace, level, top):
    out = run_strata("analyze", trace, "--analysis", "op_stats", "--param", f"level={level}",
                     "--param", f"top={top}", "--format", "csv").stdout
    return list(csv.DictReader(io.StringIO(out)))


def assert_same_top(sql_rows, analysis_rows):
    """The same ops with the same counts and totals (the analysis prints ms to 4 decimals, so totals
    agree within 0.0001 ms, and ops whose totals differ by less than that may trade places)."""
    assert sql_rows and len(sql_rows) == len(analysis_rows)
    sql_ms = [int(s["total_ns"]) / 1e6 for s in sql_rows]
    assert sql_ms == sorted(sql_ms, reverse=True)
    by_name = {a["name"]: a for a in analysis_rows}
    cutoff = float(analysis_rows[-1]["total_ms"])
    for s, ms in zip(sql_rows, sql_ms):
        a = by_name.get(s["name"])
        if a is None:  # only at the cut: an op tied with the analysis's last one
            assert abs(ms - cutoff) <= 1e-4, (s, analysis_rows[-1])
            continue
        assert int(s["count"]) == int(a["count"]), (s, a)
        assert abs(ms - float(a["total_ms"])) <= 1e-4 + 1e-9, (s, a)
    for s, a in zip(sql_rows, analysis_rows):  # the order, up to ties within the printed precision
        assert s["name"] == a["name"] or abs(int(s["total_ns"]) / 1e6 - float(a["total_ms"])) <= 1e-4, (s, a)


@pytest.fixture(scope="module")
def layer_trace(tmp_path_factory, strata_bin):
    tmp = tmp_path_factory.mktemp("sql")
    out = str(tmp / "r18.strata")
    subprocess.run([STRATA, "record", "--quiet", "--level", "layer", "-o", out, "--", SYSTEM_PYTHON,
                    os.path.join(REPO, "examples", "pytorch", "infer.py"), "--model", "resnet18", "--batch", "1,2",
                    "--iterations", "2"], check=True, capture_output=True, text=True)
    if not any(s["level"] == "layer" for s in json.loads(run_strata("export", out, "--format", "json").stdout)):
        pytest.fail("no layer spans recorded (libstrata_torch.so not built?)")
    return out


def test_top_kernels_equal_op_stats_on_kineto(strata_bin):
    top = 12
    rows = sql_csv(KINETO, TOP_OPS.format(level="device", extra="AND kind = 'execution'", top=top))
    # Ties in total time are ordered by name in the query; op_stats keeps its own order for them.
    assert_same_top(rows, op_stats(KINETO, "device", top))


def test_top_ops_equal_op_stats_on_recording(layer_trace):
    top = 25
    assert_same_top(sql_csv(layer_trace, TOP_OPS.format(level="layer", extra="", top=top)),
                    op_stats(layer_trace, "layer", top))


def descendants_by_model(spans):
    by_id = {(s["pid"], s["span_id"]): s for s in spans}
    counts = {}
    for s in spans:
        if s["level"] != "layer":
            continue
        p = s
        while p["parent_id"] is not None and p["level"] != "model":
            p = by_id[(p["pid"], p["parent_id"])]
        if p["level"] == "model":
            counts[p["span_id"]] = counts.get(p["span_id"], 0) + 1
    models = sorted((s for s in spans if s["level"] == "model"), key=lambda s: s["start_ns"])
    return [(m["name"], counts.get(m["span_id"], 0)) for m in models]


def test_ops_inside_model_spans_equal_json_export(layer_trace):
    spans = json.loads(run_strata("export", layer_trace, "--format", "json").stdout)
    expected = descendants_by_model(spans)
    rows = sql_csv(layer_trace, OPS_IN_MODEL)
    assert len(expected) >= 4 and all(n > 50 for _, n in expected), expected
    assert [(r["name"], int(r["ops"])) for r in rows] == expected


def test_idle_gaps_equal_json_export(strata_bin):
    spans = json.loads(run_strata("export", KINETO, "--format", "json").stdout)
    by_stream = {}
    for s in spans:
        if s["level"] == "device" and s["kind"] == "execution":
            by_stream.setdefault((s["pid"], s["device"], s["stream"]), []).append(s)
    gaps = []
    for work in by_stream.values():
        work.sort(key=lambda s: s["start_ns"])
        reach = None
        for s in work:
            if reach is not None and s["start_ns"] > reach:
                gaps.append(s["start_ns"] - reach)
            reach = s["end_ns"] if reach is None else max(reach, s["end_ns"])
    gaps.sort(reverse=True)
    rows = sql_csv(KINETO, IDLE_GAPS.format(top=20))
    assert len(gaps) > 20
    assert [int(r["gap_ns"]) for r in rows] == gaps[:20]


def test_export_file_refuses_overwrite_and_answers_like_the_trace(tmp_path, strata_bin):
    db = str(tmp_path / "t.sqlite")
    run_strata("export", KINETO, "--format", "sqlite", "-o", db)
    size = os.path.getsize(db)
    again = run_strata("export", KINETO, "--format", "sqlite", "-o", db, check=False)
    assert again.returncode != 0 and "--force" in again.stderr and os.path.getsize(db) == size
    run_strata("export", KINETO, "--format", "sqlite", "-o", db, "--force")
    query = TOP_OPS.format(level="device", extra="AND kind = 'execution'", top=50)
    assert sql_csv(db, query) == sql_csv(KINETO, query)
    meta = sql_csv(db, "SELECT value FROM meta WHERE key = 'span_count'")
    assert int(meta[0]["value"]) == len(json.loads(run_strata("export", KINETO, "--format", "json").stdout))
    # The database is opened read-only, and statements that write are refused before they run.
    write = run_strata("sql", db, "DELETE FROM span_table", check=False)
    assert write.returncode == 1 and "a write to span_table is refused" in write.stderr


@pytest.mark.parametrize("query", ["SELEC name FROM spans", "SELECT nosuch FROM spans", "", "  ;  "])
def test_bad_sql_is_one_clear_line(strata_bin, query):
    r = run_strata("sql", KINETO, query, check=False)
    assert r.returncode == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("strata sql: "), r.stderr


def test_json_format_and_join_with_attributes(strata_bin):
    out = run_strata("sql", KINETO, "SELECT s.name, a.value AS bytes FROM spans s JOIN attributes a ON a.span = s.id "
                     "WHERE a.key = 'bytes' ORDER BY s.start_ns LIMIT 3", "--format", "json").stdout
    table = json.loads(out)["query1"]
    assert table["columns"] == ["name", "bytes"] and len(table["rows"]) == 3
    assert all(row[0].startswith("Mem") for row in table["rows"])


SPIN = """import time
def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
t = time.time()
while time.time() - t < 0.6:
    spin(10000)
"""

# docs/sql.md, "CPU samples by leaf function".
LEAF_FUNCTIONS = """SELECT f.function || CASE WHEN f.python THEN ' (' || f.file || ')' ELSE '' END AS name,
   sum(c.count) AS self FROM sample_counts c
   JOIN stack_frames sf ON sf.stack = c.stack AND sf.position = 0 JOIN frames f ON f.id = sf.frame
 GROUP BY name ORDER BY self DESC, name"""


def test_sample_tables_equal_profile(tmp_path, strata_bin):
    script = tmp_path / "spin.py"
    script.write_text(SPIN)
    trace = str(tmp_path / "samples.strata")
    subprocess.run([STRATA, "record", "--quiet", "--sample", "-o", trace, "--", SYSTEM_PYTHON, str(script)], check=True,
                   capture_output=True, text=True)
    profile = list(csv.DictReader(io.StringIO(run_strata("profile", trace, "--format", "csv").stdout)))
    expected = {row["name"]: int(row["self"]) for row in profile if int(row["self"]) > 0}
    rows = sql_csv(trace, LEAF_FUNCTIONS)
    assert sum(expected.values()) > 100 and f"spin ({script})" in expected
    assert {r["name"]: int(r["self"]) for r in rows} == expected
