"""PyTorch support for Strata.

Model level (no PyTorch knowledge needed by Strata)::

    import strata.torch as st
    with st.predict_step(batch_size=8):
        model(x)
    for it, (x, y) in enumerate(loader):
        with st.train_step(iteration=it, batch_size=len(x)):
            ...

Layer level: ``strata record --level layer -- python script.py`` turns on tracing of every framework
op (aten::*) with its input shapes and nn.Module path, without edits to the script (the recorder
puts a startup hook on PYTHONPATH that calls enable_layer_tracing() once torch is imported). The ops
are captured by a native RecordFunction callback (libstrata_torch.so) and written as layer spans on
the thread that ran them, nested under the model spans of that thread. Each op carries what it did to
PyTorch's CPU allocator (alloc_bytes, freed_bytes, net_alloc_bytes = torch.profiler's "CPU Mem",
self_net_alloc_bytes = "Self CPU Mem", peak_alloc_bytes, peak_live_bytes), and the live bytes of the
allocator are written as a counter track, the memory timeline (docs/memory.md).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import threading
import weakref
from typing import Any, Iterator, Optional

import strata

__all__ = ["predict_step", "train_step", "eval_step", "step", "enable_layer_tracing",
           "disable_layer_tracing", "layer_tracing_enabled", "ops_recorded", "memory_stats"]

_native: Optional[ctypes.CDLL] = None
_set_module: Any = None  # lib.strata_torch_set_module once loaded
_hooks: list = []
_lock = threading.Lock()
_state = threading.local()
_atexit_registered = False


def _mark_atexit() -> None:
    global _atexit_registered
    _atexit_registered = True


def _canonical(attributes: dict) -> dict:
    # batch_size=... is these helpers' spelling of the batch; traces store the canonical key "batch"
    # (src/core/attr_keys.h), the one the analyses read.
    if "batch_size" in attributes and "batch" not in attributes:
        attributes["batch"] = attributes.pop("batch_size")
    return attributes


def step(kind: str, level: Any = "model", **attributes: Any) -> strata.span:
    """A span for one step of a model (``kind`` is its name: predict, train_step, ...)."""
    return strata.span(kind, level=level, **_canonical(attributes))


def predict_step(**attributes: Any) -> strata.span:
    """Marks one inference call (model level). Pass batch_size=... so analyses can compare batches
    (stored as the attribute "batch")."""
    return strata.span("predict", level="model", **_canonical(attributes))


def train_step(**attributes: Any) -> strata.span:
    """Marks one training iteration (forward, backward, optimizer step): a model-level span."""
    return strata.span("train_step", level="model", **_canonical(attributes))


def eval_step(**attributes: Any) -> strata.span:
    """Marks one evaluation pass inside a training loop: a model-level span."""
    return strata.span("eval_step", level="model", **_canonical(attributes))


def _library_path() -> Optional[str]:
    candidates = []
    if os.environ.get("STRATA_TORCH_LIB"):
        candidates.append(os.environ["STRATA_TORCH_LIB"])
    if os.environ.get("STRATA_LIB"):
        candidates.append(os.path.join(os.path.dirname(os.environ["STRATA_LIB"]), "libstrata_torch.so"))
    candidates.append(os.path.join(strata._library_dir(), "libstrata_torch.so"))
    for path in candidates:
        if os.path.exists(path):
            return os.path.abspath(path)
    return None


def _load_native() -> ctypes.CDLL:
    global _native, _set_module
    if _native is None:
        import torch  # noqa: F401  (libtorch_cpu must be loaded before the tracer that links to it)
        path = _library_path()
        if path is None:
            raise RuntimeError("libstrata_torch.so not found next to libstrata.so: Strata was built "
                               "without PyTorch's C++ headers (apt-get install libtorch-dev, rebuild)")
        lib = ctypes.CDLL(path)
        lib.strata_torch_enable.argtypes = [ctypes.c_int]
        lib.strata_torch_enable.restype = ctypes.c_int
        lib.strata_torch_set_module.argtypes = [ctypes.c_char_p]
        lib.strata_torch_set_module.restype = None
        lib.strata_torch_ops_recorded.restype = ctypes.c_uint64
        if hasattr(lib, "strata_torch_memory_stats"):  # absent from libraries built before it existed
            lib.strata_torch_memory_stats.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
            lib.strata_torch_memory_stats.restype = ctypes.c_int
        _native = lib
        _set_module = lib.strata_torch_set_module  # bound once: the module hooks call it per module call
    return _native


# --- nn.Module paths -------------------------------------------------------------------------------
# Global forward pre/post hooks keep, per thread, the stack of running modules; the innermost one's
# qualified name ("layer1.0.conv1") is handed to the native tracer, which attaches it to every op.
# Names come from named_modules() of the outermost module called (the model); a module first seen
# outside any model is named by its class.
# Keyed by id(module), not a WeakKeyDictionary: the hooks run twice per module call, and a weak-key
# lookup builds a weakref each time (it was most of the hooks' cost). A finalizer removes the entry
# when the module is collected, so a reused id never finds a stale name.
_names: "dict[int, bytes]" = {}


def _remember(module: Any, name: bytes) -> bytes:
    key = id(module)
    if key not in _names:
        _names[key] = name
        try:
            weakref.finalize(module, _names.pop, key, None)
        except TypeError:  # not weak-referenceable: keep the name (modules always are)
            pass
    return _names[key]


def _module_name(module: Any) -> bytes:
    name = _names.get(id(module))
    if name is not None:
        return name
    for path, sub in module.named_modules():
        _remember(sub, (path or type(sub).__name__).encode())
    return _names[id(module)]


def _pre_hook(module: Any, _inputs: Any) -> None:
    try:
        stack = _state.stack
    except AttributeError:
        stack = _state.stack = []
    key = id(module)
    name = _names.get(key) if stack else None
    if name is None:
        if not stack:
            name = _module_name(module)
        else:  # created after its parent was named, or shared between models
            name = _remember(module, stack[-1][1] + b"." + type(module).__name__.encode())
    stack.append((key, name))
    _set_module(name)


def _post_hook(module: Any, _inputs: Any, _output: Any) -> None:
    stack = getattr(_state, "stack", None)
    if not stack:
        return
    # Pop down to this module: a forward that raised never ran its post hook.
    key = id(module)
    while stack:
        if stack.pop()[0] == key:
            break
    _set_module(stack[-1][1] if stack else None)


def enable_layer_tracing(record_shapes: bool = True, module_paths: bool = True) -> bool:
    """Records every PyTorch op as a layer span (when layer level is being recorded). Returns True
    when tracing is on."""
    if not strata.level_enabled("layer"):
        return False
    with _lock:
        lib = _load_native()
        if not lib.strata_torch_enable(1 if record_shapes else 0):
            return False
        if not _atexit_registered:
            # Remove the callback before PyTorch's own teardown (it warns about leaked handles).
            atexit.register(disable_layer_tracing)
            _mark_atexit()
        if module_paths and not _hooks:
            from torch.nn.modules import module as nn_module
            _hooks.append(nn_module.register_module_forward_pre_hook(_pre_hook))
            _hooks.append(nn_module.register_module_forward_hook(_post_hook))
    return True


def disable_layer_tracing() -> None:
    with _lock:
        if _native is not None:
            _native.strata_torch_disable()
        for handle in _hooks:
            handle.remove()
        _hooks.clear()


def layer_tracing_enabled() -> bool:
    return bool(_hooks) or (_native is not None and ops_recorded() > 0)


def ops_recorded() -> int:
    """Ops turned into spans by this process so far."""
    return int(_native.strata_torch_ops_recorded()) if _native is not None else 0


_MEMORY_STATS = ("live_bytes", "peak_live_bytes", "allocations", "frees", "timeline_samples", "ops_too_deep",
                 "untracked_frees", "tracking")


def memory_stats() -> "dict[str, int]":
    """What the layer tracer's memory tracking saw of PyTorch's CPU allocator: bytes alive now and at
    the highest point since tracking began (tensors allocated while layer tracing was on), counts of
    allocations, frees and memory-timeline samples. Empty when layer tracing never ran."""
    if _native is None or not hasattr(_native, "strata_torch_memory_stats"):
        return {}
    values = (ctypes.c_int64 * len(_MEMORY_STATS))()
    n = _native.strata_torch_memory_stats(values, len(_MEMORY_STATS))
    return {key: int(values[i]) for i, key in enumerate(_MEMORY_STATS[:n])}


@contextlib.contextmanager
def layer_tracing(**kwargs: Any) -> Iterator[bool]:
    on = enable_layer_tracing(**kwargs)
    try:
        yield on
    finally:
        if on:
            disable_layer_tracing()
