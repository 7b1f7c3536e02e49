#!/usr/bin/python3
"""Exports models to ONNX for the lower-bound tests and the acceptance runs.

Weights are stripped: every initializer with more than 64 elements keeps its data type and dims but
loses its data, so files stay a few KB while shape inference (which needs only dims, plus the values
of small shape tensors such as Reshape targets) still works. Strata ignores weights anyway.

usage: /usr/bin/python3 export_models.py OUT_DIR [NAME...]
NAME: a torchvision model (resnet18 resnet50 googlenet mobilenet_v2 densenet121 squeezenet1_1 vgg16
alexnet) or one of the small test nets (chain_net branch_net).  Default: the two small nets.
"""
import os
import sys

import onnx
import torch
import torch.nn as nn

TORCHVISION = ["resnet18", "resnet50", "googlenet", "mobilenet_v2", "densenet121", "squeezenet1_1",
               "vgg16", "alexnet"]


class ChainNet(nn.Module):
    """conv-relu-conv-relu-pool-linear: a pure chain (parallel bound == sequential bound)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.relu2(self.conv2(self.relu1(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


class BranchNet(nn.Module):
    """Two parallel branches joined by a concat (inception-like); two identical 1x1 convs."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.a1 = nn.Conv2d(8, 8, 1)
        self.b1 = nn.Conv2d(8, 8, 1)
        self.b2 = nn.Conv2d(8, 8, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.relu(self.stem(x))
        return torch.cat([self.a1(x), self.b2(self.b1(x))], 1)


def build(name):
    if name == "chain_net":
        return ChainNet(), (1, 3, 16, 16)
    if name == "branch_net":
        return BranchNet(), (1, 3, 16, 16)
    import torchvision.models as models
    kwargs = {"aux_logits": False, "init_weights": False} if name == "googlenet" else {}
    return getattr(models, name)(**kwargs), (1, 3, 224, 224)


def strip_weights(model):
    stripped = 0
    for init in model.graph.initializer:
        elements = 1
        for d in init.dims:
            elements *= d
        if elements > 64:
            for field in ("raw_data", "float_data", "int64_data", "int32_data", "double_data"):
                init.ClearField(field)
            stripped += 1
    return stripped


def export(name, out_dir):
    torch.manual_seed(0)
    net, shape = build(name)
    net.eval()
    path = os.path.join(out_dir, name + ".onnx")
    with torch.no_grad():
        torch.onnx.export(net, torch.randn(*shape), path, opset_version=13,
                          input_names=["input"], output_names=["output"])
    model = onnx.load(path)
    strip_weights(model)
    onnx.save(model, path)
    print(f"{path}: {len(model.graph.node)} nodes, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for n in sys.argv[2:] or ["chain_net", "branch_net"]:
        export(n, out)
