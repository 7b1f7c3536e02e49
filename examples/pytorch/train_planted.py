#!/usr/bin/env python3
"""Training scripts with one planted bottleneck each, and nothing of Strata in them.

`strata summary` must name the bottleneck of a recording of each (tests/python/test_summary_planted.py):

  --case input      slow Dataset.__getitem__ (a sleep per sample), DataLoader num_workers=0: each step
                    waits for its batch longer than it computes                       -> input
  --case compute    a convolutional model heavy enough to dominate, a DataLoader with 2 workers,
                    an evaluation pass every --eval-every steps                      -> cpu_compute
  --case overhead   a tiny MLP on batch 1: every op is a few microseconds, Python and the framework's
                    dispatch hold the step                                           -> framework_overhead
  --case memory     like overhead, but each step keeps its loss graph alive in a list: memory grows
  --case threads    intra-op threads x DataLoader worker processes > the cores the script may use: each of
                    2 workers sets torch.set_num_threads(cores) and runs an elementwise op over
                    cores x 2^19 floats per sample (split evenly among its threads, so every thread
                    does a like share of the work however loaded the machine)  -> thread_oversubscription

The program measures itself with its own clock (time.perf_counter) and prints one JSON line at the
end: steps run, evaluation passes and after which steps, the time the loop spent waiting for its
batches, the loop's total time, num_workers and threads, so a test compares Strata's answers with
numbers Strata did not produce.

    strata record --level layer -o /tmp/t.strata -- /usr/bin/python3 examples/pytorch/train_planted.py --case input
    strata summary /tmp/t.strata
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

CASES = ("input", "compute", "overhead", "memory", "threads")


class Samples(Dataset):
    """`size` samples of shape `shape`, made from a seed per index; `sleep_s` per __getitem__; with
    `work_floats`, an elementwise op over that many floats per sample (intra-op parallel)."""

    def __init__(self, size: int, shape, classes: int, sleep_s: float, work_floats: int = 0) -> None:
        self.size, self.shape, self.classes, self.sleep_s = size, shape, classes, sleep_s
        self.work = torch.ones(work_floats) if work_floats else None

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.work is not None:
            torch.exp(self.work)
        g = torch.Generator().manual_seed(index)
        return torch.randn(self.shape, generator=g), index % self.classes


def conv_model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))


def tiny_mlp(classes: int) -> nn.Module:
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, classes))


def setup(case: str, args):
    """(model, loader, eval_loader or None) for the case."""
    classes = 4
    if case == "input":
        data = Samples(args.steps * args.batch, (8,), classes, sleep_s=args.sleep_ms / 1e3)
        return tiny_mlp(classes), DataLoader(data, batch_size=args.batch, num_workers=0), None
    if case == "threads":
        threads = args.threads
        data = Samples(args.steps * args.batch, (8,), classes, sleep_s=0, work_floats=threads * 2 ** 19)
        loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers,
                            worker_init_fn=lambda _: torch.set_num_threads(threads))
        return tiny_mlp(classes), loader, None
    if case == "compute":
        data = Samples(args.steps * args.batch, (3, 32, 32), classes, sleep_s=0)
        loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers)
        evals = DataLoader(Samples(2 * args.batch, (3, 32, 32), classes, 0), batch_size=args.batch) \
            if args.eval_every else None
        return conv_model(classes), loader, evals
    # Batches already in memory (a list, no DataLoader): nothing but the framework's own work.
    return tiny_mlp(classes), [(torch.randn(1, 8), torch.tensor([i % classes])) for i in range(args.steps)], None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", required=True, choices=CASES)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers (compute, threads)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--eval-every", type=int, default=0, help="evaluation pass after every K-th step")
    ap.add_argument("--sleep-ms", type=float, default=2.0, help="per sample (input)")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))  # the CPUs this process may use (Strata's end.cpus)
    if args.case == "threads":
        # Oversubscribe on purpose: the main process and each worker get as many intra-op threads as
        # there are cores, so (1 + workers) x threads > 1.5 x cores on any machine.
        args.threads = max(args.threads, cores)
    # The threads case forks its workers before the main process runs anything in parallel: GNU
    # OpenMP's thread pool does not survive a fork, and a child that inherits one hangs in its first
    # parallel op.
    torch.set_num_threads(1 if args.case == "threads" else args.threads)
    torch.manual_seed(0)
    model, loader, eval_loader = setup(args.case, args)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    kept = []  # the memory case keeps every step's graph alive
    evals, data_wait_s, steps = [], 0.0, 0
    loop_start = time.perf_counter()
    batches = iter(loader)
    torch.set_num_threads(args.threads)
    while steps < args.steps:
        fetch = time.perf_counter()
        try:
            x, y = next(batches)
        except StopIteration:
            break
        data_wait_s += time.perf_counter() - fetch
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if args.case == "memory":
            kept.append(loss * torch.ones(64, 1024))  # 256 KiB more every step
        steps += 1
        if eval_loader is not None and steps % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                for ex, _ in eval_loader:
                    model(ex)
            model.train()
            evals.append(steps - 1)
    loop_s = time.perf_counter() - loop_start
    print(json.dumps({"case": args.case, "steps": steps, "evals": len(evals), "eval_after": evals,
                      "data_wait_ms": data_wait_s * 1e3, "loop_ms": loop_s * 1e3,
                      "num_workers": getattr(loader, "num_workers", 0), "threads": torch.get_num_threads(),
                      "cpus": cores, "kept": len(kept)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
