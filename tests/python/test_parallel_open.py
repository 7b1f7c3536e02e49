"""`strata analyze R0 R1 ... Rn` reads the rank files on several threads (trace::open_traces,
OpenOptions::jobs; issue 17 item 5, "local runs of many ranks use all cores"): the tables, and
`strata merge`'s output file, are byte-identical whatever the thread count (--jobs 1 is the serial
read). tests/trace/parallel_open_test.cc compares the traces themselves field by field."""
import glob
import os
import subprocess

import pytest

from conftest import BUILD_DIR, STRATA

ALL_RANK = ("rank_breakdown,idle_time,comm_overlap,collective_wait,step_time,kernel_distribution,launch_stats,"
            "queue_length")
MAKE_RANKS = os.path.join(BUILD_DIR, "bin", "make_rank_traces")


def analyze(paths, jobs, analyses=ALL_RANK):
    proc = subprocess.run([STRATA, "analyze", *paths, "-a", analyses, "--format", "csv", "--jobs", str(jobs)],
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_analyze_identical_with_1_and_4_threads_on_kineto_ranks(tmp_path, strata_bin):
    import kineto_ranks

    paths = kineto_ranks.write_ranks(str(tmp_path), 8)
    serial = analyze(paths, 1)
    assert serial[0].count(b"\n# ") >= 14  # every rank table, each non-empty below
    assert analyze(paths, 4) == serial
    assert analyze(paths, 2) == serial
    # STRATA_JOBS caps the threads when --jobs is not given; the tables stay the same.
    proc = subprocess.run([STRATA, "analyze", *paths, "-a", ALL_RANK, "--format", "csv"], capture_output=True,
                          env={**os.environ, "STRATA_JOBS": "3"})
    assert (proc.stdout, proc.stderr) == serial


def test_analyze_and_merge_identical_with_1_and_4_threads_on_native_ranks(tmp_path, strata_bin):
    if not os.path.exists(MAKE_RANKS):
        pytest.fail(f"{MAKE_RANKS} not built (ninja make_rank_traces)")
    subprocess.run([MAKE_RANKS, "6", "2000", str(tmp_path)], check=True)
    paths = sorted(glob.glob(str(tmp_path / "rank*.strata")))
    assert analyze(paths, 4) == analyze(paths, 1)
    assert analyze(paths, 4, "all") == analyze(paths, 1, "all")
    merged = []
    for jobs in ("1", "4"):
        out = tmp_path / f"merged{jobs}.strata"
        subprocess.run([STRATA, "merge", *paths, "-o", str(out)], check=True, capture_output=True,
                       env={**os.environ, "STRATA_JOBS": jobs})
        merged.append(out.read_bytes())
    assert merged[0] == merged[1] and len(merged[0]) > 10000


def test_jobs_must_be_a_number(tmp_path, strata_bin):
    proc = subprocess.run([STRATA, "analyze", "x.strata", "--jobs", "many"], capture_output=True)
    assert proc.returncode != 0 and b"--jobs" in proc.stderr


def test_an_address_space_limit_gives_one_line_never_an_abort(tmp_path, strata_bin):
    """Under `ulimit -v` from too small to enough, with one and four reading threads: the run either
    gives the same tables as without a limit or ends with exit 1 and one line saying memory ran out
    (the memory check's refusal, the JSON parser's allocation, or any other allocation caught at the
    top): never an abort (std::bad_alloc once terminated `strata analyze` under a limit)."""
    import kineto_ranks

    paths = kineto_ranks.write_ranks(str(tmp_path), 8, steps=200)  # ~8 MB of JSON
    unlimited = analyze(paths, 1)
    # Below what the program and its libraries map, the loader fails before strata runs: start there.
    base = next(m for m in range(32, 1024, 8)
                if subprocess.run(["prlimit", f"--as={m << 20}", STRATA, "--version"], capture_output=True).returncode == 0)
    said = set()
    for limit_mb in (base + extra for extra in (0, 4, 8, 16, 32, 64, 128, 256, 1024)):
        for jobs in (1, 4):
            for arenas in ("1", "8"):
                proc = subprocess.run(["prlimit", f"--as={limit_mb << 20}", STRATA, "analyze", *paths, "-a", ALL_RANK,
                                       "--format", "csv", "--jobs", str(jobs)], capture_output=True,
                                      env={**os.environ, "MALLOC_ARENA_MAX": arenas})
                where = f"limit {limit_mb} MB, {jobs} threads, {arenas} arenas"
                assert proc.returncode in (0, 1), f"{where}: exit {proc.returncode}: {proc.stderr[-500:]!r}"
                if proc.returncode == 0:
                    assert (proc.stdout, proc.stderr) == unlimited, where
                    continue
                lines = proc.stderr.decode().strip().splitlines()
                assert len(lines) == 1 and "memory" in lines[0], f"{where}: {proc.stderr[-500:]!r}"
                said.add(lines[0].split(":")[-1][:40])
    assert said, "no limit was small enough to exercise the out-of-memory paths"
    assert proc.returncode == 0, "1 GiB of address space should be enough for these ranks"


def test_inputs_with_cpu_samples_read_one_by_one_with_the_same_report(tmp_path, strata_bin):
    """A part with CPU samples cannot be appended exactly (trace_append.h, can_append): the parallel
    read gives up before touching the output and the inputs are read one by one. `strata report` of
    three sampled runs (its flame graph reads the samples of all three) is the same file with 1 and
    4 threads (appending the sampled parts instead changes it: tried)."""
    paths = []
    for k in range(3):
        out = str(tmp_path / f"sampled{k}.strata")
        subprocess.run([STRATA, "record", "-q", "--sample=499", "--level", "model", "-o", out, "--",
                        "/usr/bin/python3", "-c", "sum(range(3 * 10**6))"], check=True, capture_output=True)
        paths.append(out)
    info = subprocess.run([STRATA, "info", paths[0]], capture_output=True, text=True, check=True).stdout
    assert "sample" in info.lower(), info
    reports = []
    for jobs in ("1", "4"):
        out = tmp_path / f"report{jobs}.html"
        subprocess.run([STRATA, "report", *paths, "-o", str(out)], check=True, capture_output=True,
                       env={**os.environ, "STRATA_JOBS": jobs})
        reports.append(out.read_bytes())
    assert reports[0] == reports[1]
    assert b"flame" in reports[0]
