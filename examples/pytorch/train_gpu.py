#!/usr/bin/env python3
"""A small CUDA training loop for validating Strata's GPU collectors on a real GPU: a convolutional
stem (cuDNN) feeding a two-layer transformer encoder (cuBLAS GEMMs, scaled-dot-product attention)
under bf16 autocast, N steps on random data. Each step is a model-level "train_step" span (strata)
and an NVTX range of the same name; with --nvtx-ops every aten op is an NVTX range too
(torch.autograd.profiler.emit_nvtx), which `strata record --level layer` or deeper turns into layer
spans whatever PyTorch version runs. With --kineto PATH the same steps run under torch.profiler
(CPU + CUDA activities) and its Chrome trace is written to PATH: the reference Strata's own record
is compared with.

    strata record --level device -o gpu.strata -- python3 examples/pytorch/train_gpu.py --steps 20
    python3 examples/pytorch/train_gpu.py --steps 20 --kineto kineto.json

Prints one line "step_ms: median=M min=m steps=N" (wall time per step, synchronized), used to
measure the recorder's overhead against a plain run.
"""

import argparse
import contextlib
import os
import statistics
import sys
import time

try:
    import strata.torch as st
except ImportError:  # not under `strata record` and not installed: model spans are no-ops
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    try:
        import strata.torch as st
    except Exception:  # noqa: BLE001  (no libstrata at all: run untraced)
        st = None

import torch
import torch.nn as nn


class StemTransformer(nn.Module):
    def __init__(self, width: int = 256, layers: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, width, 3, stride=2, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2))
        layer = nn.TransformerEncoderLayer(width, nhead=8, dim_feedforward=4 * width, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.stem(x)                      # B, C, H, W
        tokens = f.flatten(2).transpose(1, 2)  # B, H*W, C
        return self.head(self.encoder(tokens).mean(dim=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--nvtx-ops", action="store_true", help="an NVTX range per aten op (emit_nvtx)")
    ap.add_argument("--kineto", metavar="PATH", help="run under torch.profiler and write its trace here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("train_gpu.py: no CUDA device", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = StemTransformer().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, 64, 64, device=dev)
    y = torch.randint(0, 10, (args.batch,), device=dev)

    def one_step(it: int) -> None:
        span = st.train_step(iteration=it, batch_size=args.batch) if st else contextlib.nullcontext()
        with span, torch.cuda.nvtx.range("train_step"):
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            torch.cuda.synchronize()

    one_step(-1)  # warm-up: cuDNN/cuBLAS heuristics, allocator
    profiler = contextlib.nullcontext()
    if args.kineto:
        from torch.profiler import ProfilerActivity, profile
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True)
    nvtx = torch.autograd.profiler.emit_nvtx(record_shapes=True) if args.nvtx_ops else contextlib.nullcontext()
    times = []
    with profiler as prof, nvtx:
        for it in range(args.steps):
            t0 = time.perf_counter()
            one_step(it)
            times.append((time.perf_counter() - t0) * 1e3)
            if args.kineto:
                prof.step()  # a ProfilerStep#N span per step, as training loops under torch.profiler have
    if args.kineto:
        prof.export_chrome_trace(args.kineto)
    print(f"step_ms: median={statistics.median(times):.3f} min={min(times):.3f} steps={len(times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
