#!/usr/bin/env python3
"""Overhead of Strata's tracing levels on a real model (default resnet18, batch 1), measured inside
one process by interleaving blocks of predict calls with tracing off and on.

Why in-process: across processes, resnet18 batch 1 on this machine varies by 5-10% from process to
process (where the allocator puts weights and activations), which hides a 1% effect however many
processes are run. Inside one process the model, its tensors and the interpreter are the same for
every block; only the tracing state differs. Blocks rotate through the modes (off, model, layer,
library) so slow drift in machine load falls on every mode alike.

    STRATA_BUILD_DIR=build /usr/bin/python3 bench/torch/model_overhead.py [--rounds 30] [--block 5]
        [--threads 1] [--processes 3] [--model resnet18] [--batch 1]

Modes, each a real Strata session started before the block and stopped after it (start/stop are
outside the timed region; the writer thread runs during the block):
  off      no session (predict_step spans are gated off: one level check each)
  model    session at model level: one predict span per call
  layer    + PyTorch layer tracing (RecordFunction callback: every aten op with shapes, module paths)
  library  + oneDNN primitives (libstrata_onednn.so preloaded into the child process)
  layer:noshapes / layer:nomodules   layer without input shapes / without nn.Module paths
  layer:nomemory   layer with the memory tracking of ops switched off (the allocator wrapper stays)
  torch.profiler / torch.profiler+shapes   the legacy autograd profiler over the block, for reference
  rf-empty / rf-empty+shapes   PyTorch's RecordFunction with an empty callback (libstrata_torch's
           benchmark seam): the floor any per-op tracer pays, without / with input capture

Per round, overhead = (median call time in the mode's block) / (median in that round's off block) - 1;
reported: median over rounds with a bootstrap 95% interval, per process and pooled. Wall time of
the predict call (the user's latency) and the calling thread's CPU time are both given.
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, os, sys, time
import torch, torchvision
model_name, batch, threads, rounds, block, modes = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                                   int(sys.argv[4]), int(sys.argv[5]), sys.argv[6].split(","))
if threads:
    torch.set_num_threads(threads)
sys.path.insert(0, os.environ["STRATA_PY"])
import strata, strata.torch as st
out_dir = os.environ["BENCH_TMP"]
torch.manual_seed(0)
m = torchvision.models.__dict__[model_name](weights=None).eval()
x = torch.randn(batch, 3, 224, 224)
results = {mode: [] for mode in modes}
ops = {mode: [] for mode in modes}
with torch.no_grad():
    for _ in range(3):
        m(x)
    n = 0
    for r in range(rounds):
        for mode in modes:
            prof = None
            if mode.startswith("rf-empty"):  # PyTorch's RecordFunction with a callback that records nothing
                assert st._load_native().strata_torch_enable_empty(1 if mode.endswith("shapes") else 0) == 1
            elif mode.startswith("torch.profiler"):
                prof = torch.autograd.profiler.profile(record_shapes=mode.endswith("shapes"))
                prof.__enter__()
            elif mode != "off":
                n += 1
                base_mode = mode.split(":")[0]
                assert strata.start(os.path.join(out_dir, f"b{os.getpid()}_{n}.strata"),
                                    "model" if base_mode == "model" else "library" if base_mode == "library" else "layer")
                if base_mode in ("layer", "library"):
                    ops0 = st.ops_recorded()
                    assert st.enable_layer_tracing(record_shapes=":noshapes" not in mode,
                                                   module_paths=":nomodules" not in mode)
                    if ":nomemory" in mode:  # the tracking allocator stays, attributing nothing
                        st._runtime.strata_torch_rt_memory_stop()
            with st.predict_step(batch_size=batch):  # untimed warm-up call in this mode
                m(x)
            wall, cpu = [], []
            for _ in range(block):
                w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                with st.predict_step(batch_size=batch):
                    m(x)
                wall.append(time.perf_counter_ns() - w0)
                cpu.append(time.thread_time_ns() - c0)
            if mode.startswith("rf-empty"):
                st._load_native().strata_torch_disable()
            elif prof is not None:
                prof.__exit__(None, None, None)
            elif mode != "off":
                if base_mode in ("layer", "library"):
                    ops[mode].append(st.ops_recorded() - ops0)
                    st.disable_layer_tracing()
                strata.stop()
                os.unlink(os.path.join(out_dir, f"b{os.getpid()}_{n}.strata"))
            results[mode].append({"wall": wall, "cpu": cpu})
print(json.dumps({"results": results, "ops": ops, "threads": torch.get_num_threads()}))
'''


def bootstrap_ci(values, reps=2000, seed=1):
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(reps))
    return meds[int(0.025 * reps)], meds[int(0.975 * reps)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in the child (0: default)")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--block", type=int, default=5, help="timed calls per block (median taken)")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--modes", default="off,model,layer,library")
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="per-block statistic: median (typical call) or min (least disturbed call)")
    ap.add_argument("--json", help="write the raw per-call figures here")
    args = ap.parse_args()
    build = os.environ.get("STRATA_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    modes = args.modes.split(",")
    if modes[0] != "off":
        raise SystemExit("model_overhead.py: --modes must start with off (the reference)")
    env = dict(os.environ, STRATA_PY=os.path.join(build, "lib", "python"))
    if any(m.startswith("library") for m in modes):
        onednn = os.path.join(build, "lib", "libstrata_onednn.so")
        if not os.path.exists(onednn):
            raise SystemExit(f"model_overhead.py: {onednn} not found; build libstrata_onednn or drop 'library' from --modes")
        env["LD_PRELOAD"] = onednn
    stat = statistics.median if args.stat == "median" else min
    per_process = []
    with tempfile.TemporaryDirectory() as tmp:
        env["BENCH_TMP"] = tmp
        for _ in range(args.processes):
            out = subprocess.run([sys.executable, "-c", CHILD, args.model, str(args.batch), str(args.threads),
                                  str(args.rounds), str(args.block), ",".join(modes)],
                                 env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.stderr.write(out.stderr)
                return 1
            per_process.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.model} batch {args.batch}, threads {args.threads or 'default'}: {args.processes} processes x "
          f"{args.rounds} rounds x {args.block} timed calls per mode block ({args.stat} per block)")
    pooled = {(mode, k): [] for mode in modes[1:] for k in ("wall", "cpu")}
    for p, res in enumerate(per_process):
        base = res["results"]["off"]
        print(f"  process {p + 1} ({res['threads']} intra-op threads): off median wall {statistics.median(stat(b['wall']) for b in base) / 1e6:.3f} ms, "
              f"cpu {statistics.median(stat(b['cpu']) for b in base) / 1e6:.3f} ms")
        for mode in modes[1:]:
            line = f"    {mode:22s}"
            for k in ("wall", "cpu"):
                ratios = [100.0 * (stat(b[k]) / stat(o[k]) - 1.0) for b, o in zip(res["results"][mode], base)]
                pooled[(mode, k)] += ratios
                lo, hi = bootstrap_ci(ratios)
                line += f"  {k} {statistics.median(ratios):+6.2f}% [{lo:+.2f}, {hi:+.2f}]"
            if res["ops"].get(mode):
                line += f"  ops/call {statistics.median(res['ops'][mode]) / (args.block + 1):.0f}"
            print(line)
    print("  pooled (median over all rounds, bootstrap 95% interval):")
    for mode in modes[1:]:
        line = f"    {mode:22s}"
        for k in ("wall", "cpu"):
            lo, hi = bootstrap_ci(pooled[(mode, k)])
            line += f"  {k} {statistics.median(pooled[(mode, k)]):+6.2f}% [{lo:+.2f}, {hi:+.2f}]"
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(per_process, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
