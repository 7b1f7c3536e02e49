"""`import strata` finds libstrata.so without STRATA_LIB (issue 12.13): from the build tree's package
(<build>/lib/python) and from the source checkout's python/ (through STRATA_BUILD_DIR or <repo>/build),
and says in one line when it is asked to record (STRATA_OUTPUT) but finds nothing."""
import json
import os
import subprocess

import pytest

from conftest import BUILD_DIR, PYTHON_PKG, SYSTEM_PYTHON, run_strata

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = "import strata\nwith strata.span('step', level='model', n=1):\n    pass\nprint(strata.is_recording())\n"


def run(tmp_path, pythonpath, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("STRATA_LIB", "STRATA_BUILD_DIR", "LD_PRELOAD")}
    out = str(tmp_path / "t.strata")
    env.update(PYTHONPATH=pythonpath, STRATA_OUTPUT=out, STRATA_LEVEL="model", **extra)
    proc = subprocess.run([SYSTEM_PYTHON, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60,
                          cwd=str(tmp_path))
    return proc, out


def recorded_names(path):
    return [s["name"] for s in json.loads(run_strata("export", path, "--format", "json").stdout)]


def test_build_tree_package_needs_no_strata_lib(tmp_path):
    proc, out = run(tmp_path, PYTHON_PKG)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    assert recorded_names(out) == ["step"]


def test_source_checkout_package_finds_the_build_tree(tmp_path):
    proc, out = run(tmp_path, os.path.join(REPO_ROOT, "python"), STRATA_BUILD_DIR=BUILD_DIR)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    assert recorded_names(out) == ["step"]


@pytest.mark.skipif(os.path.realpath(BUILD_DIR) != os.path.realpath(os.path.join(REPO_ROOT, "build")),
                    reason="the build is not <repo>/build")
def test_source_checkout_package_finds_repo_build_by_default(tmp_path):
    proc, out = run(tmp_path, os.path.join(REPO_ROOT, "python"))
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
    assert recorded_names(out) == ["step"]


def test_asked_to_record_without_a_runtime_says_so(tmp_path):
    # A copy of the package with no build anywhere near it.
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    subprocess.run(["cp", "-r", os.path.join(REPO_ROOT, "python", "strata"), str(pkg)], check=True)
    proc, out = run(tmp_path, str(pkg))
    assert proc.returncode == 0 and proc.stdout.strip() == "False"
    lines = [l for l in proc.stderr.splitlines() if "libstrata.so was not found" in l]
    assert len(lines) == 1 and "STRATA_LIB" in lines[0], proc.stderr
    assert not os.path.exists(out)
