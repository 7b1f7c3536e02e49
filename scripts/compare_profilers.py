#!/usr/bin/env python3
"""What three samplers say about one workload: the share of resnet18 batch-1 CPU inference spent in
convolution, by Strata (`strata record --sample`, then `strata profile`: Python and native frames,
and the op open at each sample), perf (`perf record -g`: native frames only; Debian's Python 3.11 has
no perf trampoline) and Austin (Python frames only, read from outside the process).

Each profiler runs the same script in its own process, one after the other. "In conv" means:
  strata-op:   the innermost op open at the sample (`[op] NAME` root frame of the folded stacks) is a
               convolution op (aten::conv2d, aten::convolution, aten::_convolution, mkldnn_*);
  strata-fn:   a frame of the stack is in conv: the Python frame of torch/nn/modules/conv.py, or a
               native convolution function (the NATIVE_CONV pattern below);
  perf:        a native frame matches NATIVE_CONV;
  perf+jit:    ... or the leaf is unnamed JIT code (oneDNN's kernels, most of them convolutions; the
               frame-pointer chain ends there): an upper bound;
  austin:      a Python frame is in torch/nn/modules/conv.py.
The denominator is the inference: samples whose stack passes through torchvision's resnet.py
(Strata, Austin); for perf (no Python frames) the samples after the script printed the loop's start
time (perf record -k CLOCK_MONOTONIC, the clock Python's time.monotonic reads).
Run with /usr/bin/python3 (Debian's, the one with torch). Prints one table; --runs N repeats it.
Usage: /usr/bin/python3 scripts/compare_profilers.py [--build build] [--iterations 60] [--hz 999]
       [--runs 1] [--austin PATH]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

# Native convolution code as libtorch and oneDNN name it: ATen's convolution entry points, the
# mkldnn/oneDNN primitives and their JIT kernels (named in perf only when oneDNN writes its perf map).
NATIVE_CONV = re.compile(r"conv|mkldnn|dnnl|brgemm|im2col|jit_(avx|sse|uni|brg)", re.IGNORECASE)
CONV_OPS = re.compile(r"^\[op\] (aten::(conv|_conv|mkldnn_conv|cudnn_conv|thnn_conv)|mkldnn)")
PY_CONV = "torch/nn/modules/conv.py"
PY_RESNET = "torchvision/models/resnet.py"

INFER = """
import sys, time
import torch, torchvision
torch.set_num_threads(1)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
with torch.no_grad():
    print("loop_start", time.monotonic(), flush=True)
    for _ in range(int(sys.argv[1])):
        model(x)
