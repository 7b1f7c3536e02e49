#!/usr/bin/env python3
"""Writes a pair of small Kineto (torch.profiler) GPU traces of one training-like loop, BASE and NEW, for
`strata diff` (tests/python/test_diff.py, scripts/diff_gate_rates.py): per step a ProfilerStep#N
annotation, then a fixed sequence of ops (cpu_op with External id and Input Dims), each launching its
kernel through cudaLaunchKernel (correlation ids, ac2g flows) on one stream. Host times are jittered
and scaled by a random machine-load factor per trace; kernel times jittered (3%) and scaled by a
random clock factor; in NEW one kernel can be made slower (--slow-kernel, --slow). Deterministic for a
given --seed. The event layout follows scripts/gen_kineto.py (the V100 trace under tests/data/kineto).

    scripts/gen_kineto_steps.py --base a.json --new b.json --slow 1.3
"""
import argparse
import json
import random

# op, input dims, kernel, kernel microseconds
OPS = [
    ("aten::conv2d", [[32, 3, 224, 224], [64, 3, 7, 7]], "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw", 420.0),
    ("aten::batch_norm", [[32, 64, 112, 112]], "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>", 95.0),
    ("aten::relu_", [[32, 64, 112, 112]], "void at::native::vectorized_elementwise_kernel<4, at::native::relu>", 60.0),
    ("aten::max_pool2d", [[32, 64, 112, 112]], "void at::native::max_pool_forward_nchw<float, float>", 80.0),
    ("aten::conv2d", [[32, 64, 56, 56], [64, 64, 3, 3]], "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", 300.0),
    ("aten::linear", [[32, 512], [1000, 512]], "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", 45.0),
    ("aten::add_", [[32, 1000], [32, 1000]], "void at::native::vectorized_elementwise_kernel<4, at::native::add>", 8.0),
]
PLANTED_KERNEL = OPS[4][2]  # 30% of the device time


def trace_events(seed, host_factor, device_factor, steps, slow_kernel=None, slow=1.0, ops=OPS):
    rng = random.Random(seed)
    pid, tid, stream = 4242, 4242, 7
    events = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python3"}},
              {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python3"}}]
    t = gpu_free = 1_000_000.0
    ext = corr = 100
    for step in range(steps):
        step_start = t
        inner = []
        for op, dims, kernel, kernel_us in ops:
            ext += 1
            corr += 1
            op_start = t
            t += 6.0 * host_factor * rng.uniform(0.9, 1.1)
            launch = t
            t += 5.0 * host_factor * rng.uniform(0.9, 1.1)
            gpu_ts = max(launch + 4.0, gpu_free)
            dur = kernel_us * device_factor * rng.uniform(0.97, 1.03) * (slow if kernel == slow_kernel else 1.0)
            gpu_free = gpu_ts + dur + 1.0
            t += 4.0 * host_factor * rng.uniform(0.9, 1.1)
            inner.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": tid, "ts": round(op_start, 3),
                          "dur": round(t - op_start, 3),
                          "args": {"External id": ext, "Input Dims": dims, "Input type": ["float"] * len(dims)}})
            inner.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                          "ts": round(launch, 3), "dur": round(5.0 * host_factor, 3),
                          "args": {"External id": ext, "correlation": corr}})
            inner.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": round(launch, 3), "cat": "ac2g",
                          "name": "ac2g"})
            inner.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream, "ts": round(gpu_ts, 3),
                          "dur": round(dur, 3), "args": {"External id": ext, "device": 0, "stream": stream,
                                                         "correlation": corr}})
            inner.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": round(gpu_ts, 3), "cat": "ac2g",
                          "name": "ac2g", "bp": "e"})
        # The step ends with a synchronization: the host waits for the device.
        t = max(t, gpu_free) + 10.0 * host_factor
        events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": pid,
                       "tid": tid, "ts": round(step_start, 3), "dur": round(t - step_start, 3), "args": {}})
        events.extend(inner)
        t += 20.0
    return events


def write(path, events):
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3",
                                                              "computeMajor": 9, "computeMinor": 0}],
                   "traceEvents": events, "traceName": "generated", "displayTimeUnit": "ms"}, f)


def write_pair(base, new, seed=1, slow_kernel=None, slow=1.0, steps=12, ops=OPS):
    rng = random.Random(seed)
    write(base, trace_events(seed * 2, rng.uniform(0.9, 1.2), rng.uniform(0.98, 1.02), steps, ops=ops))
    write(new, trace_events(seed * 2 + 1, rng.uniform(0.9, 1.2), rng.uniform(0.98, 1.02), steps, slow_kernel, slow,
                            ops))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--slow-kernel", default=PLANTED_KERNEL, help="the kernel made slower in NEW")
    ap.add_argument("--slow", type=float, default=1.0, help="its time in NEW as a multiple (1: unchanged)")
    a = ap.parse_args()
    write_pair(a.base, a.new, a.seed, a.slow_kernel, a.slow, a.steps)


if __name__ == "__main__":
    main()
