#!/usr/bin/env python3
"""Inference with a torchvision model at several batch sizes, each call marked as a model-level
"predict" span (batch_size, model and iteration as attributes). Weights are random (no downloads).

    strata record --runs 5 -- /usr/bin/python3 examples/pytorch/infer.py --model resnet50 --batch 1,2,4,8
    strata record --level layer -- /usr/bin/python3 examples/pytorch/infer.py --model resnet18 --batch 1
"""

import argparse
import os
import sys
import time

try:
    import strata  # noqa: F401  (on PYTHONPATH under `strata record`)
except ImportError:  # run directly from a source checkout: spans are no-ops unless recording
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torchvision.models as models  # noqa: E402

import strata.torch as st  # noqa: E402


def build(name: str) -> torch.nn.Module:
    if not hasattr(models, name):
        raise SystemExit(f"infer.py: unknown torchvision model {name!r}")
    kwargs = {}
    if name in ("googlenet", "inception_v3"):
        kwargs = {"aux_logits": False, "init_weights": False}
    return getattr(models, name)(weights=None, **kwargs).eval()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes, e.g. 1,2,4,8")
    ap.add_argument("--iterations", type=int, default=3, help="predict calls per batch size")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls per batch size before them")
    ap.add_argument("--image-size", type=int, default=0, help="input height/width (default: the model's)")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave as is)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda: each predict then ends with a "
                    "torch.cuda.synchronize, so its span holds the GPU work")
    args = ap.parse_args()
    try:
        batches = [int(b) for b in args.batch.split(",") if b.strip()]
    except ValueError:
        raise SystemExit(f"infer.py: --batch {args.batch!r} is not a comma-separated list of integers")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("infer.py: --device cuda: no CUDA device")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model = build(args.model).to(device)
    size = args.image_size or (299 if args.model == "inception_v3" else 224)
    with torch.no_grad():
        for batch in batches:
            x = torch.randn(batch, 3, size, size, device=device)
            for _ in range(args.warmup):
                model(x)
            sync()
            for it in range(args.iterations):
                t0 = time.perf_counter()
                with st.predict_step(model=args.model, batch_size=batch, iteration=it):
                    model(x)
                    sync()
                ms = (time.perf_counter() - t0) * 1e3
            print(f"{args.model} batch {batch}: last predict {ms:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
