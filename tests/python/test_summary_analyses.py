"""The nsys-stats-like summaries through the CLI (`strata analyze --analysis NAME --format csv|json`) on
a real Kineto trace, against per-name statistics computed here from the JSON with Python's json and
statistics modules (independent of the importer and of the analysis code)."""
import csv
import gzip
import io
import json
import os
import statistics

import pytest

from conftest import run_strata

TRACE = os.path.join(os.path.dirname(__file__), "..", "golden", "inputs", "a100_alexnet_train.json.gz")


def durations_by_name(categories):
    with gzip.open(TRACE) as f:
        events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in categories:
            out.setdefault(e["name"], []).append(int(round(float(e["dur"]) * 1000)))
    return out


@pytest.mark.parametrize("analysis,categories", [
    ("gpu_kernel_summary", {"kernel"}),
    ("cuda_api_summary", {"cuda_runtime", "cuda_driver"}),
])
def test_summary_matches_python(strata_bin, analysis, categories):
    want = durations_by_name(categories)
    r = run_strata("analyze", TRACE, "--analysis", analysis, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == len(want)
    grand = sum(sum(v) for v in want.values())
    for row in rows:
        v = want[row["name"]]
        assert int(row["instances"]) == len(v)
        assert int(row["total_ns"]) == sum(v)
        assert int(row["min_ns"]) == min(v) and int(row["max_ns"]) == max(v)
        assert float(row["med_ns"]) == statistics.median(v)
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        assert abs(float(row["stddev_ns"]) - sd) <= 0.051 + 1e-9 * sd
        assert abs(float(row["time_pct"]) - 100.0 * sum(v) / grand) <= 0.0051
    totals = [int(row["total_ns"]) for row in rows]
    assert totals == sorted(totals, reverse=True)


def test_summary_json_and_missing_input(strata_bin, tmp_path):
    r = run_strata("analyze", TRACE, "--analysis", "memcpy_summary", "--format", "json")
    assert "memcpy_htod" in r.stdout
    json.loads(r.stdout)
