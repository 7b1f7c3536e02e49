#!/usr/bin/env bash
# Configures and builds Strata into a build directory (default: build). Extra args go to cmake.
#   scripts/build.sh [BUILD_DIR] [-DOPTION=VALUE ...]
# This is the CI and developer build: warnings are errors (STRATA_WERROR=ON; a later
# -DSTRATA_WERROR=OFF among the extra args turns that off). A plain `cmake` build does not set it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
jobs=${STRATA_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${STRATA_BUILD_TYPE:-RelWithDebInfo} -DSTRATA_WERROR=ON "$@" >/dev/null
ninja -C "$build" -j "$jobs"
