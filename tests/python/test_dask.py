"""strata analyze --dask / strata.dask.analyze (issue 17 item 5): a real Dask scheduler and two
workers (Debian's python3-distributed) run each rank file's load and per-rank analysis through
libstrata, and the combined CSV must be byte-identical to the local `strata analyze --format csv`.

The cluster runs on loopback; test_dask_workers_as_distinct_hosts puts each worker in a network
namespace of its own (root only). Every process started here is in its own session and is killed
by process group in the fixture's teardown, also when a test fails."""
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import BUILD_DIR, PYTHON_PKG, STRATA, SYSTEM_PYTHON

distributed = pytest.importorskip("distributed", reason="python3-distributed (scripts/setup.sh) is not installed")

SPLIT = "rank_breakdown,idle_time"
# Every rank analysis: the two that split as rows, then the cross-rank ones (comm_overlap and
# queue_length as rows, the others as per-rank records; none ships the rank's trace).
ALL_RANK = ("rank_breakdown,idle_time,comm_overlap,collective_wait,step_time,kernel_distribution,launch_stats,"
            "queue_length")
MAKE_RANKS = os.path.join(BUILD_DIR, "bin", "make_rank_traces")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_PKG + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["STRATA_BUILD_DIR"] = BUILD_DIR
    return env


