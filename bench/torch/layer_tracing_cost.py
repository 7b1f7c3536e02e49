#!/usr/bin/env python3
"""Per-op cost of Strata's PyTorch layer tracer against torch.profiler, and the overhead of model-
and layer-level tracing on resnet18 batch 1. Every configuration runs in its own process (so no
callback or hook of one configuration stays installed in another), `--repeats` times; medians.

    STRATA_BUILD_DIR=build /usr/bin/python3 bench/torch/layer_tracing_cost.py [--repeats 5] [--ops 20000]
        [--torch-lib-before OLD/libstrata_torch.so] [--compiled-bridge]

--torch-lib-before adds a configuration "strata-layer-before": layer tracing with another build of
libstrata_torch.so (e.g. main's), interleaved with the others, for before/after figures measured
side by side. --compiled-bridge adds "strata-layer-compiled": the bridge compiled at first use for
the running torch (docs/torch.md; compiled into the user's cache before the timed processes) instead
of Strata's prebuilt one.

Tiny-op loop: `--ops` calls of torch.add on two 1-element tensors (each one aten::add op).
Per-op cost = (loop CPU time traced - loop CPU time untraced) / ops. CPU time, not wall time: the
machine is shared, so wall time measures the neighbours.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, os, sys, time, tempfile
import torch
config, ops, model_name, iters = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
torch.set_num_threads(1)
sys.path.insert(0, os.environ["STRATA_PY"])
import strata, strata.torch as st
out = tempfile.mktemp(suffix=".strata", dir=os.environ["BENCH_TMP"])
prof = None
cpu0 = time.process_time_ns()
if config.startswith("strata"):
    level = "layer" if "-layer" in config else "model"
    assert strata.start(out, level)
    if level == "layer":
        assert st.enable_layer_tracing()
elif config.startswith("torch.profiler"):
    prof = torch.autograd.profiler.profile(record_shapes=config.endswith("shapes"))
    prof.__enter__()
def tiny():
    a, b = torch.ones(1), torch.ones(1)
    for _ in range(100):
        torch.add(a, b)
    t0 = time.thread_time_ns()
    for _ in range(ops):
        torch.add(a, b)
    return time.thread_time_ns() - t0
def model():
    import torchvision
    m = torchvision.models.__dict__[model_name]().eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        for _ in range(2):
            m(x)
        times = []
        for _ in range(iters):
            t0 = time.thread_time_ns()  # CPU time: the machine is shared, wall time is not ours
            with st.predict_step(batch_size=1):
                m(x)
            times.append(time.thread_time_ns() - t0)
    times.sort()
    return times[len(times) // 2]
result = {"tiny_ns": tiny() if ops else 0}
# Getting the data out: Strata flushes its writer; the profiler builds its event list.
if prof is not None:
    prof.__exit__(None, None, None)
    result["events"] = len(prof.function_events)
if config.startswith("strata"):
    result["ops_recorded"] = st.ops_recorded()
    st.disable_layer_tracing()
    strata.stop()
result["total_cpu_ns"] = time.process_time_ns() - cpu0
# The model part runs in the same mode, set up again after the tiny loop's data was collected.
if iters:
    if config.startswith("strata"):
        assert strata.start(out + ".model", level)
        if level == "layer":
            st.enable_layer_tracing()
    elif prof is not None:
        prof = torch.autograd.profiler.profile(record_shapes=config.endswith("shapes"))
        prof.__enter__()
    result["model_ns"] = model()
    if prof is not None:
        prof.__exit__(None, None, None)
    if config.startswith("strata"):
        st.disable_layer_tracing()
        strata.stop()
else:
    result["model_ns"] = 0
print(json.dumps(result))
'''

CONFIGS = ["none", "strata-model", "strata-layer", "torch.profiler", "torch.profiler+shapes"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--iterations", type=int, default=10, help="timed predict calls per process (median)")
    ap.add_argument("--torch-lib-before", help="libstrata_torch.so of the build to compare with")
    ap.add_argument("--compiled-bridge", action="store_true", help="also time the bridge compiled at first use")
    args = ap.parse_args()
    configs = CONFIGS + (["strata-layer-before"] if args.torch_lib_before else [])
    configs += ["strata-layer-compiled"] if args.compiled_bridge else []
    build = os.environ.get("STRATA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    env = dict(os.environ, STRATA_PY=os.path.join(build, "lib", "python"),
               STRATA_LIB=os.path.join(build, "lib", "libstrata.so"))
    results = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as tmp:
        env["BENCH_TMP"] = tmp
        if args.compiled_bridge:  # the first use compiles (or finds the cache): not part of any timing
            subprocess.run([sys.executable, "-c", CHILD, "strata-layer", "10", args.model, "0"],
                           env=dict(env, STRATA_TORCH_BRIDGE="compile"), capture_output=True, check=True)
        for _ in range(args.repeats):  # interleaved, so drift in machine load hits every config alike
            for c in configs:
                child_env = dict(env, STRATA_TORCH_LIB=os.path.abspath(args.torch_lib_before)) \
                    if c == "strata-layer-before" else env
                if c == "strata-layer-compiled":
                    child_env = dict(env, STRATA_TORCH_BRIDGE="compile")
                out = subprocess.run([sys.executable, "-c", CHILD, c, str(args.ops), args.model, str(args.iterations)],
                                     env=child_env, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.stderr.write(out.stderr)
                    return 1
                results[c].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {c: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for c, rs in results.items()}
    base_tiny, base_model = med["none"]["tiny_ns"], med["none"]["model_ns"]
    print(f"tiny-op loop: {args.ops} x aten::add, median of {args.repeats} processes")
    per_op = {}
    per_op_total = {}
    base_total = med["none"]["total_cpu_ns"]
    print("  (hot path: thread CPU time of the loop; total: process CPU time of loop + getting the data out:")
    print("   Strata's writer thread and flush, the profiler's event list)")
    for c in configs:
        per_op[c] = (med[c]["tiny_ns"] - base_tiny) / args.ops
        per_op_total[c] = (med[c]["total_cpu_ns"] - base_total) / args.ops
        print(f"  {c:24s} loop {med[c]['tiny_ns'] / 1e6:9.3f} ms   per op: hot path {per_op[c]:8.1f} ns, "
              f"total {per_op_total[c]:8.1f} ns")
    if "strata-layer-compiled" in per_op and per_op["strata-layer"] > 0:
        print(f"  ratio strata-layer-compiled / strata-layer (prebuilt): hot path "
              f"{per_op['strata-layer-compiled'] / per_op['strata-layer']:.2f}")
    if "strata-layer-before" in per_op and per_op["strata-layer-before"] > 0:
        print(f"  ratio strata-layer / strata-layer-before: hot path "
              f"{per_op['strata-layer'] / per_op['strata-layer-before']:.2f}")
    for ref in ("torch.profiler", "torch.profiler+shapes"):
        if per_op[ref] > 0 and per_op_total[ref] > 0:
            print(f"  ratio strata-layer / {ref}: hot path {per_op['strata-layer'] / per_op[ref]:.2f}, "
                  f"total {per_op_total['strata-layer'] / per_op_total[ref]:.2f}")
    if not args.iterations:  # --iterations 0: the tiny-op loop only
        return 0
    print(f"{args.model} batch 1: predict CPU time (median over {args.repeats} processes of the median of "
          f"{args.iterations} calls; 1 intra-op thread)")
    for c in configs:
        m = med[c]["model_ns"]
        print(f"  {c:24s} {m / 1e6:9.3f} ms   overhead {100.0 * (m - base_model) / base_model:+7.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
