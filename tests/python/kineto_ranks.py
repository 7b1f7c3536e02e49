"""Generated Kineto (PyTorch profiler) traces of one data-parallel job, one JSON file per rank, with
the structure the rank analyses read: ProfilerStep#N annotations, CPU ops that launch kernels
through cudaLaunchKernel (correlation ids), kernels on two compute streams plus a NCCL stream,
all-reduce collectives that start late on some ranks (stragglers), and a memcpy per step.
Timestamps carry sub-microsecond fractions so that rounding and unrounded sort keys matter.
Deterministic for a given (rank, world_size, steps): the same files on every run."""
import json
import random

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)"
KERNELS = ("volta_sgemm_128x64_nn", "vectorized_elementwise_kernel<4, float>", "reduce_kernel<512, 1>")


def _event(cat, name, pid, tid, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3),
            "dur": round(dur, 3), "args": args}


def rank_events(rank, world_size, steps):
    """The traceEvents of one rank: CPU thread pid 1000+rank, GPU 0 (Kineto's pid 0)."""
    rng = random.Random(0x5EED * 1000 + rank)
    pid, tid = 1000 + rank, 1000 + rank
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"trainer:{rank}"}}]
    # Ranks' clocks differ by a few microseconds; rank 3 and the last rank run slow (stragglers).
    t = 1_700_000_000_000.0 + rank * 3.125
    correlation = 1
    for step in range(steps):
        step_start = t
        ops = []
        for k in range(6):
            start = t + rng.uniform(1, 4)
            name = KERNELS[k % len(KERNELS)]
            launch = start + rng.uniform(0.5, 2)
            gpu = launch + rng.uniform(3, 12)
            dur = rng.uniform(8, 60) * (1.5 if rank in (3, world_size - 1) else 1)
            stream = 7 if k % 2 == 0 else 13
            ops.append(_event("cpu_op", "aten::" + ("mm" if k % 3 == 0 else "add"), pid, tid, start, 6.5,
                              **{"External id": correlation}))
            ops.append(_event("cuda_runtime", "cudaLaunchKernel", pid, tid, launch, 3.25, correlation=correlation,
                              **{"External id": correlation, "cbid": 211}))
            ops.append(_event("kernel", name, 0, stream, gpu, dur, device=0, stream=stream,
                              correlation=correlation, **{"External id": correlation}))
            correlation += 1
            t = start + 8
        # The all-reduce: launched when this rank reaches it; ranks that arrive late make others wait.
        start = t + rng.uniform(1, 5) + (25.5 if rank == 3 and step % 2 == 0 else 0)
        ops.append(_event("user_annotation", "nccl:all_reduce", pid, tid, start, 9.75,
                          **{"External id": correlation}))
        ops.append(_event("cuda_runtime", "cudaLaunchKernel", pid, tid, start + 1.5, 4.0, correlation=correlation,
                          **{"External id": correlation, "cbid": 211}))
        ops.append(_event("kernel", ALLREDUCE, 0, 20, start + 9.0, rng.uniform(30, 45), device=0, stream=20,
                          correlation=correlation, **{"External id": correlation}))
        correlation += 1
        copy = start + 12
        ops.append(_event("cuda_runtime", "cudaMemcpyAsync", pid, tid, copy, 2.5, correlation=correlation,
                          **{"External id": correlation, "cbid": 41}))
        ops.append(_event("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 0, 7, copy + 60, 1.875, device=0,
                          stream=7, correlation=correlation, bytes=4096, **{"External id": correlation}))
        correlation += 1
        t = copy + 80 + rng.uniform(0, 10)
        events.append(_event("user_annotation", f"ProfilerStep#{step}", pid, tid, step_start, t - step_start,
                             **{"External id": correlation}))
        correlation += 1
        events.extend(ops)
    return events


def write_ranks(directory, world_size, steps=4):
    """Writes rank0.json ... rank{world_size-1}.json into `directory`; returns their paths in rank order."""
    paths = []
    for rank in range(world_size):
        doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world_size},
               "traceEvents": rank_events(rank, world_size, steps)}
        path = f"{directory}/rank{rank}.json"
        with open(path, "w") as f:
            json.dump(doc, f)
        paths.append(path)
    return paths
