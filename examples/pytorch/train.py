#!/usr/bin/env python3
"""A small CPU training loop: a convolutional classifier on random data, N iterations, with an
evaluation pass every k iterations. Each iteration is a model-level "train_step" span, each
evaluation an "eval_step" span (attributes: iteration, batch_size), so iteration mining and the
layer analyses have a realistic, repetitive trace.

    strata record --level layer -- /usr/bin/python3 examples/pytorch/train.py --iterations 20 --eval-every 5
"""

import argparse
import os
import sys

try:
    import strata  # noqa: F401  (on PYTHONPATH under `strata record`)
except ImportError:  # run directly from a source checkout: spans are no-ops unless recording
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import strata.torch as st  # noqa: E402


class SmallNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--eval-every", type=int, default=5, help="evaluate every k iterations (0: never)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--eval-batches", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = SmallNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(args.batch, 3, 32, 32), torch.randint(0, 10, (args.batch,))) for _ in range(4)]
    eval_data = [(torch.randn(args.batch, 3, 32, 32), torch.randint(0, 10, (args.batch,)))
                 for _ in range(args.eval_batches)]
    for it in range(args.iterations):
        x, y = data[it % len(data)]
        with st.train_step(iteration=it, batch_size=args.batch):
            model.train()
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        if args.eval_every and (it + 1) % args.eval_every == 0:
            correct = 0
            with st.eval_step(iteration=it, batch_size=args.batch), torch.no_grad():
                model.eval()
                for ex, ey in eval_data:
                    correct += int((model(ex).argmax(1) == ey).sum())
            print(f"iteration {it + 1}: loss {loss.item():.3f}, eval accuracy "
                  f"{correct / (args.batch * len(eval_data)):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
