"""Turns on framework tracers when their framework is imported (installed by `strata record`).

`strata record --level layer` puts strata/_startup on PYTHONPATH; its sitecustomize calls install().
A recording started inside the process at layer level calls it too (strata/_inprocess.py).
Nothing is imported eagerly: the hook waits until the program itself imports torch, so programs that
never use PyTorch pay nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

_done = False
failure = ""  # why enabling the layer tracer failed when torch was imported (said on stderr then)


def _on_torch_imported() -> None:
    global _done, failure
    if _done:
        return
    _done = True
    try:
        import strata.torch as strata_torch
        if not strata_torch.disabled_by_user():
            strata_torch.enable_layer_tracing()
    except Exception as exc:  # never break the user's program; say why once
        failure = str(exc)
        sys.stderr.write(f"strata: PyTorch layer tracing not enabled: {exc}\n")


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module) -> None:
        self._inner.exec_module(module)
        _on_torch_imported()

    def __getattr__(self, name):  # get_code, is_package, get_resource_reader, ...
        return getattr(self._inner, name)


class _TorchImportHook(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)  # one shot; also stops the search below from finding us again
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    if os.environ.get("STRATA_TORCH_AUTOTRACE", "1") == "0":
        return
    if "torch" in sys.modules:
        _on_torch_imported()
    elif not any(isinstance(f, _TorchImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchImportHook())
