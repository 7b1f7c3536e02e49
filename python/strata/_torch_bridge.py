"""Finds, or compiles, the PyTorch bridge for the torch this process runs (docs/torch.md).

The bridge (strata/_torch_bridge/torch_bridge.cc) is the small part of the layer tracer that includes
PyTorch's C++ headers. A Strata built with Debian's libtorch-dev carries one built against that torch
(libstrata_torch.so); any other torch (a pip wheel, a conda build, a newer Debian) gets one compiled
at first use, inside the traced process, cached under $XDG_CACHE_HOME/strata/torch-bridge/<key>/ with
the key made of everything the binary depends on. Routes, in order of preference:

  STRATA_TORCH_LIB=<path>   that library, as is (a developer's override)
  prebuilt                  libstrata_torch.so, when the process runs the libtorch_cpu it was built
                            against (same file): no compile, the same source as the compiled route
  compiled                  a cache hit, or a compile now (once per torch/compiler/Strata version)
  python hooks              no compiler, no headers, or the compile failed (strata/_torch_pyhooks.py)

STRATA_TORCH_BRIDGE=auto|prebuilt|compile|python picks one (tests, benchmarks); STRATA_CXX names the
compiler (default: $CXX, else c++, g++, clang++ on PATH).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, NamedTuple, Optional

import strata
from strata._inprocess import loaded_library  # noqa: F401  (a seam the tests replace)

BRIDGE_FILES = ("torch_bridge.cc", "strata_torch_bridge.h")
LIBRARY = "libstrata_torch_bridge.so"
MANIFEST = "manifest.json"


class Route(NamedTuple):
    kind: str                  # "library", "prebuilt", "compiled", "python"
    detail: str                # what the route line says in parentheses
    path: Optional[str]        # the bridge library loaded (None: python hooks)
    lib: Optional[ctypes.CDLL]  # the bridge (None: python hooks)


class BridgeUnavailable(Exception):
    """No native bridge for this torch: the message says why (it goes into the route line)."""


# --- What is running ---------------------------------------------------------------------------------

def runtime_library() -> str:
    """libstrata_torch_rt.so of this Strata (the part of the tracer built with Strata)."""
    candidates = []
    if os.environ.get("STRATA_LIB"):
        candidates.append(os.path.join(os.path.dirname(os.environ["STRATA_LIB"]), "libstrata_torch_rt.so"))
    candidates += strata._native_library_paths("libstrata_torch_rt.so")
    for path in candidates:
        if os.path.exists(path):
            return os.path.realpath(path)
    raise BridgeUnavailable("libstrata_torch_rt.so not found next to libstrata.so (looked in: " +
                            ", ".join(os.path.normpath(p) for p in candidates) + "): rebuild or reinstall Strata")


def bridge_source_dir() -> str:
    """The bridge sources: inside the package (build tree, installed), or the source checkout's."""
    here = os.path.dirname(os.path.realpath(__file__))
    for candidate in (os.path.join(here, "_torch_bridge"),
                      os.path.join(here, "..", "..", "src", "torch", "bridge")):
        if all(os.path.exists(os.path.join(candidate, f)) for f in BRIDGE_FILES):
            return os.path.normpath(candidate)
    raise BridgeUnavailable("the bridge sources (strata/_torch_bridge/torch_bridge.cc) are missing from "
                            "this Strata installation: reinstall Strata")


def find_compiler() -> str:
    """The C++ compiler: $STRATA_CXX, else $CXX, else c++/g++/clang++ on PATH."""
    for var in ("STRATA_CXX", "CXX"):
        value = os.environ.get(var)
        if value:
            path = shutil.which(value)
            if path is None:
                raise BridgeUnavailable(f"no C++ compiler: {var}={value} not found")
            return path
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path is not None:
            return path
    raise BridgeUnavailable("no C++ compiler: none of c++, g++, clang++ on PATH (set STRATA_CXX)")


def torch_include_dirs(torch) -> List[str]:
    """Header folders of the running torch: the wheel's torch/include (what
    torch.utils.cpp_extension.include_paths() lists for a CPU build; not imported: it prints about
    CUDA and pulls in setuptools), else Debian's /usr/include (libtorch-dev)."""
    base = os.path.join(os.path.dirname(os.path.realpath(torch.__file__)), "include")
    for dirs in ([base, os.path.join(base, "torch", "csrc", "api", "include")],
                 ["/usr/include", "/usr/include/torch/csrc/api/include"]):
        if os.path.exists(os.path.join(dirs[0], "ATen", "record_function.h")):
            return dirs
    raise BridgeUnavailable("PyTorch's C++ headers not found (ATen/record_function.h in " + base +
                            " or /usr/include; pip wheels have them; Debian: apt-get install libtorch-dev)")