class Cluster:
    """A scheduler and workers started as separate processes, each in its own session."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.address = None

    def spawn(self, args, log, prefix=(), env=None):
        out = open(os.path.join(self.tmp, log), "wb")
        proc = subprocess.Popen([*prefix, SYSTEM_PYTHON, *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env or _env(), start_new_session=True, cwd=self.tmp)
        self.procs.append(proc)
        return proc

    def start_scheduler(self, host="127.0.0.1"):
        scheduler_file = os.path.join(self.tmp, "scheduler.json")
        # --port 0: the scheduler picks a free port and writes its address into the scheduler file.
        self.spawn(["-m", "distributed.cli.dask_scheduler", "--host", host, "--port", "0",
                    "--dashboard-address", ":0", "--scheduler-file", scheduler_file], "scheduler.log")
        deadline = time.time() + 60
        while not os.path.exists(scheduler_file) or os.path.getsize(scheduler_file) == 0:
            if time.time() > deadline or self.procs[0].poll() is not None:
                raise AssertionError("the dask scheduler did not start: " + self.log("scheduler.log"))
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written in one go, but let a partial write finish
        import json
        self.address = json.load(open(scheduler_file))["address"]

    def start_worker(self, name, host="127.0.0.1", prefix=(), env=None):
        self.spawn(["-m", "distributed.cli.dask_worker", self.address, "--nthreads", "1", "--no-nanny",
                    "--host", host, "--dashboard-address", ":0", "--name", name,
                    "--local-directory", os.path.join(self.tmp, name)], f"{name}.log", prefix, env)

    def worker_address(self, name):
        with distributed.Client(self.address, timeout=60) as client:
            return next(a for a, w in client.scheduler_info()["workers"].items() if w["name"] == name)

    def wait_for_workers(self, n):
        with distributed.Client(self.address, timeout=60) as client:
            client.wait_for_workers(n, timeout=60)

    def log(self, name):
        with open(os.path.join(self.tmp, name), "rb") as f:
            return f.read().decode("utf-8", "replace")[-2000:]

    def stop(self):
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("dask"))
    c = Cluster(tmp)
    try:
        c.start_scheduler()
        c.start_worker("w1")
        c.start_worker("w2")
        c.wait_for_workers(2)
        yield c
    finally:
        c.stop()
    assert all(p.poll() is not None for p in c.procs), "a dask process outlived the teardown"


def make_ranks(tmp_path, ranks, spans):
    if not os.path.exists(MAKE_RANKS):
        pytest.fail(f"{MAKE_RANKS} not built (ninja make_rank_traces)")
    out = tmp_path / f"ranks{ranks}"
    out.mkdir()
    subprocess.run([MAKE_RANKS, str(ranks), str(spans), str(out)], check=True)
    return sorted(glob.glob(str(out / "rank*.strata")), key=lambda p: int(os.path.basename(p)[4:-7]))


def local_csv(paths, analyses=SPLIT, params=()):
    proc = subprocess.run([STRATA, "analyze", *paths, "-a", analyses, "--format", "csv", *params],
                          capture_output=True, check=True)
    return proc.stdout


def dask_cli(paths, address, analyses=SPLIT, params=(), cwd=None, env=None, timeout=120):
    return subprocess.run([STRATA, "analyze", *paths, "-a", analyses, "--format", "csv", *params,
                           "--dask", address], capture_output=True, env=env or _env(), timeout=timeout, cwd=cwd)


def kineto_ranks(tmp_path, ranks):
    """Generated Kineto ranks (kineto_ranks.py): steps, launches, three streams, stragglers."""
    import kineto_ranks as generator

    out = tmp_path / f"kineto{ranks}"
    out.mkdir()
    return generator.write_ranks(str(out), ranks)


# The tables every rank analysis prints on the generated Kineto ranks (each must be non-empty, so
# that a byte-identical comparison compares something).
ALL_TABLES = (b"rank_breakdown", b"idle_time", b"comm_overlap", b"comm_overlap_by_collective", b"collective_wait",
              b"stragglers", b"step_time_summary", b"step_time", b"step_time_ranks", b"kernel_distribution_spread",
              b"kernel_distribution", b"launch_stats", b"launch_stats_launches", b"queue_length",
              b"queue_length_histogram")


def table_rows(csv):
    """{table name: number of rows} of a multi-table CSV."""
    rows, name = {}, None
    for line in csv.split(b"\n"):
        if line.startswith(b"# "):
            name = line[2:]
            rows[name] = -1  # the header line follows
        elif line and name is not None:
            rows[name] += 1
    return rows


def test_cli_dask_identical_on_8_ranks(cluster, tmp_path, strata_bin):
    paths = make_ranks(tmp_path, 8, 3000)
    expected = local_csv(paths)
    assert expected.count(b"\n") == 2 + 1 + 8 + 1 + 8  # two "# name" lines, two headers, 8 rows each
    proc = dask_cli(paths, cluster.address)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    # Every rank analysis on native ranks (clock offsets of seconds, collectives on one stream);
    # launch_stats has no launches there and says so on both sides.
    expected = subprocess.run([STRATA, "analyze", *paths, "-a", ALL_RANK, "--format", "csv"],
                              capture_output=True)
    proc = dask_cli(paths, cluster.address, ALL_RANK)
    assert (proc.returncode, proc.stdout, proc.stderr.splitlines()[-1:]) == \
        (expected.returncode, expected.stdout, expected.stderr.splitlines()[-1:])
    assert b"# collective_wait" in proc.stdout and b"launch_stats: no device work" in proc.stderr
    # A parameter reaches the workers' analyses (kernel_wait_us changes idle_time's split).
    params = ("--param", "kernel_wait_us=5")
    changed = local_csv(paths, "idle_time", params)
    assert changed != local_csv(paths, "idle_time")
    proc = dask_cli(paths, cluster.address, "idle_time", params)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == changed


def test_cli_dask_identical_on_real_kineto_ranks(cluster, strata_bin):
    """Two real ranks (tests/data/kineto/README.md), imported on the workers: five streams each and
    launch calls, so idle_time's host-wait split (the span tree's correlation links) is exercised."""
    data = os.path.join(os.path.dirname(__file__), "..", "data", "kineto")
    paths = [os.path.abspath(os.path.join(data, f"multirank_rank{r}.json.gz")) for r in (0, 1)]
    expected = local_csv(paths)
    assert b"\n0,0,23," in expected and b"\n1,1,84," in expected  # several streams per rank
    proc = dask_cli(paths, cluster.address)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    expected = local_csv(paths, ALL_RANK)
    assert all(table_rows(expected).get(t, 0) > 0 for t in ALL_TABLES), table_rows(expected)
    proc = dask_cli(paths, cluster.address, ALL_RANK)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected


def test_cli_dask_every_rank_analysis_on_8_kineto_ranks(cluster, tmp_path, strata_bin):
    """Every rank analysis, each table non-empty, byte for byte; the JSON is imported on the workers."""
    paths = kineto_ranks(tmp_path, 8)
    expected = local_csv(paths, ALL_RANK)
    rows = table_rows(expected)
    assert all(rows.get(t, 0) > 0 for t in ALL_TABLES), rows
    assert b"\nncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*),0,8," in expected  # a call on all ranks
    proc = dask_cli(paths, cluster.address, ALL_RANK)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected
    # A parameter reaches the driver's cut (top cuts comm_overlap's table).
    params = ("--param", "top=3")
    changed = local_csv(paths, "comm_overlap", params)
    assert changed != local_csv(paths, "comm_overlap")
    proc = dask_cli(paths, cluster.address, "comm_overlap", params)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == changed
    # queue_length splits as rows; with a time series (bucket_us: buckets from the earliest span of
    # all ranks) in two phases (the ranks' origins, then the rows with the smallest): both byte for byte.
    for params in ((), ("--param", "bucket_us=100")):
        expected = local_csv(paths, "queue_length", params)
        assert (b"# queue_length_series\n" in expected) == bool(params)
        proc = dask_cli(paths, cluster.address, "queue_length", params)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == expected


def test_python_dask_identical_on_64_ranks(cluster, tmp_path, strata_bin):
    sys.path.insert(0, PYTHON_PKG)
    import strata.dask

    paths = make_ranks(tmp_path, 64, 400)
    with distributed.Client(cluster.address, timeout=60) as client:
        result = strata.dask.analyze(paths, client, ["rank_breakdown", "idle_time"])
    assert result.csv() == local_csv(paths)
    assert len(result.workers) == 64 and len(set(result.workers)) == 2, "both workers ran tasks"
    assert result.spans > 64 * 300 and result.partial_bytes > 0
    # Every rank analysis over 64 generated Kineto ranks.
    paths = kineto_ranks(tmp_path, 64)
    with distributed.Client(cluster.address, timeout=60) as client:
        result = strata.dask.analyze(paths, client, ALL_RANK.split(","))
    expected = local_csv(paths, ALL_RANK)
    assert all(table_rows(expected).get(t, 0) > 0 for t in ALL_TABLES)
    assert result.csv() == expected and not result.missing


def test_rank_partial_records_do_not_grow_with_spans(tmp_path, strata_bin):
    """The record partials are the same size whatever the rank's span count: 64 generated Kineto
    ranks with 4 and with 16 steps (4x the spans) give partials of the same bytes per rank
    (kernel_distribution: per kernel name and rank, count, total, percentiles; launch_stats: the
    rank's summary and its `top` longest delays: the same count, so the same size up to the lengths
    of the kernel names in them), and their combine is the local run's table."""
    sys.path.insert(0, PYTHON_PKG)
    import strata.dask

    sizes = {}
    for steps in (4, 16):
        import kineto_ranks as generator

        out = tmp_path / f"steps{steps}"
        out.mkdir()
        paths = generator.write_ranks(str(out), 64, steps)
        names = ["kernel_distribution", "launch_stats"]  # collective_wait, step_time: the test below
        params = {"kernel_distribution": {"top": "10"}, "launch_stats": {"top": "10"}}  # as --param top=10
        partials = [strata.dask.rank_partial(p, names, params) for p in paths]
        sizes[steps] = ({n: [len(p.records[n]) for p in partials] for n in names}, sum(p.spans for p in partials))
        assert all(size > 0 for n in names for size in sizes[steps][0][n])
        # The combine over the partials is the local run's table.
        combined = strata.dask.combine(names, partials, params)
        assert combined.csv() == local_csv(paths, ",".join(names), ("--param", "top=10"))
    assert sizes[16][1] > 3 * sizes[4][1], "the larger ranks have more spans"
    kernels, launches = (sizes[16][0][n] for n in names)
    assert kernels == sizes[4][0]["kernel_distribution"], "the same kernel names, so the same bytes"
    assert max(launches) <= 1.25 * max(sizes[4][0]["launch_stats"]), "top=10 launches whatever the span count"
    # queue_length (no time series) and comm_overlap send rows per (rank, stream or collective name),
    # not the rank's trace; comm_overlap's per-collective rows come all (top=0) with their keys.
    for name in ("queue_length", "comm_overlap"):
        partial = strata.dask.rank_partial(paths[0], [name], {})
        assert partial.trace == b"" and 0 < partial.payload_bytes() < 2048, name
    assert partial.results[0][1][1].keys and len(partial.results[0][1][1].keys) == len(partial.results[0][1][1].rows)


