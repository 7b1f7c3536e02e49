#!/usr/bin/python3
"""Exports models to ONNX for the lower-bound tests and the acceptance runs.

Weights are stripped: every initializer with more than 64 elements keeps its data type and dims but
loses its data, so files stay a few KB while shape inference (which needs only dims, plus the values
of small shape tensors such as Reshape targets) still works. Strata ignores weights anyway.

The graph is exported without its parameters (export_params=False: they become graph inputs with
shapes, after the same BatchNorm folding) and the parameters are turned back into data-less
initializers, so vgg16 never writes or serializes its 528 MB of weights (about 4 s instead of 15 s
here). Small parameters (64 elements or fewer) get zeros. When that graph does not shape-infer
completely (a Reshape whose target was a folded parameter, say) the model is exported with its
weights into memory and stripped instead.

usage: /usr/bin/python3 export_models.py OUT_DIR [NAME...]
NAME: a torchvision model (resnet18 resnet50 googlenet mobilenet_v2 densenet121 squeezenet1_1 vgg16
alexnet) or one of the small test nets (chain_net branch_net).  Default: the two small nets.
"""
import io
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


def params_to_initializers(model, keep_inputs):
    """Graph inputs other than `keep_inputs` (parameters, exported without data) -> initializers."""
    params = [i for i in model.graph.input if i.name not in keep_inputs]
    for p in params:
        tensor_type = p.type.tensor_type
        dims = [d.dim_value for d in tensor_type.shape.dim]
        init = onnx.TensorProto(name=p.name, data_type=tensor_type.elem_type, dims=dims)
        elements = 1
        for d in dims:
            elements *= d
        if elements <= 64:
            dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[tensor_type.elem_type]
            init.raw_data = bytes(elements * dtype.itemsize)
        model.graph.initializer.append(init)
    kept = [i for i in model.graph.input if i.name in keep_inputs]
    del model.graph.input[:]
    model.graph.input.extend(kept)


def fully_inferred(model):
    """True when shape inference gives every node output a static shape."""
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        tensor_type = v.type.tensor_type  # a scalar has a shape with no dims
        known[v.name] = tensor_type.HasField("shape") and all(
            d.HasField("dim_value") and d.dim_value > 0 for d in tensor_type.shape.dim)
    for init in inferred.graph.initializer:
        known[init.name] = True
    return all(known.get(o, False) for n in inferred.graph.node for o in n.output if o)


def export_bytes(net, shape, export_params):
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(net, torch.randn(*shape), buf, opset_version=13, export_params=export_params,
                          input_names=["input"], output_names=["output"])
    return onnx.load_from_string(buf.getvalue())


def export(name, out_dir):
    torch.manual_seed(0)
    net, shape = build(name)
    net.eval()
    path = os.path.join(out_dir, name + ".onnx")
    model = export_bytes(net, shape, export_params=False)
    params_to_initializers(model, {"input"})
    how = "structure only"
    if not fully_inferred(model):
        model = export_bytes(net, shape, export_params=True)
        how = "exported with weights, then stripped"
    strip_weights(model)
    onnx.save(model, path)
    print(f"{path}: {len(model.graph.node)} nodes, {os.path.getsize(path)} bytes ({how})")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for n in sys.argv[2:] or ["chain_net", "branch_net"]:
        export(n, out)
