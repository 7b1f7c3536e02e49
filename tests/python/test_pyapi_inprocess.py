"""The Python API in a plain process (no `strata record`, no STRATA_OUTPUT): what it records, and for
what it cannot record, the one line that says so (issue 32 item 15). Op counts are checked against
torch.autograd.profiler run around the same loop, and against calls the scripts plant."""
import collections
import json
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import PYTHON_PKG, STRATA, SYSTEM_PYTHON, run_strata

torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0
needs_torch = pytest.mark.skipif(not torch_available, reason="Debian's python3-torch not installed")

# Variables that would make the process recorded from the outside: a plain run has none of them.
RECORDING_VARS = ("STRATA_OUTPUT", "STRATA_OUTPUT_DIR", "STRATA_OUTPUT_OWNER", "STRATA_LEVEL", "LD_PRELOAD",
                  "STRATA_LIB", "STRATA_TORCH_AUTOTRACE", "STRATA_TORCH_BRIDGE", "STRATA_TORCH_LIB")


def plain_run(tmp_path, body, args=(), env=None, pythonpath=PYTHON_PKG):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    full_env = {k: v for k, v in os.environ.items() if k not in RECORDING_VARS}
    full_env["PYTHONPATH"] = pythonpath
    full_env.update(env or {})
    return subprocess.run([SYSTEM_PYTHON, str(script), *map(str, args)], capture_output=True, text=True,
                          env=full_env, timeout=300)


def spans_of(path):
    return json.loads(run_strata("export", str(path), "--format", "json").stdout)


def strata_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("strata")]


# A tiny model stepped under strata.profile(level="layer") with torch.autograd.profiler around the
# same steps; each step also calls torch.add exactly once (a planted op). Two profiles: every step in
# one window, then a schedule whose one window holds steps 2 and 3 of 5.
PROFILE_SCRIPT = r'''
import collections, json, sys
import torch, strata
# The profiler's event list hides an op whose parent has the same name and only that child (a
# display rule): keep every op it recorded.
torch.autograd.profiler_util.EventList._remove_dup_nodes = lambda self: None
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
x, a = torch.randn(8, 16), torch.ones(4)
model(x)  # warm: the first call's one-off ops are not in either count

def steps(prof, n):
    for _ in range(n):
        with torch.no_grad():
            model(x)
        torch.add(a, a)
        prof.step()

out = {}
for name, schedule, n in (("all", None, 3), ("scheduled", strata.schedule(wait=1, warmup=1, active=2, repeat=1), 5)):
    with torch.autograd.profiler.profile() as reference:
        with strata.profile(schedule=schedule, dir=sys.argv[1] + "/" + name, level="layer") as prof:
            steps(prof, n)
    ops = collections.Counter(e.name for e in reference.function_events)
    out[name] = {"traces": prof.traces, "profiler": ops, "steps": n,
                 "not_recorded": getattr(prof, "not_recorded", None)}
print(json.dumps(out))
'''


@needs_torch
def test_profile_layer_records_torch_ops_in_a_plain_process(tmp_path, strata_bin):
    proc = plain_run(tmp_path, PROFILE_SCRIPT, [tmp_path])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # The layer tracer says its route once, as under `strata record --level layer`; nothing is missing.
    assert len([ln for ln in proc.stderr.splitlines() if "layer tracer:" in ln]) == 1, proc.stderr
    assert "not recorded" not in proc.stderr

    every = result["all"]
    assert every["not_recorded"] == {}
    assert len(every["traces"]) == 1
    spans = spans_of(every["traces"][0])
    ours = collections.Counter(s["name"] for s in spans if s["level"] == "layer")
    assert ours["aten::add"] == every["steps"]  # the planted call, once per step
    assert ours == collections.Counter(every["profiler"]), "Strata's layer spans are the ops torch.profiler saw"
    steps = [s for s in spans if s["name"].startswith("ProfilerStep#")]
    for op in (s for s in spans if s["level"] == "layer"):
        assert any(st["start_ns"] <= op["start_ns"] <= op["end_ns"] <= st["end_ns"] for st in steps)

    scheduled = result["scheduled"]
    assert len(scheduled["traces"]) == 1
    window = collections.Counter(s["name"] for s in spans_of(scheduled["traces"][0]) if s["level"] == "layer")
    assert window["aten::add"] == 2  # steps 2 and 3 only
    # The profiler saw all 5 identical steps; the window holds exactly 2 of them.
    assert {name: count * 5 for name, count in window.items()} == \
        {name: count * 2 for name, count in scheduled["profiler"].items()}


