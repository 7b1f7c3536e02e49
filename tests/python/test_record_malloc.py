"""`strata record` fixes glibc's malloc thresholds for the command (src/cli/malloc_settings.h; docs/diff.md,
"Limits"): with the dynamic ones two processes of one program can run in different allocator regimes for
their whole lives, which `strata diff` would read as a change of the code (8 false alarms in 20 pairs).

The known answer comes from glibc itself, not from Strata: the recorded program allocates 24 MiB and reads
the IS_MMAPPED bit (2) of the chunk's size word. With glibc's default threshold (128 KiB, dynamic) the
block is mmapped; with the threshold fixed at 32 MiB it comes from the heap."""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata

PROBE = textwrap.dedent("""
    import ctypes, json, os
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    block = libc.malloc(24 << 20)
    size_word = ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value
    print(json.dumps({"mmapped": bool(size_word & 2),
                      "env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"}}))
""")
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}


def probe(tmp_path, *record_args, env=None):
    """(what the recorded program saw, the trace's Record chunk `malloc` property)."""
    out = str(tmp_path / "probe.strata")
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = subprocess.run([STRATA, "record", "--quiet", "--force", "-o", out, *record_args, "--", SYSTEM_PYTHON,
                        str(script)], capture_output=True, text=True, env={**CLEAN, **(env or {})}, timeout=120)
    assert r.returncode == 0, r.stderr

    seen = json.loads(r.stdout.strip().splitlines()[-1])
    lines = [line.split(None, 1) for line in run_strata("info", out).stdout.splitlines() if line.strip()]
    malloc = [rest for key, *rest in lines if key == "malloc"]
    assert len(malloc) == 1, "strata info shows the Record chunk's malloc property once"
    return seen, malloc[0][0] if malloc[0] else ""


def unrecorded(tmp_path, env=None):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)

    r = subprocess.run([SYSTEM_PYTHON, str(script)], capture_output=True, text=True, env={**CLEAN, **(env or {})})
    return json.loads(r.stdout)


def test_record_fixes_the_thresholds_and_glibc_applies_them(tmp_path, strata_bin):
    control = unrecorded(tmp_path)
    assert control["mmapped"], "the control: glibc's default threshold mmaps a 24 MiB block"
    seen, malloc = probe(tmp_path)
    assert seen["env"] == {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "67108864"}
    assert not seen["mmapped"], "with the threshold at 32 MiB the block comes from the heap"
    assert malloc.startswith("pinned: ") and "MALLOC_MMAP_THRESHOLD_=33554432" in malloc


def test_malloc_default_leaves_glibc_alone(tmp_path, strata_bin):
    seen, malloc = probe(tmp_path, "--malloc", "default")
    assert seen["env"] == {}
    assert seen["mmapped"]
    assert malloc == "default"


@pytest.mark.parametrize("env", [{"MALLOC_MMAP_THRESHOLD_": "1048576"},
                                 {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=1048576"}])
def test_the_users_own_thresholds_are_kept(tmp_path, strata_bin, env):
    seen, malloc = probe(tmp_path, env=env)
    assert seen["env"] == env, "record adds nothing to the user's own settings"
    assert seen["mmapped"], "the user's 1 MiB threshold is in force: the 24 MiB block is mmapped"
    name, value = next(iter(env.items()))
    assert malloc == f"user: {name}={value}"


def test_an_unrelated_malloc_setting_does_not_stop_the_pinning(tmp_path, strata_bin):
    seen, malloc = probe(tmp_path, env={"MALLOC_ARENA_MAX": "2"})
    assert seen["env"]["MALLOC_MMAP_THRESHOLD_"] == "33554432" and seen["env"]["MALLOC_ARENA_MAX"] == "2"
    assert malloc.startswith("pinned: ")


def test_an_unknown_mode_is_a_usage_error(tmp_path, strata_bin):
    r = subprocess.run([STRATA, "record", "--malloc", "tcmalloc", "-o", str(tmp_path / "x.strata"), "--", "true"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "x.strata").exists()
