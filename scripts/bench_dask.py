#!/usr/bin/python3
"""Scale-out benchmark (issue 17 item 5, docs/performance.md): RANKS generated rank traces of
SPANS each (bench/ranks), `strata analyze -a rank_breakdown,idle_time --format csv` locally, then
on a Dask scheduler on loopback with 1 and with 2 workers (--nthreads 1 each): wall time of the
analysis (strata.dask.analyze with a connected client) and of the whole `strata analyze --dask`
command (Python start and Dask imports included), the workers' peak RSS, and the partials' bytes
per rank for the cost model. Checks that every Dask output equals the local one. ANALYSES (comma-
separated, default rank_breakdown,idle_time) picks others, e.g. collective_wait, whose partial is
per-rank records (python/strata/dask.py RANK_PARTIAL).

    /usr/bin/python3 scripts/bench_dask.py [BUILD_DIR] [RANKS] [SPANS_PER_RANK] [ANALYSES]
"""
import glob
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 16
spans = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
strata = os.path.join(build, "bin", "strata")
package = os.path.join(build, "lib", "python")
sys.path.insert(0, package)
os.environ["STRATA_BUILD_DIR"] = build  # strata.dask in this process finds the libraries of this build
env = {**os.environ, "PYTHONPATH": package}
analyses = (sys.argv[4] if len(sys.argv) > 4 else "rank_breakdown,idle_time").split(",")
logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # the scheduler stopping under a closing client


def load():
    return open("/proc/loadavg").read().split()[0]


def vm_hwm_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat fields 14 and 15)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env, check=True)
    return time.perf_counter() - start, proc.stdout


tmp = tempfile.mkdtemp(prefix="strata-dask-bench-")
procs = []
try:
    print(f"load average {load()} at the start; {ranks} ranks x {spans} spans")
    subprocess.run([os.path.join(build, "bin", "make_rank_traces"), str(ranks), str(spans), tmp], check=True)
    paths = sorted(glob.glob(os.path.join(tmp, "rank*.strata")), key=lambda p: int(os.path.basename(p)[4:-7]))
    print(f"{sum(os.path.getsize(p) for p in paths) / 2**20:.1f} MiB of native files")
    cmd = [strata, "analyze", *paths, "-a", ",".join(analyses), "--format", "csv"]
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *cmd], capture_output=True, env=env, check=True)
    wall, expected = time.perf_counter() - start, proc.stdout
    rss_kib, user, system = proc.stderr.decode().strip().splitlines()[-1].split()
    print(f"local: {wall:.2f} s wall, {float(user) + float(system):.2f} s CPU, peak RSS {int(rss_kib) / 1024:.0f} MiB")

    import strata.dask
    from distributed import Client

    scheduler_file = os.path.join(tmp, "scheduler.json")
    python = "/usr/bin/python3"
    procs.append(subprocess.Popen([python, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                                   "0", "--dashboard-address", ":0", "--scheduler-file", scheduler_file],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True))
    while not os.path.exists(scheduler_file) or os.path.getsize(scheduler_file) == 0:
        time.sleep(0.2)
    time.sleep(0.2)
    address = json.load(open(scheduler_file))["address"]
    workers = []
    for n in (1, 2):
        while len(workers) < n:
            workers.append(subprocess.Popen(
                [python, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny", "--host",
                 "127.0.0.1", "--dashboard-address", ":0", "--local-directory", os.path.join(tmp, f"w{len(workers)}")],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            procs.append(workers[-1])
        with Client(address, timeout=60) as client:
            client.wait_for_workers(n, timeout=60)
            cpu_before = [cpu_s(w.pid) for w in workers]
            start = time.perf_counter()
            result = strata.dask.analyze(paths, client, analyses)
            analysis_wall = time.perf_counter() - start
            cpu = [cpu_s(w.pid) - b for w, b in zip(workers, cpu_before)]
        assert result.csv() == expected, "the Dask result differs from the local run"
        cli_wall, out = timed(cmd + ["--dask", address])
        assert out == expected, "strata analyze --dask differs from the local run"
        print(f"dask, {n} worker(s): analysis {analysis_wall:.2f} s wall (connected client), workers' CPU "
              + ", ".join(f"{c:.2f} s" for c in cpu) + "; whole "
              f"`strata analyze --dask` {cli_wall:.2f} s; worker peak RSS "
              + ", ".join(f"{vm_hwm_kib(w.pid) / 1024:.0f} MiB" for w in workers)
              + f"; partials {result.partial_bytes} bytes of cells and traces ({result.partial_bytes / ranks:.0f} per rank) "
              f"for {result.spans} spans; tasks per worker "
              + str(sorted(result.workers.count(w) for w in set(result.workers))))
    print(f"load average {load()} at the end")
finally:
    for p in reversed(procs):
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        p.wait(timeout=30)
    shutil.rmtree(tmp, ignore_errors=True)
