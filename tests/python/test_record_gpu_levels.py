"""`strata record --level device` and `--metrics` on a machine that cannot run GPU work (issue 12):
one line says why nothing of the GPU is recorded and what to do, the Record chunk keeps it, and the
CPU levels are still recorded."""
import ctypes
import subprocess

import pytest

from conftest import STRATA, SYSTEM_PYTHON, run_strata


def driver_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(driver_loads(), reason="an NVIDIA driver is present: the GPU levels can record")

PROGRAM = "import strata\nwith strata.span('step', level='model'):\n    pass\n"


@pytest.mark.parametrize("options", [["--level", "device"], ["--level", "runtime"],
                                     ["--level", "device", "--metrics", "flops"],
                                     ["--level", "device", "--gpu-pc-sampling"]])
def test_gpu_levels_without_a_driver_say_why_in_one_line(tmp_path, options):
    out = str(tmp_path / "gpu.strata")
    proc = subprocess.run([STRATA, "record", "-o", out, *options, "--", SYSTEM_PYTHON, "-c", PROGRAM],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if "no GPU work can be recorded here" in l]
    assert len(lines) == 1, proc.stderr
    assert "no NVIDIA driver (" in lines[0] and "libcuda.so.1" in lines[0]
    assert "run on a machine with an NVIDIA GPU and driver" in lines[0]
    if "--metrics" in options:
        assert "--metrics flops" in lines[0]
    if "--gpu-pc-sampling" in options:
        assert "--gpu-pc-sampling" in lines[0]
    info = run_strata("info", out).stdout
    assert "gpu.unavailable" in info and "no NVIDIA driver" in info
    # The CPU levels are still recorded.
    assert "model" in run_strata("export", out, "--format", "csv").stdout


def test_cpu_levels_say_nothing_about_gpus(tmp_path):
    out = str(tmp_path / "cpu.strata")
    proc = subprocess.run([STRATA, "record", "-o", out, "--level", "library", "--", SYSTEM_PYTHON, "-c", PROGRAM],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "GPU" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("options, says", [
    (["--level", "layer", "--gpu-pc-sampling"], "--gpu-pc-sampling samples kernels: use it with --level device"),
    (["--level", "device", "--gpu-pc-sampling", "--gpu-pc-sampling-mode", "sometimes"], "--gpu-pc-sampling-mode"),
])
def test_gpu_pc_sampling_options_are_refused_with_one_line(tmp_path, options, says):
    out = str(tmp_path / "pcs.strata")
    proc = subprocess.run([STRATA, "record", "-o", out, *options, "--", SYSTEM_PYTHON, "-c", PROGRAM],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert any(says in l for l in lines), proc.stderr
