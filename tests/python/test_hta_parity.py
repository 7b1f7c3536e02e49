"""Strata's HTA-style analyses against HTA's own figures on the same two real ranks.

tests/data/hta/multirank/*.csv were written by HTA itself (scripts/hta_reference.py, HTA commit f4d0062)
from tests/data/kineto/multirank_rank0/1.json.gz. With --param scope=steps (HTA's scope: the work
launched before each rank's last ProfilerStep), rank_breakdown, idle_time and comm_overlap must give
HTA's numbers to its precision (whole microseconds; percentages to 0.01). With the default scope
(the whole trace) the windows differ, and the test checks that they do, so a silent switch of the
default is caught too.
"""
import csv
import io
import os

import pytest

from conftest import run_strata

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KINETO = os.path.join(REPO, "tests", "data", "kineto")
HTA = os.path.join(REPO, "tests", "data", "hta", "multirank")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def analysis_csv(trace, name, *params):
    args = ["analyze", trace, "-a", name, "--format", "csv"]
    for p in params:
        args += ["-p", p]
    lines = run_strata(*args).stdout.splitlines()
    # The first table of the output: "# NAME" lines head each table when there are several.
    block = []
    for line in lines:
        if line.startswith("#") or not line.strip():
            if block:
                break
            continue
        block.append(line)
    return list(csv.DictReader(io.StringIO("\n".join(block))))


@pytest.fixture(scope="module")
def job(tmp_path_factory, strata_bin):
    out = str(tmp_path_factory.mktemp("hta") / "job.strata")
    run_strata("merge", "--quiet", os.path.join(KINETO, "multirank_rank0.json.gz"),
               os.path.join(KINETO, "multirank_rank1.json.gz"), "-o", out)
    return out


def us(ms_text):
    return round(float(ms_text) * 1000)


def test_temporal_breakdown_equals_hta(job):
    ours = {int(r["rank"]): r for r in analysis_csv(job, "rank_breakdown", "scope=steps")}
    hta = read_csv(os.path.join(HTA, "temporal_breakdown.csv"))
    assert len(hta) == 2 and set(ours) == {0, 1}
    for h in hta:
        r = ours[int(h["rank"])]
        assert us(r["window_ms"]) == round(float(h["kernel_time(us)"]))
        assert us(r["idle_ms"]) == round(float(h["idle_time(us)"]))
        assert us(r["compute_ms"]) == round(float(h["compute_time(us)"]))
        # HTA's non-compute time is everything busy that is not compute: collectives and copies.
        assert us(r["communication_ms"]) + us(r["memcpy_ms"]) == pytest.approx(float(h["non_compute_time(us)"]), abs=1)
        assert float(r["idle_pct"]) == pytest.approx(float(h["idle_time_pctg"]), abs=0.011)
        assert float(r["compute_pct"]) == pytest.approx(float(h["compute_time_pctg"]), abs=0.011)


def test_comm_overlap_equals_hta(job):
    ours = {int(r["rank"]): float(r["overlap_pct"]) for r in analysis_csv(job, "comm_overlap", "scope=steps")}
    for h in read_csv(os.path.join(HTA, "comm_comp_overlap.csv")):
        assert ours[int(h["rank"])] == pytest.approx(float(h["comp_comm_overlap_pctg"]), abs=0.011)


def test_idle_time_by_cause_equals_hta(job):
    ours = {(int(r["rank"]), int(r["stream"])): r for r in analysis_csv(job, "idle_time", "scope=steps")}
    column = {"host_wait": "host_wait_ms", "kernel_wait": "kernel_wait_ms", "other": "other_ms"}
    seen = set()
    for h in read_csv(os.path.join(HTA, "idle_time.csv")):
        key = (int(h["rank"]), int(h["stream"]))
        assert key in ours, f"HTA has rank {key[0]} stream {key[1]}; Strata does not"
        assert us(ours[key][column[h["idle_category"]]]) == round(float(h["idle_time"])), (key, h["idle_category"])
        seen.add(key)
    assert seen == set(ours)


def test_the_default_scope_is_the_whole_trace(job):
    # Without scope=steps the last step's work counts: each rank's window is longer than HTA's.
    whole = {int(r["rank"]): us(r["window_ms"]) for r in analysis_csv(job, "rank_breakdown")}
    for h in read_csv(os.path.join(HTA, "temporal_breakdown.csv")):
        assert whole[int(h["rank"])] > float(h["kernel_time(us)"]) * 1.5


def test_a_bad_scope_is_one_line(job):
    proc = run_strata("analyze", job, "-a", "idle_time", "-p", "scope=everything", check=False)
    assert "scope='everything'" in proc.stdout + proc.stderr
