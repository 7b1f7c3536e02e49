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
puts a startup hook on PYTHONPATH that calls enable_layer_tracing() once torch is imported); so do
``strata.start(path, "layer")`` and ``strata.profile(level="layer")`` in a plain process. The ops
are captured by a native RecordFunction callback (the bridge: Strata's prebuilt libstrata_torch.so
when the program runs the torch Strata was built with, else compiled at first use for the running
torch and cached; without a compiler, slower Python hooks: docs/torch.md; one line on stderr says
which) and written as layer spans on the thread that ran them, nested under the model spans of that
thread. Each op carries what it did to PyTorch's CPU allocator (alloc_bytes, freed_bytes, net_alloc_bytes = torch.profiler's "CPU Mem",
self_net_alloc_bytes = "Self CPU Mem", peak_alloc_bytes, peak_live_bytes), and the live bytes of the
allocator are written as a counter track, the memory timeline (docs/memory.md).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import sys
import threading
import weakref
from typing import Any, Iterator, Optional

import strata

__all__ = ["predict_step", "train_step", "eval_step", "step", "enable_layer_tracing",
           "disable_layer_tracing", "layer_tracing_enabled", "ops_recorded", "memory_stats", "layer_tracer_route"]

_native: Optional[ctypes.CDLL] = None  # the bridge (None on the python-hooks route)
_runtime: Optional[ctypes.CDLL] = None  # libstrata_torch_rt.so (through the bridge when there is one)
_route: Any = None  # strata._torch_bridge.Route once chosen
_set_module: Any = None  # lib.strata_torch_set_module once loaded
_hooks: list = []
_lock = threading.Lock()
_state = threading.local()
_atexit_registered = False
_enabled = False  # the tracer is installed
_options = (True, True)  # the (record_shapes, module_paths) it was installed with
_disabled_by_user = False  # disable_layer_tracing() was called (a later recording leaves it off)


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


def _bind_runtime(runtime: ctypes.CDLL) -> None:
    runtime.strata_torch_set_module.argtypes = [ctypes.c_char_p]
    runtime.strata_torch_set_module.restype = None
    runtime.strata_torch_ops_recorded.restype = ctypes.c_uint64
    if hasattr(runtime, "strata_torch_memory_stats"):  # absent from libraries built before it existed
        runtime.strata_torch_memory_stats.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
        runtime.strata_torch_memory_stats.restype = ctypes.c_int
    if hasattr(runtime, "strata_torch_rt_op_begin"):  # the python-hooks route calls these per op
        runtime.strata_torch_rt_op_begin.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                                     ctypes.POINTER(ctypes.c_uint32)]
        runtime.strata_torch_rt_op_begin.restype = ctypes.c_uint64
        runtime.strata_torch_rt_op_end.argtypes = [ctypes.c_uint64, ctypes.c_uint32]
        runtime.strata_torch_rt_op_end.restype = None
        runtime.strata_torch_rt_layer_enabled.restype = ctypes.c_int


def _load_route() -> Any:
    """Picks the layer tracer's route for the running torch once (strata/_torch_bridge.py) and says
    which on stderr, in one line."""
    global _native, _runtime, _set_module, _route
    if _route is None:
        import torch  # libtorch_cpu must be loaded before the bridge that links to it
        from strata import _torch_bridge
        route = _torch_bridge.select_route(torch)
        if route.lib is not None:
            lib = route.lib
            lib.strata_torch_enable.argtypes = [ctypes.c_int]
            lib.strata_torch_enable.restype = ctypes.c_int
            runtime = lib  # symbols are looked up through the bridge's dependencies too (the runtime)
        else:
            try:
                runtime = ctypes.CDLL(_torch_bridge.runtime_library(), mode=ctypes.RTLD_GLOBAL)
            except _torch_bridge.BridgeUnavailable as exc:
                raise RuntimeError(str(exc)) from None
        sys.stderr.write(_torch_bridge.route_line(torch, route) + "\n")
        _bind_runtime(runtime)
        _native = route.lib
        _runtime = runtime
        _set_module = runtime.strata_torch_set_module  # bound once: the module hooks call it per module call
        _route = route
    return _route


def _load_native() -> ctypes.CDLL:
    """The native bridge (RuntimeError on the python-hooks route, which has none)."""
    route = _load_route()
    if _native is None:
        raise RuntimeError(f"no native PyTorch bridge: {route.detail}")
    return _native


