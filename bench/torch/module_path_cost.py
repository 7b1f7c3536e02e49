#!/usr/bin/env python3
"""What nn.Module paths cost per module call in layer tracing, apart from the per-op tracer: a model of
many tiny modules (100 x Sequential(Linear(8, 8), ReLU), 301 module calls and 1,200 ops per forward,
batch 1), one process per mode, thread CPU time of the forward, median of REPS calls:

    off         no tracing
    emptyhooks  PyTorch's global forward pre/post hooks registered, doing nothing (its own dispatch)
    nomodules   layer tracing (shapes), no module paths
    modules     layer tracing with module paths (the default)

    for m in off emptyhooks nomodules modules; do
        STRATA_BUILD_DIR=build /usr/bin/python3 bench/torch/module_path_cost.py $m 400; done

(modules - nomodules) / 301 is the module paths' cost per module call; (emptyhooks - off) / 301 the part
PyTorch charges for any global hook (docs/performance/torch.md).
"""
import os
import statistics
import sys
import tempfile
import time

import torch
torch.set_num_threads(1)
sys.path.insert(0, os.path.join(os.environ["STRATA_BUILD_DIR"], "lib", "python"))
import strata, strata.torch as st
mode = sys.argv[1]; reps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
m = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()) for _ in range(100)]).eval()
x = torch.randn(1, 8)
out = tempfile.mktemp(suffix=".strata")
with torch.no_grad():
    if mode == "emptyhooks":
        nnm = torch.nn.modules.module
        nnm.register_module_forward_pre_hook(lambda mod, inp: None)
        nnm.register_module_forward_hook(lambda mod, inp, o: None)
    elif mode != "off":
        strata.start(out, "layer")
        st.enable_layer_tracing(record_shapes=True, module_paths=(mode == "modules"))
    for _ in range(20): m(x)
    ts = []
    for _ in range(reps):
        t = time.thread_time_ns(); m(x); ts.append(time.thread_time_ns() - t)
    n = st.ops_recorded() if mode not in ("off", "emptyhooks") else 0
    if mode not in ("off", "emptyhooks"):
        st.disable_layer_tracing(); strata.stop()
        os.unlink(out)
print(f"{mode}: median forward {statistics.median(ts)/1e3:.1f} us, ops recorded {n}")