ENABLE_SCRIPT = r'''
import json, sys
import torch, strata, strata.torch as st
a = torch.ones(4)
enabled = st.enable_layer_tracing()  # nothing records yet: installed, it waits for a recording
for _ in range(3):
    torch.add(a, a)  # not recorded: no recording runs
before = st.ops_recorded()
assert strata.start(sys.argv[1] + "/shapes.strata", "layer")
with torch.autograd.profiler.profile(record_shapes=True) as reference:
    for _ in range(4):
        torch.add(a, a)
strata.stop()
shapes = [json.dumps(e.input_shapes, separators=(",", ":")) for e in reference.function_events if e.name == "aten::add"]
st.enable_layer_tracing(record_shapes=False)  # other options: applied, not ignored
assert strata.start(sys.argv[1] + "/noshapes.strata", "layer")
for _ in range(2):
    torch.add(a, a)
strata.stop()
print(json.dumps({"enabled": enabled, "before": before, "on": st.layer_tracing_enabled(), "shapes": shapes}))
'''


@needs_torch
def test_enable_layer_tracing_outside_a_window_works_once_one_starts(tmp_path, strata_bin):
    proc = plain_run(tmp_path, ENABLE_SCRIPT, [tmp_path])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    reference_shapes = result.pop("shapes")
    assert result == {"enabled": True, "before": 0, "on": True}
    shapes = [s["attributes"].get("shapes") for s in spans_of(tmp_path / "shapes.strata") if s["name"] == "aten::add"]
    assert len(reference_shapes) == 4 and shapes == reference_shapes
    noshapes = [s for s in spans_of(tmp_path / "noshapes.strata") if s["name"] == "aten::add"]
    assert len(noshapes) == 2 and all("shapes" not in s["attributes"] for s in noshapes)


LATE_IMPORT_SCRIPT = r'''
import sys, strata
if len(sys.argv) > 1:
    assert strata.start(sys.argv[1], "layer")  # before torch is imported
import torch
a = torch.ones(4)
for _ in range(5):
    torch.add(a, a)
strata.stop()
'''


@needs_torch
@pytest.mark.parametrize("how", ["strata.start", "STRATA_OUTPUT", "python hooks"])
def test_layer_recording_traces_torch_imported_later(tmp_path, strata_bin, how):
    trace = tmp_path / "late.strata"
    if how == "STRATA_OUTPUT":  # libstrata starts recording when `import strata` loads it
        proc = plain_run(tmp_path, LATE_IMPORT_SCRIPT, env={"STRATA_OUTPUT": str(trace), "STRATA_LEVEL": "30"})
    else:  # the Python-hooks route is the one a machine without a C++ compiler gets
        proc = plain_run(tmp_path, LATE_IMPORT_SCRIPT, [trace],
                         env={"STRATA_TORCH_BRIDGE": "python"} if how == "python hooks" else {})
    assert proc.returncode == 0, proc.stderr
    assert sum(s["name"] == "aten::add" for s in spans_of(trace)) == 5
    route = [ln for ln in proc.stderr.splitlines() if "layer tracer:" in ln]
    assert len(route) == 1 and ("python hooks" in route[0]) == (how == "python hooks"), proc.stderr


NO_RUNTIME_SCRIPT = r'''
import json, sys, strata
if sys.argv[2] == "before":
    import torch
with strata.profile(dir=sys.argv[1], level="layer") as prof:
    import torch
    torch.add(torch.ones(2), torch.ones(2))
print(json.dumps(sorted(prof.not_recorded)))
'''


