"""A program's own SIGTRAP handler under `strata record --sample` (issue 32 item 8). The in-thread
Python reader takes SIGTRAP at each sample (src/sample/python_signal.cc); a program that installed
its own handler for it got ~2,900 extra calls, was killed by SIGTRAP at exit (its exit 3 became 133:
Python's finalization restores SIGTRAP's default action while samples still raise it) and its last
spans were lost. Now the program's handler is its disposition (libstrata_sample.so interposes
sigaction/signal), it sees exactly its own SIGTRAPs, the process moves to the out-of-thread reader
(sample.python_reader_moved, said in `strata info`'s sampling line), and the exit status survives
every sampling mode. C programs (sigaction and signal()) and a Python program (signal.signal)."""
import json
import os
import re
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

RAISES = 5

PY_PROGRAM = r'''
import signal, sys, time
import strata
calls = 0
def on_trap(signum, frame):
    global calls
    calls += 1
def burn(t):
    s = time.thread_time()
    while time.thread_time() - s < t:
        sum(range(300))
with strata.span("before"):
    burn(0.3)  # sampling runs, Python stacks read in this thread
signal.signal(signal.SIGTRAP, on_trap)
for i in range(%d):
    with strata.span("step%%d" %% i):
        burn(0.15)
        signal.raise_signal(signal.SIGTRAP)
with strata.span("after"):
    burn(0.2)
print(calls, flush=True)
sys.exit(3)
''' % RAISES

C_PROGRAM = r'''
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static volatile sig_atomic_t calls;
static void on_trap(int sig) { (void)sig; calls++; }
static double cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static volatile unsigned long sink;
static void burn(double t) {
  double start = cpu();
  while (cpu() - start < t)
    for (int i = 0; i < 1000; ++i) sink += i * i;
}
int main(int argc, char** argv) {
  burn(0.2);
  if (argc > 1 && strcmp(argv[1], "signal") == 0) {
    signal(SIGTRAP, on_trap);
  } else {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_trap;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTRAP, &sa, NULL);
  }
  for (int i = 0; i < %d; ++i) {
    burn(0.1);
    raise(SIGTRAP);
  }
  burn(0.1);
  printf("%%d\n", (int)calls);
  fflush(stdout);
  return 3;
}
''' % RAISES

# (name, environment): every sampling mode of `strata record --sample`.
MODES = [
    ("in-thread", {}),
    ("sampling-thread", {"STRATA_SAMPLE_PYREAD": "process"}),
    ("timer", {"STRATA_SAMPLE_MODE": "timer"}),
    ("itimer", {"STRATA_SAMPLE_MODE": "itimer"}),
]


def record(tmp_path, name, command, env_extra):
    trace = str(tmp_path / f"{name}.strata")
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([STRATA, "record", "--quiet", "--sample", "--level", "model", "-o", trace, "--",
                           *command], capture_output=True, text=True, timeout=300, env=env)
    return trace, proc


def info_stats(trace):
    text = run_strata("info", trace).stdout
    stats = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+pid \d+\s+(\S+)\s+(\d+)\s", text, re.M)}
    return text, stats


@pytest.fixture(scope="module")
def c_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("sigtrap_c")
    source = d / "trap.c"
    source.write_text(C_PROGRAM)
    binary = d / "trap"
    subprocess.run(["cc", "-O1", "-o", str(binary), str(source)], check=True)
    return str(binary)


@pytest.mark.parametrize("mode,env", MODES, ids=[m[0] for m in MODES])
def test_python_program_sees_only_its_own_sigtraps_and_keeps_its_exit_status(tmp_path, mode, env):
    script = tmp_path / "trap.py"
    script.write_text(PY_PROGRAM)
    trace, proc = record(tmp_path, "py", [SYSTEM_PYTHON, str(script)], env)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert proc.stdout.strip() == str(RAISES), proc.stdout  # exactly the program's own raises
    spans = json.loads(run_strata("export", trace, "--format", "json").stdout)
    names = sorted(s["name"] for s in spans)
    assert names == sorted(["before", "after"] + [f"step{i}" for i in range(RAISES)]), names
    text, stats = info_stats(trace)
    assert stats.get("sample.samples_taken", 0) > 100, stats
    if mode == "in-thread":
        # Moved out of the program's threads when it installed its handler, and said so.
        assert stats.get("sample.python_reader_moved") == 1, stats
        assert "moved there: the program installed its own SIGTRAP handler" in text, text
        assert stats.get("sample.python_foreign_sigtraps") == RAISES, stats
    else:
        assert stats.get("sample.python_reader_moved", 0) == 0, stats
    # Python stacks are still read after the move: the steps' burn frames are in the profile.
    collapsed = run_strata("profile", trace, "--format", "collapsed").stdout
    assert any("burn (" in line for line in collapsed.splitlines()), collapsed[:2000]


# A C program has no Python stacks to read: the perf_event modes are one; signal() and sigaction()
# both go through the interposition.
C_CASES = [("perf_event", {}, "sigaction"), ("perf_event", {}, "signal"), ("timer", MODES[2][1], "sigaction"),
           ("itimer", MODES[3][1], "signal")]


@pytest.mark.parametrize("mode,env,install", C_CASES, ids=[f"{c[0]}-{c[2]}" for c in C_CASES])
def test_c_program_sees_only_its_own_sigtraps_and_keeps_its_exit_status(tmp_path, c_program, mode, env,
                                                                        install):
    trace, proc = record(tmp_path, "c", [c_program, install], env)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert proc.stdout.strip() == str(RAISES), proc.stdout
    _, stats = info_stats(trace)
    assert stats.get("sample.samples_taken", 0) > 50, stats