def _record_sizes(tmp_path, steps, names, params):
    import strata.dask
    import kineto_ranks as generator

    out = tmp_path / f"records{steps}"
    out.mkdir()
    paths = generator.write_ranks(str(out), 64, steps)
    partials = [strata.dask.rank_partial(p, names, params) for p in paths]
    combined = strata.dask.combine(names, partials, params)
    assert all(p.trace == b"" for p in partials)
    return paths, partials, combined


def test_collective_and_step_records_grow_with_calls_and_steps_only(tmp_path, strata_bin):
    """collective_wait sends 16 bytes per collective call and step_time 24 bytes per step, plus a
    fixed head per rank: on 64 generated Kineto ranks (one all-reduce per step, 12 other device
    and host spans per step) with 4 and 16 steps the partials are exactly that, their combine is the
    local run's tables, and they are far smaller than the rank's saved trace (what they replace)."""
    sys.path.insert(0, PYTHON_PKG)
    import kineto_ranks as generator
    import strata.dask

    names = ["collective_wait", "step_time"]
    params = {"collective_wait": {"top": "0"}, "step_time": {}}
    sizes = {}
    for steps in (4, 16):
        paths, partials, combined = _record_sizes(tmp_path, steps, names, params)
        assert combined.csv() == local_csv(paths, ",".join(names), ("--param", "top=0"))
        assert table_rows(combined.csv())[b"collective_wait"] == steps  # one call per step, on all ranks
        sizes[steps] = ([len(p.records["collective_wait"]) for p in partials],
                        [len(p.records["step_time"]) for p in partials], sum(p.spans for p in partials))
        # head: ranked flag, has-spans flag, origin; per (name, rank): name, rank, call count.
        per_call = 2 + 8 + 4 + len(generator.ALLREDUCE) + 8 + 8 + 16 * steps
        # head: has-spans flag, origin, owner count; per rank: rank, source, problem (""), step count.
        per_step = 1 + 8 + 8 + 8 + 4 + len("ProfilerStep") + 4 + 8 + 24 * steps
        assert sizes[steps][0] == [per_call] * 64 and sizes[steps][1] == [per_step] * 64, sizes[steps]
        traced = strata.dask.rank_partial(paths[0], ["comm_overlap"], {"comm_overlap": {"top": "x"}})
        assert len(traced.trace) > 3 * (per_call + per_step), "a trace partial, the size they replace"
    assert sizes[16][2] > 3 * sizes[4][2], "the larger ranks have more spans"


