#!/usr/bin/env python3
"""The floor of nn.Module paths by global forward hooks: resnet18 batch 1 forward timed (thread CPU time)
with no hooks and with empty global pre/post hooks, alternating in one process (30 rounds of 5
calls, medians). What PyTorch itself charges for a global hook per module call, apart from what
Strata's hooks and the per-op module attribute cost (docs/performance/torch.md).
    /usr/bin/python3 bench/torch/module_hook_floor.py
"""
import time, statistics, torch, torchvision
torch.manual_seed(0)
m = torchvision.models.resnet18(weights=None).eval(); x = torch.randn(1, 3, 224, 224)
nn = torch.nn.modules.module
def pre(mod, inp): return None
def post(mod, inp, out): return None
def run(n=5):
    ts = []
    for _ in range(n):
        t = time.thread_time_ns(); m(x); ts.append(time.thread_time_ns() - t)
    return statistics.median(ts)
with torch.no_grad():
    for _ in range(3): m(x)
    res = {"off": [], "empty_hooks": []}
    for r in range(30):
        res["off"].append(run())
        h1 = nn.register_module_forward_pre_hook(pre); h2 = nn.register_module_forward_hook(post)
        res["empty_hooks"].append(run())
        h1.remove(); h2.remove()
    calls = [0]
    def count(mod, inp): calls[0] += 1
    h = nn.register_module_forward_pre_hook(count); m(x); h.remove()
off = statistics.median(res["off"]); hk = statistics.median(res["empty_hooks"])
ratios = sorted(b / a - 1 for a, b in zip(res["off"], res["empty_hooks"]))
print(f"module calls per forward {calls[0]}; off {off/1e6:.3f} ms, empty global hooks {hk/1e6:.3f} ms: "
      f"+{100*(hk/off-1):.2f}% (paired median {100*ratios[15]:.2f}%, range {100*ratios[0]:.2f}..{100*ratios[-1]:.2f}); "
      f"{(hk-off)/calls[0]/1e3:.2f} us per module call")