# --- The cache ---------------------------------------------------------------------------------------

def cache_root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "strata", "torch-bridge")


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _compiler_identity(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BridgeUnavailable(f"no C++ compiler: {cxx} --version failed ({exc})") from None
    return os.path.realpath(cxx) + " " + (out.splitlines() or [""])[0]


class Build(NamedTuple):
    key: str
    torch_version: str
    abi: int
    cxx: str
    source_dir: str
    includes: List[str]
    torch_libs: List[str]
    runtime: str


def plan_build(torch) -> Build:
    """What the bridge for this torch is compiled from and with, and its cache key."""
    torch_cpu = loaded_library("libtorch_cpu")
    c10 = loaded_library("libc10")
    if torch_cpu is None or c10 is None:
        raise BridgeUnavailable("libtorch_cpu/libc10 are not loaded in this process (import torch first)")
    runtime = runtime_library()
    source_dir = bridge_source_dir()
    cxx = find_compiler()
    includes = torch_include_dirs(torch)
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    libstrata = os.path.join(os.path.dirname(runtime), "libstrata.so")
    strata_version = os.path.basename(os.path.realpath(libstrata))  # libstrata.so.<version>
    build = Build("", torch.__version__, abi, cxx, source_dir, includes, [torch_cpu, c10], runtime)
    # Everything the library depends on: torch, ABI, Strata, compiler, the command (its flags), sources.
    key_parts = [torch.__version__, str(abi), strata_version, _compiler_identity(cxx)]
    key_parts += compile_command(build, "OUT")
    key_parts += [_sha256_file(os.path.join(source_dir, f)) for f in BRIDGE_FILES]
    digest = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:16]
    safe_version = "".join(c if c.isalnum() or c in ".+-" else "_" for c in torch.__version__)
    return build._replace(key=f"torch-{safe_version}-abi{abi}-{digest}")


def compile_command(build: Build, output: str) -> List[str]:
    rpath = ":".join(sorted({os.path.dirname(p) for p in build.torch_libs + [build.runtime]}))
    # -DNDEBUG as PyTorch's release builds: its headers' debug-only checks read fields that a release
    # libtorch never sets (RecordFunction::inputs() then asserts).
    cmd = [build.cxx, "-std=c++17", "-O2", "-g0", "-DNDEBUG", "-fPIC", "-shared", "-fvisibility=hidden",
           f"-D_GLIBCXX_USE_CXX11_ABI={build.abi}", "-I" + build.source_dir]
    for d in build.includes:
        if d not in ("/usr/include", "/usr/local/include"):  # already searched; -isystem would reorder
            cmd += ["-isystem", d]                           # them before the C++ library's (clang)
    cmd += [os.path.join(build.source_dir, "torch_bridge.cc"), "-o", output]
    cmd += build.torch_libs + [build.runtime, "-Wl,-rpath," + rpath]
    return cmd


def entry_is_valid(entry: str) -> bool:
    """A complete, unaltered cache entry: its manifest names the library's checksum."""
    try:
        with open(os.path.join(entry, MANIFEST)) as f:
            manifest = json.load(f)
        return manifest.get("sha256") == _sha256_file(os.path.join(entry, LIBRARY))
    except (OSError, ValueError, AttributeError):
        return False


def _compile_into(build: Build, root: str) -> str:
    """Compiles into a fresh folder under `root` and returns it (complete, with its manifest)."""
    tmp = tempfile.mkdtemp(prefix=f".{build.key}.tmp-", dir=root)
    output = os.path.join(tmp, LIBRARY)
    cmd = compile_command(build, output)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        log = os.path.join(root, build.key + ".log")
        with open(log, "w") as f:
            f.write(" ".join(cmd) + "\n\n" + proc.stdout + proc.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        errors = [ln for ln in proc.stderr.splitlines() if "error" in ln] or proc.stderr.splitlines() or ["?"]
        raise BridgeUnavailable(f"the bridge did not compile ({errors[0].strip()}; full log: {log})")
    manifest = {"sha256": _sha256_file(output), "torch": build.torch_version, "abi": build.abi,
                "compiler": build.cxx, "command": cmd, "built_unix": int(time.time())}
    with open(os.path.join(tmp, MANIFEST), "w") as f:
        json.dump(manifest, f, indent=1)
    return tmp


def cached_bridge(build: Build) -> "tuple[str, str]":
    """The cache entry's library for `build`, compiling it on a miss. Returns (library, how): how is
    "cached", "compiled in N s" or "rebuilt in N s: the cached entry was corrupt"."""
    root = cache_root()
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)  # libraries this process will load: the user's own
        return _cached_bridge_in(build, root)
    except OSError as exc:
        raise BridgeUnavailable(f"the bridge cache {root} is not usable ({exc.strerror or exc}; "
                                "set XDG_CACHE_HOME to a writable folder)") from None