def test_queue_series_in_two_phases(tmp_path, strata_bin):
    """queue_length with bucket_us: phase 1 sends the rank's earliest start and no trace; phase 2
    (strata.dask's own driver code, here on a client that runs tasks in this process) runs each
    rank's rows with origin_ns = the ranks' minimum; the combine is the local run's CSV. A combine
    without phase 2 is one error, never a table left out; a local run with origin_ns after the
    earliest span is refused with one line."""
    sys.path.insert(0, PYTHON_PKG)
    import kineto_ranks as generator
    import strata.dask

    class InProcess:  # Dask's submit/result, run here
        def submit(self, fn, *args, pure=True, workers=None, allow_other_workers=False):
            class Done:
                def result(self_inner):
                    return fn(*args)
            return Done()

    out = tmp_path / "queue"
    out.mkdir()
    paths = generator.write_ranks(str(out), 8)
    params = {"queue_length": {"bucket_us": "100"}}
    partials = [strata.dask.rank_partial(p, ["queue_length"], params) for p in paths]
    assert all(p.trace == b"" and p.origin is not None and p.results == [None] for p in partials)
    with pytest.raises(strata.dask.DaskAnalyzeError, match="phase 2"):
        strata.dask.combine(["queue_length"], partials, params)
    strata.dask._run_second_phase(InProcess(), ["queue_length"], partials, params)
    expected = local_csv(paths, "queue_length", ("--param", "bucket_us=100"))
    assert b"# queue_length_series\n" in expected
    assert strata.dask.combine(["queue_length"], partials, params).csv() == expected
    # The series rows do not depend on the rank's spans but on its streams and buckets.
    assert all(p.payload_bytes() < 64 * 1024 for p in partials)
    origin = min(p.origin for p in partials)
    assert local_csv(paths, "queue_length", ("--param", "bucket_us=100", "--param", f"origin_ns={origin}")) == expected
    proc = subprocess.run([STRATA, "analyze", paths[0], "-a", "queue_length", "--format", "csv", "--param",
                           "bucket_us=100", "--param", f"origin_ns={origin + 10**12}"], capture_output=True)
    assert b"origin_ns=" in proc.stderr and b"after the trace's earliest span" in proc.stderr


