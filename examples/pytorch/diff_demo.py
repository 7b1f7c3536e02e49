#!/usr/bin/env python3
"""A small CNN whose classifier head can be made slower, for `strata diff` (docs/diff.md):

    strata record --level layer --runs 5 -o base.strata -- /usr/bin/python3 examples/pytorch/diff_demo.py
    STRATA_DEMO_SLOW_HEAD_MS=3 strata record --level layer --runs 5 -o slow.strata -- \\
        /usr/bin/python3 examples/pytorch/diff_demo.py
    strata diff base.strata slow.strata --fail-on-regression

STRATA_DEMO_SLOW_HEAD_MS=N adds N ms of work to every call of the head (a record_function scope
named "classifier_head", as a change to one module of a real model would). Weights are random.
"""

import argparse
import os
import sys
import time

try:
    import strata  # noqa: F401  (on PYTHONPATH under `strata record`)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

import strata.torch as st  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self, slow_ms: float):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4))
        self.head = torch.nn.Linear(32 * 4 * 4, 10)
        self.slow_ms = slow_ms

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        with torch.autograd.profiler.record_function("classifier_head"):
            if self.slow_ms > 0:
                # Busy work, not sleep: the head really costs CPU, as a heavier layer would.
                end = time.perf_counter() + self.slow_ms / 1e3
                while time.perf_counter() < end:
                    pass
            return self.head(x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net(float(os.environ.get("STRATA_DEMO_SLOW_HEAD_MS", "0"))).eval()
    x = torch.randn(args.batch, 3, 32, 32)
    with torch.no_grad():
        model(x)  # warm-up
        for it in range(args.iterations):
            with st.predict_step(model="diff_demo", batch_size=args.batch, iteration=it):
                model(x)
    return 0


if __name__ == "__main__":
    sys.exit(main())
