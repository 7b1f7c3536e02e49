"""Python that Strata starts (issue 32 item 2): Strata's own Python (the `strata analyze --dask`
driver) starts isolated through one helper, src/cli/python_spawn.h, never from the working directory
nor a relative STRATA_PYTHON; the user's own program under `strata record` keeps its environment.
The driver's run from a folder of planted modules is in test_dask.py (it needs a Dask cluster)."""
import ast
import os
import re
import stat
import subprocess

from conftest import STRATA, SYSTEM_PYTHON

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TRACE = os.path.join(ROOT, "tests", "data", "kineto", "multirank_rank0.json.gz")
HELPER = "src/cli/python_spawn.cc"
# Files that start a process and may name Python without the helper, and why.
NOT_STRATAS_PYTHON = {
    "src/cli/cmd_record.cc": "starts the user's command, which keeps its environment (PYTHONPATH gets "
                             "Strata's package for the program's `import strata`)",
}
PROCESS_START = re.compile(r"\b(execv|execvp|execvpe|execve|execl|execlp|execle|posix_spawnp?|popen|system)\s*\(")
STRING_NAMING_PYTHON = re.compile(r'"[^"\n]*python[^"\n]*"', re.IGNORECASE)


def test_every_python_start_in_src_goes_through_the_helper():
    """A C++ file of src/ that starts a process and names Python in a string is the helper (or the
    recorder, which starts the user's command): a second way of starting Python cannot appear
    without this test naming it."""
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "src")):
        for name in files:
            if not name.endswith((".cc", ".h", ".c")):
                continue
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, ROOT)
            text = open(path, encoding="utf-8", errors="replace").read()
            code = re.sub(r"//[^\n]*", "", text)  # comments may name anything
            if PROCESS_START.search(code) and STRING_NAMING_PYTHON.search(code):
                found.append(relative)
    assert HELPER in found, "the helper starts Python"
    assert sorted(set(found) - {HELPER} - set(NOT_STRATAS_PYTHON)) == [], found


def _starts_python(call):
    """Whether an ast.Call starts a process (subprocess, os.exec*/spawn*/system/popen) with
    sys.executable or a program named python*."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if not re.fullmatch(r"run|Popen|call|check_call|check_output|exec\w*|spawn\w*|system|popen", name):
        return False
    for node in ast.walk(call):
        if isinstance(node, ast.Attribute) and node.attr == "executable":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.match(r"(/\S*/)?python", node.value):
            return True
    return False


def test_the_python_package_starts_no_python():
    """python/strata starts no interpreter of its own (the torch bridge starts only the C++
    compiler): a Python start there would have to use the isolated form too."""
    package = os.path.join(ROOT, "python", "strata")
    found = []
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                tree = ast.parse(open(path, encoding="utf-8").read(), path)
                found += [f"{os.path.relpath(path, ROOT)}:{n.lineno}" for n in ast.walk(tree)
                          if isinstance(n, ast.Call) and _starts_python(n)]
    assert found == []


def test_relative_strata_python_is_refused(tmp_path, strata_bin):
    """STRATA_PYTHON=python3 would be executed from the working directory (execv takes a relative
    path as it is): a `python3` planted there must not run; the command says what to do instead."""
    marker = tmp_path / "marker"
    planted = tmp_path / "shared"
    planted.mkdir()
    fake = planted / "python3"
    fake.write_text(f"#!/bin/sh\necho planted > {marker}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    proc = subprocess.run([STRATA, "analyze", TRACE, "-a", "idle_time", "--format", "csv", "--dask",
                           "tcp://127.0.0.1:9"], capture_output=True, text=True, cwd=str(planted),
                          env={**os.environ, "STRATA_PYTHON": "python3"}, timeout=60)
    assert not marker.exists(), "the planted python3 ran"
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "strata analyze: --dask: STRATA_PYTHON=python3 is not an absolute path (it would be looked up in the "
        "working directory): name the interpreter by its full path"]


def test_recorded_program_keeps_its_environment(tmp_path, strata_bin):
    """The user's own Python under `strata record` is not isolated: its working directory and its
    PYTHONPATH are on sys.path as without Strata."""
    here, lib = tmp_path / "work", tmp_path / "lib"
    here.mkdir()
    lib.mkdir()
    (here / "from_cwd.py").write_text("")
    (lib / "from_pythonpath.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(lib)}
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", str(tmp_path / "t.strata"), "--", SYSTEM_PYTHON,
                           "-c", "import sys, from_cwd, from_pythonpath; assert not sys.flags.isolated"],
                          capture_output=True, text=True, cwd=str(here), env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
