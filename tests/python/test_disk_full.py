"""A full disk, for real: a small tmpfs (mounted as root; skipped with the reason otherwise) and
/dev/full. Every command that writes says why it failed (strerror: "No space left on device"), exits
1 and leaves nothing half-made; a recording that ran out of space counts what it lost under its
cause (dropped.write_failed) and still ends its stream cleanly."""
import os
import re
import subprocess

import pytest

from conftest import BUILD_DIR, STRATA, run_strata

KINETO = os.path.join(os.path.dirname(__file__), "..", "data", "kineto", "v100_train_rank0.json.gz")
TEST_PROGRAM = os.path.join(BUILD_DIR, "bin", "strata_test_program")
NO_SPACE = "No space left on device"


def mount_tmpfs(path, size):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "none", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mount_tmpfs(mnt, "2m")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(directory):
    """Fills the file system of `directory` to its last byte (files need no block to be created)."""
    fd = os.open(os.path.join(directory, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)


def left_behind(directory):
    return sorted(n for n in os.listdir(directory) if n != "filler")


# torch.profiler's traces and a sampled recording: each output-writing command, its output on the
# full disk (argv, target); the same commands as test_cli_manners' output list.
@pytest.fixture
def outputs(strata_bin, tmp_path, small_disk):
    native = str(tmp_path / "in.strata")
    run_strata("import", KINETO, "-o", native, "-q")
    sampled = str(tmp_path / "sampled.strata")
    run_strata("record", "-q", "--sample", "-o", sampled, "--", "/usr/bin/python3", "-c", "sum(range(10**7))")
    d = lambda name: str(small_disk / name)  # noqa: E731
    return native, sampled, [
        (["profile", sampled, "--format", "collapsed", "-o", d("p.txt")], d("p.txt")),
        (["export", native, "--format", "json", "-o", d("e.json")], d("e.json")),
        (["export", native, "--format", "csv", "-o", d("e.csv.gz")], d("e.csv.gz")),
        (["export", native, "--format", "sqlite", "-o", d("e.sqlite")], d("e.sqlite")),
        (["import", KINETO, "-o", d("i.strata"), "-q"], d("i.strata")),
        (["merge", native, "-o", d("m.strata"), "-q"], d("m.strata")),
        (["sql", native, "SELECT count(*) FROM spans", "-o", d("s.txt")], d("s.txt")),
        (["report", native, "-o", d("r.html")], d("r.html")),
        (["analyze", native, "-a", "kernels_by_name,op_stats", "-f", "csv", "-o", d("tables")], d("tables")),
        (["analyze", native, "-a", "kernels_by_name", "-f", "csv", "--gzip", "-o", d("gz")], d("gz")),
    ]


def test_every_output_on_a_full_disk_names_the_reason_and_leaves_nothing(outputs, small_disk):
    fill(small_disk)
    for argv, target in outputs[2]:
        r = run_strata(*argv, check=False)
        assert r.returncode == 1, (argv, r.returncode, r.stderr)
        errors = [line for line in r.stderr.splitlines() if not line.startswith(("note:", "warning:"))]
        assert len(errors) == 1 and NO_SPACE in errors[0], (argv, r.stderr)
        assert not os.path.exists(target), argv
        assert left_behind(small_disk) == [], (argv, left_behind(small_disk))


def test_standard_output_to_dev_full_names_the_reason(outputs):
    native, sampled, _ = outputs
    for argv in (["export", native, "--format", "json"], ["sql", native, "SELECT name FROM spans"],
                 ["analyze", native, "-a", "kernels_by_name", "-f", "csv"],
                 ["profile", sampled, "--format", "collapsed"]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([STRATA, *argv], stdout=full, stderr=subprocess.PIPE,
                               text=True)
        assert r.returncode == 1 and f"stdout: write failed: {NO_SPACE}" in r.stderr, (argv, r.stderr)


def test_a_recording_that_fills_the_disk_counts_every_lost_span_under_its_cause(strata_bin, small_disk):
    spans = 200_000  # 12.8 MB of span records for a 2 MB disk
    out = str(small_disk / "r.strata")
    r = subprocess.run([strata_bin, "record", "-o", out, "--", TEST_PROGRAM, "spans", str(spans)],
                       capture_output=True, text=True)
    # The merge has no room either: one line with the reason and where the processes' files are.
    assert r.returncode == 1, r.stderr
    assert NO_SPACE in r.stderr and "per-process files kept in" in r.stderr, r.stderr
    assert not os.path.exists(out)
    parts = re.search(r"per-process files kept in (\S+)\)", r.stderr).group(1)
    info = run_strata("info", parts).stdout
    loaded = int(re.search(r"^spans: (\d+)", info, re.M).group(1))
    lost = re.search(r"^lost events: (\d+) \(collector\.write_failed (\d+)\)", info, re.M)
    assert lost, info
    assert 0 < loaded < spans and loaded + int(lost.group(2)) == spans, info
    # The stream ended cleanly (its End chunk had the space kept for it), nothing was cut short,
    # and the process says why it lost spans.
    assert "finished cleanly" in info and "truncated" not in info, info
    assert re.search(r"^warning: process \d+ could not write all of its trace: .*" + NO_SPACE, info, re.M), info
    # The space kept past the end of the file is given back when the stream ends.
    for name in os.listdir(parts):
        st = os.stat(os.path.join(parts, name))
        assert st.st_blocks * 512 <= (st.st_size + 4095) // 4096 * 4096, (name, st.st_blocks, st.st_size)
