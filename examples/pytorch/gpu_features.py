#!/usr/bin/env python3
"""GPU features the first H100 validation did not cover, in one small program: a CUDA graph captured
once and replayed, an NCCL all-reduce (one rank, so one GPU is enough: its kernel is still NCCL's),
and two streams running matrix products concurrently. (On one H100 with PyTorch 2.11 the one-rank
all-reduce launched no NCCL kernel at all: collectives need two GPUs to be seen; --nccl-calls 0
skips the part.) Each part is an NVTX range of its name.
With --kineto PATH the same work runs under torch.profiler and its Chrome trace is written there,
the reference `strata record --level device` is compared with (kernel names and counts).

    strata record --level device -o features.strata -- python3 examples/pytorch/gpu_features.py
    python3 examples/pytorch/gpu_features.py --kineto features_kineto.json

Prints one line per part: "graph: R replays of N kernels", "nccl: K all_reduce", "streams: ...".
"""

import argparse
import contextlib
import os
import sys

import torch
import torch.nn as nn


def graph_part(replays: int) -> None:
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(512, 1024), nn.GELU(), nn.Linear(1024, 512), nn.LayerNorm(512)).to(dev)
    static_x = torch.randn(64, 512, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs asks
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        static_y = model(static_x)
    torch.cuda.synchronize()
    with torch.cuda.nvtx.range("graph_replays"):
        for i in range(replays):
            static_x.copy_(torch.full_like(static_x, float(i)))
            graph.replay()
        torch.cuda.synchronize()
    print(f"graph: {replays} replays, output sum {float(static_y.sum()):.3f}")


def nccl_part(calls: int) -> None:
    import torch.distributed as dist

    if calls <= 0:
        return
    if not dist.is_nccl_available():
        print("nccl: not available in this PyTorch")
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    t = torch.ones(1 << 22, device="cuda")
    with torch.cuda.nvtx.range("nccl_all_reduce"):
        for _ in range(calls):
            dist.all_reduce(t)
        torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"nccl: {calls} all_reduce of {t.numel()} floats, t[0]={float(t[0]):.0f}")


def streams_part(products: int) -> None:
    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda")
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.nvtx.range("two_streams"):
        for _ in range(products):
            with torch.cuda.stream(s1):
                c1 = a @ b
            with torch.cuda.stream(s2):
                c2 = b @ a
        torch.cuda.synchronize()
    print(f"streams: {products} products on each of 2 streams, {float(c1[0, 0] + c2[0, 0]):.3f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--nccl-calls", type=int, default=10)
    ap.add_argument("--products", type=int, default=10)
    ap.add_argument("--kineto", metavar="PATH", help="run under torch.profiler and write its trace here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_features.py: no CUDA device", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    profiler = contextlib.nullcontext()
    if args.kineto:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with profiler as prof:
        graph_part(args.replays)
        nccl_part(args.nccl_calls)
        streams_part(args.products)
    if args.kineto:
        prof.export_chrome_trace(args.kineto)
    return 0


if __name__ == "__main__":
    sys.exit(main())
