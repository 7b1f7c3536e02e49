#!/usr/bin/env python3
"""Realistic CPU training loops with nested repetition, and nothing of Strata in them.

Each training step (the iteration a profiler should find) is: fetch a batch, zero_grad, forward,
loss, backward, optimizer step; with --grad-accum G it runs G forward/backward micro-batches before
one optimizer step; with --eval-every K an evaluation pass (eval mode, no_grad, --eval-batches
forward passes) follows every K-th step. The models repeat structure inside a step on purpose:
RNN time steps (their backward runs one autograd node group per time step), stacked transformer
blocks, per-parameter optimizer updates.

  --model cnn                  conv + BN + ReLU blocks, linear head, SGD with momentum
  --model lstm                 embedding, 2-layer LSTM, linear head, SGD
  --model gru_mlp              embedding + GRU + MLP, Adam
  --model transformer          2 stacked TransformerEncoderLayers, AdamW
  --model cnn_lstm_transformer conv + BN, a 2-layer LSTM, a TransformerEncoderLayer, SGD

    strata record --level layer -o /tmp/t.strata -- /usr/bin/python3 \\
        examples/pytorch/train_realistic.py --model gru_mlp --steps 400 --eval-every 50
    strata iterations /tmp/t.strata

The program prints one line at the end: the numbers of optimizer steps and evaluation passes run,
and after which steps the evaluations ran (0-based step indices), so a test can compare.
"""

import argparse
import json
import sys

import torch
import torch.nn as nn


class Cnn(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class Lstm(nn.Module):
    def __init__(self, vocab: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.rnn = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(x))
        return self.head(out[:, -1])


class GruMlp(nn.Module):
    def __init__(self, vocab: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.rnn = nn.GRU(16, 32, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(x))
        return self.mlp(out[:, -1])


class Transformer(nn.Module):
    def __init__(self, vocab: int, classes: int, blocks: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, blocks, enable_nested_tensor=False)
        self.head = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(x)).mean(1))


class CnnLstmTransformer(nn.Module):
    """Conv + BN over a 1-channel "spectrogram", its columns as a sequence into a 2-layer LSTM, then
    a TransformerEncoderLayer over the LSTM's outputs."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2))
        self.rnn = nn.LSTM(8 * 8, 32, num_layers=2, batch_first=True)
        self.encoder = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.conv(x)                                   # [B, 8, 8, T]
        seq = f.permute(0, 3, 1, 2).flatten(2)            # [B, T, 64]
        out, _ = self.rnn(seq)
        return self.head(self.encoder(out).mean(1))


MODELS = ("cnn", "lstm", "gru_mlp", "transformer", "cnn_lstm_transformer")


def build(name: str, batch: int, seq_len: int, classes: int = 10, vocab: int = 50):
    """The model, its optimizer and a function making an (input, target) batch from a seed tensor."""
    if name == "cnn":
        model = Cnn(classes)
        return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), \
            lambda: torch.randn(batch, 3, 16, 16)
    if name == "lstm":
        model = Lstm(vocab, classes)
        return model, torch.optim.SGD(model.parameters(), lr=0.05), \
            lambda: torch.randint(0, vocab, (batch, seq_len))
    if name == "gru_mlp":
        model = GruMlp(vocab, classes)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3), \
            lambda: torch.randint(0, vocab, (batch, seq_len))
    if name == "transformer":
        model = Transformer(vocab, classes)
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3), \
            lambda: torch.randint(0, vocab, (batch, seq_len))
    if name == "cnn_lstm_transformer":
        model = CnnLstmTransformer(classes)
        return model, torch.optim.SGD(model.parameters(), lr=0.01), \
            lambda: torch.randn(batch, 1, 16, 2 * seq_len)
    raise SystemExit(f"unknown --model {name!r}: expected one of {', '.join(MODELS)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="cnn", choices=MODELS)
    ap.add_argument("--steps", type=int, default=300, help="optimizer steps (training iterations)")
    ap.add_argument("--eval-every", type=int, default=0, help="evaluation pass after every K-th step (0: never)")
    ap.add_argument("--eval-batches", type=int, default=2, help="forward passes per evaluation")
    ap.add_argument("--grad-accum", type=int, default=1, help="micro-batches per optimizer step")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=12, help="time steps of the RNN/transformer inputs")
    ap.add_argument("--dataset", type=int, default=16, help="distinct batches cycled through")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.steps < 1 or args.grad_accum < 1 or args.eval_batches < 1 or args.eval_every < 0:
        raise SystemExit("--steps, --grad-accum and --eval-batches must be >= 1, --eval-every >= 0")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, optimizer, make_input = build(args.model, args.batch, args.seq_len)
    loss_fn = nn.CrossEntropyLoss()
    data = [(make_input(), torch.randint(0, 10, (args.batch,))) for _ in range(args.dataset)]
    eval_data = [(make_input(), torch.randint(0, 10, (args.batch,))) for _ in range(args.eval_batches)]
    evals = []
    batch_index = 0
    for step in range(args.steps):
        model.train()
        optimizer.zero_grad()
        for _ in range(args.grad_accum):
            x, y = data[batch_index % len(data)]
            batch_index += 1
            loss = loss_fn(model(x), y) / args.grad_accum
            loss.backward()
        optimizer.step()
        if args.eval_every and (step + 1) % args.eval_every == 0:
            model.eval()
            correct = 0
            with torch.no_grad():
                for ex, ey in eval_data:
                    correct += int((model(ex).argmax(1) == ey).sum())
            evals.append(step)
    print(json.dumps({"model": args.model, "steps": args.steps, "evals": len(evals), "eval_after": evals,
                      "grad_accum": args.grad_accum}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