def test_cli_dask_refuses_what_does_not_split(cluster, tmp_path, strata_bin):
    paths = make_ranks(tmp_path, 2, 500)
    proc = dask_cli(paths, cluster.address, "rank_breakdown,gpu_kernel_summary")
    assert proc.returncode == 1 and proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and "gpu_kernel_summary is local-only under --dask" in lines[0], lines
    proc = dask_cli([paths[0], paths[0]], cluster.address)
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == [
        f"strata analyze: {paths[0]}: rank 0 is also in {paths[0]}; --dask needs each rank in one file "
        "(run without --dask to analyze them together)"]


def test_cli_dask_worker_error_is_one_line(cluster, tmp_path, strata_bin):
    paths = make_ranks(tmp_path, 2, 500)
    bad = tmp_path / "broken.strata"
    bad.write_bytes(open(paths[1], "rb").read()[:300])  # a truncated native trace
    proc = dask_cli([paths[0], str(bad)], cluster.address)
    assert proc.returncode == 1 and proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"strata analyze: {bad}"), lines


def test_cli_dask_unreachable_scheduler(tmp_path, strata_bin):
    paths = make_ranks(tmp_path, 1, 500)
    with socket.socket() as s:  # a port nobody listens on: bound, never listened
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        proc = subprocess.run([STRATA, "analyze", *paths, "-a", "idle_time", "--format", "csv", "--dask",
                               f"tcp://127.0.0.1:{port}"], capture_output=True,
                              env={**_env(), "STRATA_DASK_TIMEOUT": "3"}, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"strata analyze: --dask tcp://127.0.0.1:{port}:"), lines


# Modules the driver (or Python's start-up) imports: planted in a shared folder by another user, each
# leaves a marker named after itself when imported, and stops the program.
PLANTED = ("argparse", "distributed", "runpy", "json", "strata")


def plant_modules(folder, markers):
    for name in PLANTED:
        code = f"open({str(markers / name)!r}, 'w').write('planted {name} ran')\nraise SystemExit('planted {name}')\n"
        if name == "strata":  # a package shadowing Strata's own
            (folder / "strata").mkdir()
            (folder / "strata" / "__init__.py").write_text(code)
        else:
            (folder / f"{name}.py").write_text(code)


def test_cli_dask_driver_ignores_modules_planted_in_the_working_directory(cluster, tmp_path, strata_bin):
    """Issue 32 item 2: `strata analyze --dask` typed in a folder where another user planted
    argparse.py, distributed.py, runpy.py, json.py and a strata/ package: none of them runs (the
    driver starts as `python3 -I`, with Strata's package folder alone in front of the interpreter's
    own paths), also when the user's PYTHONPATH names that folder; the run still equals the local one."""
    paths = make_ranks(tmp_path, 2, 500)
    planted, markers = tmp_path / "shared", tmp_path / "markers"
    planted.mkdir()
    markers.mkdir()
    plant_modules(planted, markers)
    env = _env()
    env["PYTHONPATH"] = str(planted) + ":" + env["PYTHONPATH"]
    proc = dask_cli(paths, cluster.address, cwd=str(planted), env=env)
    assert sorted(os.listdir(markers)) == [], f"planted modules ran: {sorted(os.listdir(markers))}"
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == local_csv(paths)


