#!/usr/bin/env bash
# A build that leaves the heavy optional modules out (STRATA_SKIP="lowerbound;import" by default: no
# ONNX, protobuf, oneDNN, PostgreSQL or simdjson) must build, and its `strata` must run without
# them (issue 14.5). Not a phase of scripts/test.sh: it is a second build of most of the tree (about
# as long as the main one without a warm ccache). Run it when a change touches module boundaries.
#   scripts/check_skip_build.sh [BUILD_DIR] [extra cmake args]   (default BUILD_DIR: build-skip)
#   STRATA_CHECK_SKIP="lowerbound;import;report" scripts/check_skip_build.sh   (another skip list)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-skip}
shift || true
skip=${STRATA_CHECK_SKIP:-lowerbound;import}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
bash "$root/scripts/build.sh" "$build" "-DSTRATA_SKIP=$skip" -DSTRATA_BUILD_TESTS=OFF \
  -DSTRATA_BUILD_BENCHMARKS=OFF "${launcher[@]}" "$@"

strata="$build/bin/strata"
fail() { echo "check_skip_build: $*" >&2; exit 1; }
"$strata" --version >/dev/null || fail "$strata --version failed"
help=$("$strata" --help)
# The commands of a skipped module are left out with it (src/cli/CMakeLists.txt, main.cc).
for module_command in "lowerbound:lowerbound" "lowerbound:bench" "lowerbound:model" "import:import"; do
  module=${module_command%%:*}
  command=${module_command#*:}
  if [[ ";$skip;" == *";$module;"* ]] && grep -qE "^  $command( |$)" <<<"$help"; then
    fail "'strata $command' is listed although $module is skipped"
  fi
done
# Nothing of the skipped modules' libraries is linked into the tool or the analysis C API (the
# PyTorch tracer is left alone: libtorch itself links ONNX, oneDNN and libpq).
linked=$(ldd "$strata" "$build/lib/libstrata.so" "$build/lib/libstrata_analysis_capi.so" 2>/dev/null | grep -oE 'lib(onnx|onnx_proto|protobuf|dnnl|pq|simdjson)\.so[^ ]*' \
  | sort -u || true)
if [[ ";$skip;" == *";lowerbound;"* && ";$skip;" == *";import;"* && -n "$linked" ]]; then
  fail "linked although their modules are skipped: $(echo $linked)"
fi
# And it works: a trace of the repository's test data through info and analyze.
trace="$root/tests/data/format_1_0/cpu_model.trace"
"$strata" info "$trace" >/dev/null || fail "strata info $trace failed"
"$strata" analyze "$trace" >/dev/null || fail "strata analyze $trace failed"
echo "check_skip_build: STRATA_SKIP=\"$skip\" builds; strata runs (info, analyze) without those modules' libraries"
