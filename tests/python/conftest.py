"""Shared fixtures: where the build is, and a helper to record a command and read its spans."""
import json
import os
import subprocess
import sys

import pytest

BUILD_DIR = os.environ.get("STRATA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
BUILD_DIR = os.path.abspath(BUILD_DIR)
STRATA = os.path.join(BUILD_DIR, "bin", "strata")
PYTHON_PKG = os.path.join(BUILD_DIR, "lib", "python")
# Debian's PyTorch lives under /usr/bin/python3, not the python3 first on PATH.
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="session")
def strata_bin():
    if not os.path.exists(STRATA):
        pytest.fail(f"{STRATA} not built: build first or set STRATA_BUILD_DIR")
    return STRATA


def reachable_by_others(path=STRATA):
    """Whether another user can reach `path`: every directory above it searchable by others (o+x).
    A build tree under a private directory (mktemp -d, /root) is not; tests that run it as another
    uid skip or take their same-user path there."""
    path = os.path.realpath(path)
    while path != "/":
        if not os.stat(path).st_mode & 0o001:
            return False
        path = os.path.dirname(path)
    return True


def run_strata(*args, check=True, **kwargs):
    return subprocess.run([STRATA, *args], check=check, capture_output=True, text=True, **kwargs)


def record(tmp_path, command, level="model", extra=(), env=None, check=True):
    """Records `command` (a list) and returns (spans as dicts, completed process of strata record)."""
    out = str(tmp_path / "trace.strata")
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", out, "--level", level, *extra, "--", *command],
                          capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"strata record failed ({proc.returncode}): {proc.stderr}")
    spans = json.loads(run_strata("export", out, "--format", "json").stdout)
    return spans, proc


@pytest.fixture
def recorder(tmp_path, strata_bin):
    return lambda command, **kw: record(tmp_path, command, **kw)
