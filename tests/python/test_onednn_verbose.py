"""oneDNN library spans from oneDNN's verbose output (the fallback for a oneDNN the interposer cannot
see, e.g. linked statically into the framework), recorded with `strata record --level library`.

The probe (tests/onednn/onednn_dlsym_probe.cc) runs ReLU executions either through the libdnnl
handle it dlopen'ed (invisible to the interposer, like a statically linked oneDNN) or through the
symbol the preloaded interposer provides. The resnet18 test forces the verbose path on Debian's
PyTorch and compares it with the interposer on the same model."""
import collections
import json
import os
import subprocess

import pytest

from conftest import BUILD_DIR, STRATA, SYSTEM_PYTHON, run_strata

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROBE = os.path.join(BUILD_DIR, "bin", "onednn_dlsym_probe")
ONEDNN_TRACER = os.path.join(BUILD_DIR, "lib", "libstrata_onednn.so")
N = 5
# oneDNN's timestamp is gettimeofday's (microseconds, truncated), so a verbose span may start up to
# 1 us before the op that issued it; its end is bounded by the moment the line arrived, inside the op.
CLOCK_SLACK_NS = 2000

needs_probe = pytest.mark.skipif(not (os.path.exists(PROBE) and os.path.exists(ONEDNN_TRACER)),
                                 reason="oneDNN tracer or probe not built (libdnnl-dev missing)")


def record(tmp_path, command, mode=None, env=None, name="trace"):
    out = str(tmp_path / f"{name}.strata")
    extra = ["--onednn", mode] if mode else []
    proc = subprocess.run([STRATA, "record", "--quiet", "-o", out, "--level", "library", *extra, "--", *command],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    spans = json.loads(run_strata("export", out, "--format", "json").stdout)
    return spans, proc


def probe_stdout():
    return ("probe: start\n" + "".join(f"probe: execution {i} of {N}\n" for i in range(1, N + 1)) +
            "probe: plain line\nprobe: done\n")


def library(spans):
    return [s for s in spans if s["level"] == "library"]


@needs_probe
def test_executions_the_interposer_cannot_see_come_from_verbose_output(tmp_path):
    spans, proc = record(tmp_path, [PROBE, "handle", str(N)])  # default mode: auto
    # The user's stdout is exactly what the program printed: verbose lines taken out, the rest kept.
    assert proc.stdout == probe_stdout()
    lib = library(spans)
    assert len(lib) == N
    by_id = {s["span_id"]: s for s in spans}
    for s in lib:
        a = s["attributes"]
        assert s["name"] == "onednn::eltwise" and s["activity"] == "library_call"
        assert a["source"] == "verbose"
        assert a["shapes"] == "src:[1,8,16,16] dst:[1,8,16,16]"
        assert a["dtype"] == "f32" and a["prop_kind"] == "forward_inference" and a["impl"]
        assert "alg:eltwise_relu" in a["aux"] and a["desc"] == "1x8x16x16"
        # On the thread and under the op that ran it, inside the op's interval: oneDNN's realtime
        # timestamp placed on Strata's monotonic clock lands where the execution happened.
        parent = by_id[s["parent_id"]]
        assert parent["name"] == "probe::op" and parent["tid"] == s["tid"]
        assert parent["start_ns"] - CLOCK_SLACK_NS <= s["start_ns"] <= s["end_ns"] <= parent["end_ns"], (parent, s)


@needs_probe
def test_executions_through_the_interposer_are_recorded_once(tmp_path):
    spans, proc = record(tmp_path, [PROBE, "default", str(N)], mode="auto")
    assert proc.stdout == probe_stdout()
    lib = library(spans)
    assert len(lib) == N
    for s in lib:
        a = s["attributes"]
        assert a["source"] == "interposer" and s["activity"] == "library_call"
        assert a["shapes"] == "src:[1,8,16,16] dst:[1,8,16,16]"
        assert a["dtype"] == "f32" and a["prop_kind"] == "forward_inference"
        # What only the verbose line knows is added to the interposer's span.
        assert a["desc"] == "1x8x16x16" and a["formats"].startswith("data_f32")


@needs_probe
def test_interpose_mode_misses_what_it_cannot_see(tmp_path):
    spans, proc = record(tmp_path, [PROBE, "handle", str(N)], mode="interpose")
    assert proc.stdout == probe_stdout()
    assert library(spans) == []


@needs_probe
def test_verbose_mode_records_even_what_the_interposer_sees(tmp_path):
    spans, proc = record(tmp_path, [PROBE, "default", str(N)], mode="verbose")
    assert proc.stdout == probe_stdout()
    lib = library(spans)
    assert len(lib) == N and all(s["attributes"]["source"] == "verbose" for s in lib)


@needs_probe
def test_verbose_output_the_user_asked_for_is_still_printed(tmp_path):
    env = dict(os.environ, ONEDNN_VERBOSE="1")
    spans, proc = record(tmp_path, [PROBE, "handle", str(N)], env=env)
    exec_lines = [l for l in proc.stdout.splitlines() if l.startswith("onednn_verbose,") and ",exec," in l]
    assert len(exec_lines) == N
    assert [l for l in proc.stdout.splitlines() if l.startswith("probe:")] == probe_stdout().splitlines()
    assert len(library(spans)) == N


torch_available = subprocess.run([SYSTEM_PYTHON, "-c", "import torch, torchvision"],
                                 capture_output=True).returncode == 0


@needs_probe
@pytest.mark.skipif(not torch_available, reason="Debian's python3-torch/torchvision not installed")
def test_resnet18_verbose_spans_match_the_interposer(tmp_path):
    command = [SYSTEM_PYTHON, os.path.join(REPO_ROOT, "examples/pytorch/infer.py"), "--model", "resnet18",
               "--batch", "1", "--iterations", "1", "--warmup", "1"]  # 224x224: every conv runs in oneDNN
    runs = {}
    for mode in ("interpose", "verbose"):
        spans, proc = record(tmp_path, command, mode=mode, name=mode)
        assert "onednn_verbose" not in proc.stdout
        runs[mode] = (spans, proc.stdout)
    # The program's own output is the same lines either way (timings aside).
    assert [l.split(":")[0] for l in runs["interpose"][1].splitlines()] == \
           [l.split(":")[0] for l in runs["verbose"][1].splitlines()]

    def described(spans):
        by_id = {s["span_id"]: s for s in spans}
        return [(s["name"], s["attributes"].get("shapes"), s["attributes"].get("impl"),
                 s["attributes"].get("dtype"), s["attributes"].get("prop_kind"), by_id[s["parent_id"]]["name"])
                for s in library(spans)]

    interposed, verbose = described(runs["interpose"][0]), described(runs["verbose"][0])
    convs = [d for d in interposed if d[0] == "onednn::convolution"]
    assert len(convs) == 20 * 2  # resnet18: 20 convolutions, 2 forward passes
    # Same executions, same description, same issuing op, in the same order.
    assert verbose == interposed, (collections.Counter(verbose) - collections.Counter(interposed),
                                   collections.Counter(interposed) - collections.Counter(verbose))
    spans = runs["verbose"][0]
    by_id = {s["span_id"]: s for s in spans}
    for s in library(spans):
        assert s["attributes"]["source"] == "verbose"
        parent = by_id[s["parent_id"]]
        assert parent["level"] == "layer" and parent["tid"] == s["tid"]
        assert parent["start_ns"] - CLOCK_SLACK_NS <= s["start_ns"] <= s["end_ns"] <= parent["end_ns"], (parent, s)
