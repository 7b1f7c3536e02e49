#!/usr/bin/env python3
"""Writes a synthetic Kineto (torch.profiler) trace JSON of about --mb megabytes, for import benchmarks.

Its shape follows the real V100 training trace under tests/data/kineto: per step a ProfilerStep#N
annotation, then ops (cpu_op with External id, Input Dims, Input type) on a main thread and an autograd
thread, each launching kernels through cudaLaunchKernel (correlation ids, ac2g flow pairs), some copies
and memsets, fwdbwd flows, metadata events, and Kineto's deviceProperties header. Deterministic for a
given --seed. Usage: scripts/gen_kineto.py --mb 500 --out /tmp/kineto_500mb.json
"""
import argparse
import json
import random

KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "volta_sgemm_128x64_nn",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, float const*)",
    "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, unsigned int, "
    "float, 4>)",
    "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_32x3_nn",
]
OPS = ["aten::linear", "aten::addmm", "aten::conv2d", "aten::relu", "aten::add", "aten::layer_norm",
       "aten::softmax", "aten::matmul", "aten::dropout", "aten::mul"]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--mb", type=float, default=500.0, help="approximate output size in MB (10^6 bytes)")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    target = int(a.mb * 1e6)
    pid, main_tid, bwd_tid, stream = 4242, 4242, 4300, 7
    header = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
                              "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
                              "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                              "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
                              "sharedMemPerMultiprocessor": 233472, "numSms": 132,
                              "sharedMemPerBlockOptin": 232448}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
    }
    written = 0
    with open(a.out, "w", buffering=1 << 20) as f:
        head = json.dumps(header)[:-1] + ', "traceEvents": [\n'
        f.write(head)
        written += len(head)
        first = True

        def emit(event):
            nonlocal first, written
            line = ("" if first else ",\n") + json.dumps(event, separators=(", ", ": "))
            first = False
            f.write(line)
            written += len(line)

        emit({"name": "process_name", "ph": "M", "ts": 1712195495501688.5, "pid": pid, "tid": 0,
              "args": {"name": "python3"}})
        emit({"name": "thread_name", "ph": "M", "ts": 1712195495501688.5, "pid": pid, "tid": bwd_tid,
              "args": {"name": "autograd thread"}})
        emit({"name": "process_name", "ph": "M", "ts": 1712195495501688.5, "pid": 0, "tid": 0,
              "args": {"name": "python3"}})
        t = 1712195495505543.2  # microseconds
        correlation, external, step, flow = 135071, 1, 0, 1
        gpu_free = t
        while written < target:
            ops_in_step = 200
            step_start = t
            step_events = []
            for k in range(ops_in_step):
                tid = main_tid if k < ops_in_step // 2 else bwd_tid
                op = OPS[rng.randrange(len(OPS))]
                op_start = t
                external += 1
                launches = rng.randint(1, 3)
                children = []
                for _ in range(launches):
                    t += rng.uniform(1.0, 4.0)
                    correlation += 1
                    dur = rng.uniform(3.0, 9.0)
                    # One stream runs one thing at a time: device work queues behind the previous one.
                    gpu_ts = max(t + rng.uniform(5.0, 30.0), gpu_free)
                    gpu_dur = rng.uniform(2.0, 200.0)
                    gpu_free = gpu_ts + gpu_dur + 0.5
                    r = rng.random()
                    if r < 0.85:
                        call, cat = "cudaLaunchKernel", "kernel"
                        name = KERNELS[rng.randrange(len(KERNELS))]
                        dev_args = {"External id": external, "queued": 0, "device": 0, "context": 1,
                                    "stream": stream, "correlation": correlation,
                                    "registers per thread": rng.choice([32, 64, 128, 168]),
                                    "shared memory": rng.choice([0, 16384, 49152]), "blocks per SM": 1.2,
                                    "warps per SM": 9.6, "grid": [rng.randint(1, 4096), 1, 1],
                                    "block": [rng.choice([128, 256, 512]), 1, 1],
                                    "est. achieved occupancy %": rng.randint(10, 100)}
                    elif r < 0.95:
                        call, cat, name = "cudaMemcpyAsync", "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"
                        dev_args = {"External id": external, "device": 0, "context": 1, "stream": stream,
                                    "correlation": correlation, "bytes": rng.randint(256, 1 << 24),
                                    "memory bandwidth (GB/s)": rng.uniform(1.0, 20.0)}
                    else:
                        call, cat, name = "cudaMemsetAsync", "gpu_memset", "Memset (Device)"
                        dev_args = {"External id": external, "device": 0, "context": 1, "stream": stream,
                                    "correlation": correlation, "bytes": rng.randint(256, 1 << 24),
                                    "memory bandwidth (GB/s)": rng.uniform(100.0, 900.0)}
                    children.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": pid, "tid": tid,
                                     "ts": round(t, 3), "dur": round(dur, 3),
                                     "args": {"External id": external, "cbid": 211,
                                              "correlation": correlation}})
                    children.append({"ph": "s", "id": correlation, "pid": pid, "tid": tid, "ts": round(t, 3),
                                     "cat": "ac2g", "name": "ac2g"})
                    children.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
                                     "ts": round(gpu_ts, 3), "dur": round(gpu_dur, 3),
                                     "args": dev_args})
                    children.append({"ph": "f", "id": correlation, "pid": 0, "tid": stream,
                                     "ts": round(gpu_ts, 3), "cat": "ac2g", "name": "ac2g", "bp": "e"})
                    t += dur
                t += rng.uniform(1.0, 3.0)
                step_events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": tid,
                                    "ts": round(op_start, 3), "dur": round(t - op_start, 3),
                                    "args": {"External id": external, "Sequence number": external,
                                             "Fwd thread id": 0, "Record function id": 0,
                                             "Input Dims": [[32, 512], [512, 512], []],
                                             "Input type": ["float", "float", ""], "Ev Idx": external}})
                step_events.extend(children)
                if k % 50 == 0:
                    step_events.append({"ph": "s", "id": flow, "pid": pid, "tid": tid,
                                        "ts": round(op_start, 3), "cat": "fwdbwd", "name": "fwdbwd"})
                    step_events.append({"ph": "f", "id": flow, "pid": pid, "tid": tid,
                                        "ts": round(t - 1.5, 3), "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
                    flow += 1
            emit({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": pid,
                  "tid": main_tid, "ts": round(step_start, 3), "dur": round(t - step_start, 3),
                  "args": {"External id": external}})
            for e in step_events:
                emit(e)
            step += 1
            t += 10.0
        tail = '\n], "traceName": "synthetic", "displayTimeUnit": "ms"}\n'
        f.write(tail)


if __name__ == "__main__":
    main()
