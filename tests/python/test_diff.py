"""`strata diff` on real PyTorch recordings (examples/pytorch/diff_demo.py, layer level, 4 runs each):
a run whose classifier head was made slower is ranked first and fails --fail-on-regression; two
recordings of the same configuration do not fail at the defaults. Also across formats (a real
Kineto trace against itself) and bad input."""
import csv
import io
import json
import os
import re
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEMO = os.path.join(REPO, "examples", "pytorch", "diff_demo.py")
KINETO = os.path.join(REPO, "tests", "data", "kineto", "a100_alexnet_train.json.gz")  # attribution: tests/data/kineto/README.md
NSYS_DIR = os.path.join(REPO, "tests", "data", "nsys")  # attribution: tests/data/nsys/README.md
NSYS = sorted(f for f in os.listdir(NSYS_DIR) if f.endswith(".sqlite"))


def start_recording(path, slow_ms=0):
    env = dict(os.environ, STRATA_DEMO_SLOW_HEAD_MS=str(slow_ms))
    return subprocess.Popen([STRATA, "record", "--quiet", "--level", "layer", "--runs", "4", "-o", path, "--",
                             SYSTEM_PYTHON, DEMO, "--iterations", "12"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def finish_recording(proc, path):
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return path


@pytest.fixture(scope="module")
def recordings(tmp_path_factory, strata_bin):
    # BASE and SAME are recorded at the same time, so that both see the same machine: recorded one
    # after the other on a shared machine, a change of load between them slowed some ops more than
    # others (the common speed factor covers a uniform change only) and two identical
    # configurations differed by 10% in one op beyond the factor, significantly (4 runs each), in
    # about one pair out of four (docs/diff.md, "Limits").
    tmp = tmp_path_factory.mktemp("diff")
    paths = {name: str(tmp / f"{name}.strata") for name in ("base", "same", "slow")}
    pair = {name: start_recording(paths[name]) for name in ("base", "same")}
    done = {name: finish_recording(proc, paths[name]) for name, proc in pair.items()}
    done["slow"] = finish_recording(start_recording(paths["slow"], slow_ms=3), paths["slow"])
    return done


def diff_rows(base, new, *extra):
    r = subprocess.run([STRATA, "diff", base, new, "--format", "csv", *extra], capture_output=True, text=True)
    return list(csv.DictReader(io.StringIO(r.stdout))), r


def test_slower_op_ranked_first_and_fails(recordings):
    rows, r = diff_rows(recordings["base"], recordings["slow"], "--fail-on-regression")
    assert r.returncode == 1, r.stderr
    assert rows[0]["level"] == "model" and rows[0]["name"] == "predict"
    ops = [row for row in rows if row["level"] != "model"]
    assert ops[0]["name"] == "classifier_head" and ops[0]["verdict"] == "REGRESSION", ops[:3]
    assert float(ops[0]["delta_ms"]) >= 12 * 3 * 0.9  # at least the 3 ms added to each of the 12 predict calls
    # Ops right after the busy head may be slowed too (the scheduler takes the CPU back from a
    # process that just spun): the head's excess dwarfs theirs.
    assert all(float(ops[0]["delta_ms"]) > 5 * float(row["delta_ms"]) for row in ops[1:])
    # Without --fail-on-regression the verdict is printed and the exit status is 0.
    assert diff_rows(recordings["base"], recordings["slow"])[1].returncode == 0


def false_alarms(base, same):
    """REGRESSION rows of two recordings of one configuration, both ways (none expected)."""
    flagged = []
    for a, b in ((base, same), (same, base)):
        rows, r = diff_rows(a, b, "--fail-on-regression")
        assert rows, r.stderr
        regressions = [row for row in rows if row["verdict"] == "REGRESSION"]
        assert (r.returncode == 1) == bool(regressions), (r.returncode, regressions)
        flagged += regressions
    return flagged


@pytest.fixture(scope="module")
def same_configuration_flags(recordings, tmp_path_factory):
    """The REGRESSION rows of two recordings of one configuration (none expected), per pair recorded.
    Recorded at the same time on a shared machine, the two may still differ by a common speed factor
    (20-40% was seen here): diff judges changes beyond it. But two processes of the same script also
    differ per op beyond it (the demo's ops take 0.02-0.4 ms a call; in a CI gate two pooling ops
    were 19% slower in all 4 runs of one process while the convolutions were 52% faster: docs/diff.md
    "Limits"), in whichever recording happened to run where it did. So when the first pair flags
    anything, a second, independent pair is recorded, and the test fails when both pairs flag the
    same item: a diff that calls an unchanged op slower does so in every pair, while the chance
    differences between two processes land on a different op, or on none, in the next pair (the
    gate failed once, where both pairs flagged something, and passed on its rerun)."""
    flagged = false_alarms(recordings["base"], recordings["same"])
    if not flagged:
        return [flagged]
    tmp = tmp_path_factory.mktemp("diff_again")
    paths = {name: str(tmp / f"{name}.strata") for name in ("base", "same")}
    pair = {name: start_recording(paths[name]) for name in paths}
    for name, proc in pair.items():
        finish_recording(proc, paths[name])
    return [flagged, false_alarms(paths["base"], paths["same"])]


def item_key(row):
    return row["level"], row["name"], row.get("shapes", ""), row.get("module", "")


def test_same_configuration_does_not_fail(same_configuration_flags):
    first, *second = same_configuration_flags
    if first:
        both = {item_key(row) for row in first} & {item_key(row) for row in second[0]}
        assert not both, {"flagged by both pairs": both, "first pair": first, "second pair": second[0]}


def test_markdown_for_a_pull_request(recordings):
    md = run_strata("diff", recordings["base"], recordings["slow"], "--format", "markdown", "--top", "5").stdout
    assert re.match(r"### :x: strata diff: \d+ significant regression", md), md[:200]
    assert "| layer | classifier_head |" in md
    md_same = run_strata("diff", KINETO, KINETO, "--format", "markdown").stdout
    assert md_same.startswith("### :white_check_mark:")


def test_kineto_trace_against_itself(strata_bin):
    out = run_strata("diff", KINETO, KINETO, "--format", "json", "--top", "1000", "--fail-on-regression").stdout
    table = json.loads(out)["diff"]
    delta = table["columns"].index("delta_ms")
    assert len(table["rows"]) > 50 and all(row[delta] == 0 for row in table["rows"])


@pytest.mark.parametrize("name", NSYS)
def test_nsys_export_against_itself(strata_bin, name):
    # Nsight Systems exports go through the same open_trace as every other format: runtime calls and
    # device activity are matched by level and name, and a file against itself changes nothing.
    path = os.path.join(NSYS_DIR, name)
    out = run_strata("diff", path, path, "--format", "json", "--top", "100000", "--fail-on-regression").stdout
    table = json.loads(out)["diff"]
    col = {c: table["columns"].index(c) for c in ("level", "delta_ms", "base_count", "verdict")}
    levels = {row[col["level"]] for row in table["rows"]}
    assert {"runtime_api", "device"} <= levels, levels
    assert all(row[col["delta_ms"]] == 0 and row[col["verdict"]] == "noise" for row in table["rows"])
    assert sum(row[col["base_count"]] for row in table["rows"]) > 100


@pytest.mark.parametrize("args,needle", [
    (["/nonexistent/a.strata", KINETO], "/nonexistent/a.strata"),
    ([KINETO], "needs two traces"),
    ([KINETO, KINETO, "--threshold", "ten"], "--threshold: ten is not a percentage"),
    ([KINETO, KINETO, "--format", "html"], "--format: html not in"),
])
def test_bad_input_is_one_line(strata_bin, args, needle):
    r = subprocess.run([STRATA, "diff", *args], capture_output=True, text=True)
    assert r.returncode not in (0, 1) or needle.startswith("/"), r
    assert r.returncode != 0 and r.stdout == ""
    assert needle in r.stderr.splitlines()[0] and r.stderr.startswith("strata diff: ")