@needs_torch
@pytest.mark.parametrize("imported", ["before", "during"])
def test_layer_level_without_the_torch_runtime_says_why(tmp_path, strata_bin, imported):
    # libstrata.so without libstrata_torch_rt.so beside it (an installation missing a part): PyTorch
    # ops cannot be traced, whether torch was imported before the window or inside it.
    lib = tmp_path / "lib"
    lib.mkdir()
    os.symlink(os.path.realpath(os.path.join(os.path.dirname(PYTHON_PKG), "libstrata.so")), lib / "libstrata.so")
    package = tmp_path / "pkg"
    shutil.copytree(os.path.join(PYTHON_PKG, "strata"), package / "strata",
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = plain_run(tmp_path, NO_RUNTIME_SCRIPT, [tmp_path / "w", imported], pythonpath=str(package),
                     env={"STRATA_LIB": str(lib / "libstrata.so"), "STRATA_BUILD_DIR": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == ["layer"]
    lines = strata_lines(proc.stderr)
    assert len(lines) == 1 and "libstrata_torch_rt.so not found" in lines[0], proc.stderr


def test_enable_layer_tracing_without_libstrata_says_why(tmp_path):
    # A copy of the package with no libstrata.so to be found (not next to it, no STRATA_BUILD_DIR).
    package = tmp_path / "pkg"
    shutil.copytree(os.path.join(PYTHON_PKG, "strata"), package / "strata",
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = plain_run(tmp_path, """
        import strata.torch as st
        try:
            print("returned", st.enable_layer_tracing())
        except RuntimeError as exc:
            print("raised", exc)
    """, env={"STRATA_BUILD_DIR": str(tmp_path / "none")}, pythonpath=str(package))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("raised strata.torch.enable_layer_tracing: libstrata.so not found")


DEEP_SCRIPT = r'''
import json, sys, strata
with strata.profile(schedule=strata.schedule(wait=0, warmup=0, active=1, repeat=2), dir=sys.argv[1],
                    level=sys.argv[2]) as prof:
    for step in range(3):
        with strata.span("work", level="model"):
            pass
        prof.step()
print(json.dumps({"traces": len(prof.traces), "not_recorded": sorted(getattr(prof, "not_recorded", {}))}))
'''


@pytest.mark.parametrize("level,missing", [("library", ["library"]), ("device", ["library", "runtime_api"]),
                                           ("cpu_sample", ["cpu_sample", "library", "runtime_api"])])
def test_profile_at_a_level_this_process_cannot_record_says_why(tmp_path, strata_bin, level, missing):
    proc = plain_run(tmp_path, DEEP_SCRIPT, [tmp_path / "w", level])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"traces": 2, "not_recorded": missing}
    # One line per level not recorded, though the profile started two windows (two recordings).
    lines = strata_lines(proc.stderr)
    assert sorted(ln.split()[1] for ln in lines) == missing, proc.stderr
    assert all(" level is not recorded in this process: " in ln for ln in lines)


def test_library_level_under_strata_record_says_nothing_is_missing(tmp_path, strata_bin):
    # The oneDNN interposer is preloaded by `strata record --level library`: the profile's library
    # level is recorded, so no line claims otherwise.
    script = tmp_path / "deep.py"
    script.write_text(DEEP_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in RECORDING_VARS}
    env["PYTHONPATH"] = PYTHON_PKG
    proc = subprocess.run([STRATA, "record", "--quiet", "--level", "library", "-o", str(tmp_path / "r.strata"), "--",
                           SYSTEM_PYTHON, str(script), str(tmp_path / "w"), "library"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"traces": 2, "not_recorded": []}
    assert "not recorded" not in proc.stderr


def test_start_while_recording_says_why(tmp_path, strata_bin):
    proc = plain_run(tmp_path, f"""
        import strata
        assert strata.start({str(tmp_path / 'a.strata')!r}, "model")
        print(strata.start({str(tmp_path / 'b.strata')!r}, "model"))
        strata.stop()
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
    lines = strata_lines(proc.stderr)
    assert len(lines) == 1 and "already recording" in lines[0], proc.stderr
    assert not (tmp_path / "b.strata").exists()


def test_start_into_an_unwritable_place_says_why(tmp_path, strata_bin):
    proc = plain_run(tmp_path, f"""
        import strata
        print(strata.start({str(tmp_path / 'missing' / 'dir' / 'a.strata')!r}, "model"))
        print(strata.is_recording())
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]
    lines = strata_lines(proc.stderr)
    assert len(lines) == 1 and "a.strata" in lines[0], proc.stderr


def test_start_at_a_level_that_records_nothing_is_an_error(tmp_path, strata_bin):
    proc = plain_run(tmp_path, f"""
        import strata
        try:
            print(strata.start({str(tmp_path / 'a.strata')!r}, 0))
        except ValueError as exc:
            print("raised", exc)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("raised strata.start: level 0 records nothing")
    assert not (tmp_path / "a.strata").exists()


def test_set_level_outside_a_recording_says_why_once(tmp_path, strata_bin):
    proc = plain_run(tmp_path, """
        import strata
        print(strata.set_level("layer"), strata.set_level("model"), strata.get_level())
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "0", "0"]
    lines = strata_lines(proc.stderr)
    assert len(lines) == 1 and "not recording" in lines[0], proc.stderr


def test_profile_whose_schedule_records_no_step_says_so(tmp_path, strata_bin):
    proc = plain_run(tmp_path, f"""
        import os, strata
        with strata.profile(schedule=strata.schedule(wait=10, warmup=0, active=1), dir={str(tmp_path / 'w')!r}) as prof:
            for _ in range(3):
                prof.step()
        print(len(prof.traces), os.listdir({str(tmp_path / 'w')!r}) if os.path.exists({str(tmp_path / 'w')!r}) else [])
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0 []"
    lines = strata_lines(proc.stderr)
    assert len(lines) == 1 and "no trace written" in lines[0] and "4 steps" in lines[0], proc.stderr
