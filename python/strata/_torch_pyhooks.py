"""The layer tracer's slower route, for a torch with no bridge (no C++ compiler, no headers, or the
compile failed): pure Python, no native code compiled against torch (docs/torch.md).

Ops come from a TorchDispatchMode entered on the thread that enabled tracing; each becomes a layer
span through libstrata_torch_rt.so (the same C entry points the compiled bridge calls), so names,
the activity type, the shapes and module attributes and the nesting under model spans are those of
the native route. What it lacks: ops are seen below autograd, so composite ops (aten::conv2d,
aten::linear) appear only as what they decompose into (aten::convolution, aten::addmm); no autograd
nodes of the backward pass, no record_function scopes; only the enabling thread is traced (the mode
is per thread); no memory attributes or memory timeline; and each op costs a Python call.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

_mode: Optional[Any] = None


def _shape_text(args: Any) -> bytes:
    import torch

    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            parts.append("[" + ",".join(str(d) for d in a.shape) + "]")
        elif isinstance(a, (list, tuple)) and a and all(isinstance(t, torch.Tensor) for t in a):
            parts.append("[" + ",".join("[" + ",".join(str(d) for d in t.shape) + "]" for t in a) + "]")
        else:
            parts.append("[]")
    return ("[" + ",".join(parts) + "]").encode()


def enable(runtime: ctypes.CDLL, record_shapes: bool) -> None:
    """Starts recording the calling thread's ops as layer spans through `runtime`."""
    global _mode
    if _mode is not None:
        return
    from torch.utils._python_dispatch import TorchDispatchMode

    begin = runtime.strata_torch_rt_op_begin
    end = runtime.strata_torch_rt_op_end
    enabled = runtime.strata_torch_rt_layer_enabled
    names: "dict[Any, bytes]" = {}

    class _OpSpans(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if not enabled():
                return func(*args, **(kwargs or {}))
            name = names.get(func)
            if name is None:
                name = names[func] = func._schema.name.encode()  # "aten::convolution", as RecordFunction
            depth = ctypes.c_uint32(0)
            span = begin(name, len(name), _shape_text(args) if record_shapes and args else None,
                         ctypes.byref(depth))
            try:
                return func(*args, **(kwargs or {}))
            finally:
                if span:
                    end(span, depth.value)

    _mode = _OpSpans()
    _mode.__enter__()


def disable() -> None:
    global _mode
    if _mode is not None:
        try:
            _mode.__exit__(None, None, None)
        except Exception:  # another mode was entered above ours: leave it to unwind
            pass
        _mode = None
