"""Files a trace or a sampled process names are opened through the one input check (issue 32 item 6,
src/core/input_file.h): a sample mapping whose file was replaced by a named pipe (FIFO) used to hang
`strata profile`, `report`, `export` and `annotate` in open(2) (ElfImage::open opened without
O_NONBLOCK and checked the type afterwards), and `strata attach` on a process whose mapped library
was replaced the same way. Now the file is refused unopened, the command ends with its output, and
the refusal is counted: one warning line (commands reading a trace), sample.files_refused (the
sampler). The timeouts only guard against the hang; nothing is timed."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD_DIR, STRATA, SYSTEM_PYTHON, run_strata

GUARD = 120  # seconds: a hang fails the test instead of stopping the suite


def strata(*args):
    return subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=GUARD)


@pytest.fixture
def fifo_trace(tmp_path):
    """A trace sampled from a copy of the burn program whose file is then replaced by a FIFO."""
    program = tmp_path / "burn"
    shutil.copy(os.path.join(BUILD_DIR, "bin", "strata_burn_fp"), program)
    trace = str(tmp_path / "burn.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "--sample", "-o", trace, "--", str(program), "loop",
                           "0.5"], capture_output=True, text=True, timeout=GUARD)
    assert proc.returncode == 0, proc.stderr
    os.unlink(program)
    os.mkfifo(program)
    return trace, str(program)


def refusal_warning(stderr):
    return [line for line in stderr.splitlines() if "refused unopened" in line]


@pytest.mark.parametrize("command", [
    ["profile"],
    ["profile", "--format", "collapsed"],
    ["report", "-o", "{tmp}/report.html"],
    ["export", "--format", "chrome", "-o", "{tmp}/trace.json"],
    ["export", "--format", "sqlite", "-o", "{tmp}/trace.sqlite"],
])
def test_a_fifo_named_by_a_sample_mapping_is_refused_not_waited_on(tmp_path, fifo_trace, command):
    trace, fifo = fifo_trace
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    proc = strata(args[0], trace, *args[1:])
    assert proc.returncode == 0, proc.stderr
    warnings = refusal_warning(proc.stderr)
    assert len(warnings) == 1, proc.stderr
    assert fifo in warnings[0] and "a named pipe (FIFO)" in warnings[0], warnings
    assert re.match(r"warning: \d+ files? named by the trace refused unopened", warnings[0]), warnings
    if args[0] == "profile" and "--format" not in args:
        # The module's frames keep module+offset names, as for a module that is gone.
        assert "burn+0x" in proc.stdout, proc.stdout


def test_annotate_refuses_the_fifo_and_says_why(fifo_trace):
    trace, fifo = fifo_trace
    proc = strata("annotate", trace, "spin")
    assert proc.returncode != 0  # the function cannot be named: its module was not read
    assert any(fifo in w for w in refusal_warning(proc.stderr)), proc.stderr


def test_quiet_says_nothing_more(fifo_trace):
    trace, _ = fifo_trace
    proc = strata("profile", "--quiet", trace)
    assert proc.returncode == 0, proc.stderr
    assert refusal_warning(proc.stderr) == []


# A Python process maps a copy of a library, and the copy's path then names a FIFO: the sampler
# strips " (deleted)" from the mapping's path and opens what is there now.
ATTACHED = r'''
import ctypes, os, sys, time
lib = sys.argv[1]
handle = ctypes.CDLL(lib)
os.unlink(lib)
os.mkfifo(lib)
print("ready", flush=True)
start = time.monotonic()
while time.monotonic() - start < 30:
    sum(range(1000))
'''


def test_attach_refuses_a_fifo_where_a_mapped_library_was_and_counts_it(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("strata attach needs perf_event on another process: run as root")
    lib = tmp_path / "libcopy.so"
    shutil.copy(os.path.realpath("/lib/x86_64-linux-gnu/libz.so.1"), lib)
    script = tmp_path / "attached.py"
    script.write_text(ATTACHED)
    target = subprocess.Popen([SYSTEM_PYTHON, str(script), str(lib)], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        out = tmp_path / "epochs"
        proc = strata("attach", str(target.pid), "--duration", "1", "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert any(str(lib) in w for w in refusal_warning(proc.stderr)), proc.stderr
        info = run_strata("info", str(out)).stdout
        counts = [int(v) for v in re.findall(r"sample\.files_refused\s+(\d+)", info)]
        assert counts and sum(counts) >= 1, info
    finally:
        target.kill()
        target.wait()