def _only(proc):
    """The one stderr line of a failed run."""
    assert proc.returncode == 1 and proc.stdout == b"", (proc.returncode, proc.stderr)
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


BARE = "bare\x1b[2J"  # a worker without Strata; its name clears a terminal that prints it raw


def test_cli_dask_workers_that_cannot_run_strata_fail_with_one_line(tmp_path, tmp_path_factory, strata_bin,
                                                                   monkeypatch):
    """Issue 32 item 11, on a cluster of its own. `strata analyze --dask` with only a worker started
    without Strata's package on its path (a host without the install; the driver used to wait for
    ever while it failed): exit 1 with one line naming the worker and what it lacks. The same check
    and deadline in-process (strata.dask.preflight/analyze, no interpreter start per case): no worker
    connected; that worker beside one that has the package (the line names the one without); only
    the good one, stopped (SIGSTOP): the check and, with the check skipped, a task give one line at
    the deadline; running again, it gives the local run's CSV."""
    sys.path.insert(0, PYTHON_PKG)
    import strata.dask
    from strata._dask_check import _Deadline

    paths = make_ranks(tmp_path, 2, 500)
    package = os.path.realpath(PYTHON_PKG)
    c = Cluster(str(tmp_path_factory.mktemp("dask-bare")))
    try:
        c.start_scheduler()
        with distributed.Client(c.address, timeout=60) as client:
            with pytest.raises(strata.dask.DaskAnalyzeError) as error:
                strata.dask.preflight(client, _Deadline(1))
        assert str(error.value) == "--dask: no worker is connected to the scheduler (waited until --dask-timeout " \
            f"1 s): start workers with PYTHONPATH={package} (docs/ranks.md)"

        # Its name is another user's text: the line shows it escaped, never as terminal commands.
        c.start_worker(BARE, env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STRATA_BUILD_DIR")})
        c.wait_for_workers(1)
        bare = c.worker_address(BARE)
        proc = dask_cli(paths, c.address, params=("--dask-timeout", "60"))
        assert _only(proc) == f"strata analyze: --dask: worker {bare} (bare\\x1b[2J, {SYSTEM_PYTHON}) lacks the " \
            f"strata Python package (No module named 'strata'): start every worker with PYTHONPATH={package}, or " \
            "install this Strata on every host (docs/ranks.md)"

        c.start_worker("full")
        c.wait_for_workers(2)
        full = c.worker_address("full")
        with distributed.Client(c.address, timeout=60) as client:
            with pytest.raises(strata.dask.DaskAnalyzeError) as error:
                strata.dask.preflight(client, _Deadline(60))
            assert str(error.value).startswith(f"--dask: worker {bare} ({BARE}, ") and full not in str(error.value)

            c.procs[1].terminate()  # the bare worker leaves
            c.procs[1].wait(timeout=30)
            for _ in range(600):
                if list(client.scheduler_info()["workers"]) == [full]:
                    break
                time.sleep(0.1)
            assert list(client.scheduler_info()["workers"]) == [full]
            os.kill(c.procs[2].pid, signal.SIGSTOP)
            try:
                with pytest.raises(strata.dask.DaskAnalyzeError) as error:
                    strata.dask.preflight(client, _Deadline(1))
                assert str(error.value) == "--dask: the workers did not answer Strata's check within 1 s " \
                    "(--dask-timeout)"
                monkeypatch.setattr(strata.dask, "preflight", lambda client, deadline: [full])
                with pytest.raises(strata.dask.DaskAnalyzeError) as error:
                    strata.dask.analyze(paths, client, ["idle_time"], dask_timeout=1)
                assert str(error.value) == f"{paths[0]}: no result from the workers within 1 s (--dask-timeout): " \
                    "a worker is stuck, or left, or the run needs more time; see the workers' logs"
                monkeypatch.undo()
            finally:
                os.kill(c.procs[2].pid, signal.SIGCONT)
            result = strata.dask.analyze(paths, client, ["rank_breakdown", "idle_time"])
            assert result.csv() == local_csv(paths) and result.workers == [full, full]
    finally:
        c.stop()


def test_worker_check_names_another_strata(strata_bin):
    """The check's verdict on a worker's answer: another C API or libstrata version, or a missing
    library, is a line; the driver's own answer is none."""
    sys.path.insert(0, PYTHON_PKG)
    import strata._dask_check as check

    here = check._probe()
    assert here["capi"] >= 3 and here["libstrata"].startswith("libstrata.so.") and not here.get("lacks"), here
    assert check._worker_problem(dict(here), here) is None
    assert check._worker_problem(dict(here, capi=2), here) == (
        f"runs another Strata (C API 2, {here['libstrata']}; the driver has C API {here['capi']}, {here['libstrata']})")
    assert check._worker_problem(dict(here, libstrata="libstrata.so.0.0.1"), here).startswith(
        "runs another Strata (C API")
    assert check._worker_problem(RuntimeError("boom"), here) == "could not run Strata's check (RuntimeError: boom)"


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@contextlib.contextmanager
def namespaces(count):
    """`count` network namespaces, each joined to this one by a veth pair on a /24 of its own
    (10.214+k.X.0/24: this side .1, the namespace .2, its default route through .1): distinct hosts
    as far as Dask can tell. Yields [(namespace, its address, this side's address)]."""
    tag = os.getpid() % 100000
    subnet = os.getpid() % 250 + 1
    made, hosts = [], []
    try:
        for k in range(count):
            ns, here, there = f"sd{tag}n{k}", f"sd{tag}h{k}", f"sd{tag}p{k}"
            _ip("netns", "add", ns)
            made.append((ns, here))
            _ip("link", "add", here, "type", "veth", "peer", "name", there)
            _ip("link", "set", there, "netns", ns)
            near, far = f"10.{214 + k}.{subnet}.1", f"10.{214 + k}.{subnet}.2"
            _ip("addr", "add", near + "/24", "dev", here)
            _ip("link", "set", here, "up")
            for cmd in (("addr", "add", far + "/24", "dev", there), ("link", "set", there, "up"),
                        ("link", "set", "lo", "up"), ("route", "add", "default", "via", near)):
                _ip("netns", "exec", ns, "ip", *cmd)
            hosts.append((ns, far, near))
        yield hosts
    finally:
        for ns, here in made:
            _ip("netns", "del", ns, check=False)
            _ip("link", "del", here, check=False)


def _netns_unavailable():
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    probe = f"sdprobe{os.getpid() % 100000}"
    if _ip("netns", "add", probe, check=False).returncode != 0:
        return "ip netns add fails here (no CAP_SYS_ADMIN or no netns support)"
    _ip("netns", "del", probe, check=False)
    return None


def test_dask_workers_as_distinct_hosts(tmp_path, strata_bin):
    """The scheduler in this namespace, each worker in a network namespace of its own (its own
    address, reachable only through its veth): the combined CSV still equals the local run."""
    if (why := _netns_unavailable()) is not None:
        pytest.skip(why)
    paths = make_ranks(tmp_path, 8, 1000)
    with namespaces(2) as hosts:
        c = Cluster(str(tmp_path))
        try:
            c.start_scheduler(host=hosts[0][2])
            for k, (ns, address, _) in enumerate(hosts):
                c.start_worker(f"w{k}", host=address, prefix=("ip", "netns", "exec", ns))
            c.wait_for_workers(2)
            proc = dask_cli(paths, c.address)
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout == local_csv(paths)
            # The ranks' traces (the trace partials) cross between the hosts too.
            proc = dask_cli(paths, c.address, ALL_RANK)
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout == local_csv(paths, ALL_RANK)
            with distributed.Client(c.address, timeout=60) as client:
                workers = sorted(w["host"] for w in client.scheduler_info()["workers"].values())
            assert workers == sorted(address for _, address, _ in hosts)
        finally:
            c.stop()
