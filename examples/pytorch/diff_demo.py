#!/usr/bin/env python3
"""A small CNN fed by a DataLoader, with regressions that can be planted, for `strata diff` (docs/diff.md):

    strata record --level layer -o base.strata -- /usr/bin/python3 examples/pytorch/diff_demo.py
    STRATA_DEMO_SLOW_HEAD_MS=3 strata record --level layer -o slow.strata -- \\
        /usr/bin/python3 examples/pytorch/diff_demo.py
    strata diff base.strata slow.strata --fail-on-regression

Each step (a `predict_step` model span: the unit `strata diff` compares) takes a batch from a
single-process DataLoader and runs the model on it. Planted regressions, by environment variable:

- STRATA_DEMO_SLOW_HEAD_MS=N: about N ms of work (a fixed loop, sized on the shared VM) in every call of the head (a record_function scope
  named "classifier_head", as a heavier layer would: an existing item made slower);
- STRATA_DEMO_EXTRA_MM=N: an extra N x N matmul in the head (an op added to every step);
- STRATA_DEMO_POOL=N: the feature map pooled to N x N instead of 4 x 4 (the head's input, and the
  shapes of its ops, change);
- STRATA_DEMO_LOADER_MS=N: about N ms of work per batch in the dataset (default 1; doubling it doubles
  the DataLoader's cost).
Weights and data are random.
"""

import argparse
import os
import sys

try:
    import strata  # noqa: F401  (on PYTHONPATH under `strata record`)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402

import strata.torch as st  # noqa: E402


# Loop iterations that take about 1 ms on the shared 2-core VM when it has a CPU free (23 ns each,
# Python 3.11).
STEPS_PER_MS = 43000


def busy(ms: float):
    # A fixed amount of work, not a deadline or a sleep: it costs CPU as heavier code would, and a busier
    # machine slows it as much as the model's ops (a loop until a deadline would take the same wall time
    # however loaded the machine: an op that never follows the speed factor).
    x = 0
    for i in range(int(ms * STEPS_PER_MS)):
        x += i
    return x


class Net(torch.nn.Module):
    def __init__(self, slow_ms: float, extra_mm: int, pool: int):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(pool))
        self.head = torch.nn.Linear(32 * pool * pool, 10)
        self.slow_ms = slow_ms
        self.extra = torch.randn(extra_mm, extra_mm) if extra_mm > 0 else None

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        with torch.autograd.profiler.record_function("classifier_head"):
            if self.slow_ms > 0:
                busy(self.slow_ms)
            if self.extra is not None:
                torch.mm(self.extra, self.extra)
            return self.head(x)


class Images(torch.utils.data.Dataset):
    def __init__(self, n: int, batch: int, cost_ms: float):
        self.data = torch.randn(n, 3, 32, 32)
        self.per_item_ms = cost_ms / batch

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        busy(self.per_item_ms)
        return self.data[i]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--batch", type=int, default=4)
    args = ap.parse_args()
    env = os.environ.get
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net(float(env("STRATA_DEMO_SLOW_HEAD_MS", "0")), int(env("STRATA_DEMO_EXTRA_MM", "0")),
                int(env("STRATA_DEMO_POOL", "4"))).eval()
    data = Images(args.batch * (args.iterations + 1), args.batch, float(env("STRATA_DEMO_LOADER_MS", "1")))
    batches = iter(torch.utils.data.DataLoader(data, batch_size=args.batch, num_workers=0))
    with torch.no_grad():
        model(next(batches))  # warm-up
        for it in range(args.iterations):
            with st.predict_step(model="diff_demo", batch_size=args.batch, iteration=it):
                model(next(batches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
