"""What a recording started from Python records in this process, and what it cannot (docs/python-api.md).

`strata record --level L` sets a process up before it starts: it preloads the library interposers
(oneDNN, cuDNN), the sampler and CUPTI's injection, and arms the PyTorch layer tracer when torch is
imported. A recording started inside the process (`strata.start`, `strata.profile`, `strata.set_level`,
or STRATA_OUTPUT read when libstrata is loaded) gets only what can still be done from inside it:

- layer: the PyTorch layer tracer is armed here exactly as `strata record --level layer` arms it (the
  same bridge or Python hooks; now when torch is already imported, else when the program imports it).
- library, runtime_api/device, cpu_sample: their collectors are set up at process start only. When
  they are not in this process, one line on stderr (once per process and level) says what is not
  recorded and why, and `strata.not_recorded()` / `profile.not_recorded` return the same.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, Optional, Set

import strata

_said: Set[str] = set()  # lines already written (each once per process)
_not_recorded: Dict[str, str] = {}  # of the recording running now: level name -> why
_armed_level = 0  # the deepest level arm() set this recording up for (0: none yet)


def say_once(line: str) -> None:
    """Writes `line` on stderr unless this process has written it already."""
    if line not in _said:
        _said.add(line)
        sys.stderr.write(line + "\n")


def loaded_library(stem: str) -> Optional[str]:
    """The file of a shared library mapped into this process whose name starts with `stem` ("libtorch_cpu")."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if os.path.basename(path).startswith(stem + ".so"):
                    return os.path.realpath(path)
    except OSError:
        pass
    return None


def _arm_torch() -> Optional[str]:
    """Arms the PyTorch layer tracer (as `strata record --level layer`'s startup hook does): now when
    torch is imported, else when the program imports it. Returns why PyTorch ops cannot be recorded,
    or None."""
    from strata import torch as strata_torch
    if strata_torch.layer_tracing_enabled() or strata_torch.disabled_by_user():
        return None  # on already, or removed by the program (disable_layer_tracing)
    if os.environ.get("STRATA_TORCH_AUTOTRACE", "1") == "0":
        if "torch" not in sys.modules:
            return None
        return ("PyTorch ops are not recorded: STRATA_TORCH_AUTOTRACE=0 and the program has not called "
                "strata.torch.enable_layer_tracing()")
    if "torch" not in sys.modules:
        from strata import _autotrace
        _autotrace.install()  # a failure then is said in one line by the hook
        return None
    try:
        strata_torch.enable_layer_tracing()
    except Exception as exc:  # noqa: BLE001 - said on stderr; the program goes on
        return f"PyTorch ops are not recorded: {exc}"
    return None


def _collector_missing(level_name: str) -> Optional[str]:
    """Why `level_name`'s collector is not in this process (None: it is, or the level has none)."""
    if level_name == "library":
        if loaded_library("libstrata_onednn") or loaded_library("libstrata_cudnn"):
            return None
        return ("oneDNN/cuDNN/cuBLAS calls are not recorded: their tracers (libstrata_onednn.so, "
                "libstrata_cudnn.so) are interposed with LD_PRELOAD before the process starts; record with "
                "`strata record --level library`")
    if level_name == "runtime_api":
        if "libstrata_cupti" in os.environ.get("CUDA_INJECTION64_PATH", "") or loaded_library("libstrata_cupti"):
            return None
        return ("CUDA API calls and GPU activity are not recorded: CUPTI (libstrata_cupti.so) is injected "
                "when CUDA starts, by `strata record --level runtime_api|device` (CUDA_INJECTION64_PATH)")
    if level_name == "cpu_sample":
        if loaded_library("libstrata_sample") and os.environ.get("STRATA_SAMPLE", "0") not in ("", "0"):
            return None
        return ("CPU samples are not taken: the sampler (libstrata_sample.so) is preloaded by "
                "`strata record --sample HZ`")
    return None


def arm(level: int, collectors: bool = True) -> Dict[str, str]:
    """Sets up what this process can record at `level` and returns, per level name, why what it
    cannot record is missing (one line on stderr each, once per process). Kept as not_recorded().
    collectors=False: only the PyTorch tracer (under `strata record`, which says what it could not
    set up itself)."""
    global _armed_level
    levels = strata.LEVELS
    if collectors and level <= _armed_level:  # this recording was armed this deep already (profile steps)
        return {name: why for name, why in _not_recorded.items() if levels.get(name, 0) <= level}
    missing: Dict[str, str] = {}
    if "layer" in levels and level >= levels["layer"]:
        why = _arm_torch()
        if why:
            missing["layer"] = why
    for name in ("library", "runtime_api", "cpu_sample"):
        if collectors and name in levels and level >= levels[name]:
            why = _collector_missing(name)
            if why:
                missing[name] = why
    for name, why in missing.items():
        say_once(f"strata: {name} level is not recorded in this process: {why}")
    _not_recorded.update(missing)
    if collectors:
        _armed_level = max(_armed_level, level)
    return missing


def not_recorded() -> Dict[str, str]:
    """What the running recording asked for but this process cannot record: level name -> why."""
    if not strata.is_recording():
        return {}
    out = dict(_not_recorded)
    from strata import _autotrace
    if _autotrace.failure and strata.level_enabled("layer"):  # torch imported after the start, tracer failed
        out.setdefault("layer", f"PyTorch ops are not recorded: {_autotrace.failure}")
    return out


def forget() -> None:
    """The recording stopped: what it could not record no longer applies."""
    global _armed_level
    _not_recorded.clear()
    _armed_level = 0
