"""strata.profile / strata.schedule: torch.profiler's schedule semantics, one trace per active
window with spans only from its active steps, standalone and inside `strata record` with a small
PyTorch model (CPU)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import PYTHON_PKG, STRATA, SYSTEM_PYTHON

pd = pytest.importorskip("pandas")
sys.path.insert(0, PYTHON_PKG)
import strata  # noqa: E402  (the build tree's package)
from strata import ProfilerAction  # noqa: E402


def torch_schedule():
    """torch.profiler.schedule from Debian's PyTorch (run under /usr/bin/python3), or None."""
    try:
        import torch.profiler
        return torch.profiler.schedule
    except Exception:
        return None


@pytest.mark.parametrize("wait,warmup,active,repeat,skip_first",
                         [(1, 1, 2, 2, 0), (0, 0, 1, 0, 0), (2, 0, 3, 1, 1), (0, 2, 1, 3, 4), (3, 1, 1, 0, 0)])
def test_schedule_matches_torch_profiler(wait, warmup, active, repeat, skip_first):
    ours = strata.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
    reference = torch_schedule()
    if reference is None:
        pytest.skip("torch.profiler not importable here")
    theirs = reference(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
    for step in range(40):
        assert ours(step).name == theirs(step).name, step


def test_schedule_rejects_bad_values():
    with pytest.raises(ValueError, match="active"):
        strata.schedule(wait=1, warmup=0, active=0)
    with pytest.raises(ValueError, match="wait"):
        strata.schedule(wait=-1, warmup=0, active=1)


def expected_windows(sched, steps):
    """Brute force: the active steps of each saved window, stepping the schedule as torch does."""
    windows, current = [], []
    for step in range(steps):
        action = sched(step)
        if action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            current.append(step)
            if action == ProfilerAction.RECORD_AND_SAVE:
                windows.append(current)
                current = []
        elif current:  # a RECORD followed by NONE/WARMUP saves too
            windows.append(current)
            current = []
    if current:
        windows.append(current)
    return windows


SCRIPT = """
import json, sys, strata
sched = strata.schedule(wait={wait}, warmup={warmup}, active={active}, repeat={repeat})
ready = []
with strata.profile(schedule=sched, on_trace_ready=ready.append, dir=sys.argv[1], level="layer") as prof:
    for step in range({steps}):
        with strata.span(f"work{{step}}", level="model"):
            with strata.span("inner", level="layer"):
                sum(range(2000))
        prof.step()
print(json.dumps({{"ready": ready, "traces": prof.traces}}))
"""


def run_script(tmp_path, body, args, env=None):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = PYTHON_PKG
    full_env.update(env or {})
    return subprocess.run([SYSTEM_PYTHON, str(path), *args], capture_output=True, text=True, env=full_env)


def check_window(path, active_steps):
    """The window holds one ProfilerStep span per active step and only spans inside them."""
    spans = strata.load(path).spans
    steps = spans[spans["name"].astype(str).str.startswith("ProfilerStep#")]
    assert sorted(int(n.split("#")[1]) for n in steps["name"].astype(str)) == active_steps
    assert (steps["level"] == "iteration").all()
    # Counter samples (PyTorch allocator's live bytes) are not level-gated: they are written
    # whenever the window's session runs, warmup included.
    others = spans.drop(steps.index)
    others = others[others["kind"] != "counter"]
    assert len(others) > 0
    inside = pd.Series(False, index=others.index)
    for _, s in steps.iterrows():
        inside |= (others["start_ns"] >= s["start_ns"]) & (others["end_ns"] <= s["end_ns"])
    assert inside.all(), others[~inside][["name", "start_ns", "end_ns"]]
    return spans


@pytest.mark.parametrize("wait,warmup,active,repeat,steps",
                         [(1, 1, 2, 2, 12), (0, 0, 1, 3, 5), (2, 1, 3, 0, 11)])
def test_windows_map_to_files(tmp_path, strata_bin, wait, warmup, active, repeat, steps):
    out = tmp_path / "windows"
    proc = run_script(tmp_path, SCRIPT.format(wait=wait, warmup=warmup, active=active, repeat=repeat,
                                              steps=steps), [str(out)])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    sched = strata.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat)
    # `steps` calls of prof.step() begin step `steps` too, which the block's end closes (as in
    # torch.profiler: its ProfilerStep#N is recorded when the schedule makes it active).
    windows = expected_windows(sched, steps + 1)
    assert result["ready"] == result["traces"]
    assert len(result["traces"]) == len(windows)
    assert sorted(os.listdir(out)) == sorted(os.path.basename(p) for p in result["traces"])
    for path, active_steps in zip(result["traces"], windows):
        spans = check_window(path, active_steps)
        work = sorted(n for n in spans["name"].astype(str) if n.startswith("work"))
        worked = [s for s in active_steps if s < steps]
        assert work == sorted(f"work{s}" for s in worked)
        assert (spans["name"] == "inner").sum() == len(worked)


TORCH_SCRIPT = """
import json, sys, torch, strata
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
x = torch.randn(8, 16)
ready = []
sched = strata.schedule(wait=1, warmup=1, active=2, repeat=2)
with strata.profile(schedule=sched, on_trace_ready=ready.append, dir=sys.argv[1]) as prof:
    for step in range(10):
        with torch.no_grad():
            model(x)
        prof.step()
print(json.dumps(ready))
"""


def test_recorded_torch_run(tmp_path, strata_bin):
    pytest.importorskip("torch")
    out = tmp_path / "windows"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(TORCH_SCRIPT))
    record_out = tmp_path / "run.strata"
    proc = subprocess.run([STRATA, "record", "--quiet", "--level", "layer", "-o", str(record_out), "--",
                           SYSTEM_PYTHON, str(script), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ready = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(ready) == 2  # windows of steps 2-3 and 6-7
    assert "stopping the recording already running" in proc.stderr
    ops_per_window = []
    for path, active in zip(ready, [[2, 3], [6, 7]]):
        spans = check_window(path, active)
        ops = spans[spans["name"].astype(str).str.startswith("aten::")]
        assert len(ops) > 0 and (ops["level"] == "layer").all()
        # Every op hangs under its step's span.
        assert (ops["depth"] >= 1).all()
        ops_per_window.append(sorted(ops["name"].astype(str)))
    assert ops_per_window[0] == ops_per_window[1]  # the same two forwards in each window
    assert record_out.exists()  # strata record still writes what came before the first window


def test_no_schedule_records_every_step_in_one_window(tmp_path, strata_bin):
    out = tmp_path / "all"
    body = SCRIPT.replace("sched = strata.schedule(wait={wait}, warmup={warmup}, active={active}, repeat={repeat})",
                          "sched = None").format(steps=3)
    proc = run_script(tmp_path, body, [str(out)])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["traces"]) == 1 and result["ready"] == result["traces"]
    spans = check_window(result["traces"][0], [0, 1, 2, 3])  # step 3: begun by the last step(), empty
    assert sorted(n for n in spans["name"].astype(str) if n.startswith("work")) == ["work0", "work1", "work2"]