def layer_tracer_route() -> Optional[str]:
    """How ops are traced in this process: "prebuilt", "compiled", "library" (STRATA_TORCH_LIB) or
    "python" (hooks); None before layer tracing was first enabled."""
    return _route.kind if _route is not None else None


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
    """Installs the layer tracer: from now on every PyTorch op is recorded as a layer span whenever
    this process records layer level (`strata record --level layer`, `strata.start(path, "layer")`,
    the active steps of `strata.profile(level="layer")`); while nothing records, ops pass through the
    tracer's level check (and the CPU allocator's blocks are still tracked). It stays installed until
    disable_layer_tracing(). Returns True (the tracer is installed); raises RuntimeError with one
    line saying why when it cannot be (no libstrata.so, no libstrata_torch_rt.so, a bridge built for
    another runtime)."""
    global _enabled, _disabled_by_user, _options
    if strata._lib is None:
        raise RuntimeError("strata.torch.enable_layer_tracing: libstrata.so not found: install Strata, or set "
                           "STRATA_LIB=/path/to/libstrata.so")
    if _enabled and _options != (record_shapes, module_paths):
        _remove_tracer()  # installed with other options: installed again below with these
    with _lock:
        try:
            route = _load_route()
        except OSError as exc:  # a library that does not load (STRATA_TORCH_LIB, the runtime)
            raise RuntimeError(f"strata.torch.enable_layer_tracing: {exc}") from None
        if route.kind == "python":
            from strata import _torch_pyhooks
            _torch_pyhooks.enable(_runtime, record_shapes)
        elif not _native.strata_torch_enable(1 if record_shapes else 0):
            raise RuntimeError(f"strata.torch.enable_layer_tracing: the bridge {route.path} was built for another "
                               "libstrata_torch_rt.so (its ABI differs): remove it, or unset STRATA_TORCH_LIB")
        if not _atexit_registered:
            # Remove the callback before PyTorch's own teardown (it warns about leaked handles).
            atexit.register(_remove_tracer)
            _mark_atexit()
        if module_paths and not _hooks:
            from torch.nn.modules import module as nn_module
            _hooks.append(nn_module.register_module_forward_pre_hook(_pre_hook))
            _hooks.append(nn_module.register_module_forward_hook(_post_hook))
        _enabled = True
        _disabled_by_user = False
        _options = (record_shapes, module_paths)
    return True


def _remove_tracer() -> None:
    global _enabled
    with _lock:
        if _native is not None:
            _native.strata_torch_disable()
        elif _route is not None:
            from strata import _torch_pyhooks
            _torch_pyhooks.disable()
        for handle in _hooks:
            handle.remove()
        _hooks.clear()
        _enabled = False


def disable_layer_tracing() -> None:
    """Removes the layer tracer. A recording started later in this process (strata.start,
    strata.profile) does not install it again; enable_layer_tracing() does."""
    global _disabled_by_user
    _remove_tracer()
    _disabled_by_user = True


def disabled_by_user() -> bool:
    """Whether the program removed the tracer (disable_layer_tracing) and has not enabled it since."""
    return _disabled_by_user


def layer_tracing_enabled() -> bool:
    """Whether the layer tracer is installed (ops are recorded whenever layer level is recorded)."""
    return _enabled


def ops_recorded() -> int:
    """Ops turned into spans by this process so far."""
    return int(_runtime.strata_torch_ops_recorded()) if _runtime is not None else 0


_MEMORY_STATS = ("live_bytes", "peak_live_bytes", "allocations", "frees", "timeline_samples", "ops_too_deep",
                 "untracked_frees", "tracking")


def memory_stats() -> "dict[str, int]":
    """What the layer tracer's memory tracking saw of PyTorch's CPU allocator: bytes alive now and at
    the highest point since tracking began (tensors allocated while layer tracing was on), counts of
    allocations, frees and memory-timeline samples. Empty when layer tracing never ran."""
    if _runtime is None or not hasattr(_runtime, "strata_torch_memory_stats"):
        return {}
    values = (ctypes.c_int64 * len(_MEMORY_STATS))()
    n = _runtime.strata_torch_memory_stats(values, len(_MEMORY_STATS))
    return {key: int(values[i]) for i, key in enumerate(_MEMORY_STATS[:n])}


@contextlib.contextmanager
def layer_tracing(**kwargs: Any) -> Iterator[bool]:
    on = enable_layer_tracing(**kwargs)
    try:
        yield on
    finally:
        if on:
            disable_layer_tracing()
