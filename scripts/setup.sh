#!/usr/bin/env bash
# Installs everything Strata needs on a fresh Debian 12 machine (run as root).
# Idempotent: packages already present are skipped by apt-get.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then echo "setup.sh: run as root (apt-get needs it)" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
packages=(
  build-essential cmake ninja-build pkg-config git
  clang-14 libclang-rt-14-dev            # libFuzzer + sanitizers
  libzstd-dev libcli11-dev libsimdjson-dev libdivsufsort-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev libpq-dev postgresql
  libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler
  graphviz                               # lowerbound: critical path as SVG
  python3 python3-dev python3-pytest python3-numpy python3-pandas   # pandas: strata.load (python/strata/_analysis.py)
  python3-torch python3-torchvision python3-onnx
  patchelf                               # scripts/bundle.sh: RUNPATH $ORIGIN on bundled libraries
  zlib1g-dev                             # strata import: .json.gz traces
  libtorch-dev                           # src/torch: PyTorch layer tracer (RecordFunction callbacks)
  libunwind-dev                          # src/sample: DWARF unwinding of CPU samples (--sample, attach)
  libcapstone-dev llvm-14                # src/annotate: disassembly (capstone) and llvm-mca's cycle estimates (strata annotate)
  golang-github-google-pprof-dev         # tests/sample: profile.proto, to decode `strata profile --format pprof`
  nodejs chromium                        # strata report: ECharts from npm; its browser test (headless chromium)
  help2man                               # src/cli: man pages generated from each command's --help
  python3-distributed iproute2           # strata analyze --dask: scheduler and workers (tests/python/test_dask.py)
  python3-markdown                       # strata diff --format md rendered by a Markdown parser (tests/python/test_diff.py)
  linux-perf austin                      # optional comparison samplers (scripts/sample_overhead.sh, compare_profilers.py); Debian's austin 1.0.1 cannot read Python 3.11: the scripts say so and skip it
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# strata report: ECharts (embedded into strata at build time) and playwright-core (its browser test),
# pinned by report/package-lock.json (docs/report.md). Debian's nodejs comes without npm (its own
# package); a NodeSource nodejs carries npm and conflicts with Debian's: install it only if missing.
if ! command -v npm >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends npm
fi
(cd "$(dirname "${BASH_SOURCE[0]}")/../report" && npm ci --no-audit --no-fund --loglevel=error)
