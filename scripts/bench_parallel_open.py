#!/usr/bin/python3
"""Parallel reading of rank files (issue 17 item 5, docs/performance.md): `strata analyze RANKS...
-a rank_breakdown --format csv --jobs J` for J = 1 (the serial read) and the given thread counts,
on RANKS generated native ranks of SPANS spans each (bench/ranks/make_rank_traces); wall and CPU
time (user + system, /usr/bin/time), peak RSS, the load average; checks that every output equals
the serial one.

    /usr/bin/python3 scripts/bench_parallel_open.py [BUILD_DIR] [RANKS] [SPANS_PER_RANK] [JOBS...]

SPANS_PER_RANK given as kineto:STEPS writes Kineto JSON ranks instead (tests/python/kineto_ranks.py,
STEPS profiler steps of 20 events each), imported by every run: the importer's parse is the larger
per-file cost.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 16
spans_arg = sys.argv[3] if len(sys.argv) > 3 else "100000"
jobs = [int(j) for j in sys.argv[4:]] or [2]
strata = os.path.join(build, "bin", "strata")


def load():
    return open("/proc/loadavg").read().split()[0]


tmp = tempfile.mkdtemp(prefix="strata-open-bench-")
try:
    if spans_arg.startswith("kineto:"):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
        import kineto_ranks

        paths = kineto_ranks.write_ranks(tmp, ranks, steps=int(spans_arg[7:]))
    else:
        subprocess.run([os.path.join(build, "bin", "make_rank_traces"), str(ranks), spans_arg, tmp], check=True)
        paths = sorted(glob.glob(os.path.join(tmp, "rank*.strata")))
    print(f"{ranks} ranks x {spans_arg} spans, {sum(os.path.getsize(p) for p in paths) / 2**20:.1f} MiB; "
          f"load average {load()} at the start")
    expected = None
    for j in [1, *jobs, 1, *jobs]:  # twice, alternating, to see the spread under a shared machine's load
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", strata, "analyze", *paths, "-a", "rank_breakdown",
                               "--format", "csv", "--jobs", str(j)], capture_output=True, check=True)
        wall = time.perf_counter() - start
        rss_kib, user, system = proc.stderr.decode().strip().splitlines()[-1].split()
        expected = expected or proc.stdout
        assert proc.stdout == expected, f"--jobs {j} differs from --jobs 1"
        print(f"--jobs {j}: {wall:.2f} s wall, {float(user) + float(system):.2f} s CPU, peak RSS "
              f"{int(rss_kib) / 1024:.0f} MiB (load {load()})")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