"""


def run(cmd, env=None, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, **kw)


def strata_shares(strata, work, infer, n, hz):
    trace = os.path.join(work, "t.strata")
    if os.path.exists(trace):  # strata record keeps an existing file (without --force)
        os.remove(trace)
    run([strata, "record", "--quiet", "--level", "layer", f"--sample={hz}", "-o", trace, "--",
         sys.executable, infer, str(n)])
    folded = run([strata, "profile", trace, "--format", "collapsed"]).stdout
    total = by_op = by_fn = 0
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if not any(PY_RESNET in f for f in frames):
            continue
        c = int(count)
        total += c
        ops = [f for f in frames if f.startswith("[op] ")]
        if ops and CONV_OPS.match(ops[-1]):
            by_op += c
        rest = [f for f in frames if not f.startswith("[op] ")]
        if any(PY_CONV in f or NATIVE_CONV.search(f) for f in rest):
            by_fn += c
    return total, by_op, by_fn


def perf_share(work, infer, n, hz):
    data = os.path.join(work, "perf.data")
    out = run(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-F", str(hz), "-g", "-o", data, "--",
               sys.executable, infer, str(n)]).stdout
    start = float(re.search(r"loop_start (\S+)", out).group(1))
    script = run(["perf", "script", "-i", data, "-F", "time,ip,sym,dso"]).stdout
    total = conv = conv_or_jit = 0
    for block in script.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines:
            continue
        m = re.match(r"\s*([0-9.]+):", lines[0])
        if not m or float(m.group(1)) < start:
            continue
        total += 1
        named = any(NATIVE_CONV.search(l) for l in lines[1:])
        conv += named
        # A leaf in anonymous executable memory: oneDNN's JIT kernels (no symbol, no frame pointer:
        # the callchain ends there). In resnet18 most are convolutions, but not all: an upper bound.
        conv_or_jit += named or (len(lines) > 1 and re.search(r"\[unknown\] \((/tmp/perf-\d+\.map|\[unknown\])\)", lines[1]) is not None)
    return total, conv, conv_or_jit


def austin_share(austin, work, infer, n, hz):
    out = os.path.join(work, "austin.txt")
    interval = str(round(1e6 / hz))  # microseconds: Austin 1.x takes no unit suffix
    # -s: idle samples left out, so the weights estimate CPU time like the other two samplers.
    run([austin, "-s", "-i", interval, "-o", out, sys.executable, infer, str(n)])
    total = conv = 0
    for line in open(out):
        if line.startswith("#") or not line.strip():
            continue
        stack, _, weight = line.rstrip().rpartition(" ")
        if PY_RESNET not in stack or not weight.isdigit():
            continue
        total += int(weight)
        if PY_CONV in stack:
            conv += int(weight)
    return total, conv


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--austin", default=os.environ.get("AUSTIN") or shutil.which("austin"))
    args = ap.parse_args()
    strata = os.path.join(os.path.abspath(args.build), "bin", "strata")
    if not os.access(strata, os.X_OK):
        sys.exit(f"compare_profilers: no {strata}: build Strata first or pass --build DIR")
    have_perf = shutil.which("perf") is not None
    print(f"load before: {os.getloadavg()}; {args.iterations} inferences per run, {args.hz} Hz")
    results = {"strata-op": [], "strata-fn": [], "perf": [], "perf+jit": [], "austin": []}
    notes = []
    with tempfile.TemporaryDirectory() as work:
        infer = os.path.join(work, "infer.py")
        with open(infer, "w") as f:
            f.write(INFER)
        for _ in range(args.runs):
            total, by_op, by_fn = strata_shares(strata, work, infer, args.iterations, args.hz)
            results["strata-op"].append((by_op, total))
            results["strata-fn"].append((by_fn, total))
            if have_perf:
                total, conv, conv_or_jit = perf_share(work, infer, args.iterations, args.hz)
                results["perf"].append((conv, total))
                results["perf+jit"].append((conv_or_jit, total))
            if args.austin:
                try:
                    total, conv = austin_share(args.austin, work, infer, args.iterations, args.hz)
                    results["austin"].append((conv, total))
                except subprocess.CalledProcessError as e:
                    notes.append(f"austin failed: {(e.stderr or '').strip().splitlines()[-1:]}")
                if results["austin"] and results["austin"][-1][1] == 0:
                    notes.append(f"austin ({args.austin}) gave no samples of this Python (Austin 1.x cannot "
                                 "read Python 3.11: use Austin >= 3)")
                    results["austin"].pop()
    print(f"load after: {os.getloadavg()}")
    print(f"{'profiler':<10} {'conv share (each run)':<40} {'median':>7}  samples (inference) per run")
    for name, rs in results.items():
        if not rs:
            continue
        shares = [100.0 * c / t if t else float("nan") for c, t in rs]
        unit = " (us of CPU)" if name == "austin" else ""
        print(f"{name:<10} {' '.join(f'{s:5.1f}%' for s in shares):<40} {statistics.median(shares):6.1f}%  "
              f"{' '.join(str(t) for _, t in rs)}{unit}")
    for n in notes:
        print("note:", n)


if __name__ == "__main__":
    main()
