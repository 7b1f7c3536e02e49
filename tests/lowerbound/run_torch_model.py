#!/usr/bin/python3
"""Runs a torchvision model for inference on the CPU, each call marked as a Strata model-level span
(when the strata package is importable, as under `strata record`). The trace of this run is what
`strata lowerbound MODEL.onnx --trace RUN.strata` compares with the lower bound.

usage: strata record --level library -o RUN.strata -- /usr/bin/python3 run_torch_model.py NAME [ITERS]
"""
import sys

import torch
import torchvision.models as models

try:
    import strata.torch as st
except ImportError:  # plain run, no tracing
    st = None


def main():
    name = sys.argv[1]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
    net = getattr(models, name)(**kwargs).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        net(x)  # warm-up outside the measured calls
        for _ in range(iters):
            if st is not None:
                # threads: the framework's intra-op thread count, which the bound's benchmarks must
                # match (strata lowerbound --trace compares them).
                with st.predict_step(batch_size=1, threads=torch.get_num_threads()):
                    net(x)
            else:
                net(x)


if __name__ == "__main__":
    main()