def _cached_bridge_in(build: Build, root: str) -> "tuple[str, str]":
    entry = os.path.join(root, build.key)
    if entry_is_valid(entry):
        return os.path.join(entry, LIBRARY), "cached"
    # One compile per key at a time: DataLoader workers and torchrun ranks wait for the first one.
    with open(os.path.join(root, build.key + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if entry_is_valid(entry):
            return os.path.join(entry, LIBRARY), "cached, built by another process"
        corrupt = os.path.exists(entry)
        start = time.monotonic()
        fresh = _compile_into(build, root)
        if corrupt:  # moved aside, then removed: a process may still have the old file mapped
            aside = tempfile.mkdtemp(prefix=f".{build.key}.corrupt-", dir=root)
            os.rename(entry, os.path.join(aside, "entry"))
            shutil.rmtree(aside, ignore_errors=True)
        os.rename(fresh, entry)  # atomic: readers see no entry or a complete one
        took = time.monotonic() - start
    how = f"rebuilt in {took:.1f} s: the cached entry was corrupt" if corrupt else f"compiled in {took:.1f} s"
    return os.path.join(entry, LIBRARY), how


# --- Choosing the route ------------------------------------------------------------------------------

def _load(path: str, runtime: Optional[str]) -> ctypes.CDLL:
    if runtime is not None:  # first, so the bridge binds to this Strata's runtime whatever its rpath says
        try:
            ctypes.CDLL(runtime, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise BridgeUnavailable(f"{runtime} does not load ({exc}): rebuild or reinstall Strata") from None
    return ctypes.CDLL(path)


def _prebuilt() -> Optional[str]:
    """libstrata_torch.so when this process runs the very libtorch_cpu it was built against."""
    path = os.path.join(strata._library_dir(), "libstrata_torch.so")
    try:
        with open(os.path.join(strata._library_dir(), "libstrata_torch.built-for")) as f:
            built_for = f.read().strip()
    except OSError:
        return None
    running = loaded_library("libtorch_cpu")
    if running is None or not os.path.exists(path) or os.path.realpath(built_for) != running:
        return None
    return path


def select_route(torch) -> Route:
    """Loads the bridge for the running torch, or says why the Python hooks must do."""
    if os.environ.get("STRATA_TORCH_LIB"):
        path = os.environ["STRATA_TORCH_LIB"]
        return Route("library", f"STRATA_TORCH_LIB={path}", path, _load(path, None))
    mode = os.environ.get("STRATA_TORCH_BRIDGE", "auto")
    if mode not in ("auto", "prebuilt", "compile", "python"):
        sys.stderr.write(f"strata: STRATA_TORCH_BRIDGE={mode} is not one of auto, prebuilt, compile, python; "
                         "using auto\n")
        mode = "auto"
    if mode == "python":
        return Route("python", "STRATA_TORCH_BRIDGE=python", None, None)
    try:
        runtime = runtime_library()
        if mode in ("auto", "prebuilt"):
            prebuilt = _prebuilt()
            if prebuilt is not None:
                try:
                    return Route("prebuilt", f"built with Strata for this libtorch_cpu, {prebuilt}", prebuilt,
                                 _load(prebuilt, runtime))
                except OSError as exc:  # e.g. a dependency removed since: the compiled route can still do
                    if mode == "prebuilt":
                        raise BridgeUnavailable(f"Strata's prebuilt bridge does not load ({exc})") from None
            elif mode == "prebuilt":
                raise BridgeUnavailable("STRATA_TORCH_BRIDGE=prebuilt, but Strata's prebuilt bridge is absent or "
                                        "was built for another libtorch_cpu")
        return _compiled_route(torch, runtime)
    except BridgeUnavailable as exc:
        return Route("python", str(exc), None, None)


def _compiled_route(torch, runtime: str) -> Route:
    build = plan_build(torch)
    path, how = cached_bridge(build)
    try:
        lib = _load(path, runtime)
    except OSError as exc:  # checksum right but unloadable (a dependency moved): rebuild once
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        path, how = cached_bridge(build)
        try:
            lib = _load(path, runtime)
        except OSError:
            raise BridgeUnavailable(f"the compiled bridge does not load ({exc})") from None
    return Route("compiled", f"{how}, {os.path.dirname(path)}", path, lib)


def route_line(torch, route: Route) -> str:
    name = {"library": "bridge", "prebuilt": "prebuilt bridge", "compiled": "compiled bridge",
            "python": "python hooks"}[route.kind]
    detail = route.detail
    if route.kind == "python":
        detail += "; slower, no memory attributes (docs/torch.md)"
    return f"strata: PyTorch {torch.__version__} layer tracer: {name} ({detail})"
