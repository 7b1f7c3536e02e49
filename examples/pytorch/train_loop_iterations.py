#!/usr/bin/env python3
"""A CPU training loop with no step markers, for marker-free iteration mining (strata iterations).

N training iterations (forward, loss, backward, SGD step) with an evaluation pass every k
iterations, and two optional injected problems, the CPU analogs of DeepProf's diagnosis cases:

  --host-work-ms MS   pure-Python work in every iteration, outside the model (the paper's
                      "graph growth" case: CPU instructions in the training loop) -> host-bound
  --input-copy-mb MB  every iteration copies an oversized input buffer of MB megabytes and uses only
                      a slice of it (the paper's oversized per-step transfer; on a CPU the transfer
                      is the host copy that stages the batch) -> copy-bound
  --host-work-per-copy K  with --input-copy-mb: the pure-Python work also lasts K times the last
                      copy, so the copies' share of the interval is about 1/(1+K) on any machine
                      (a fixed --host-work-ms next to a copy whose time depends on the machine's
                      memory speed and load gives a share that depends on them too)

    strata record --level layer -o /tmp/loop.strata -- /usr/bin/python3 \\
        examples/pytorch/train_loop_iterations.py --iterations 30 --eval-every 5
    strata iterations /tmp/loop.strata
"""

import argparse
import contextlib
import os
import sys
import time

try:
    import strata  # noqa: F401  (on PYTHONPATH under `strata record`)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import strata  # noqa: F401

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class Net(nn.Module):
    def __init__(self, features: int = 256, classes: int = 10) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                  nn.Linear(256, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def host_work(ms: float) -> int:
    """Busy Python work (no framework ops), standing in for per-step CPU work in the loop."""
    end = time.perf_counter() + ms / 1000.0
    acc = 0
    while time.perf_counter() < end:
        acc += sum(i * i for i in range(200))
    return acc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--eval-every", type=int, default=5, help="evaluation pass after every k-th iteration (0: never)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--host-work-ms", type=float, default=0.0)
    ap.add_argument("--input-copy-mb", type=float, default=0.0)
    ap.add_argument("--host-work-per-copy", type=float, default=0.0)
    ap.add_argument("--markers", action="store_true", help="also emit train_step/eval_step model spans (cross-check)")
    args = ap.parse_args()

    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    xs = torch.randn(4, args.batch, 256)
    ys = torch.randint(0, 10, (4, args.batch))
    x_eval = torch.randn(args.batch, 256)
    # The oversized input: a buffer far larger than the batch, copied whole every step.
    big_rows = int(args.input_copy_mb * 1e6 / (256 * 4)) if args.input_copy_mb > 0 else 0
    big = torch.randn(max(big_rows, args.batch), 256) if big_rows else None
    # The last copy's duration, for --host-work-per-copy (measured once before the loop for the first).
    copy_s = 0.0
    if big is not None and args.host_work_per_copy > 0:
        start = time.perf_counter()
        big.clone()
        copy_s = time.perf_counter() - start

    def marker(name: str, it: int):
        return strata.span(name, level="model", iteration=it) if args.markers else contextlib.nullcontext()

    for it in range(args.iterations):
        host_ms = args.host_work_ms + args.host_work_per_copy * copy_s * 1000.0
        if host_ms > 0:
            host_work(host_ms)
        if big is not None:
            start = time.perf_counter()
            staged = big.clone()           # the oversized per-step transfer
            copy_s = time.perf_counter() - start
            x = staged[: args.batch]
        else:
            x = xs[it % 4]
        y = ys[it % 4]
        with marker("train_step", it):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        if args.eval_every and (it + 1) % args.eval_every == 0:
            with marker("eval_step", it), torch.no_grad():
                model(x_eval).argmax(1)
    print(f"done: {args.iterations} iterations, final loss {loss.item():.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
